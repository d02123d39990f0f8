// PCRE2 behind SplitRegex (bpe_regex.hpp).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/bpe_regex.hpp"

#include <pcre2.h>

#include "core/error.hpp"

namespace pg::bpe {

SplitRegex::SplitRegex(const std::string& pattern, const std::string& where) : pattern_(pattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
    if (!code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        throw Error(PG_ERR_FORMAT, where + " does not compile at character " + std::to_string(offset) + ": " +
                                       reinterpret_cast<const char*>(message));
    }
    code_.reset(code, pcre2_code_free);
    // Machine code where the platform allows it; the interpreter otherwise (same matches).
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
}

void SplitRegex::piece_ends(const unsigned char* text, std::size_t n, std::vector<std::size_t>& ends) const {
    const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(code_.get(), nullptr), pcre2_match_data_free);
    require(match != nullptr, PG_ERR_OUT_OF_MEMORY, "Split regex: no memory for its match data");
    std::size_t from = 0, piece_start = 0;
    while (from <= n) {
        const int rc = pcre2_match(code_.get(), text, n, from, 0, match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        require(rc >= 0, PG_ERR_TOKENIZE, "Split regex matching failed at byte " + std::to_string(from) +
                                              " (PCRE2 error " + std::to_string(rc) + ", e.g. its match limit)");
        const PCRE2_SIZE* at = pcre2_get_ovector_pointer(match.get());
        const std::size_t begin = at[0], end = at[1];
        if (begin > piece_start) ends.push_back(piece_start = begin);
        if (end > begin) {
            ends.push_back(end);
            piece_start = from = end;
            continue;
        }
        // Empty: no piece; go on one character later (a UTF-8 lead byte's length, one byte
        // for a byte that is not UTF-8).
        if (begin >= n) break;
        std::size_t next = begin + 1;
        while (next < n && (text[next] & 0xC0) == 0x80 && next - begin < 4) ++next;
        from = next;
    }
    if (piece_start < n) ends.push_back(n);
}

}  // namespace pg::bpe
