// The "arm64+neon+fmla-lane" kernel table: the neon64 xsimd kernels with a GEMM micro-kernel
// written with raw NEON intrinsics (arm_neon.h) around FMLA by element.
//
// Why: the xsimd micro-kernel broadcasts one A value per row and k (a DUP, or a scalar load
// GCC folds into FMLA by element), and with 24 accumulators in a 8 x 12 tile GCC 12 spills one
// accumulator per k step. Here one q register holds four rows of A at the same k, and
// vfmaq_laneq_f32(acc, b, a, lane) multiplies a B vector by one of its lanes: per k step the
// tile needs 2 A loads + 3 B loads for 24 FMLAs, and 24 + 3 + 2 = 29 of the 32 q registers
// (the disassembly of the 8 x 12 loop has 24 fmla-by-element and no stack access; see
// docs/phone.md).
//
// The A layout that gives "four rows at one k" in one vector is pack_a's [kc, 8] row tile, so
// this micro-kernel reads every row tile of A packed, for both layouts (Gemm::run_with with
// kPacksA): per K block and row block a copy of mc x kc values, small against the 2 mc kc nc
// flops it feeds. The blocking, the B packing and the epilogue are the xsimd GEMM's
// (simd_kernels.hpp), and every element of C is still computed by the same chain of fused
// multiply-adds over k in order, wherever its tile falls: sgemm_parallel stays bitwise equal
// to sgemm for any thread split.
//
// Only NEON of ARMv8.0 is used (every aarch64 CPU has it), so dispatch picks this table on
// any aarch64 CPU with ASIMD; the plain xsimd table stays available (PG_KERNELS=arm64+neon).
#include <arm_neon.h>

#include "kernels/simd/simd_kernels.hpp"

namespace pg::kernels {
namespace {

constexpr int kRows = 8, kVectors = 3, kBlockK = 256;  // 8 x 12 tile, as the neon64 table
using NeonGemm = simd::Gemm<xsimd::neon64, kRows, kVectors, kBlockK>;

struct LaneGemm : NeonGemm {
    using B = NeonGemm::B;
    static constexpr int MR = kRows, NV = kVectors;
    static_assert(W == 4 && MR == 8, "the lane micro-kernel takes 8-row tiles of 4-lane vectors");

    // acc[q * 4 + lane][v] += b[v] * a[lane] for the four rows whose A values are in `a`.
    // The lane of vfmaq_laneq_f32 must be a constant, so the four are written out.
    template <int MRT, int NVT>
    static inline void fma_quad(B (&acc)[MRT][NVT], const float32x4_t (&b)[NVT],
                                float32x4_t a, int q) {
#pragma GCC unroll 4
        for (int v = 0; v < NVT; ++v) {
            acc[q * 4 + 0][v] = vfmaq_laneq_f32(acc[q * 4 + 0][v], b[v], a, 0);
            acc[q * 4 + 1][v] = vfmaq_laneq_f32(acc[q * 4 + 1][v], b[v], a, 1);
            acc[q * 4 + 2][v] = vfmaq_laneq_f32(acc[q * 4 + 2][v], b[v], a, 2);
            acc[q * 4 + 3][v] = vfmaq_laneq_f32(acc[q * 4 + 3][v], b[v], a, 3);
        }
    }

    // One MRT x (NVT vectors) tile of C (MRT a multiple of 8): acc = sum_k op(A)[r, k] *
    // Bpanel[k, :], then Gemm::store_tile (C = alpha acc + beta C + bias, first mr rows, last_w
    // lanes of the last vector). The accumulators are xsimd batches (a wrapped float32x4_t) only
    // so that store_tile takes them. `a` is packed: 8-row tiles of [kc, lda = 8] one after
    // another, op(A)[r, k] = a[(r / 8) * lda kc + k * lda + r % 8].
    template <int NVT, int MRT>
    static void tile(int kc, const float* a, int64_t lda, const float* bp, int64_t ldbp, float* c,
                     int64_t ldc, float alpha, float beta, const float* bias, int mr, int last_w) {
        static_assert(MRT % MR == 0, "tiles are whole 8-row groups");
        const int64_t a_tile = lda * kc;
        B acc[MRT][NVT];
#pragma GCC unroll 24
        for (int r = 0; r < MRT; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) acc[r][v] = B(0.0f);
        for (int k = 0; k < kc; ++k) {
            float32x4_t b[NVT];
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) b[v] = vld1q_f32(bp + k * ldbp + v * W);
            const float* ak = a + int64_t(k) * lda;
#pragma GCC unroll 6
            for (int q = 0; q < MRT / 4; ++q)
                fma_quad<MRT, NVT>(acc, b, vld1q_f32(ak + (q / 2) * a_tile + (q % 2) * 4), q);
        }
        store_tile(acc, c, ldc, alpha, beta, bias, mr, last_w);
    }

    template <int NVT>
    static void tile_rows(bool tall, int kc, const float* a, int64_t lda, const float* bp,
                          int64_t ldbp, float* c, int64_t ldc, float alpha, float beta,
                          const float* bias, int mr, int last_w) {
        if constexpr (tall_rows(NVT) > MR) {
            if (tall)
                return tile<NVT, tall_rows(NVT)>(kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias,
                                                 tall_rows(NVT), last_w);
        }
        tile<NVT, MR>(kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr, last_w);
    }

    // What Gemm::run_with calls for each register block (the signature of Gemm::tile_nv). With
    // kPacksA it only ever passes packed_a (a_trans = true, lda = MR).
    static constexpr bool kPacksA = true;
    template <bool a_trans>
    static void tile_nv(int nv, bool tall, int kc, const float* a, int64_t lda, const float* bp,
                        int64_t ldbp, float* c, int64_t ldc, float alpha, float beta,
                        const float* bias, int mr, int last_w) {
        static_assert(a_trans, "the lane kernel reads packed row tiles only");
        static_assert(NV == 3, "tile_nv handles panels of 1 to 3 vectors");
        switch (nv) {
            case 1:
                return tile_rows<1>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr,
                                    last_w);
            case 2:
                return tile_rows<2>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr,
                                    last_w);
            default:
                return tile_rows<3>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr,
                                    last_w);
        }
    }
};

}  // namespace

const KernelTable& neon64_fmla_lane_table() {
    static const KernelTable table = [] {
        KernelTable t = simd::make_table<xsimd::neon64, kRows, kVectors, kBlockK>();
        t.name = "arm64+neon+fmla-lane";
        t.sgemm = &NeonGemm::run_with<LaneGemm>;
        return t;
    }();
    return table;
}

}  // namespace pg::kernels
