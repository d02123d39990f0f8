// The ARMv8.2 dotprod int8 tile (kernels/int8_tile.hpp; Cortex-A55, A76 and later, every phone
// core since 2018): SDOT by element adds, into each column's int32 lane, the 4 products of the
// column's codes with one row's 4 codes (a lane of the 16 bytes that hold the 4 rows), 16
// multiply-adds per instruction where an fp32 FMLA does 4. Built with +dotprod alone; dispatch
// takes it where HWCAP reports asimddp.
#include "kernels/int8_tile.hpp"
#include "kernels/neon/int8_tile_neon.hpp"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "kernels/neon/int8_tile_dotprod.cpp must be compiled with +dotprod"
#endif

namespace pg::kernels {
namespace {

struct SdotDot {
    template <int R>
    static void row(int32x4_t (&dot)[kNeonInt8MR][2], int8x16_t rows, int8x16_t b0, int8x16_t b1) {
        dot[R][0] = vdotq_laneq_s32(dot[R][0], b0, rows, R);
        dot[R][1] = vdotq_laneq_s32(dot[R][1], b1, rows, R);
    }
    static void step(int32x4_t (&dot)[kNeonInt8MR][2], int8x16_t rows, int8x16_t b0, int8x16_t b1) {
        row<0>(dot, rows, b0, b1);
        row<1>(dot, rows, b0, b1);
        row<2>(dot, rows, b0, b1);
        row<3>(dot, rows, b0, b1);
    }
};

void tile(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t* corr,
          float* out) {
    int8_tile_neon<SdotDot>(nblocks, a, sa, b, sb, corr, out);
}

}  // namespace

const Int8Tile& dotprod_int8_tile() {
    static const Int8Tile t = {"arm64+dotprod", kNeonInt8MR, kNeonInt8NR, false, false, &tile};
    return t;
}

}  // namespace pg::kernels

// One block of the tile as llvm-mca measures it (scripts/mca_gemm_variants.py compiles this file
// with PG_MCA_MARKERS and -S; the library never defines it).
#if defined(PG_MCA_MARKERS)
extern "C" void pg_mca_int8_101(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb,
                                 float* out) {
    pg::kernels::int8_tile_neon<pg::kernels::SdotDot, 101>(nblocks, a, sa, b, sb, nullptr, out);
}
#endif
