// The bf16-arithmetic GEMM for x86 (kernels/bf16_gemm.hpp says what it computes): VDPBF16PS
// multiplies 32 bf16 pairs into 16 fp32 lanes per instruction, twice the multiply-adds of an
// fp32 FMA at the same issue rate (Zen 4: 113 against 56 GMAC/s per core, measured with a
// register-only loop). This translation unit alone is compiled with -mavx512bf16
// (kernels.cmake); dispatch calls it only where CPUID reports AVX512_BF16 and the caller opted in
// (GemmArgs::bf16_arithmetic).
//
// Both operands are packed as bf16 pairs along k, one 32-bit lane per (k0, k0 + 1):
//   B panels [kc / 2, NR] (NR = 48 columns: 3 zmm per pair row), from the bf16 weight as it is
//     (a copy: a transposed B is a 32-bit transpose, a plain one interleaves two rows);
//   A row tiles [kc / 2, MR] (MR = 8 rows), op(A) rounded to bf16 (VCVTNE2PS2BF16) on the way.
// Micro-kernel: an 8 x 48 tile of C in 24 zmm accumulators; per pair step 3 loads of B, 8
// broadcasts of A and 24 VDPBF16PS.
//
// Blocking: simd::run_packed_blocks (simd/gemm.hpp), the loops of the fp16 GEMM too: N blocks
// of NC columns, K blocks of kBf16BlockK with B packed once per block, M blocks of MC rows; C
// gets the fp32 GEMM's epilogue (store_tile: bias, beta, fused GELU) per K block. Each element of C is computed by the same
// operations wherever its tile falls, so sgemm_parallel stays bitwise equal to sgemm.
#include "kernels/bf16_gemm.hpp"

#include <immintrin.h>

#include "kernels/simd/simd_kernels.hpp"

#if !defined(__AVX512BF16__)
#error "kernels/x86/bf16_gemm.cpp must be compiled with -mavx512bf16"
#endif

