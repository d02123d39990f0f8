// XXH64 (Yann Collet's xxHash, 64-bit variant), written here from its specification so the
// native checkpoint needs no extra dependency. Why XXH64 for per-tensor checksums: it runs at
// memory speed on phone and desktop cores alike (a PhoneGPT checkpoint is hashed in ~1 ms),
// 64 bits make an undetected random corruption of a tensor practically impossible, and it is a
// published, widely implemented function (Python: `xxhash.xxh64`), so other tools can check
// files. It is not a cryptographic hash: signatures (Ed25519) are a separate layer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pg::io {

// XXH64 of `len` bytes; test vectors: "" -> 0xEF46DB3751D8E999, "abc" -> 0x44BC2CF5AD770999.
uint64_t xxh64(const void* data, std::size_t len, uint64_t seed = 0);

// Incremental XXH64 over several pieces (same result as xxh64 over their concatenation).
class Xxh64 {
public:
    explicit Xxh64(uint64_t seed = 0);
    void update(const void* data, std::size_t len);
    uint64_t digest() const;

private:
    uint64_t acc_[4];
    uint64_t seed_;
    uint64_t total_ = 0;
    unsigned char buffer_[32];
    std::size_t buffered_ = 0;
};

}  // namespace pg::io
