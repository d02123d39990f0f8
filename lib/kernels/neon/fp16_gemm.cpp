// The FP16-arithmetic inference GEMM for AArch64 (kernels/fp16_gemm.hpp says what it computes):
// FMLA Vd.8H, Vn.8H, Vm.H[i] multiplies 8 fp16 lanes per instruction, twice fp32's 4, over an
// fp16 frozen weight (GemmArgs::B16) and the activations rounded to fp16 while A is packed.
// This translation unit alone is compiled with -march=armv8.2-a+fp16 (kernels.cmake); dispatch
// calls it only where HWCAP reports asimdhp and the caller opted in (GemmArgs::fp16_arithmetic).
//
// Micro-kernel: an 8 x 8 tile of C. One q register holds 8 rows of A at one k (pack_a's [kc, 8]
// fp16 tile), one holds 8 columns of the B panel; per k step 2 loads and 8 by-element FMLAs into
// 8 fp16 accumulators. Every kFp16PartialK steps each fp16 accumulator is widened (FCVTL,
// FCVTL2) and added to two fp32 accumulators, 16 more registers: 8 + 16 + 2 operands + 2
// temporaries of the 32, nothing spilled. A loop iteration is one such run: 128 FMLAs, 32
// loads, 16 FCVTL and 16 FADD (llvm-mca figures per core in docs/phone.md).
//
// Blocking: simd::run_packed_blocks (simd/gemm.hpp), the loops of the bf16 GEMM too: N blocks of
// 512 columns, K blocks of kFp16BlockK with B packed into [kc, 8] fp16 panels, M blocks of 128
// rows packed into [kc, 8] fp16 tiles; C gets the fp32 GEMM's epilogue (store_tile) per K block. Each element of C is
// computed by the same operations wherever its tile falls, so sgemm_parallel stays bitwise
// equal to sgemm.
#include "kernels/fp16_gemm.hpp"

#include <arm_neon.h>

#include <cstdlib>
#include <new>

#include "kernels/neon/lane_gemm.hpp"  // PG_MCA_BEGIN / END, simd::Gemm's epilogue
#include "kernels/simd/simd_kernels.hpp"

#if !defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
#error "kernels/neon/fp16_gemm.cpp must be compiled with -march=armv8.2-a+fp16"
#endif

