// Random numbers that are the same on every machine, compiler and thread count.
//
// - Rng: a sequential generator (xoshiro256**, seeded through splitmix64) whose whole state is
//   four words, so checkpoints can store it and resume bit for bit. Used for initialisation,
//   batch sampling and token sampling.
// - counter_hash / counter_uniform: a stateless hash of (seed, stream, index), used where each
//   element needs its own draw independent of evaluation order (dropout masks), so results do
//   not depend on how work is split across threads.
// std::normal_distribution and friends are implementation-defined, hence not used.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/counter_hash_constants.hpp"

namespace pg {

inline uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

class Rng {
public:
    explicit Rng(uint64_t seed = 0) { reseed(seed); }
    void reseed(uint64_t seed) {
        uint64_t x = seed;
        for (auto& w : s_) w = splitmix64(x);
    }
    uint64_t next_u64() {
        uint64_t result = rotl(s_[1] * 5, 7) * 9;
        uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    // Uniform integer in [0, n), n > 0, without modulo bias (rejection).
    uint64_t below(uint64_t n) {
        uint64_t limit = UINT64_MAX - UINT64_MAX % n;
        uint64_t r;
        do r = next_u64(); while (r >= limit);
        return r % n;
    }
    // Uniform in [0, 1) with 53 bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
    // Standard normal by Box-Muller (one value per call, no cached state).
    double normal() {
        double u1 = uniform(), u2 = uniform();
        if (u1 < 1e-300) u1 = 1e-300;
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

    // The state, for checkpoints.
    void get_state(uint64_t out[4]) const {
        for (int i = 0; i < 4; ++i) out[i] = s_[i];
    }
    void set_state(const uint64_t in[4]) {
        for (int i = 0; i < 4; ++i) s_[i] = in[i];
    }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

// Stateless 64-bit hash of (seed, stream, index).
inline uint64_t counter_hash(uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t x = seed ^ (stream * kCounterStreamMul) ^ (index * kCounterIndexMul);
    x = (x ^ (x >> 32)) * kCounterMixMul;
    x = (x ^ (x >> 32)) * kCounterMixMul;
    return x ^ (x >> 32);
}

// Uniform in [0, 1) with 24 bits, from counter_hash.
inline float counter_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return static_cast<float>(counter_hash(seed, stream, index) >> 40) * 0x1.0p-24f;
}

}  // namespace pg
