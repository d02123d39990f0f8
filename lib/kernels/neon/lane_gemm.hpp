// The NEON GEMM micro-kernels around FMLA by element, one template for every per-core variant
// (kernels/neon/table_neon64_fmla_lane.cpp builds one kernel table per variant; dispatch.cpp
// picks one from the CPU's MIDR part number, kernels/neon/core_variants.cpp).
//
// A variant is a register block MR x (NV vectors of 4 floats) and a k unroll KU:
//
//   per k step:  NV loads of B (the packed panel row, NV * 4 floats)
//                MR / 4 loads of A (pack_a's [kc, MR] tile: four rows at one k in one q register)
//                MR * NV FMLAs  acc[r][v] += b[v] * a[r % 4 lane]   (vfmaq_laneq_f32)
//   registers:   MR * NV accumulators + NV + MR / 4 <= 32 q registers, nothing spilled
//
// What differs between cores is which bound bites first: FMA pipes (2 on Cortex-A76/A78,
// 4 on X1..X4 and Oryon), load pipes (B vectors + A quads per k), and the front end (every
// FMLA, load and loop-counter instruction is decoded; KU = 2 halves the loop overhead per k).
// scripts/mca_gemm_variants.py measures each variant on each core's llvm-mca model.
//
// Every variant computes each element of C by the same chain of fused multiply-adds over k in
// order, with the K blocking (kBlockK) and the epilogue of simd::Gemm, so all of them, and the
// xsimd neon64 GEMM, agree bit for bit, and sgemm_parallel stays bitwise equal to sgemm.
#pragma once

#include <arm_neon.h>

#include "kernels/simd/simd_kernels.hpp"

// LLVM-MCA region markers around one unrolled k step of the full tile: empty in the library,
// assembler comments when scripts/mca_gemm_variants.py compiles benchmarks/mca/gemm_loops.cpp
// with -DPG_MCA_MARKERS, so llvm-mca analyses exactly the loop body the library runs.
#if defined(PG_MCA_MARKERS)
#define PG_MCA_BEGIN(id) asm volatile("// LLVM-MCA-BEGIN variant%c0" ::"i"(id))
#define PG_MCA_END() asm volatile("// LLVM-MCA-END")
#else
#define PG_MCA_BEGIN(id) ((void)0)
#define PG_MCA_END() ((void)0)
#endif

namespace pg::kernels::neon {
namespace {

constexpr int kBlockK = 256;  // the K block of every aarch64 GEMM (neon64 table: same)

template <int MR_, int NV_, int KU_>
struct LaneGemm : simd::Gemm<xsimd::neon64, MR_, NV_, kBlockK> {
    using Base = simd::Gemm<xsimd::neon64, MR_, NV_, kBlockK>;
    using B = typename Base::B;
    using Base::store_tile;
    using Fused = typename Base::Fused;
    using Base::tall_rows;
    static constexpr int W = Base::W;
    static constexpr int MR = MR_, NV = NV_, KU = KU_;
    static_assert(W == 4 && MR % 4 == 0, "the lane micro-kernel takes row quads of 4-lane vectors");
    static_assert(MR * NV + NV + MR / 4 <= 32, "accumulators + operands fit the 32 q registers");
    static_assert(KU == 1 || KU == 2, "k unrolled once or twice");

    // acc[q * 4 + lane][v] += b[v] * a[lane] for the four rows whose A values are in `a`.
    // The lane of vfmaq_laneq_f32 must be a constant, so the four are written out.
    template <int MRT, int NVT>
    [[gnu::always_inline]] static inline void fma_quad(B (&acc)[MRT][NVT],
                                                       const float32x4_t (&b)[NVT],
                                                       float32x4_t a, int q) {
#pragma GCC unroll 4
        for (int v = 0; v < NVT; ++v) {
            acc[q * 4 + 0][v] = vfmaq_laneq_f32(acc[q * 4 + 0][v], b[v], a, 0);
            acc[q * 4 + 1][v] = vfmaq_laneq_f32(acc[q * 4 + 1][v], b[v], a, 1);
            acc[q * 4 + 2][v] = vfmaq_laneq_f32(acc[q * 4 + 2][v], b[v], a, 2);
            acc[q * 4 + 3][v] = vfmaq_laneq_f32(acc[q * 4 + 3][v], b[v], a, 3);
        }
    }

