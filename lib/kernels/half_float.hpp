// The 16-bit float formats a frozen weight may be stored in, decoded to fp32 one value at a
// time: the scalar definition the SIMD conversions (KernelTable::half_to_float, the GEMM's B
// packing) are tested against, and their scalar tail. Both conversions are exact: every fp16
// and every bf16 value is an fp32 value. The encoders (fp32 to the nearest 16-bit value, ties
// to even, as F16C's VCVTPS2PH and torch's .half() / .bfloat16() round) run once, when a model's
// frozen weights are converted (model/weight_storage.hpp), so they are scalar only.
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

inline uint32_t bits_of_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// The nearest fp16 (ties to even); beyond 65504 (from the halfway point 65520 on) +-inf, NaN
// stays a quiet NaN with the top of its payload.
inline uint16_t float_to_fp16(float f) {
    const uint32_t u = bits_of_float(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((a >> 13) & 0x3ff));  // NaN
    if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00);                       // overflow, inf
    if (a >= 0x38800000u)  // normal in fp16 (>= 2^-14): rebias 127 -> 15 and round the low 13 bits
        return uint16_t(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1)) >> 13));
    // Subnormal in fp16: round (1.m * 2^e) * 2^24 to an integer, ties to even.
    const int exponent = int(a >> 23);
    const int shift = 126 - exponent;  // >= 14 here
    if (shift >= 25) return sign;      // below half the smallest subnormal (fp32 subnormals too)
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return uint16_t(sign | q);
}

// The nearest bfloat16 (ties to even; NaN stays a quiet NaN).
inline uint16_t float_to_bf16(float f) {
    const uint32_t u = bits_of_float(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

}  // namespace pg::kernels
