// Splits a growing byte string into complete UTF-8 for display: what the streaming decoder
// (pg_token_stream) emits after each generated token. A BPE token may end inside a character;
// its first bytes wait for the next token. Invalid bytes become U+FFFD, one per maximal subpart
// (Unicode 15, section 3.9, "U+FFFD Substitution of Maximal Subparts", the practice of the WHATWG
// decoder and Python's errors="replace"): a truncated sequence such as E2 82 is one U+FFFD, a
// byte that can start no sequence is one U+FFFD of its own.
#pragma once

#include <string>

#include "tokenizer/utf8.hpp"

namespace pg::utf8 {

// How many bytes from s[i] are a proper prefix of some valid sequence, stopping at the first
// byte that cannot continue it or at the end of s: 0 when s[i] can start no sequence. Called
// where s[i..] is not a complete valid character.
inline std::size_t maximal_subpart(const std::string& s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char lead = b(i);
    std::size_t need;
    if (lead >= 0xC2 && lead <= 0xDF) need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) need = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) need = 4;
    else return 0;
    std::size_t k = 1;
    for (; k < need && i + k < s.size(); ++k) {
        unsigned char lo = 0x80, hi = 0xBF;
        if (k == 1) {
            if (lead == 0xE0) lo = 0xA0;
            if (lead == 0xED) hi = 0x9F;
            if (lead == 0xF0) lo = 0x90;
            if (lead == 0xF4) hi = 0x8F;
        }
        if (b(i + k) < lo || b(i + k) > hi) break;
    }
    return k;
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
        } else {
            const std::size_t part = maximal_subpart(pending, i);
            if (!at_end && part > 0 && i + part == pending.size()) break;  // more bytes may finish it
            out += "\xEF\xBF\xBD";
            i += part > 0 ? part : 1;
        }
    }
    pending.erase(0, i);
    return out;
}

}  // namespace pg::utf8
