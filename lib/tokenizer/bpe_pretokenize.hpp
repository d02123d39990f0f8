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
//   qwen (Qwen2.5, Qwen3): cl100k's with \p{N} in place of \p{N}{1,3}
// (?i) follows Unicode simple case folding, so 's also matches U+017F LATIN SMALL LETTER LONG S.
// Bytes that are not valid UTF-8 count as one character each in the class [^\s\p{L}\p{N}].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pg::bpe {

// kRegex: none of these; the tokenizer runs its file's own regex (bpe_regex.hpp) and never
// calls split_pieces with it.
enum class Pattern : uint32_t { kGpt2 = 1, kCl100k = 2, kO200k = 3, kQwen = 4, kRegex = 5 };

// The pattern's regular expression text (as above) and its short name ("gpt2", "cl100k",
// "o200k", "qwen").
const char* pattern_regex(Pattern p);
const char* pattern_name(Pattern p);
// The pattern whose regex text is `regex` exactly (the strings above), or false.
bool pattern_from_regex(const std::string& regex, Pattern* out);

// The pieces of text[0, n) that start at `pos` and after, in order: the end of each (the match
// of the pattern where the previous one ended) into ends[0, k), k <= max; returns k, which is 0
// only when pos == n. A batch per call keeps the scanner inlined in its loop (a call per piece
// cost more than many pieces' scanning).
std::size_t split_pieces(Pattern p, const unsigned char* text, std::size_t n, std::size_t pos, std::size_t* ends,
                         std::size_t max);

// Pieces per split_pieces call in for_each_piece and the encoder.
constexpr std::size_t kPieceBatch = 256;

// Calls f(begin, end) for every piece of text[0, n) in order.
template <class F>
void for_each_piece(Pattern p, const unsigned char* text, std::size_t n, F&& f) {
    std::size_t ends[kPieceBatch];
    std::size_t pos = 0;
    while (pos < n) {
        const std::size_t k = split_pieces(p, text, n, pos, ends, kPieceBatch);
        for (std::size_t i = 0; i < k; ++i) {
            f(pos, ends[i]);
            pos = ends[i];
        }
    }
}

}  // namespace pg::bpe
