// The AVX-VNNI int8 tile (kernels/int8_tile.hpp; Alder Lake and later, Zen 5): VPDPBUSD (VEX,
// 256-bit) adds four u8 x s8 products into each int32 lane. Its first operand is unsigned, so
// the packed rows hold a + 128 and each block's sum has 128 times the column's code sum (corr)
// taken off: exact, and one instruction per 32 multiply-adds. 2 x 16 tile.
#include "kernels/int8_tile.hpp"
#include "kernels/x86/int8_tile_x86.hpp"

#if !defined(__AVXVNNI__)
#error "kernels/x86/int8_tile_avx_vnni.cpp must be compiled with -mavxvnni"
#endif

namespace pg::kernels {
namespace {

struct AvxVnniOps : Ymm {
    static constexpr bool unsigned_a = true;
    using Row = __m256i;
    static Row row(int32_t quad) { return _mm256_set1_epi32(quad); }
    static I dot4(I acc, Row a, I b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }
};

void tile(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t* corr,
          float* out) {
    int8_tile_x86<AvxVnniOps, 2, 2>(nblocks, a, sa, b, sb, corr, out);
}

}  // namespace

const Int8Tile& avx_vnni_int8_tile() {
    static const Int8Tile t = {"avx-vnni", 2, 16, true, false, &tile};
    return t;
}

}  // namespace pg::kernels
