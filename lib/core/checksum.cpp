#include "core/checksum.hpp"

#include <cstring>

namespace pg::io {

namespace {

constexpr uint64_t kP1 = 11400714785074694791ull;
constexpr uint64_t kP2 = 14029467366897019727ull;
constexpr uint64_t kP3 = 1609587929392839161ull;
constexpr uint64_t kP4 = 9650029242287828579ull;
constexpr uint64_t kP5 = 2870177450012600261ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
// Little-endian loads (the library only targets little-endian CPUs, see file_io.hpp).
inline uint64_t load64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline uint32_t load32(const unsigned char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline uint64_t round(uint64_t acc, uint64_t input) {
    acc += input * kP2;
    acc = rotl(acc, 31);
    return acc * kP1;
}
inline uint64_t merge_round(uint64_t acc, uint64_t val) {
    acc ^= round(0, val);
    return acc * kP1 + kP4;
}

}  // namespace

Xxh64::Xxh64(uint64_t seed) : seed_(seed) {
    acc_[0] = seed + kP1 + kP2;
    acc_[1] = seed + kP2;
    acc_[2] = seed;
    acc_[3] = seed - kP1;
}

void Xxh64::update(const void* data, std::size_t len) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    total_ += len;
    if (buffered_ + len < 32) {
        if (len) std::memcpy(buffer_ + buffered_, p, len);
        buffered_ += len;
        return;
    }
    if (buffered_) {  // complete the pending stripe first
        std::size_t fill = 32 - buffered_;
        std::memcpy(buffer_ + buffered_, p, fill);
        for (int i = 0; i < 4; ++i) acc_[i] = round(acc_[i], load64(buffer_ + 8 * i));
        p += fill;
        len -= fill;
        buffered_ = 0;
    }
    while (len >= 32) {
        for (int i = 0; i < 4; ++i) acc_[i] = round(acc_[i], load64(p + 8 * i));
        p += 32;
        len -= 32;
    }
    if (len) std::memcpy(buffer_, p, len);
    buffered_ = len;
}

uint64_t Xxh64::digest() const {
    uint64_t h;
    if (total_ >= 32) {
        h = rotl(acc_[0], 1) + rotl(acc_[1], 7) + rotl(acc_[2], 12) + rotl(acc_[3], 18);
        for (int i = 0; i < 4; ++i) h = merge_round(h, acc_[i]);
    } else {
        h = seed_ + kP5;
    }
    h += total_;
    const unsigned char* p = buffer_;
    std::size_t len = buffered_;
    while (len >= 8) {
        h ^= round(0, load64(p));
        h = rotl(h, 27) * kP1 + kP4;
        p += 8;
        len -= 8;
    }
    if (len >= 4) {
        h ^= uint64_t(load32(p)) * kP1;
        h = rotl(h, 23) * kP2 + kP3;
        p += 4;
        len -= 4;
    }
    while (len > 0) {
        h ^= (*p) * kP5;
        h = rotl(h, 11) * kP1;
        ++p;
        --len;
    }
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
}

uint64_t xxh64(const void* data, std::size_t len, uint64_t seed) {
    Xxh64 h(seed);
    h.update(data, len);
    return h.digest();
}

}  // namespace pg::io
