// The four pre-tokenizer scanners. Each function is the regex of bpe_pretokenize.hpp tried at
// one position: alternatives in order, the first that matches wins, and within one the
// longest match that backtracking would find first.
#include "tokenizer/bpe_pretokenize.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

#include "tokenizer/bpe_unicode.hpp"

namespace pg::bpe {

namespace {

const char* const kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kCl100kRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2.5's and Qwen3's: cl100k's with one digit a piece.
const char* const kQwenRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Text {
    const unsigned char* p;
    std::size_t n;
    Char at(std::size_t i) const { return decode_char(p + i, p + n); }
};

// [^\s\p{L}\p{N}]
inline bool is_other(uint8_t c) { return !is_space(c) && !is_letter(c) && !is_number(c); }
inline bool is_newline(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// The end of the run of characters satisfying pred that starts at i.
template <class Pred>
std::size_t run_end(const Text& t, std::size_t i, Pred pred) {
    while (i < t.n) {
        const Char c = t.at(i);
        if (!pred(c)) break;
        i += c.len;
    }
    return i;
}

// The end of the run of characters satisfying pred that starts at i, where the ASCII members
// of pred's class are exactly the bytes Lo..Hi (after setting bit 5 when FoldCase: A-Z and a-z
// alike). ASCII members go 8 bytes at a time while 8 remain, with a few word operations; at the
// first other byte the run goes on character by character through pred, and back to 8 at a
// time after a non-ASCII member. (pred decides every byte the word test stops at, so the word
// test only has to accept nothing outside the class.)
template <bool FoldCase, unsigned char Lo, unsigned char Hi, class Pred>
inline std::size_t ascii_fast_run(const Text& t, std::size_t i, Pred pred) {
    static_assert(Lo <= Hi && Hi < 0x80, "an ASCII range");
    for (;;) {
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        constexpr uint64_t kHigh = 0x8080808080808080ull, kOnes = 0x0101010101010101ull;
        while (i + 8 <= t.n) {
            uint64_t x;
            std::memcpy(&x, t.p + i, 8);
            const uint64_t low7 = (FoldCase ? x | 0x20 * kOnes : x) & ~kHigh;  // no carry between bytes below
            const uint64_t at_least_lo = low7 + (0x80 - Lo) * kOnes;
            const uint64_t above_hi = low7 + (0x80 - Hi - 1) * kOnes;
            const uint64_t stop = ~(at_least_lo & ~above_hi & ~x) & kHigh;  // bit 7 of each non-member
            if (stop == 0) {
                i += 8;
                continue;
            }
            i += std::size_t(__builtin_ctzll(stop)) >> 3;  // the first byte in memory is the lowest
            break;
        }
#endif
        if (i >= t.n) return i;
        const Char c = t.at(i);
        if (!pred(c)) return i;
        i += c.len;
    }
}

// The run of \p{L} from i (ASCII: A-Z, a-z).
inline std::size_t letter_run(const Text& t, std::size_t i) {
    return ascii_fast_run<true, 'a', 'z'>(t, i, [](const Char& c) { return is_letter(c.cls); });
}
// o200k's runs of [\p{Ll}\p{Lm}\p{Lo}\p{M}] (ASCII: a-z) and [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (A-Z).
inline std::size_t lowerish_run(const Text& t, std::size_t i) {
    return ascii_fast_run<false, 'a', 'z'>(t, i, [](const Char& c) { return is_lowerish(c.cls); });
}
inline std::size_t upperish_run(const Text& t, std::size_t i) {
    return ascii_fast_run<false, 'A', 'Z'>(t, i, [](const Char& c) { return is_upperish(c.cls); });
}

// \s+(?!\S)|\s+ at the whitespace character i (gpt2's whitespace alternatives): the whole run
// at the end of the text, else the run without its last character, else that one character.
std::size_t gpt2_space(const Text& t, std::size_t i) {
    std::size_t last = i, j = i;
    while (j < t.n) {
        const Char c = t.at(j);
        if (!is_space(c.cls)) break;
        last = j;
        j += c.len;
    }
    if (j == t.n || last == i) return j;
    return last;
}

// \s*[\r\n]+|\s+(?!\S)|\s+ (cl100k and o200k): up to the run's last \r or \n if it has one,
// else as gpt2_space.
std::size_t newline_space(const Text& t, std::size_t i) {
    std::size_t last = i, j = i, after_newline = 0;
    while (j < t.n) {
        const Char c = t.at(j);
        if (!is_space(c.cls)) break;
        last = j;
        j += c.len;
        if (is_newline(c.cp)) after_newline = j;
    }
    if (after_newline != 0) return after_newline;
    if (j == t.n || last == i) return j;
    return last;
}

// Case-insensitive (Unicode simple folding) match of the contraction letters after an
// apostrophe at i: 's 't 're 've 'm 'll 'd. Returns the end, or 0.
std::size_t contraction_ci(const Text& t, std::size_t i) {
    if (i + 1 >= t.n || t.p[i] != '\'') return 0;
    const Char c = t.at(i + 1);
    switch (c.cp) {
        case 's': case 'S': case 0x17F: case 't': case 'T': case 'm': case 'M': case 'd': case 'D':
            return i + 1 + c.len;
        default: break;
    }
    if (i + 2 >= t.n) return 0;
    const unsigned a = t.p[i + 1] | 0x20u, b = t.p[i + 2] | 0x20u;  // ASCII lower case
    const bool ascii = t.p[i + 1] < 0x80 && t.p[i + 2] < 0x80;
    if (ascii && ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))) return i + 3;
    return 0;
}

// o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ from s (first
// alternative) with backtracking: the end of the match, or 0 for no match.
std::size_t o200k_lower_word(const Text& t, std::size_t s) {
    std::size_t j = s, last_lower_end = 0;
    while (j < t.n) {  // the greedy upper-ish run, remembering its last lower-ish character
        const Char c = t.at(j);
        if (!is_upperish(c.cls)) break;
        j += c.len;
        if (is_lowerish(c.cls)) last_lower_end = j;
    }
    if (j < t.n && is_lowerish(t.at(j).cls)) return lowerish_run(t, j);
    // Backtrack: the upper-ish run gives back characters until one that is also lower-ish
    // can start the lower-ish run; that run then ends right after it.
    return last_lower_end;
}

// o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* from s (second
// alternative), or 0.
std::size_t o200k_upper_word(const Text& t, std::size_t s) {
    const std::size_t j = upperish_run(t, s);
    if (j == s) return 0;
    return lowerish_run(t, j);
}

inline std::size_t with_contraction(const Text& t, std::size_t end) {
    if (end >= t.n || t.p[end] != '\'') return end;
    const std::size_t c = contraction_ci(t, end);
    return c ? c : end;
}

// \p{N}{1,MaxDigits} at the number character i.
template <int MaxDigits = 3>
std::size_t numbers_up_to(const Text& t, std::size_t i) {
    std::size_t j = i;
    for (int k = 0; k < MaxDigits && j < t.n; ++k) {
        const Char d = t.at(j);
        if (!is_number(d.cls)) break;
        j += d.len;
    }
    return j;
}

// ' ?[^\s\p{L}\p{N}]+' followed by a run of `tail` characters (cl100k: [\r\n]*, o200k:
// [\r\n/]*) at i, or 0 when it does not match there.
template <class Tail>
std::size_t other_run(const Text& t, std::size_t i, const Char& c, Tail tail) {
    std::size_t start;
    if (is_other(c.cls)) start = i;
    else if (c.cp == ' ' && i + 1 < t.n && is_other(t.at(i + 1).cls)) start = i + 1;
    else return 0;
    const std::size_t j = run_end(t, start, [](const Char& x) { return is_other(x.cls); });
    return run_end(t, j, tail);
}

// The pattern at position i (< n): the end of the piece that starts there.
[[gnu::always_inline]] inline std::size_t gpt2_piece(const unsigned char* text, std::size_t n, std::size_t i) {
    const Text t{text, n};
    const Char c = t.at(i);
    if (c.cp == '\'' && i + 1 < n) {  // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
        const unsigned char a = text[i + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if (i + 2 < n) {
            const unsigned char b = text[i + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
        }
    }
    std::size_t start = i;
    uint8_t cls = c.cls;
    if (c.cp == ' ' && i + 1 < n) {  // ' ?' before a letter, number or other run
        const uint8_t next = t.at(i + 1).cls;
        if (!is_space(next)) start = i + 1, cls = next;
    }
    if (is_letter(cls)) return letter_run(t, start);
    if (is_number(cls)) return run_end(t, start, [](const Char& x) { return is_number(x.cls); });
    if (!is_space(cls)) return run_end(t, start, [](const Char& x) { return is_other(x.cls); });
    return gpt2_space(t, i);
}

// cl100k (MaxDigits 3) and Qwen (1).
template <int MaxDigits>
[[gnu::always_inline]] inline std::size_t cl100k_piece(const unsigned char* text, std::size_t n, std::size_t i) {
    const Text t{text, n};
    if (text[i] == '\'')
        if (const std::size_t e = contraction_ci(t, i)) return e;
    const Char c = t.at(i);
    if (is_letter(c.cls)) return letter_run(t, i);
    // [^\r\n\p{L}\p{N}]?\p{L}+ with the optional character present
    if (!is_newline(c.cp) && !is_number(c.cls) && i + c.len < n && is_letter(t.at(i + c.len).cls))
        return letter_run(t, i + c.len);
    if (is_number(c.cls)) return numbers_up_to<MaxDigits>(t, i);
    if (const std::size_t e = other_run(t, i, c, [](const Char& x) { return is_newline(x.cp); })) return e;
    return newline_space(t, i);
}

[[gnu::always_inline]] inline std::size_t o200k_piece(const unsigned char* text, std::size_t n, std::size_t i) {
    const Text t{text, n};
    const Char c = t.at(i);
    // [^\r\n\p{L}\p{N}]? : tried with the character first, then without it.
    const bool optional_prefix = !is_newline(c.cp) && !is_letter(c.cls) && !is_number(c.cls);
    const std::size_t after_prefix = i + c.len;
    if (optional_prefix && after_prefix < n)
        if (const std::size_t e = o200k_lower_word(t, after_prefix)) return with_contraction(t, e);
    if (const std::size_t e = o200k_lower_word(t, i)) return with_contraction(t, e);
    if (optional_prefix && after_prefix < n)
        if (const std::size_t e = o200k_upper_word(t, after_prefix)) return with_contraction(t, e);
    if (const std::size_t e = o200k_upper_word(t, i)) return with_contraction(t, e);
    if (is_number(c.cls)) return numbers_up_to(t, i);
    if (const std::size_t e = other_run(t, i, c, [](const Char& x) { return is_newline(x.cp) || x.cp == '/'; }))
        return e;
    return newline_space(t, i);
}

// Up to max pieces from pos on, with the scanner inlined in the loop.
template <std::size_t (*Piece)(const unsigned char*, std::size_t, std::size_t)>
std::size_t split_with(const unsigned char* text, std::size_t n, std::size_t pos, std::size_t* ends, std::size_t max) {
    std::size_t k = 0;
    while (k < max && pos < n) ends[k++] = pos = Piece(text, n, pos);
    return k;
}

}  // namespace

const char* pattern_regex(Pattern p) {
    switch (p) {
        case Pattern::kGpt2: return kGpt2Regex;
        case Pattern::kCl100k: return kCl100kRegex;
        case Pattern::kO200k: return kO200kRegex;
        case Pattern::kQwen: return kQwenRegex;
        case Pattern::kRegex: break;
    }
    return "";
}

const char* pattern_name(Pattern p) {
    switch (p) {
        case Pattern::kGpt2: return "gpt2";
        case Pattern::kCl100k: return "cl100k";
        case Pattern::kO200k: return "o200k";
        case Pattern::kQwen: return "qwen";
        case Pattern::kRegex: return "regex";
    }
    return "";
}

bool pattern_from_regex(const std::string& regex, Pattern* out) {
    for (Pattern p : {Pattern::kGpt2, Pattern::kCl100k, Pattern::kO200k, Pattern::kQwen}) {
        if (regex == pattern_regex(p)) {
            *out = p;
            return true;
        }
    }
    return false;
}

std::size_t split_pieces(Pattern p, const unsigned char* text, std::size_t n, std::size_t pos, std::size_t* ends,
                         std::size_t max) {
    switch (p) {
        case Pattern::kGpt2: return split_with<gpt2_piece>(text, n, pos, ends, max);
        case Pattern::kCl100k: return split_with<cl100k_piece<3>>(text, n, pos, ends, max);
        case Pattern::kO200k: return split_with<o200k_piece>(text, n, pos, ends, max);
        case Pattern::kQwen: return split_with<cl100k_piece<1>>(text, n, pos, ends, max);
        case Pattern::kRegex: break;
    }
    throw Error(PG_ERR_INTERNAL, std::string("split_pieces has no scanner for pattern ") + pattern_name(p));
}

}  // namespace pg::bpe
