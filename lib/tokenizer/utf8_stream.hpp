// Splits a growing byte string into complete UTF-8 for display: what the streaming decoder
// (pg_token_stream) emits after each generated token. A BPE token may end inside a character;
// its first bytes wait for the next token. Bytes that cannot start or continue a valid
// sequence become U+FFFD, one per byte.
#pragma once

#include <string>

#include "tokenizer/utf8.hpp"

namespace pg::utf8 {

// True if s[i..] (fewer bytes than its lead byte announces) could still become a valid
// character when more bytes arrive.
inline bool is_valid_prefix(const std::string& s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char lead = b(i);
    int need;
    if (lead >= 0xC2 && lead <= 0xDF) need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) need = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) need = 4;
    else return false;
    const std::size_t have = s.size() - i;
    if (have >= std::size_t(need)) return false;
    for (std::size_t k = 1; k < have; ++k) {
        unsigned char lo = 0x80, hi = 0xBF;
        if (k == 1) {
            if (lead == 0xE0) lo = 0xA0;
            if (lead == 0xED) hi = 0x9F;
            if (lead == 0xF0) lo = 0x90;
            if (lead == 0xF4) hi = 0x8F;
        }
        if (b(i + k) < lo || b(i + k) > hi) return false;
    }
    return true;
}

// Moves the complete part of `pending` to the returned string; at_end: nothing more will come,
// so an unfinished character is U+FFFD too.
inline std::string take_complete(std::string& pending, bool at_end) {
    std::string out;
    std::size_t i = 0;
    while (i < pending.size()) {
        uint32_t cp;
        int len;
        if (decode_at(pending, i, &cp, &len) == nullptr) {
            out.append(pending, i, std::size_t(len));
            i += std::size_t(len);
        } else if (!at_end && is_valid_prefix(pending, i)) {
            break;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    pending.erase(0, i);
    return out;
}

}  // namespace pg::utf8
