// The C boundary: every exported function runs its body through guarded(), which turns any
// exception into a status and records the message for pg_last_error() and for the handle's
// *_last_error(). Argument checks throw pg::Error like everything else.
//
// The exported function's name is put on a message once, here: guarded() is a macro that passes
// __func__ of the exported function it is written in to guarded_at(), so no code below the
// boundary names a C function. A message that already starts with that name (an argument check
// written as require_arg(ok, fn, what)) is not labelled twice; PG_REQUIRE_NOT_NULL's fn is not
// used (its message is labelled here like every other), so a copied check cannot mislabel.
//
// Why per-handle messages as well as pg_last_error(): a handle that calls change is often driven
// on one thread and inspected on another (a training session stepped on a worker, its failure
// shown by the UI thread; Kotlin's and Java's exceptions read the handle's message), where the
// thread-local message is the wrong thread's. For the read-only handles the per-thread table is
// what lets many threads fail on one shared model at once without seeing each other's messages.
// Their cost is a string per mutable handle and a few entries per thread, written only on failure.
//
// Where a handle's message lives (phonegpt.h, "Errors"): a call never writes a handle it takes
// as const, so many threads may read one model, tokenizer or adapter at once.
//  - Every failure sets the calling thread's pg_last_error().
//  - A failure of a call that takes a handle const is also kept in the calling thread's small
//    table of recent failures, under the handle's HandleId: pg_model_last_error(m) is the
//    calling thread's last failure on m.
//  - The handles that calls change (session, trainer, LoRA trainer, token stream, data filter;
//    one thread at a time) also keep their own HandleMessage, written by the calls that take
//    them non-const, whichever thread ran them. Their *_last_error() returns the newer of that
//    message and the calling thread's table entry.
#pragma once

#include <cstdint>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>

#include "core/error.hpp"
#include "core/struct_fields.hpp"

namespace pg {

// A handle's identity in the per-thread error tables: a serial number that is never reused,
// so a handle allocated where a freed one was does not inherit its messages. A copy is a new
// handle with a new id.
class HandleId {
public:
    HandleId();
    HandleId(const HandleId&) : HandleId() {}
    HandleId& operator=(const HandleId&) { return *this; }
    uint64_t value() const { return value_; }

private:
    uint64_t value_;
};

// The message a mutable handle owns, with the library-wide sequence number of the failure that
// wrote it (to tell which of it and a thread-table entry is newer).
struct HandleMessage {
    std::string text;
    uint64_t sequence = 0;
};

// Where record_error puts a failure besides pg_last_error(): nothing (NULL), the thread's table
// under a handle id, or a mutable handle's own message.
struct ErrorTarget {
    ErrorTarget() = default;
    ErrorTarget(std::nullptr_t) {}
    ErrorTarget(uint64_t id, HandleMessage* owned) : handle(id), owned_message(owned) {}
    uint64_t handle = 0;                    // 0 = no handle
    HandleMessage* owned_message = nullptr;  // only for calls that take the handle non-const
};

// The target of a call that takes `h` const: the thread's table only.
template <class H>
ErrorTarget shared_errors(const H* h) {
    return h ? ErrorTarget(h->id.value(), nullptr) : ErrorTarget();
}
// The target of a call that takes a mutable handle non-const: its own message.
template <class H>
ErrorTarget owned_errors(H* h) {
    return h ? ErrorTarget(h->id.value(), &h->last_error) : ErrorTarget();
}

// Records a failure's message for this thread (pg_last_error) and for the target.
void record_error(const ErrorTarget& target, const std::string& message);

// What a *_last_error(handle) call returns (see the top of this file); `owned` is NULL for the
// read-only handles. The pointer stays valid until the calling thread's next failing call.
const char* handle_last_error(const HandleId& id, const HandleMessage* owned);

// `message` with "function: " in front, unless it already starts with it.
std::string labelled(const char* function, const std::string& message);

template <class F>
pg_status guarded_at(const char* function, const ErrorTarget& target, F&& body) noexcept {
    try {
        body();
        return PG_OK;
    } catch (const Error& e) {
        record_error(target, labelled(function, e.what()));
        return e.status();
    } catch (const std::bad_alloc&) {
        record_error(target, labelled(function, "out of memory"));
        return PG_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        record_error(target, labelled(function, std::string("internal error: ") + e.what()));
        return PG_ERR_INTERNAL;
    } catch (...) {
        record_error(target, labelled(function, "internal error: unknown exception"));
        return PG_ERR_INTERNAL;
    }
}
// pg::guarded(target, body) written in an exported function: guarded_at with its name.
#define guarded(...) guarded_at(__func__, __VA_ARGS__)

// Argument checks with a message naming the argument (the boundary adds the function).
inline void require_arg(bool ok, const char* what) {
    if (!ok) throw Error(PG_ERR_INVALID_ARGUMENT, what);
}
inline void require_arg(bool ok, const std::string& what) { require_arg(ok, what.c_str()); }
// The same with the function's name written at the check, as most of the C API's checks are.
inline void require_arg(bool ok, const char* function, const char* what) {
    if (!ok) throw Error(PG_ERR_INVALID_ARGUMENT, std::string(function) + ": " + what);
}
// `fn` is not used: guarded() labels the message with the function the check is in.
#define PG_REQUIRE_NOT_NULL(fn, p) ((void)(fn), ::pg::require_arg((p) != nullptr, #p " is NULL"))

// The size-prefixed structs at the boundary go through core/struct_fields.hpp's one mechanism.
// Reads the caller's option struct `in` (NULL = defaults) over the full-size defaults in `out`
// that its *_default() function filled.
template <class S>
void read_options(const S* in, S* out, const char* function) {
    if (in) *out = read_c_struct(*in, *out, function);
}

// Writes a full-sized result `in` into the caller's struct `out`, as far as its struct_size
// reaches.
template <class S>
void write_result(const S& in, S* out, const char* function) {
    write_c_struct(in, out, function);
}

// An enum argument as the int a C caller passed: it may hold any value, and reading an
// out-of-range value as the C++ enum type is undefined behaviour (UBSan's -fsanitize=enum).
template <class Enum>
int enum_code(const Enum& value) {
    static_assert(sizeof(int) == sizeof(Enum), "C enums are int-sized on supported ABIs");
    int code;
    std::memcpy(&code, &value, sizeof code);
    return code;
}

}  // namespace pg
