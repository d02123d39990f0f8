// A tokenizer.json Split regex that is none of the built-in patterns (bpe_pretokenize.hpp), run
// by PCRE2 with UTF and Unicode properties (\p{L}, \s, (?i) by Unicode rules), as Hugging Face
// runs it with Oniguruma: every match is a piece and so is every stretch between two matches
// (behavior Isolated); an empty match makes no piece and the search goes on one character
// later. Bytes that are not UTF-8 never match, so they end up in the stretches between matches.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

struct pcre2_real_code_8;

namespace pg::bpe {

class SplitRegex {
public:
    // PG_ERR_FORMAT naming `where` and the offset for a pattern PCRE2 does not compile.
    SplitRegex(const std::string& pattern, const std::string& where);
    const std::string& pattern() const { return pattern_; }
    // The ends of the pieces of text[0, n) in order (the last is n; none for empty text).
    void piece_ends(const unsigned char* text, std::size_t n, std::vector<std::size_t>& ends) const;

private:
    std::string pattern_;
    std::shared_ptr<pcre2_real_code_8> code_;
};

}  // namespace pg::bpe
