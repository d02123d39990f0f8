// The AVX512-VNNI int8 tile (kernels/int8_tile.hpp; Cascade Lake and later, Zen 4, Zen 5):
// VPDPBUSD on zmm, sixteen int32 lanes of four u8 x s8 products each; the rows are packed as
// a + 128 and 128 times each column's code sum (corr) is taken off per block, as on AVX-VNNI.
// 4 x 32 tile: 8 int32 and 8 fp32 accumulators of the 32 zmm registers.
#include "kernels/int8_tile.hpp"
#include "kernels/x86/int8_tile_x86.hpp"

#if !defined(__AVX512VNNI__)
#error "kernels/x86/int8_tile_avx512_vnni.cpp must be compiled with -mavx512vnni"
#endif

namespace pg::kernels {
namespace {

struct Avx512VnniOps {
    using I = __m512i;
    using F = __m512;
    static constexpr int lanes = 16;
    static constexpr bool unsigned_a = true;
    using Row = __m512i;
    static I zero() { return _mm512_setzero_si512(); }
    static F fzero() { return _mm512_setzero_ps(); }
    static I load(const void* p) { return _mm512_loadu_si512(p); }
    static F loadf(const float* p) { return _mm512_loadu_ps(p); }
    static F set1f(float x) { return _mm512_set1_ps(x); }
    static I sub(I x, I y) { return _mm512_sub_epi32(x, y); }
    static F cvt(I x) { return _mm512_cvtepi32_ps(x); }
    static F mul(F x, F y) { return _mm512_mul_ps(x, y); }
    static F fma(F x, F y, F z) { return _mm512_fmadd_ps(x, y, z); }
    static void storef(float* p, F x) { _mm512_storeu_ps(p, x); }
    static Row row(int32_t quad) { return _mm512_set1_epi32(quad); }
    static I dot4(I acc, Row a, I b) { return _mm512_dpbusd_epi32(acc, a, b); }
};

void tile(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t* corr,
          float* out) {
    int8_tile_x86<Avx512VnniOps, 4, 2>(nblocks, a, sa, b, sb, corr, out);
}

}  // namespace

const Int8Tile& avx512_vnni_int8_tile() {
    static const Int8Tile t = {"avx512-vnni", 4, 32, true, false, &tile};
    return t;
}

}  // namespace pg::kernels
