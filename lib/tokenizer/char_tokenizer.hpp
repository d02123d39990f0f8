// The character tokenizer: one token per Unicode code point, the vocabulary being the sorted
// set of code points of a training text (Tiny Shakespeare: 65 characters, all ASCII, so ids
// follow byte order). Serialised form: docs/tokenizer-format.md.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace pg {

class CharTokenizer final : public Tokenizer {
public:
    // The vocabulary of `text`: its distinct code points in increasing order. Invalid UTF-8 is
    // PG_ERR_TOKENIZE with the byte offset; a text without characters is
    // PG_ERR_INVALID_ARGUMENT (a tokenizer needs at least one token).
    static std::unique_ptr<CharTokenizer> from_text(std::string_view text);

    // From an explicit vocabulary: strictly increasing Unicode scalar values, at least one.
    // Throws PG_ERR_INVALID_ARGUMENT otherwise.
    explicit CharTokenizer(std::vector<uint32_t> code_points);

    // Restores from the kind-1 payload of the serialised form (the bytes after the common
    // header); deserialize_tokenizer() reads the header and dispatches here.
    static std::unique_ptr<CharTokenizer> from_payload(const uint8_t* payload, std::size_t len,
                                                       uint16_t minor_version);

    pg_tokenizer_kind kind() const override { return PG_TOKENIZER_CHAR; }
    int32_t vocab_size() const override { return int32_t(code_points_.size()); }
    std::vector<int32_t> encode(std::string_view text) const override;
    std::string decode(const int32_t* ids, std::size_t n) const override;
    int64_t token_length(int32_t id) const override {
        return id >= 0 && id < vocab_size() ? int64_t(utf8_[std::size_t(id)].size()) : -1;
    }
    std::vector<uint8_t> serialize() const override;
    std::unique_ptr<Tokenizer> clone() const override;

    // The id of a code point, or -1 if it is not in the vocabulary.
    int32_t id_of(uint32_t cp) const;
    const std::vector<uint32_t>& code_points() const { return code_points_; }

private:
    std::vector<uint32_t> code_points_;  // id -> code point, strictly increasing
    std::vector<std::string> utf8_;      // id -> its UTF-8 bytes (decode without re-encoding)
    std::array<int32_t, 128> ascii_ids_; // fast path for ASCII text: code point -> id or -1
};

}  // namespace pg
