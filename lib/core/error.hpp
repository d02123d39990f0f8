// Errors inside the library are C++ exceptions carrying a pg_status and a message; the C
// boundary (lib/capi) catches every exception and turns it into a status plus a last-error
// message, so nothing thrown here ever crosses into a caller.
#pragma once

#include <stdexcept>
#include <string>

#include "phonegpt/phonegpt.h"

namespace pg {

class Error : public std::runtime_error {
public:
    Error(pg_status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    pg_status status() const noexcept { return status_; }

private:
    pg_status status_;
};

// Throws Error(status, message) when `ok` is false. Use for argument and format checks.
inline void require(bool ok, pg_status status, const std::string& message) {
    if (!ok) throw Error(status, message);
}

}  // namespace pg
