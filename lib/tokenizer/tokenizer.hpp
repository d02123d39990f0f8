// The tokenizer interface shared by the character tokenizer (now) and byte-level BPE (later).
// Implementations throw pg::Error(PG_ERR_TOKENIZE, ...) for text they cannot encode, naming
// the offending character and its byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "phonegpt/phonegpt.h"

namespace pg {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    virtual pg_tokenizer_kind kind() const = 0;
    virtual int32_t vocab_size() const = 0;
    virtual std::vector<int32_t> encode(std::string_view text) const = 0;
    // Throws PG_ERR_INVALID_ARGUMENT for an id outside the vocabulary. The bytes of a sequence
    // are the concatenation of its ids' bytes (what token_length counts).
    virtual std::string decode(const int32_t* ids, std::size_t n) const = 0;
    // The number of bytes decode() gives for the one id, or -1 for an id it refuses (outside
    // the vocabulary, or a gap in a BPE id range). Bits per byte in evaluation count with it.
    virtual int64_t token_length(int32_t id) const = 0;
    // Self-describing bytes: kind, format version, vocabulary (docs/tokenizer-format.md).
    virtual std::vector<uint8_t> serialize() const = 0;
    virtual std::unique_ptr<Tokenizer> clone() const = 0;
};

// Restores any kind of tokenizer from serialize()'s bytes; validates everything and throws
// PG_ERR_FORMAT / PG_ERR_VERSION with a message naming the problem.
std::unique_ptr<Tokenizer> deserialize_tokenizer(const uint8_t* data, std::size_t len);

}  // namespace pg