namespace pg::kernels::x86 {
namespace {

constexpr int MR = 8, NV = 3, W = 16, NR = NV * W, KC = kBf16BlockK;
constexpr int MC = 16 * MR;
// 960 columns: the packed B block is (512 / 2) x 960 x 4 bytes, the bytes of the fp32 GEMM's
// 512 x 480 block, and every packed A tile serves twice as many columns as it would at 480.
constexpr int NC = 20 * NR;
// The fp32 epilogue of the library's GEMMs (store_tile and its fused GELU) on the same tile.
using Epilogue = simd::Gemm<xsimd::avx512bw, MR, NV, KC>;
using Batch = Epilogue::B;

using Scratch = simd::PackBuffers<uint32_t>;

Scratch& scratch() {
    thread_local Scratch s(std::size_t(KC / 2) * NC, std::size_t(KC / 2) * MC);
    return s;
}

int pairs(int kc) { return (kc + 1) / 2; }
int panel_vectors(int w) { return (w + W - 1) / W; }

// One lane of a packed pair: lo at k0, hi at k0 + 1.
uint32_t pair_of(uint16_t lo, uint16_t hi) { return uint32_t(lo) | uint32_t(hi) << 16; }

// The MR x (NVT vectors) tile over kp pairs: a is the packed [kp, MR] tile, b the packed
// [kp, ldbp] panel.
template <int NVT>
void tile(int kp, const uint32_t* a, const uint32_t* b, int64_t ldbp, float* c, int64_t ldc,
          float alpha, float beta, const float* bias, int mr, int last_w, const Epilogue::Fused& f) {
    Epilogue::prefetch_fused(f, ldc, mr, NVT * W);
    __m512 acc[MR][NVT];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
        for (int v = 0; v < NVT; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int p = 0; p < kp; ++p) {
        __m512bh bv[NVT];
#pragma GCC unroll 3
        for (int v = 0; v < NVT; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + p * ldbp + v * W);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const __m512bh av = (__m512bh)_mm512_set1_epi32(int(a[p * MR + r]));
#pragma GCC unroll 3
            for (int v = 0; v < NVT; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
        }
    }
    Batch out[MR][NVT];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
        for (int v = 0; v < NVT; ++v) out[r][v] = acc[r][v];
    Epilogue::store_tile(out, c, ldc, alpha, beta, bias, mr, last_w, f);
}

// The tile run_packed_blocks asks for: kc values of k (kc / 2 pairs, rounded up), nr columns.
void tile_nr(int kc, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, float alpha, float beta,
             const float* bias, int mr, int nr, const Epilogue::Fused& f) {
    const int nv = panel_vectors(nr), last_w = nr - (nv - 1) * W, kp = pairs(kc);
    const int64_t ldbp = int64_t(nv) * W;
    if (nv == 3) return tile<3>(kp, a, b, ldbp, c, ldc, alpha, beta, bias, mr, last_w, f);
    if (nv == 2) return tile<2>(kp, a, b, ldbp, c, ldc, alpha, beta, bias, mr, last_w, f);
    tile<1>(kp, a, b, ldbp, c, ldc, alpha, beta, bias, mr, last_w, f);
}

// A plain B (op(B)[k, j] = B16[k * ldb + j]): rows k0 and k0 + 1 interleaved, pair by pair
// across every panel, so each row of the weight is read once, front to back (panel by panel it
// was read in 96-byte pieces, once per panel).
void pack_b_rows(uint32_t* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
    const int kp = pairs(kc);
    for (int p = 0; p < kp; ++p) {
        const uint16_t* lo_row = g.B16 + int64_t(pc + 2 * p) * g.ldb + jc;
        const uint16_t* hi_row = 2 * p + 1 < kc ? lo_row + g.ldb : nullptr;
        for (int p0 = 0; p0 < nc; p0 += NR) {
            const int w = nc - p0 < NR ? nc - p0 : NR;
            const int pw = panel_vectors(w) * W;
            const uint16_t* lo = lo_row + p0;
            const uint16_t* hi = hi_row ? hi_row + p0 : nullptr;
            uint32_t* d = bp + int64_t(p0) * kp + int64_t(p) * pw;
            int j = 0;
            for (; j + 16 <= w; j += 16) {
                const __m512i l = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo + j)));
                const __m512i h = hi ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi + j)))
                                     : _mm512_setzero_si512();
                _mm512_storeu_si512(d + j, _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
            }
            for (; j < w; ++j) d[j] = pair_of(lo[j], hi ? hi[j] : 0);
            for (; j < pw; ++j) d[j] = 0;
        }
    }
}

// op(B)[pc:pc+kc, jc:jc+nc] as pair panels of NR columns (the last one panel_vectors(w) vectors
// wide); panel p0 starts at bp + p0 * pairs(kc); columns past nc, and the k past kc of an odd
// block, are 0.
void pack_b(uint32_t* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
    if (!g.trans_b) return pack_b_rows(bp, g, pc, kc, jc, nc);
    const int kp = pairs(kc), whole = kc / 2;  // pairs with both k inside the block
    for (int p0 = 0; p0 < nc; p0 += NR) {
        const int w = nc - p0 < NR ? nc - p0 : NR;
        const int pw = panel_vectors(w) * W;
        uint32_t* dst = bp + int64_t(p0) * kp;
        {  // a transposed B, op(B)[k, j] = B16[j * ldb + k]: a pair is one 32-bit word of row j
            const uint16_t* col0 = g.B16 + int64_t(jc + p0) * g.ldb + pc;
            int j = 0;
            for (; j + 16 <= w; j += 16) {  // 16 columns x 16 pairs per register transpose
                int p = 0;
                for (; p + 16 <= whole; p += 16) {
                    __m512 r[16];
                    for (int i = 0; i < 16; ++i) {
                        const uint16_t* at = col0 + int64_t(j + i) * g.ldb + 2 * p;
                        r[i] = _mm512_castsi512_ps(_mm512_loadu_si512(at));
                        // The same line of the next 16 columns: 16 rows 1 KB apart (the head's
                        // wte) are more streams than the hardware prefetcher follows.
                        _mm_prefetch(reinterpret_cast<const char*>(at + 16 * int64_t(g.ldb)), _MM_HINT_T0);
                    }
                    simd::transpose16x16(r);
                    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + int64_t(p + i) * pw + j, r[i]);
                }
                for (; p < kp; ++p)
                    for (int i = 0; i < 16; ++i) {
                        const uint16_t* col = col0 + int64_t(j + i) * g.ldb;
                        dst[int64_t(p) * pw + j + i] = pair_of(col[2 * p], 2 * p + 1 < kc ? col[2 * p + 1] : 0);
                    }
            }
            for (; j < w; ++j) {
                const uint16_t* col = col0 + int64_t(j) * g.ldb;
                for (int p = 0; p < kp; ++p)
                    dst[int64_t(p) * pw + j] = pair_of(col[2 * p], 2 * p + 1 < kc ? col[2 * p + 1] : 0);
            }
            for (int jj = w; jj < pw; ++jj)
                for (int p = 0; p < kp; ++p) dst[int64_t(p) * pw + jj] = 0;
        }
    }
}

