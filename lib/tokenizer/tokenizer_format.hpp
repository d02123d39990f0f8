// The common header of every serialised tokenizer (docs/tokenizer-format.md), and the
// little-endian field reader/writer that the kinds use for their payloads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace pg::tokenizer_format {

// "PGTK" then format major.minor, kind, payload length: 16 bytes.
constexpr uint8_t kMagic[4] = {'P', 'G', 'T', 'K'};
constexpr uint16_t kMajor = 1;  // a reader rejects a newer major (PG_ERR_VERSION)
constexpr uint16_t kMinor = 0;  // a newer minor only appends payload fields, which are skipped
constexpr std::size_t kHeaderBytes = 16;

class Writer {
public:
    void u16(uint16_t v) { put(v, 2); }
    void u32(uint32_t v) { put(v, 4); }
    void bytes(const uint8_t* p, std::size_t n) { out_.insert(out_.end(), p, p + n); }
    std::vector<uint8_t>& data() { return out_; }

private:
    void put(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) out_.push_back(uint8_t(v >> (8 * i)));
    }
    std::vector<uint8_t> out_;
};

// Reads fields in order; running past the end is PG_ERR_FORMAT naming the field and offset.
class Reader {
public:
    Reader(const uint8_t* data, std::size_t len, std::size_t base_offset)
        : data_(data), len_(len), base_(base_offset) {}
    uint16_t u16(const char* field) { return uint16_t(get(2, field)); }
    uint32_t u32(const char* field) { return uint32_t(get(4, field)); }
    // The next n bytes (a view into the input), or PG_ERR_FORMAT naming the field.
    const uint8_t* bytes(std::size_t n, const char* field) {
        if (remaining() < n)
            throw Error(PG_ERR_FORMAT, std::string("serialised tokenizer is truncated: ") + field +
                                           " at byte " + std::to_string(offset()) + " needs " +
                                           std::to_string(n) + " bytes, " +
                                           std::to_string(remaining()) + " left");
        const uint8_t* p = data_ + pos_;
        pos_ += n;
        return p;
    }
    std::size_t offset() const { return base_ + pos_; }
    std::size_t remaining() const { return len_ - pos_; }

private:
    uint64_t get(int n, const char* field) {
        if (remaining() < std::size_t(n))
            throw Error(PG_ERR_FORMAT, std::string("serialised tokenizer is truncated: ") + field +
                                           " at byte " + std::to_string(offset()) + " needs " +
                                           std::to_string(n) + " bytes, " +
                                           std::to_string(remaining()) + " left");
        uint64_t v = 0;
        for (int i = 0; i < n; ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
        pos_ += std::size_t(n);
        return v;
    }
    const uint8_t* data_;
    std::size_t len_;
    std::size_t base_;
    std::size_t pos_ = 0;
};

// Writes the header for a payload of `payload_bytes` bytes of the given kind.
void write_header(Writer& w, pg_tokenizer_kind kind, std::size_t payload_bytes);

}  // namespace pg::tokenizer_format
