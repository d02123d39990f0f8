// The C boundary: every exported function runs its body through guarded(), which turns any
// exception into a status and records the message for pg_last_error() and for the handle's
// own *_last_error(). Argument checks throw pg::Error like everything else.
#pragma once

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

}  // namespace pg
