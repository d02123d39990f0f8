// Reading the common header of a serialised tokenizer and dispatching on its kind.
#include "tokenizer/tokenizer.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "tokenizer/char_tokenizer.hpp"
#include "tokenizer/tokenizer_format.hpp"

namespace pg {

namespace tokenizer_format {

void write_header(Writer& w, pg_tokenizer_kind kind, std::size_t payload_bytes) {
    require(payload_bytes <= std::numeric_limits<uint32_t>::max(), PG_ERR_INVALID_ARGUMENT,
            "tokenizer is too large to serialise (" + std::to_string(payload_bytes) + " bytes)");
    w.bytes(kMagic, sizeof kMagic);
    w.u16(kMajor);
    w.u16(kMinor);
    w.u32(uint32_t(kind));
    w.u32(uint32_t(payload_bytes));
}

}  // namespace tokenizer_format

std::unique_ptr<Tokenizer> deserialize_tokenizer(const uint8_t* data, std::size_t len) {
    namespace fmt = tokenizer_format;
    require(data != nullptr || len == 0, PG_ERR_INVALID_ARGUMENT, "serialised tokenizer is NULL");
    if (len < sizeof fmt::kMagic || std::memcmp(data, fmt::kMagic, sizeof fmt::kMagic) != 0)
        throw Error(PG_ERR_FORMAT, "not a serialised tokenizer: the first 4 bytes are not \"PGTK\"");
    fmt::Reader r(data + sizeof fmt::kMagic, len - sizeof fmt::kMagic, sizeof fmt::kMagic);
    const uint16_t major = r.u16("format major version");
    const uint16_t minor = r.u16("format minor version");
    if (major > fmt::kMajor)
        throw Error(PG_ERR_VERSION, "serialised tokenizer has format version " + std::to_string(major) +
                                        "." + std::to_string(minor) + "; this library reads " +
                                        std::to_string(fmt::kMajor) + ".x and older");
    require(major >= 1, PG_ERR_FORMAT, "serialised tokenizer has format major version 0, which was never written");
    const uint32_t kind = r.u32("kind");
    const uint32_t payload_bytes = r.u32("payload length");
    if (r.remaining() != payload_bytes)
        throw Error(PG_ERR_FORMAT, "serialised tokenizer declares a " + std::to_string(payload_bytes) +
                                       "-byte payload but " + std::to_string(r.remaining()) +
                                       " bytes follow the 16-byte header" +
                                       (r.remaining() < payload_bytes ? " (truncated)" : " (trailing bytes)"));
    const uint8_t* payload = data + fmt::kHeaderBytes;
    switch (kind) {
        case PG_TOKENIZER_CHAR:
            return CharTokenizer::from_payload(payload, payload_bytes, minor);
        case PG_TOKENIZER_BPE:
            return BpeTokenizer::from_payload(payload, payload_bytes, minor);
        default:
            throw Error(PG_ERR_FORMAT, "serialised tokenizer has unknown kind " + std::to_string(kind) +
                                           " at byte 8 (1 = character, 2 = byte-level BPE)");
    }
}

}  // namespace pg
