// Little-endian encoding of the fixed-size fields of file headers, and a bounds-checked reader
// that names what it was reading when a buffer ends early. Every file format in lib/io is
// little-endian; the library only builds for little-endian CPUs (x86-64, AArch64).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "lib/io stores fp32 tensors as little-endian bytes and expects a little-endian CPU"
#endif

namespace pg::io {

class ByteWriter {
public:
    template <class T>
    void put(T value) {
        static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "plain scalars only");
        const auto* p = reinterpret_cast<const uint8_t*>(&value);
        bytes_.insert(bytes_.end(), p, p + sizeof(T));
    }
    void put_bytes(const void* data, std::size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        bytes_.insert(bytes_.end(), p, p + n);
    }
    std::vector<uint8_t>& bytes() { return bytes_; }
    std::size_t size() const { return bytes_.size(); }

private:
    std::vector<uint8_t> bytes_;
};

// Reads fields from [data, data + size); reading past the end throws PG_ERR_FORMAT with
// `context` ("checkpoint section GEOM", ...) and the field's name.
class ByteReader {
public:
    ByteReader(const uint8_t* data, std::size_t size, std::string context)
        : data_(data), size_(size), context_(std::move(context)) {}

    template <class T>
    T get(const char* field) {
        T value;
        std::memcpy(&value, take(sizeof(T), field), sizeof(T));
        return value;
    }
    const uint8_t* take(std::size_t n, const char* field) {
        if (n > size_ - pos_)
            throw Error(PG_ERR_FORMAT, context_ + ": ends inside field " + field + " (at byte " +
                                           std::to_string(pos_) + " of " + std::to_string(size_) + ")");
        const uint8_t* p = data_ + pos_;
        pos_ += n;
        return p;
    }
    std::size_t position() const { return pos_; }
    std::size_t remaining() const { return size_ - pos_; }
    // Throws unless every byte was consumed (no trailing bytes).
    void expect_end() const {
        if (pos_ != size_)
            throw Error(PG_ERR_FORMAT, context_ + ": " + std::to_string(size_ - pos_) +
                                           " unexpected trailing bytes after byte " + std::to_string(pos_));
    }
    const std::string& context() const { return context_; }

private:
    const uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
    std::string context_;
};

// Overflow-checked arithmetic on sizes read from files: throws PG_ERR_FORMAT naming `what`
// (text or a function returning it, as a message of require).
template <class What>
uint64_t checked_mul(uint64_t a, uint64_t b, const What& what) {
    if (a != 0 && b > UINT64_MAX / a) throw Error(PG_ERR_FORMAT, message_text(what) + ": size overflows 64 bits");
    return a * b;
}
template <class What>
uint64_t checked_add(uint64_t a, uint64_t b, const What& what) {
    if (b > UINT64_MAX - a) throw Error(PG_ERR_FORMAT, message_text(what) + ": size overflows 64 bits");
    return a + b;
}

}  // namespace pg::io
