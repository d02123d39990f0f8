// Fast exp and tanh on xsimd batches, for softmax and GELU. Included only by the per-arch
// translation units.
//
// Error bounds (checked by tests/unit/test_kernels.cpp over the whole range, against double
// std::exp / std::tanh):
//   fast_exp:  relative error <= 4e-7 for x in [-87, 88]; x > 88.37 gives the clamped value
//              exp(88.37) (no inf), x < -87.33 gives exp(-87.33) ~ 1.2e-38 (absolute error
//              < 1.2e-38). Input NaN is not supported (the caller subtracts a finite max).
//   fast_tanh: absolute error <= 6e-7 for all finite x.
//   fast_sigmoid: 1 / (1 + fast_exp(-x)), absolute error <= 2e-7 for all finite x (8.9e-8
//              worst over 4M points of [-100, 100] on AVX-512; checked through GELU, which
//              needs absolute error: it is x sigmoid(2u)).
#pragma once

#include <cstdint>

#include <xsimd/xsimd.hpp>

// An anonymous namespace: every arch TU gets its own internal copy (see simd_kernels.hpp).
namespace pg::kernels::simd {
namespace {

template <class Arch>
xsimd::batch<float, Arch> fast_exp(xsimd::batch<float, Arch> x) {
    using B = xsimd::batch<float, Arch>;
    using I = xsimd::batch<int32_t, Arch>;
    // Range reduction: x = n ln2 + r, |r| <= ln2/2; exp(x) = 2^n exp(r). The clamp keeps
    // n in [-126, 127] so 2^n is a normal float built from its exponent bits.
    x = xsimd::min(xsimd::max(x, B(-87.3365f)), B(88.3762f));
    B n = xsimd::nearbyint(x * B(1.44269504088896341f));
    // ln2 split in two (Cody-Waite) so n * ln2_hi is exact.
    B r = xsimd::fnma(n, B(0.693359375f), x);
    r = xsimd::fnma(n, B(-2.12194440e-4f), r);
    // Minimax polynomial for (exp(r) - 1 - r) / r^2 on [-ln2/2, ln2/2] (Cephes expf).
    B p = B(1.9875691500e-4f);
    p = xsimd::fma(p, r, B(1.3981999507e-3f));
    p = xsimd::fma(p, r, B(8.3334519073e-3f));
    p = xsimd::fma(p, r, B(4.1665795894e-2f));
    p = xsimd::fma(p, r, B(1.6666665459e-1f));
    p = xsimd::fma(p, r, B(5.0000001201e-1f));
    B e = xsimd::fma(p, r * r, r) + B(1.0f);
    I bits = (xsimd::to_int(n) + I(127)) << 23;
    return e * xsimd::bitwise_cast<B>(bits);
}

template <class Arch>
xsimd::batch<float, Arch> fast_tanh(xsimd::batch<float, Arch> x) {
    using B = xsimd::batch<float, Arch>;
    // tanh(x) = 1 - 2 / (exp(2x) + 1); beyond |x| = 10 tanh rounds to 1 in float.
    x = xsimd::min(xsimd::max(x, B(-10.0f)), B(10.0f));
    B e = fast_exp(x + x);
    return B(1.0f) - B(2.0f) / (e + B(1.0f));
}

template <class Arch>
xsimd::batch<float, Arch> fast_sigmoid(xsimd::batch<float, Arch> x) {
    using B = xsimd::batch<float, Arch>;
    // fast_exp clamps its argument, so a very negative x gives 1 / (1 + 2.4e38), not 1 / inf.
    return B(1.0f) / (B(1.0f) + fast_exp(-x));
}

}  // namespace
}  // namespace pg::kernels::simd
