// The ARMv8.6 i8mm int8 tile (kernels/int8_tile.hpp; Cortex-A510, A710, X2 and later, Oryon):
// SMMLA multiplies a 2 x 8 block of rows by an 8 x 2 block of columns into a 2 x 2 tile of int32
// sums, 32 multiply-adds per instruction (SDOT does 16), so it reads the pair layout: per group
// of 8 k, two rows' or two columns' 8 codes in one 16-byte register. The 4 x 8 tile is 2 x 4 such
// 2 x 2 tiles; each is folded into fp32 per block with the scale products in the same 2 x 2
// order (sa[r] * sb[c], the product quant_gemm.hpp defines), and unzipped into rows at the end.
// Built with +i8mm alone; dispatch takes it where HWCAP2 reports i8mm.
#include <arm_neon.h>

#include "kernels/int8_tile.hpp"
#include "kernels/neon/lane_gemm.hpp"  // PG_MCA_BEGIN / END
#include "kernels/quant_blocks.hpp"

#if !defined(__ARM_FEATURE_MATMUL_INT8)
#error "kernels/neon/int8_tile_i8mm.cpp must be compiled with +i8mm"
#endif

namespace pg::kernels {
namespace {

constexpr int MR = 4, NR = 8, RP = MR / 2, CP = NR / 2;

template <int mca_id = 0>
void tile(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t*,
          float* out) {
    float32x4_t acc[RP][CP];
    for (int rp = 0; rp < RP; ++rp)
        for (int cp = 0; cp < CP; ++cp) acc[rp][cp] = vdupq_n_f32(0.0f);
    for (int blk = 0; blk < nblocks; ++blk) {
        if constexpr (mca_id != 0) PG_MCA_BEGIN(mca_id);
        const int8_t* ab = reinterpret_cast<const int8_t*>(a) + int64_t(blk) * kQuantBlock * MR;
        const int8_t* bb = b + int64_t(blk) * kQuantBlock * NR;
        int32x4_t dot[RP][CP];
        for (int rp = 0; rp < RP; ++rp)
            for (int cp = 0; cp < CP; ++cp) dot[rp][cp] = vdupq_n_s32(0);
#pragma GCC unroll 4
        for (int g = 0; g < kQuantBlock / 8; ++g) {
            int8x16_t rows[RP], cols[CP];
            for (int rp = 0; rp < RP; ++rp) rows[rp] = vld1q_s8(ab + (g * RP + rp) * 16);
            for (int cp = 0; cp < CP; ++cp) cols[cp] = vld1q_s8(bb + (g * CP + cp) * 16);
            for (int rp = 0; rp < RP; ++rp)
                for (int cp = 0; cp < CP; ++cp) dot[rp][cp] = vmmlaq_s32(dot[rp][cp], rows[rp], cols[cp]);
        }
        for (int rp = 0; rp < RP; ++rp) {
            const float32x2_t s = vld1_f32(sa + blk * MR + 2 * rp);
            const float32x4_t row_scales = vcombine_f32(vdup_lane_f32(s, 0), vdup_lane_f32(s, 1));
            for (int cp = 0; cp < CP; ++cp) {
                const float32x2_t t = vld1_f32(sb + blk * NR + 2 * cp);
                const float32x4_t scale = vmulq_f32(row_scales, vcombine_f32(t, t));
                acc[rp][cp] = vfmaq_f32(acc[rp][cp], vcvtq_f32_s32(dot[rp][cp]), scale);
            }
        }
        if constexpr (mca_id != 0) PG_MCA_END();
    }
    for (int rp = 0; rp < RP; ++rp)
        for (int cp = 0; cp < CP; ++cp) {
            vst1_f32(out + (2 * rp) * NR + 2 * cp, vget_low_f32(acc[rp][cp]));
            vst1_f32(out + (2 * rp + 1) * NR + 2 * cp, vget_high_f32(acc[rp][cp]));
        }
}

void tile_main(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t* corr,
               float* out) {
    tile<0>(nblocks, a, sa, b, sb, corr, out);
}

}  // namespace

const Int8Tile& i8mm_int8_tile() {
    static const Int8Tile t = {"arm64+i8mm", MR, NR, false, true, &tile_main};
    return t;
}

}  // namespace pg::kernels

// One block of the tile as llvm-mca measures it (scripts/mca_gemm_variants.py compiles this file
// with PG_MCA_MARKERS and -S; the library never defines it).
#if defined(PG_MCA_MARKERS)
extern "C" void pg_mca_int8_103(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb,
                                float* out) {
    pg::kernels::tile<103>(nblocks, a, sa, b, sb, nullptr, out);
}
#endif
