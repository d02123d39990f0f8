// Strict UTF-8 decoding and encoding (RFC 3629): no overlong forms, no surrogates, nothing
// above U+10FFFF. Shared by every tokenizer, so that "invalid UTF-8 at byte offset N" means
// the same thing everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pg::utf8 {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A Unicode scalar value: a code point that UTF-8 may carry (not a surrogate).
inline bool is_scalar_value(uint32_t cp) {
    return cp <= kMaxCodePoint && !(cp >= 0xD800 && cp <= 0xDFFF);
}

// Decodes the character starting at text[offset]. On success stores the code point and its
// length in bytes (1..4) and returns nullptr; on failure returns a short reason ("truncated
// sequence", ...) and leaves the outputs unspecified.
inline const char* decode_at(std::string_view text, std::size_t offset, uint32_t* cp,
                             int* length) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data()) + offset;
    const std::size_t avail = text.size() - offset;
    const unsigned char b0 = s[0];
    if (b0 < 0x80) {
        *cp = b0;
        *length = 1;
        return nullptr;
    }
    int n;
    uint32_t value, min_value;
    if ((b0 & 0xE0) == 0xC0) {
        n = 2, value = b0 & 0x1F, min_value = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        n = 3, value = b0 & 0x0F, min_value = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        n = 4, value = b0 & 0x07, min_value = 0x10000;
    } else {
        return (b0 & 0xC0) == 0x80 ? "unexpected continuation byte" : "invalid lead byte";
    }
    if (avail < std::size_t(n)) return "truncated sequence";
    for (int i = 1; i < n; ++i) {
        if ((s[i] & 0xC0) != 0x80) return "truncated sequence";
        value = (value << 6) | (s[i] & 0x3F);
    }
    if (value < min_value) return "overlong encoding";
    if (!is_scalar_value(value)) return "encodes a surrogate or a value above U+10FFFF";
    *cp = value;
    *length = n;
    return nullptr;
}

// "" when text is valid UTF-8, else "byte offset N: REASON" for its first invalid sequence.
inline std::string first_invalid(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        uint32_t cp;
        int len;
        if (const char* why = decode_at(text, i, &cp, &len)) return "byte offset " + std::to_string(i) + ": " + why;
        i += std::size_t(len);
    }
    return "";
}

// Appends the UTF-8 form of a scalar value.
inline void append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(char(cp));
    } else if (cp < 0x800) {
        out.push_back(char(0xC0 | (cp >> 6)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(char(0xE0 | (cp >> 12)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(char(0xF0 | (cp >> 18)));
        out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    }
}

// "U+00E9" (at least four hex digits), for messages.
inline std::string code_point_name(uint32_t cp) {
    static const char* hex = "0123456789ABCDEF";
    std::string digits;
    for (uint32_t v = cp; v != 0 || digits.size() < 4; v >>= 4) digits.insert(digits.begin(), hex[v & 0xF]);
    return "U+" + digits;
}

// How a character is named in messages: 'x' (U+0078) when printable, U+000A otherwise.
inline std::string describe(uint32_t cp) {
    const bool control = cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0);
    if (control || !is_scalar_value(cp)) return code_point_name(cp);
    std::string s = "'";
    append(s, cp);
    return s + "' (" + code_point_name(cp) + ")";
}

}  // namespace pg::utf8
