// Character classes for the BPE pre-tokenizers: the general-category groups their patterns
// name (\p{L} and its five parts, \p{M}, \p{N}) and \s (the White_Space property), from a table
// generated out of the Unicode Character Database (bpe_unicode_table.inc; the version is
// kUnicodeVersion). Text is bytes: a byte that does not start a valid UTF-8 sequence is one
// "character" of class kOther, so any byte string pre-tokenizes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pg::bpe {

// The low three bits of a class byte; bit 3 (kSpaceBit) is White_Space.
enum CharClass : uint8_t {
    kOther = 0, kLu = 1, kLl = 2, kLt = 3, kLm = 4, kLo = 5, kMark = 6, kNumber = 7,
};
constexpr uint8_t kSpaceBit = 8;
constexpr uint8_t kCategoryMask = 7;

extern const char* const kUnicodeVersion;

// The class byte of a Unicode scalar value.
uint8_t class_of(uint32_t cp);

// One decoded character: its class byte and length in bytes (1..4). Invalid or truncated
// UTF-8 yields one byte of class kOther. `end` > `p`.
struct Char {
    uint8_t cls;
    uint8_t len;
    uint32_t cp;  // the code point, or the byte value for an invalid byte
};

// The ASCII classes, used inline by the scanners (everything else goes through class_of).
extern const uint8_t kAsciiClass[128];

Char decode_char_slow(const unsigned char* p, const unsigned char* end);

inline Char decode_char(const unsigned char* p, const unsigned char* end) {
    if (*p < 0x80) return Char{kAsciiClass[*p], 1, *p};
    return decode_char_slow(p, end);
}

inline bool is_letter(uint8_t c) { const uint8_t g = c & kCategoryMask; return g >= kLu && g <= kLo; }
inline bool is_number(uint8_t c) { return (c & kCategoryMask) == kNumber; }
inline bool is_space(uint8_t c) { return (c & kSpaceBit) != 0; }
// o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}].
inline bool is_upperish(uint8_t c) { const uint8_t g = c & kCategoryMask; return g == kLu || g == kLt || g == kLm || g == kLo || g == kMark; }
inline bool is_lowerish(uint8_t c) { const uint8_t g = c & kCategoryMask; return g == kLl || g == kLm || g == kLo || g == kMark; }

}  // namespace pg::bpe
