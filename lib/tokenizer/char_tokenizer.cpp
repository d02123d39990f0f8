#include "tokenizer/char_tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/error.hpp"
#include "tokenizer/tokenizer_format.hpp"
#include "tokenizer/utf8.hpp"

namespace pg {

namespace {

std::string byte_hex(unsigned char b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", b);
    return buf;
}

// Decodes text[offset] or throws PG_ERR_TOKENIZE naming the offset and the reason.
uint32_t decode_or_throw(std::string_view text, std::size_t offset, int* length) {
    uint32_t cp = 0;
    if (const char* why = utf8::decode_at(text, offset, &cp, length))
        throw Error(PG_ERR_TOKENIZE, "invalid UTF-8 at byte offset " + std::to_string(offset) + " (byte " +
                                         byte_hex(static_cast<unsigned char>(text[offset])) + "): " + why);
    return cp;
}

}  // namespace

std::unique_ptr<CharTokenizer> CharTokenizer::from_text(std::string_view text) {
    // Which code points occur: one bit each for the whole Unicode range (139 KB).
    std::vector<bool> seen(utf8::kMaxCodePoint + 1, false);
    std::size_t distinct = 0;
    for (std::size_t i = 0; i < text.size();) {
        int n = 1;
        const uint32_t cp = decode_or_throw(text, i, &n);
        if (!seen[cp]) {
            seen[cp] = true;
            ++distinct;
        }
        i += std::size_t(n);
    }
    require(distinct > 0, PG_ERR_INVALID_ARGUMENT,
            "cannot build a character tokenizer from an empty text (no characters)");
    std::vector<uint32_t> cps;
    cps.reserve(distinct);
    for (uint32_t cp = 0; cp <= utf8::kMaxCodePoint; ++cp)
        if (seen[cp]) cps.push_back(cp);
    return std::make_unique<CharTokenizer>(std::move(cps));
}

CharTokenizer::CharTokenizer(std::vector<uint32_t> code_points) : code_points_(std::move(code_points)) {
    require(!code_points_.empty(), PG_ERR_INVALID_ARGUMENT, "character vocabulary is empty");
    ascii_ids_.fill(-1);
    utf8_.reserve(code_points_.size());
    for (std::size_t i = 0; i < code_points_.size(); ++i) {
        const uint32_t cp = code_points_[i];
        require(utf8::is_scalar_value(cp), PG_ERR_INVALID_ARGUMENT, [&] {
            return "character vocabulary entry " + std::to_string(i) + " is " + utf8::code_point_name(cp) +
                   ", not a Unicode scalar value";
        });
        require(i == 0 || cp > code_points_[i - 1], PG_ERR_INVALID_ARGUMENT,
                [&] { return "character vocabulary is not strictly increasing at entry " + std::to_string(i); });
        if (cp < 128) ascii_ids_[cp] = int32_t(i);
        std::string s;
        utf8::append(s, cp);
        utf8_.push_back(std::move(s));
    }
}

int32_t CharTokenizer::id_of(uint32_t cp) const {
    if (cp < 128) return ascii_ids_[cp];
    auto it = std::lower_bound(code_points_.begin(), code_points_.end(), cp);
    return it != code_points_.end() && *it == cp ? int32_t(it - code_points_.begin()) : -1;
}

std::vector<int32_t> CharTokenizer::encode(std::string_view text) const {
    std::vector<int32_t> ids;
    ids.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto b = static_cast<unsigned char>(text[i]);
        int n = 1;
        const uint32_t cp = b < 0x80 ? b : decode_or_throw(text, i, &n);
        const int32_t id = id_of(cp);
        if (id < 0)
            throw Error(PG_ERR_TOKENIZE, "character " + utf8::describe(cp) + " at byte offset " +
                                             std::to_string(i) + " is not in the tokenizer's vocabulary");
        ids.push_back(id);
        i += std::size_t(n);
    }
    return ids;
}

std::string CharTokenizer::decode(const int32_t* ids, std::size_t n) const {
    std::string out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const int32_t id = ids[i];
        if (id < 0 || id >= vocab_size())
            throw Error(PG_ERR_INVALID_ARGUMENT, "token id " + std::to_string(id) + " at index " +
                                                     std::to_string(i) + " is outside the vocabulary [0, " +
                                                     std::to_string(vocab_size()) + ")");
        out += utf8_[std::size_t(id)];
    }
    return out;
}

std::vector<uint8_t> CharTokenizer::serialize() const {
    namespace fmt = tokenizer_format;
    fmt::Writer w;
    fmt::write_header(w, PG_TOKENIZER_CHAR, 4 + 4 * code_points_.size());
    w.u32(uint32_t(code_points_.size()));
    for (uint32_t cp : code_points_) w.u32(cp);
    return std::move(w.data());
}

std::unique_ptr<CharTokenizer> CharTokenizer::from_payload(const uint8_t* payload, std::size_t len,
                                                           uint16_t minor_version) {
    namespace fmt = tokenizer_format;
    fmt::Reader r(payload, len, fmt::kHeaderBytes);
    const uint32_t count = r.u32("character count");
    require(count >= 1, PG_ERR_FORMAT, "serialised character tokenizer has an empty vocabulary (byte 16)");
    // Checked before allocating, so a garbage count cannot ask for gigabytes.
    if (r.remaining() / 4 < count)
        throw Error(PG_ERR_FORMAT, "serialised character tokenizer is truncated: " + std::to_string(count) +
                                       " code points declared, room for " + std::to_string(r.remaining() / 4));
    std::vector<uint32_t> cps(count);
    for (uint32_t i = 0; i < count; ++i) {
        const std::size_t at = r.offset();
        const uint32_t cp = r.u32("code point");
        if (!utf8::is_scalar_value(cp))
            throw Error(PG_ERR_FORMAT, "serialised character tokenizer: entry " + std::to_string(i) +
                                           " at byte " + std::to_string(at) + " is " + utf8::code_point_name(cp) +
                                           ", not a Unicode scalar value");
        if (i > 0 && cp <= cps[i - 1])
            throw Error(PG_ERR_FORMAT, "serialised character tokenizer: entry " + std::to_string(i) +
                                           " at byte " + std::to_string(at) + " (" + utf8::code_point_name(cp) +
                                           ") does not increase on the previous entry");
        cps[i] = cp;
    }
    // A newer minor version may append fields after the code points; this version writes none.
    if (minor_version <= fmt::kMinor && r.remaining() != 0)
        throw Error(PG_ERR_FORMAT, "serialised character tokenizer has " + std::to_string(r.remaining()) +
                                       " unexpected bytes after its code points (byte " +
                                       std::to_string(r.offset()) + ")");
    return std::make_unique<CharTokenizer>(std::move(cps));
}

std::unique_ptr<Tokenizer> CharTokenizer::clone() const { return std::make_unique<CharTokenizer>(*this); }

}  // namespace pg
