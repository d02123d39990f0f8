// The C boundary: every exported function runs its body through guarded(), which turns any
// exception into a status and records the message for pg_last_error() and for the handle's
// own *_last_error(). Argument checks throw pg::Error like everything else.
#pragma once

#include <cstring>
#include <new>
#include <string>

#include "core/error.hpp"
#include "core/struct_fields.hpp"

namespace pg {

// Records a failure's message for this thread (pg_last_error) and, if given, the handle.
void record_error(std::string* handle_error, const std::string& message);

template <class F>
pg_status guarded(std::string* handle_error, F&& body) noexcept {
    try {
        body();
        return PG_OK;
    } catch (const Error& e) {
        record_error(handle_error, e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        record_error(handle_error, "out of memory");
        return PG_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        record_error(handle_error, std::string("internal error: ") + e.what());
        return PG_ERR_INTERNAL;
    } catch (...) {
        record_error(handle_error, "internal error: unknown exception");
        return PG_ERR_INTERNAL;
    }
}

// Argument checks with a message naming the function and the argument.
inline void require_arg(bool ok, const char* function, const char* what) {
    if (!ok) throw Error(PG_ERR_INVALID_ARGUMENT, std::string(function) + ": " + what);
}
#define PG_REQUIRE_NOT_NULL(fn, p) ::pg::require_arg((p) != nullptr, fn, #p " is NULL")

// Reads the size-prefixed option struct `in` into a full-sized `out` that was filled by its
// *_default() function: copies only the bytes the caller's struct_size covers.
template <class S>
void read_options(const S* in, S* out, const char* function) {
    if (!in) return;  // NULL options = defaults
    require_arg(in->struct_size >= sizeof(uint32_t) && in->struct_size <= (1u << 16), function,
                "options struct_size is not set (use the *_default() initialiser)");
    std::size_t n = in->struct_size < sizeof(S) ? in->struct_size : sizeof(S);
    uint32_t full = out->struct_size;
    std::memcpy(static_cast<void*>(out), in, n);
    out->struct_size = full;
}

// Writes a full-sized result `in` into the caller's struct `out`, as much as its struct_size
// covers (at least the struct_size field itself must be set).
template <class S>
void write_result(const S& in, S* out, const char* function) {
    require_arg(out->struct_size >= sizeof(uint32_t), function,
                "result struct_size is not set (set it to sizeof the struct)");
    uint32_t caller = out->struct_size;
    std::size_t n = caller < sizeof(S) ? caller : sizeof(S);
    std::memcpy(static_cast<void*>(out), &in, n);
    out->struct_size = caller;
}

}  // namespace pg
