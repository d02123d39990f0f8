// The aarch64 int8 micro-kernels (kernels/int8_tile.hpp) on the quad layout, one loop for two
// instruction sets: Dot::step adds a group of 4 k for the tile's 4 rows into int32 lanes (one
// column per lane), SMULL pairs on ARMv8.0 NEON (int8_tile_neon.cpp), SDOT by element on
// ARMv8.2 dotprod (int8_tile_dotprod.cpp). Per block of 32 k the exact int32 sums are converted
// and fma(sum, sa * sb, acc) adds them in fp32, as quant_gemm.hpp defines. 4 x 8 tile.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/neon/lane_gemm.hpp"  // PG_MCA_BEGIN / END
#include "kernels/quant_blocks.hpp"

// An anonymous namespace: each translation unit keeps its own copy (see int8_tile_x86.hpp).
namespace pg::kernels {
namespace {

constexpr int kNeonInt8MR = 4, kNeonInt8NR = 8;

// mca_id: the LLVM-MCA region around one block (scripts/mca_gemm_variants.py; 0 in the library).
template <class Dot, int mca_id = 0>
void int8_tile_neon(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb,
                    const int32_t*, float* out) {
    constexpr int MR = kNeonInt8MR, NR = kNeonInt8NR, block = kQuantBlock;
    float32x4_t acc[MR][2];
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
    for (int blk = 0; blk < nblocks; ++blk) {
        if constexpr (mca_id != 0) PG_MCA_BEGIN(mca_id);
        const int8_t* ab = reinterpret_cast<const int8_t*>(a) + int64_t(blk) * block * MR;
        const int8_t* bb = b + int64_t(blk) * block * NR;
        int32x4_t dot[MR][2];
        for (int r = 0; r < MR; ++r) dot[r][0] = dot[r][1] = vdupq_n_s32(0);
#pragma GCC unroll 8
        for (int g = 0; g < block / 4; ++g) {
            const int8x16_t b0 = vld1q_s8(bb + g * NR * 4), b1 = vld1q_s8(bb + g * NR * 4 + 16);
            Dot::step(dot, vld1q_s8(ab + g * MR * 4), b0, b1);
        }
        const float32x4_t sb0 = vld1q_f32(sb + blk * NR), sb1 = vld1q_f32(sb + blk * NR + 4);
        for (int r = 0; r < MR; ++r) {
            const float32x4_t sar = vdupq_n_f32(sa[blk * MR + r]);
            acc[r][0] = vfmaq_f32(acc[r][0], vcvtq_f32_s32(dot[r][0]), vmulq_f32(sar, sb0));
            acc[r][1] = vfmaq_f32(acc[r][1], vcvtq_f32_s32(dot[r][1]), vmulq_f32(sar, sb1));
        }
        if constexpr (mca_id != 0) PG_MCA_END();
    }
    for (int r = 0; r < MR; ++r) {
        vst1q_f32(out + r * NR, acc[r][0]);
        vst1q_f32(out + r * NR + 4, acc[r][1]);
    }
}

}  // namespace
}  // namespace pg::kernels
