// Character classes and small scanning helpers shared by the data filter's detectors.
#pragma once

#include <cstddef>
#include <string_view>

namespace pg::privacy::scan {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
inline bool is_alpha(char c) { return is_upper(c) || is_lower(c); }
inline bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool is_non_ascii(char c) { return static_cast<unsigned char>(c) >= 0x80; }
inline char to_upper(char c) { return is_lower(c) ? char(c - 'a' + 'A') : c; }

// `c` is one of the characters of `set` (never the NUL that ends it).
inline bool is_one_of(char c, const char* set) {
    for (; *set; ++set)
        if (*set == c) return true;
    return false;
}
// True when the byte before `pos` would glue a candidate starting at `pos` to a word or
// number ("v1.2.3.4", "A4", "x4111...").
inline bool glued_before(std::string_view t, std::size_t pos) { return pos > 0 && is_alnum(t[pos - 1]); }
inline bool glued_after(std::string_view t, std::size_t end) { return end < t.size() && is_alnum(t[end]); }

// A digit at `pos` that continues a number before it ("x4111", "3.4111", "12-030"): no
// candidate starts there.
inline bool continues_number(std::string_view t, std::size_t pos) {
    return glued_before(t, pos) || (pos >= 2 && is_one_of(t[pos - 1], ".,-/:") && is_digit(t[pos - 2]));
}

// The value of the digits t[b, e) (at most 9 digits, callers check the length).
inline unsigned digits_value(std::string_view t, std::size_t b, std::size_t e) {
    unsigned v = 0;
    for (std::size_t k = b; k < e; ++k) v = v * 10 + unsigned(t[k] - '0');
    return v;
}

// The end of the run of digits starting at `pos`.
inline std::size_t digits_end(std::string_view t, std::size_t pos) {
    while (pos < t.size() && is_digit(t[pos])) ++pos;
    return pos;
}

// A space between the groups of a number: ' ', the no-break space U+00A0 or the narrow one
// U+202F (French and Swiss print numbers with them); stores its length in bytes.
inline bool is_space_at(std::string_view t, std::size_t j, std::size_t* len) {
    if (j < t.size() && t[j] == ' ') return *len = 1, true;
    if (t.substr(j, 2) == "\xc2\xa0") return *len = 2, true;
    if (t.substr(j, 3) == "\xe2\x80\xaf") return *len = 3, true;
    return false;
}

// Case-insensitive comparison of ASCII words.
inline bool equals_ci(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (to_upper(a[i]) != to_upper(b[i])) return false;
    return true;
}

}  // namespace pg::privacy::scan