    // One k step of an MRT x NVT tile: the B row of the panel, then the A quads of each MR-row
    // tile (a tall block spans several packed tiles, a_tile floats apart).
    template <int MRT, int NVT>
    [[gnu::always_inline]] static inline void k_step(B (&acc)[MRT][NVT], const float* ak,
                                                     const float* bk, int64_t a_tile) {
        float32x4_t b[NVT];
#pragma GCC unroll 4
        for (int v = 0; v < NVT; ++v) b[v] = vld1q_f32(bk + v * W);
#pragma GCC unroll 8
        for (int q = 0; q < MRT / 4; ++q)
            fma_quad<MRT, NVT>(acc, b, vld1q_f32(ak + (4 * q / MR) * a_tile + (4 * q) % MR), q);
    }

    // One MRT x (NVT vectors) tile of C (MRT a multiple of MR): acc = sum_k op(A)[r, k] *
    // Bpanel[k, :], then Gemm::store_tile (C = alpha acc + beta C + bias, first mr rows, last_w
    // lanes of the last vector). The accumulators are xsimd batches (a wrapped float32x4_t) only
    // so that store_tile takes them. `a` is packed: MR-row tiles of [kc, lda = MR] one after
    // another, op(A)[r, k] = a[(r / MR) * lda kc + k * lda + r % MR].
    // mca_id: the LLVM-MCA region of this instantiation (0 = none; see PG_MCA_BEGIN).
    template <int NVT, int MRT, int mca_id = 0>
    static void tile(int kc, const float* a, int64_t lda, const float* bp, int64_t ldbp, float* c,
                     int64_t ldc, float alpha, float beta, const float* bias, int mr, int last_w,
                     const Fused& f) {
        static_assert(MRT % MR == 0, "tiles are whole MR-row groups");
        Base::prefetch_fused(f, ldc, mr, NVT * W);
        const int64_t a_tile = lda * kc;
        B acc[MRT][NVT];
#pragma GCC unroll 32
        for (int r = 0; r < MRT; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) acc[r][v] = B(0.0f);
        int k = 0;
        for (; k + KU <= kc; k += KU) {
            if constexpr (mca_id != 0) PG_MCA_BEGIN(mca_id);
#pragma GCC unroll 2
            for (int u = 0; u < KU; ++u)
                k_step<MRT, NVT>(acc, a + int64_t(k + u) * lda, bp + (k + u) * ldbp, a_tile);
            if constexpr (mca_id != 0) PG_MCA_END();
        }
        if constexpr (KU > 1)
            for (; k < kc; ++k) k_step<MRT, NVT>(acc, a + int64_t(k) * lda, bp + k * ldbp, a_tile);
        store_tile(acc, c, ldc, alpha, beta, bias, mr, last_w, f);
    }

    template <int NVT>
    static void tile_rows(bool tall, int kc, const float* a, int64_t lda, const float* bp,
                          int64_t ldbp, float* c, int64_t ldc, float alpha, float beta,
                          const float* bias, int mr, int last_w, const Fused& f) {
        if constexpr (tall_rows(NVT) > MR) {
            if (tall)
                return tile<NVT, tall_rows(NVT)>(kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias,
                                                 tall_rows(NVT), last_w, f);
        }
        tile<NVT, MR>(kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr, last_w, f);
    }

    // What Gemm::run_with calls for each register block (the signature of Gemm::tile_nv). With
    // kPacksA it only ever passes packed_a (a_trans = true, lda = MR).
    static constexpr bool kPacksA = true;
    template <bool a_trans>
    static void tile_nv(int nv, bool tall, int kc, const float* a, int64_t lda, const float* bp,
                        int64_t ldbp, float* c, int64_t ldc, float alpha, float beta,
                        const float* bias, int mr, int last_w, const Fused& f) {
        static_assert(a_trans, "the lane kernel reads packed row tiles only");
        static_assert(NV >= 1 && NV <= 3, "tile_nv handles panels of 1 to 3 vectors");
        if constexpr (NV >= 3)
            if (nv == 3)
                return tile_rows<3>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr,
                                    last_w, f);
        if constexpr (NV >= 2)
            if (nv == 2)
                return tile_rows<2>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr,
                                    last_w, f);
        tile_rows<1>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr, last_w, f);
    }

    static void run(const GemmArgs& g) { Base::template run_with<LaneGemm>(g); }
};

}  // namespace
}  // namespace pg::kernels::neon
