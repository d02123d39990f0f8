// Copying a library-made string out to a caller's buffer under the sizing protocol of
// pg_tokenizer_decode: *len gets the length without the NUL; a buffer smaller than len + 1 is
// PG_ERR_BUFFER_TOO_SMALL (call with NULL and 0 to size), else the text and a NUL are written.
#pragma once

#include <cstring>
#include <string>

#include "core/error.hpp"

namespace pg::capi {

inline void copy_text_out(const std::string& s, char* out, std::size_t capacity, std::size_t* len, const char* fn) {
    *len = s.size();
    if (capacity < s.size() + 1)
        throw Error(PG_ERR_BUFFER_TOO_SMALL, std::string(fn) + ": capacity " + std::to_string(capacity) +
                                                 " is smaller than the " + std::to_string(s.size() + 1) +
                                                 " bytes needed (with the NUL)");
    std::memcpy(out, s.data(), s.size());
    out[s.size()] = '\0';
}

}  // namespace pg::capi