namespace pg::kernels::neon {
namespace {

constexpr int MR = 8, NR = 8, KC = kFp16BlockK, KB = kFp16PartialK;
constexpr int MC = 16 * MR, NC = 512;
// The fp32 epilogue of the library's GEMMs (store_tile and its fused GELU), on 4-lane vectors.
using Epilogue = simd::Gemm<xsimd::neon64, MR, 2, 256>;
using B4 = Epilogue::B;

using Scratch = simd::PackBuffers<float16_t>;

Scratch& scratch() {
    thread_local Scratch s(std::size_t(KC) * NC, std::size_t(KC) * MC);
    return s;
}

// One full run of KB k steps of the 8 x 8 tile: 8 fp16 partial sums from zero, then widened and
// added to the fp32 accumulators lo (columns 0-3) and hi (4-7). The 16 steps are one asm block
// because GCC 12 compiles vfmaq_laneq_f16 into a DUP of the lane and a vector FMLA, and with 24
// live accumulators it then reloads A and spills (seen in the disassembly). FMLA by element on
// .h lanes takes Vm from v0-v15: A alternates between v0 and v1, B between v2 and v3 (each step
// loads the next step's operands before its 8 FMLAs).
#define PG_H_LOAD(A, B, OFF) "ldr q" A ", [%[a], #" OFF "]\n\tldr q" B ", [%[b], #" OFF "]\n\t"
#define PG_H_FMLA8(B, A)                                                                  \
    "fmla %[p0].8h, v" B ".8h, v" A ".h[0]\n\tfmla %[p1].8h, v" B ".8h, v" A ".h[1]\n\t"  \
    "fmla %[p2].8h, v" B ".8h, v" A ".h[2]\n\tfmla %[p3].8h, v" B ".8h, v" A ".h[3]\n\t"  \
    "fmla %[p4].8h, v" B ".8h, v" A ".h[4]\n\tfmla %[p5].8h, v" B ".8h, v" A ".h[5]\n\t"  \
    "fmla %[p6].8h, v" B ".8h, v" A ".h[6]\n\tfmla %[p7].8h, v" B ".8h, v" A ".h[7]\n\t"
// lo_r += float(p_r[0:4]) and hi_r += float(p_r[4:8]), through v0 / v1 (alternating).
#define PG_H_FOLD(R, T, ACC) "fcvtl v" T ".4s, %[p" R "].4h\n\tfadd %[" ACC R "].4s, %[" ACC R "].4s, v" T ".4s\n\t"
#define PG_H_FOLD2(R, T, ACC) "fcvtl2 v" T ".4s, %[p" R "].8h\n\tfadd %[" ACC R "].4s, %[" ACC R "].4s, v" T ".4s\n\t"
static_assert(KB == 16, "the asm run below is written out for 16 k steps");
[[gnu::always_inline]] inline void run_full(float32x4_t (&lo)[MR], float32x4_t (&hi)[MR],
                                            const float16_t* a, const float16_t* b) {
    float16x8_t p[MR];
    __asm__(
        "movi %[p0].16b, #0\n\tmovi %[p1].16b, #0\n\tmovi %[p2].16b, #0\n\tmovi %[p3].16b, #0\n\t"
        "movi %[p4].16b, #0\n\tmovi %[p5].16b, #0\n\tmovi %[p6].16b, #0\n\tmovi %[p7].16b, #0\n\t"
        PG_H_LOAD("0", "2", "0")
        PG_H_LOAD("1", "3", "16") PG_H_FMLA8("2", "0")
        PG_H_LOAD("0", "2", "32") PG_H_FMLA8("3", "1")
        PG_H_LOAD("1", "3", "48") PG_H_FMLA8("2", "0")
        PG_H_LOAD("0", "2", "64") PG_H_FMLA8("3", "1")
        PG_H_LOAD("1", "3", "80") PG_H_FMLA8("2", "0")
        PG_H_LOAD("0", "2", "96") PG_H_FMLA8("3", "1")
        PG_H_LOAD("1", "3", "112") PG_H_FMLA8("2", "0")
        PG_H_LOAD("0", "2", "128") PG_H_FMLA8("3", "1")
        PG_H_LOAD("1", "3", "144") PG_H_FMLA8("2", "0")
        PG_H_LOAD("0", "2", "160") PG_H_FMLA8("3", "1")
        PG_H_LOAD("1", "3", "176") PG_H_FMLA8("2", "0")
        PG_H_LOAD("0", "2", "192") PG_H_FMLA8("3", "1")
        PG_H_LOAD("1", "3", "208") PG_H_FMLA8("2", "0")
        PG_H_LOAD("0", "2", "224") PG_H_FMLA8("3", "1")
        PG_H_LOAD("1", "3", "240") PG_H_FMLA8("2", "0")
        PG_H_FMLA8("3", "1")
        : [p0] "=&w"(p[0]), [p1] "=&w"(p[1]), [p2] "=&w"(p[2]), [p3] "=&w"(p[3]),
          [p4] "=&w"(p[4]), [p5] "=&w"(p[5]), [p6] "=&w"(p[6]), [p7] "=&w"(p[7])
        : [a] "r"(a), [b] "r"(b)
        : "memory", "v0", "v1", "v2", "v3");
    // The fold, also as asm (in intrinsics GCC converts all 16 halves first and spills the fp32
    // accumulators to the stack): two temporaries, v0 and v1, which the FMLAs no longer need.
    __asm__(PG_H_FOLD("0", "0", "lo") PG_H_FOLD("1", "1", "lo") PG_H_FOLD("2", "0", "lo") PG_H_FOLD("3", "1", "lo")
            PG_H_FOLD("4", "0", "lo") PG_H_FOLD("5", "1", "lo") PG_H_FOLD("6", "0", "lo") PG_H_FOLD("7", "1", "lo")
            : [lo0] "+w"(lo[0]), [lo1] "+w"(lo[1]), [lo2] "+w"(lo[2]), [lo3] "+w"(lo[3]),
              [lo4] "+w"(lo[4]), [lo5] "+w"(lo[5]), [lo6] "+w"(lo[6]), [lo7] "+w"(lo[7])
            : [p0] "w"(p[0]), [p1] "w"(p[1]), [p2] "w"(p[2]), [p3] "w"(p[3]), [p4] "w"(p[4]),
              [p5] "w"(p[5]), [p6] "w"(p[6]), [p7] "w"(p[7])
            : "v0", "v1");
    __asm__(PG_H_FOLD2("0", "0", "hi") PG_H_FOLD2("1", "1", "hi") PG_H_FOLD2("2", "0", "hi") PG_H_FOLD2("3", "1", "hi")
            PG_H_FOLD2("4", "0", "hi") PG_H_FOLD2("5", "1", "hi") PG_H_FOLD2("6", "0", "hi") PG_H_FOLD2("7", "1", "hi")
            : [hi0] "+w"(hi[0]), [hi1] "+w"(hi[1]), [hi2] "+w"(hi[2]), [hi3] "+w"(hi[3]),
              [hi4] "+w"(hi[4]), [hi5] "+w"(hi[5]), [hi6] "+w"(hi[6]), [hi7] "+w"(hi[7])
            : [p0] "w"(p[0]), [p1] "w"(p[1]), [p2] "w"(p[2]), [p3] "w"(p[3]), [p4] "w"(p[4]),
              [p5] "w"(p[5]), [p6] "w"(p[6]), [p7] "w"(p[7])
            : "v0", "v1");
}
#undef PG_H_LOAD
#undef PG_H_FMLA8
#undef PG_H_FOLD
#undef PG_H_FOLD2

// The last run of a K block when kc is not a multiple of KB: n < KB steps, the same arithmetic
// in intrinsics (vfmaq_laneq_f16 is the same fused multiply-add, lane for lane).
inline void run_tail(float32x4_t (&lo)[MR], float32x4_t (&hi)[MR], const float16_t* a,
                     const float16_t* b, int n) {
    float16x8_t p[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) p[r] = vdupq_n_f16(0);
    for (int u = 0; u < n; ++u) {
        const float16x8_t bv = vld1q_f16(b + u * NR), av = vld1q_f16(a + u * MR);
        p[0] = vfmaq_laneq_f16(p[0], bv, av, 0);
        p[1] = vfmaq_laneq_f16(p[1], bv, av, 1);
        p[2] = vfmaq_laneq_f16(p[2], bv, av, 2);
        p[3] = vfmaq_laneq_f16(p[3], bv, av, 3);
        p[4] = vfmaq_laneq_f16(p[4], bv, av, 4);
        p[5] = vfmaq_laneq_f16(p[5], bv, av, 5);
        p[6] = vfmaq_laneq_f16(p[6], bv, av, 6);
        p[7] = vfmaq_laneq_f16(p[7], bv, av, 7);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        lo[r] = vaddq_f32(lo[r], vcvt_f32_f16(vget_low_f16(p[r])));
        hi[r] = vaddq_f32(hi[r], vcvt_high_f32_f16(p[r]));
    }
}

// The 8 x 8 tile over kc: a and b are the packed [kc, 8] tile and panel. mca_id: the LLVM-MCA
// region of the main loop (pg_mca_fp16_variant at the end of this file; 0 in the library).
template <int mca_id = 0>
void tile(int kc, const float16_t* a, const float16_t* b, float* c, int64_t ldc, float alpha,
          float beta, const float* bias, int mr, int nr, const Epilogue::Fused& f) {
    Epilogue::prefetch_fused(f, ldc, mr, nr);
    float32x4_t lo[MR], hi[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) lo[r] = hi[r] = vdupq_n_f32(0.0f);
    int k = 0;
    for (; k + KB <= kc; k += KB) {
        if constexpr (mca_id != 0) PG_MCA_BEGIN(mca_id);
        run_full(lo, hi, a + k * MR, b + k * NR);
        if constexpr (mca_id != 0) PG_MCA_END();
    }
    if (k < kc) run_tail(lo, hi, a + k * MR, b + k * NR, kc - k);
    if (nr > 4) {
        B4 acc[MR][2];
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            acc[r][0] = lo[r];
            acc[r][1] = hi[r];
        }
        Epilogue::store_tile(acc, c, ldc, alpha, beta, bias, mr, nr - 4, f);
    } else {
        B4 acc[MR][1];
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[r][0] = lo[r];
        Epilogue::store_tile(acc, c, ldc, alpha, beta, bias, mr, nr, f);
    }
}

// op(B)[pc:pc+kc, jc:jc+nc] as [kc, 8] panels, zero past nc (B16 is fp16 already: a copy).
void pack_b(float16_t* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
    const uint16_t* B = g.B16;
    for (int p0 = 0; p0 < nc; p0 += NR) {
        const int w = nc - p0 < NR ? nc - p0 : NR;
        uint16_t* dst = reinterpret_cast<uint16_t*>(bp + int64_t(p0) * kc);
        if (!g.trans_b) {  // op(B)[k, j] = B[k * ldb + j]
            for (int k = 0; k < kc; ++k) {
                const uint16_t* src = B + int64_t(pc + k) * g.ldb + jc + p0;
                uint16_t* d = dst + k * NR;
                if (w == NR) {
                    vst1q_u16(d, vld1q_u16(src));
                    continue;
                }
                int j = 0;
                for (; j < w; ++j) d[j] = src[j];
                for (; j < NR; ++j) d[j] = 0;
            }
        } else {  // op(B)[k, j] = B[j * ldb + k]: a weight row per column
            for (int j = 0; j < NR; ++j) {
                const uint16_t* src = B + int64_t(jc + p0 + j) * g.ldb + pc;
                for (int k = 0; k < kc; ++k) dst[k * NR + j] = j < w ? src[k] : 0;
            }
        }
    }
}

// The row tiles of A[ic:ic+mc, pc:pc+kc] (plain A) rounded to fp16 as [kc, 8], rows past mc 0.
void pack_a(float16_t* pa, const GemmArgs& g, int pc, int kc, int ic, int mc) {
    for (int t0 = 0; t0 < mc; t0 += MR) {
        const int mr = mc - t0 < MR ? mc - t0 : MR;
        float16_t* dst = pa + int64_t(t0) * kc;
        for (int r = 0; r < MR; ++r) {
            if (r >= mr) {
                for (int k = 0; k < kc; ++k) dst[k * MR + r] = float16_t(0.0f);
                continue;
            }
            const float* src = g.A + int64_t(ic + t0 + r) * g.lda + pc;
            int k = 0;
            for (; k + 4 <= kc; k += 4) {
                const float16x4_t h = vcvt_f16_f32(vld1q_f32(src + k));
                dst[(k + 0) * MR + r] = vget_lane_f16(h, 0);
                dst[(k + 1) * MR + r] = vget_lane_f16(h, 1);
                dst[(k + 2) * MR + r] = vget_lane_f16(h, 2);
                dst[(k + 3) * MR + r] = vget_lane_f16(h, 3);
            }
            for (; k < kc; ++k) dst[k * MR + r] = float16_t(src[k]);
        }
    }
}

// The kernel as simd::run_packed_blocks takes it.
struct Fp16Kernel {
    static constexpr int MR = neon::MR, NR = neon::NR, KC = neon::KC, MC = neon::MC, NC = neon::NC;
    using Epilogue = neon::Epilogue;
    static Scratch& scratch() { return neon::scratch(); }
    static int packed_k(int kc) { return kc; }
    static void pack_b(float16_t* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
        neon::pack_b(bp, g, pc, kc, jc, nc);
    }
    static void pack_a(float16_t* pa, const GemmArgs& g, int pc, int kc, int ic, int mc) {
        neon::pack_a(pa, g, pc, kc, ic, mc);
    }
    static void tile(int kc, const float16_t* a, const float16_t* b, float* c, int64_t ldc, float alpha,
                     float beta, const float* bias, int mr, int nr, const Epilogue::Fused& f) {
        neon::tile(kc, a, b, c, ldc, alpha, beta, bias, mr, nr, f);
    }
};

}  // namespace

void sgemm_fp16(const GemmArgs& g) { simd::run_packed_blocks<Fp16Kernel>(g); }

float max_abs(const float* A, int M, int K, int lda) {
    float32x4_t m = vdupq_n_f32(0.0f);
    float tail = 0.0f;
    for (int i = 0; i < M; ++i) {
        const float* row = A + int64_t(i) * lda;
        int k = 0;
        for (; k + 4 <= K; k += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(row + k)));  // NaN stays
        for (; k < K; ++k) {
            const float x = row[k] < 0 ? -row[k] : row[k];
            tail = x > tail || x != x ? x : tail;
        }
    }
    const float v = vmaxvq_f32(m);
    return v != v || tail != tail ? v + tail : (v > tail ? v : tail);
}

}  // namespace pg::kernels::neon

// The main loop of the tile as llvm-mca measures it (scripts/mca_gemm_variants.py compiles this
// file with PG_MCA_MARKERS and -S; the library never defines it).
#if defined(PG_MCA_MARKERS)
extern "C" void pg_mca_fp16_variant(int kc, const float16_t* a, const float16_t* b, float* c) {
    pg::kernels::neon::tile<100>(kc, a, b, c, 8, 1.0f, 0.0f, nullptr, 8, 8, {});
}
#endif
