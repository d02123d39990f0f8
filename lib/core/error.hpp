// Errors inside the library are C++ exceptions carrying a pg_status and a message; the C
// boundary (lib/capi) catches every exception and turns it into a status plus a last-error
// message, so nothing thrown here ever crosses into a caller.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

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

// A message is given as text or as a function returning it, called only when the message is
// thrown: a passing check should cost only its test. Checks that run per tensor, per entry or
// per element of a file compose their messages in a function, so that loading a good file
// builds no error text at all (and a literal is not copied into a std::string unless thrown).
inline std::string message_text(const char* message) { return message; }
inline const std::string& message_text(const std::string& message) { return message; }
template <class MakeMessage, std::enable_if_t<std::is_invocable_r_v<std::string, const MakeMessage&>, int> = 0>
std::string message_text(const MakeMessage& make_message) {
    return make_message();
}

// A number in a message as people write it ("0.002", not "0.002000"; printf's %g).
inline std::string message_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// Throws Error(status, message) when `ok` is false. Use for argument and format checks.
template <class Message>
void require(bool ok, pg_status status, const Message& message) {
    if (!ok) throw Error(status, message_text(message));
}

}  // namespace pg