// The row tiles of A[ic:ic+mc, pc:pc+kc] (plain A) rounded to bf16 as pair tiles [kp, MR]
// (tile t0 at pa + t0 * kp), rows past mc and the k past kc of an odd block 0. 32 k of 8 rows at
// a time: each row's 32 values become 16 pairs in one VCVTNE2PS2BF16, and a register transpose
// (8 rows padded to 16) turns them into 16 pair rows of the tile.
void pack_a(uint32_t* pa, const GemmArgs& g, int pc, int kc, int ic, int mc) {
    const int kp = pairs(kc);
    for (int t0 = 0; t0 < mc; t0 += MR) {
        const int mr = mc - t0 < MR ? mc - t0 : MR;
        uint32_t* dst = pa + int64_t(t0) * kp;
        const float* rows = g.A + int64_t(ic + t0) * g.lda + pc;
        int k = 0;
        for (; k + 32 <= kc; k += 32) {
            __m512 r[16];
            for (int i = 0; i < 16; ++i) {
                if (i >= mr) {
                    r[i] = _mm512_setzero_ps();
                    continue;
                }
                const float* src = rows + int64_t(i) * g.lda + k;
                r[i] = _mm512_castsi512_ps(
                    (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src)));
            }
            simd::transpose16x16(r);  // r[p]: pair k / 2 + p of rows 0..15
            for (int p = 0; p < 16; ++p)
                _mm256_storeu_ps(reinterpret_cast<float*>(dst + int64_t(k / 2 + p) * MR),
                                 _mm512_castps512_ps256(r[p]));
        }
        for (int p = k / 2; p < kp; ++p)
            for (int i = 0; i < MR; ++i) {
                uint32_t v = 0;
                if (i < mr) {
                    const float* src = rows + int64_t(i) * g.lda;
                    // The same rounding as VCVTNE2PS2BF16 (a denormal as 0), one pair at a time.
                    const __m512 x = _mm512_maskz_loadu_ps(2 * p + 1 < kc ? 0x3 : 0x1, src + 2 * p);
                    v = uint32_t(_mm_cvtsi128_si32(_mm512_castsi512_si128(
                        (__m512i)_mm512_cvtne2ps_pbh(_mm512_setzero_ps(), x))));
                }
                dst[int64_t(p) * MR + i] = v;
            }
    }
}

// The kernel as simd::run_packed_blocks takes it.
struct Bf16Kernel {
    static constexpr int MR = x86::MR, NR = x86::NR, KC = x86::KC, MC = x86::MC, NC = x86::NC;
    using Epilogue = x86::Epilogue;
    static Scratch& scratch() { return x86::scratch(); }
    static int packed_k(int kc) { return pairs(kc); }
    static void pack_b(uint32_t* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
        x86::pack_b(bp, g, pc, kc, jc, nc);
    }
    static void pack_a(uint32_t* pa, const GemmArgs& g, int pc, int kc, int ic, int mc) {
        x86::pack_a(pa, g, pc, kc, ic, mc);
    }
    static void tile(int kc, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, float alpha, float beta,
                     const float* bias, int mr, int nr, const Epilogue::Fused& f) {
        tile_nr(kc, a, b, c, ldc, alpha, beta, bias, mr, nr, f);
    }
};

}  // namespace

void sgemm_bf16(const GemmArgs& g) { simd::run_packed_blocks<Bf16Kernel>(g); }

}  // namespace pg::kernels::x86
