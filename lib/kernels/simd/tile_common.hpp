// What the register-tile kernels share: the GEMM (gemm.hpp) and the attention tiles
// (attention_tiles.hpp) bound their edge tiles with min_of and accumulate with fused_fma, so an
// element of C gets the same once-rounded multiply-adds wherever its tile falls; the GEMMs (this
// one and kernels/neon/fp16_gemm.cpp) keep their packed panels in PackBuffers. Included only by
// the per-arch translation units, through simd_kernels.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>

#include <xsimd/xsimd.hpp>

// An anonymous namespace: every arch TU gets its own internal copy, so no inline function
// compiled with AVX-512 flags can be picked by the linker for code that must run on a lesser
// CPU (see simd_kernels.hpp).
namespace pg::kernels::simd {
namespace {

template <class T>
inline T min_of(T a, T b) {
    return a < b ? a : b;
}

// x * y + z rounded once, always. xsimd 8.1 has no fused multiply-add for AVX-512: its fma is
// x * y + z, which GCC fuses at most places and not at others (-ffp-contract=fast), so a GEMM
// element's rounding would depend on where its tile falls (sgemm_parallel's split). The GEMM
// calls this; elsewhere xsimd::fma is fine (an element never moves to another code path).
template <class Arch>
inline xsimd::batch<float, Arch> fused_fma(xsimd::batch<float, Arch> x, xsimd::batch<float, Arch> y,
                                           xsimd::batch<float, Arch> z) {
#if defined(__AVX512F__)
    if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) return _mm512_fmadd_ps(x, y, z);
#endif
    return xsimd::fma(x, y, z);
}

// The first w <= W lanes of a vector from or to memory that may end there: the edges of the
// attention tiles and the elementwise tails that must get the same vector math as the body.
template <class Arch>
struct Lanes {
    using B = xsimd::batch<float, Arch>;
    static constexpr int64_t W = int64_t(B::size);
    static B load(const float* src, int64_t w) {
        if (w == W) return B::load_unaligned(src);
        alignas(64) float buf[W] = {};
        for (int64_t j = 0; j < w; ++j) buf[j] = src[j];
        return B::load_aligned(buf);
    }
    static void store(B v, float* dst, int64_t w) {
        if (w == W) return v.store_unaligned(dst);
        alignas(64) float buf[W];
        v.store_aligned(buf);
        for (int64_t j = 0; j < w; ++j) dst[j] = buf[j];
    }
};

// A thread's packed GEMM panels: one B block of b_count and the A row tiles of a_count values
// of T, 64-byte aligned (each count times sizeof(T) a multiple of 64), allocated once per
// thread by the GEMM that holds it thread_local.
template <class T>
struct PackBuffers {
    T* packed_b = nullptr;
    T* packed_a = nullptr;
    PackBuffers(std::size_t b_count, std::size_t a_count) {
        packed_b = static_cast<T*>(std::aligned_alloc(64, sizeof(T) * b_count));
        packed_a = static_cast<T*>(std::aligned_alloc(64, sizeof(T) * a_count));
        if (!packed_b || !packed_a) {
            std::free(packed_b);
            std::free(packed_a);
            throw std::bad_alloc();
        }
    }
    ~PackBuffers() {
        std::free(packed_b);
        std::free(packed_a);
    }
    PackBuffers(const PackBuffers&) = delete;
    PackBuffers& operator=(const PackBuffers&) = delete;
};

}  // namespace
}  // namespace pg::kernels::simd
