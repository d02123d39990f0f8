// The ARMv8.0 NEON int8 tile (kernels/int8_tile.hpp), for cores without dotprod (Cortex-A53,
// A57, A72, A73): per row and 4 columns, SMULL / SMULL2 form the 16 products in int16, ADDP sums
// them in pairs (at most 2 x 127 x 127 = 32258: no overflow, codes being -127..127) and SADALP
// adds the pairs into the columns' int32 lanes.
#include "kernels/int8_tile.hpp"
#include "kernels/neon/int8_tile_neon.hpp"

namespace pg::kernels {
namespace {

int32x4_t dot4(int32x4_t acc, int8x16_t columns, int8x16_t row) {
    const int16x8_t lo = vmull_s8(vget_low_s8(columns), vget_low_s8(row));
    const int16x8_t hi = vmull_high_s8(columns, row);
    return vpadalq_s16(acc, vpaddq_s16(lo, hi));
}

struct SmullDot {
    template <int R>
    static void row(int32x4_t (&dot)[kNeonInt8MR][2], int32x4_t quads, int8x16_t b0, int8x16_t b1) {
        const int8x16_t a = vreinterpretq_s8_s32(vdupq_laneq_s32(quads, R));
        dot[R][0] = dot4(dot[R][0], b0, a);
        dot[R][1] = dot4(dot[R][1], b1, a);
    }
    static void step(int32x4_t (&dot)[kNeonInt8MR][2], int8x16_t rows, int8x16_t b0, int8x16_t b1) {
        const int32x4_t quads = vreinterpretq_s32_s8(rows);
        row<0>(dot, quads, b0, b1);
        row<1>(dot, quads, b0, b1);
        row<2>(dot, quads, b0, b1);
        row<3>(dot, quads, b0, b1);
    }
};

void tile(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t* corr,
          float* out) {
    int8_tile_neon<SmullDot>(nblocks, a, sa, b, sb, corr, out);
}

}  // namespace

const Int8Tile& neon_int8_tile() {
    static const Int8Tile t = {"arm64+neon", kNeonInt8MR, kNeonInt8NR, false, false, &tile};
    return t;
}

}  // namespace pg::kernels

// One block of the tile as llvm-mca measures it (scripts/mca_gemm_variants.py compiles this file
// with PG_MCA_MARKERS and -S; the library never defines it).
#if defined(PG_MCA_MARKERS)
extern "C" void pg_mca_int8_102(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb,
                                 float* out) {
    pg::kernels::int8_tile_neon<pg::kernels::SmullDot, 102>(nblocks, a, sa, b, sb, nullptr, out);
}
#endif
