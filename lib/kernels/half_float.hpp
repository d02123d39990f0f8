// The 16-bit float formats a frozen weight may be stored in, decoded to fp32 one value at a
// time: the scalar definition the SIMD conversions (KernelTable::half_to_float, the GEMM's B
// packing) are tested against, and their scalar tail. Both conversions are exact: every fp16
// and every bf16 value is an fp32 value.
#pragma once

#include <cstdint>
#include <cstring>

namespace pg::kernels {

inline float float_from_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits.
inline float fp16_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
    if (exponent == 0x1f)  // inf, NaN (the payload kept, quiet bit set as hardware does)
        return float_from_bits(sign | 0x7f800000u | (fraction << 13) | (fraction ? 0x400000u : 0));
    if (exponent != 0)  // normal: rebias 15 -> 127
        return float_from_bits(sign | ((exponent + 112) << 23) | (fraction << 13));
    if (fraction == 0) return float_from_bits(sign);  // +-0
    // Subnormal: fraction * 2^-24, normal in fp32. Shift the leading 1 into the implicit bit.
    int shift = 0;
    uint32_t f = fraction;
    while (!(f & 0x400)) {
        f <<= 1;
        ++shift;
    }
    return float_from_bits(sign | (uint32_t(113 - shift) << 23) | ((f & 0x3ff) << 13));
}

// bfloat16: the top half of an fp32.
inline float bf16_to_float(uint16_t b) { return float_from_bits(uint32_t(b) << 16); }

}  // namespace pg::kernels
