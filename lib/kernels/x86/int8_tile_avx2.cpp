// The AVX2 int8 tile (kernels/int8_tile.hpp), for CPUs without VNNI: VPMADDUBSW multiplies
// unsigned by signed bytes, so each product a b is formed as |a| times b with a's sign
// (VPSIGNB), pairs summed in int16 (at most 2 x 127 x 127 = 32258: no saturation, since codes
// are -127..127), then VPMADDWD by 1 widens the pairs to the int32 lanes. 2 x 16 tile.
#include "kernels/int8_tile.hpp"
#include "kernels/x86/int8_tile_x86.hpp"

namespace pg::kernels {
namespace {

struct Avx2Ops : Ymm {
    static constexpr bool unsigned_a = false;
    struct Row {
        __m256i value, magnitude;
    };
    static Row row(int32_t quad) {
        const __m256i v = _mm256_set1_epi32(quad);
        return {v, _mm256_abs_epi8(v)};
    }
    static I dot4(I acc, const Row& a, I b) {
        const __m256i pairs = _mm256_maddubs_epi16(a.magnitude, _mm256_sign_epi8(b, a.value));
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
};

void tile(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t* corr,
          float* out) {
    int8_tile_x86<Avx2Ops, 2, 2>(nblocks, a, sa, b, sb, corr, out);
}

}  // namespace

const Int8Tile& avx2_int8_tile() {
    static const Int8Tile t = {"avx2", 2, 16, false, false, &tile};
    return t;
}

}  // namespace pg::kernels
