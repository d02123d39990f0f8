// Pre-tokenization for byte-level BPE: hand-written scanners with exactly the semantics of the
// regular expressions tiktoken (npm tiktoken 1.0.22's pat_str) uses for each encoding,
// leftmost-first alternation and backtracking included:
//   gpt2 / r50k_base / p50k_base:
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   cl100k_base:
//     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//     \s*[\r\n]+|\s+(?!\S)|\s+
//   o200k_base:
//     [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//     [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//     \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (?i) follows Unicode simple case folding, so 's also matches U+017F LATIN SMALL LETTER LONG S.
// Bytes that are not valid UTF-8 count as one character each in the class [^\s\p{L}\p{N}].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pg::bpe {

enum class Pattern : uint32_t { kGpt2 = 1, kCl100k = 2, kO200k = 3 };

// The pattern's regular expression text (as above) and its short name ("gpt2", "cl100k",
// "o200k").
const char* pattern_regex(Pattern p);
const char* pattern_name(Pattern p);
// The pattern whose regex text is `regex` exactly (the strings above), or false.
bool pattern_from_regex(const std::string& regex, Pattern* out);

// The end of the piece that starts at `pos` (< n): the match of the pattern there.
std::size_t next_piece_gpt2(const unsigned char* text, std::size_t n, std::size_t pos);
std::size_t next_piece_cl100k(const unsigned char* text, std::size_t n, std::size_t pos);
std::size_t next_piece_o200k(const unsigned char* text, std::size_t n, std::size_t pos);

// Calls f(begin, end) for every piece of text[0, n) in order.
template <class F>
void for_each_piece(Pattern p, const unsigned char* text, std::size_t n, F&& f) {
    std::size_t (*next)(const unsigned char*, std::size_t, std::size_t) =
        p == Pattern::kGpt2 ? next_piece_gpt2 : p == Pattern::kCl100k ? next_piece_cl100k : next_piece_o200k;
    std::size_t pos = 0;
    while (pos < n) {
        const std::size_t end = next(text, n, pos);
        f(pos, end);
        pos = end;
    }
}

}  // namespace pg::bpe
