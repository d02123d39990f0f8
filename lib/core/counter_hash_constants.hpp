// The multipliers of pg::counter_hash (core/rng.hpp), in a header of their own so that the SIMD
// dropout kernels (kernels/simd/) compute the same hash from the same numbers: an instruction
// set's translation unit includes no header with inline functions, since the linker could take
// such a function's AVX-512 build for code that runs on a lesser CPU.
#pragma once

#include <cstdint>

namespace pg {

constexpr uint64_t kCounterStreamMul = 0xD1B54A32D192ED03ull;
constexpr uint64_t kCounterIndexMul = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kCounterMixMul = 0xD6E8FEB86659FD93ull;

}  // namespace pg
