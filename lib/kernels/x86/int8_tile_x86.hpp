// The x86 int8 micro-kernels (kernels/int8_tile.hpp), one loop for three instruction sets: Ops
// gives the vector types and the 4-wide int8 dot step, which each translation unit
// (int8_tile_avx2.cpp, int8_tile_avx_vnni.cpp, int8_tile_avx512_vnni.cpp) compiles with its own
// flags. Per group of 4 k: NV loads of the packed columns, MR broadcasts of a row's 4 codes and
// MR x NV dot steps into int32 lanes (one column per lane); per block of 32 k the exact int32
// sums are converted, and fma(sum, sa * sb, acc) adds them in fp32, as quant_gemm.hpp defines.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.hpp"

// An anonymous namespace: each translation unit keeps its own copy, so no code built with one
// instruction set's flags can be linked into another's.
namespace pg::kernels {
namespace {

template <class Ops, int MR, int NV>
void int8_tile_x86(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb,
                   const int32_t* corr, float* out) {
    using I = typename Ops::I;
    using F = typename Ops::F;
    constexpr int L = Ops::lanes, NR = NV * L, block = pg::kernels::kQuantBlock;
    F acc[MR][NV];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] = Ops::fzero();
    for (int blk = 0; blk < nblocks; ++blk) {
        const uint8_t* ab = a + int64_t(blk) * block * MR;
        const int8_t* bb = b + int64_t(blk) * block * NR;
        I dot[MR][NV];
        for (int r = 0; r < MR; ++r)
            for (int v = 0; v < NV; ++v) dot[r][v] = Ops::zero();
#pragma GCC unroll 8
        for (int g = 0; g < block / 4; ++g) {
            I bv[NV];
            for (int v = 0; v < NV; ++v) bv[v] = Ops::load(bb + (g * NR + v * L) * 4);
            for (int r = 0; r < MR; ++r) {
                int32_t quad;
                std::memcpy(&quad, ab + (g * MR + r) * 4, 4);
                const typename Ops::Row av = Ops::row(quad);
                for (int v = 0; v < NV; ++v) dot[r][v] = Ops::dot4(dot[r][v], av, bv[v]);
            }
        }
        F sbv[NV];
        I cv[NV];
        for (int v = 0; v < NV; ++v) {
            sbv[v] = Ops::loadf(sb + blk * NR + v * L);
            if (Ops::unsigned_a) cv[v] = Ops::load(corr + blk * NR + v * L);
        }
        for (int r = 0; r < MR; ++r) {
            const F sar = Ops::set1f(sa[blk * MR + r]);
            for (int v = 0; v < NV; ++v) {
                const I d = Ops::unsigned_a ? Ops::sub(dot[r][v], cv[v]) : dot[r][v];
                acc[r][v] = Ops::fma(Ops::cvt(d), Ops::mul(sar, sbv[v]), acc[r][v]);
            }
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) Ops::storef(out + r * NR + v * L, acc[r][v]);
}

// The 256-bit operations shared by AVX2 and AVX-VNNI.
struct Ymm {
    using I = __m256i;
    using F = __m256;
    static constexpr int lanes = 8;
    static I zero() { return _mm256_setzero_si256(); }
    static F fzero() { return _mm256_setzero_ps(); }
    static I load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
    static F loadf(const float* p) { return _mm256_loadu_ps(p); }
    static F set1f(float x) { return _mm256_set1_ps(x); }
    static I sub(I x, I y) { return _mm256_sub_epi32(x, y); }
    static F cvt(I x) { return _mm256_cvtepi32_ps(x); }
    static F mul(F x, F y) { return _mm256_mul_ps(x, y); }
    static F fma(F x, F y, F z) { return _mm256_fmadd_ps(x, y, z); }
    static void storef(float* p, F x) { _mm256_storeu_ps(p, x); }
};

}  // namespace
}  // namespace pg::kernels
