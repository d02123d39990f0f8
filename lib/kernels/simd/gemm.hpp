// The fp32 GEMM of one instruction set (KernelTable::sgemm): the BLIS-style Gemm with its
// packing, register-tile micro-kernel and epilogue (bias, fused GELU), and its narrow products
// (dot-product columns, the transposed product); the NEON micro-kernels (kernels/neon/) run these
// same loops through Gemm::run_with. Included only by the per-arch translation units, through
// simd_kernels.hpp (or kernels/neon/, which also include that).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/kernel_table.hpp"
#include "kernels/scratch.hpp"
#include "kernels/simd/elementwise.hpp"
#include "kernels/simd/tile_common.hpp"

// An anonymous namespace: every arch TU gets its own internal copy, so no inline function
// compiled with AVX-512 flags can be picked by the linker for code that must run on a lesser
// CPU (see simd_kernels.hpp).
namespace pg::kernels::simd {
namespace {

// ---------------------------------------------------------------------------------------------
// GEMM: C[M,N] = alpha op(A) op(B) + beta C (+ bias), BLIS-style.
//
//   for jc over N in NC columns:
//     for pc over K in KC steps:            pack op(B)[pc:, jc:] into NR-wide panels
//       for ic over M in MC rows:           (the A rows of this block stay in L2)
//         for jr over the NR panels:        (one panel, kc x NR, reused by every row tile)
//           for ir over MR row tiles:       micro-kernel: MR x NR of C in registers
//
// B is not packed when it is plain and M fits one row block (see reads_b_directly).
// A is not packed: the micro-kernel broadcasts op(A)[i+r, k] straight from A, which is
// contiguous in k for a plain A and contiguous in r for a transposed one, so both layouts
// stream well. Only a partial row tile (M % MR rows) is copied into a zero-padded buffer.
// (An instruction set may bring its own micro-kernel to these loops, run_with<Micro>; the
// aarch64 one, kernels/neon/, reads every row tile of A packed.)
// The last column panel is only as many vectors wide as it needs, zero-padded when B is
// packed; an edge tile stores only its valid rows and lanes, with the same arithmetic as a whole
// tile, so every element of C is computed by exactly the same sequence of operations wherever
// it falls (any split across threads): sgemm_parallel is bitwise equal to sgemm.
// ---------------------------------------------------------------------------------------------

template <class Arch, int MR, int NV, int KC_>
struct Gemm {
    using B = xsimd::batch<float, Arch>;
    static constexpr int W = int(B::size);
    static constexpr int NR = NV * W;
    // K block, set per instruction set by its table (table_<arch>.cpp). Textbook BLIS keeps a
    // B panel (KC x NR) in L1; on Zen 5 longer blocks (512: 96 KB panels served from L2) were
    // faster, since each block costs a pass over C and a B pack.
    static constexpr int KC = KC_;
    // A transposed A (a weight gradient's dy^T) with rows 1 KB or more apart: each k of a tile
    // reads another row, so shorter K blocks keep a tile's rows few enough for the TLB and
    // prefetchers (measured on Zen 5: 2304 x 768 x 1024 from 221 to 237 GFLOP/s; with closer
    // rows the long blocks are better).
    static constexpr int KC_TN = KC < 128 ? KC : 128;
    static constexpr int KC_TN_MIN_LDA = 256;
    static constexpr int MC = 16 * MR;
    static constexpr int NC = (512 / NR) * NR;

    // Per-thread scratch: the packed B block and packed A row tiles, allocated once per thread.
    using Scratch = PackBuffers<float>;

    static Scratch& scratch() {
        thread_local Scratch s(std::size_t(KC) * NC, std::size_t(KC) * MC);
        return s;
    }

    // Vectors in the packed panel of w valid columns: the last panel of a block is only as wide
    // as it needs to be (N = 68 with 32-wide panels: 32 + 32 + 16, not 32 + 32 + 32).
    static int panel_vectors(int w) { return (w + W - 1) / W; }

    // GemmArgs' fused GELU for one tile, set on the last K block only (null otherwise):
    // pointers at the tile's first element, with C's ldc. store_tile applies it to the finished
    // values while they are still in registers (see store_tile_fused).
    struct Fused {
        float* gelu_out = nullptr;
        const float* gelu_grad_input = nullptr;
    };
    static Fused fused_at(const GemmArgs& g, int64_t at) {
        Fused f;
        if (g.gelu_out) f.gelu_out = g.gelu_out + at;
        if (g.gelu_grad_input) f.gelu_grad_input = g.gelu_grad_input + at;
        return f;
    }

    // Asks for the cache lines of the tile's GELU input (mr rows of cols floats) before the k
    // loop, so they have arrived when the epilogue reads them (a micro-kernel calls this first).
    static void prefetch_fused(const Fused& f, int64_t ldc, int mr, int cols) {
        if (!f.gelu_grad_input) return;
        for (int r = 0; r < mr; ++r) {
            const float* row = f.gelu_grad_input + r * ldc;
            for (int j = 0; j < cols; j += 16) __builtin_prefetch(row + j);
            __builtin_prefetch(row + cols - 1);  // the last line, where the row is not aligned
        }
    }

    // One MR x (NVT vectors) tile of C: acc = sum_k op(A)[r, k] * Bpanel[k, :], then
    // C = alpha * acc + beta * C (C not read when beta == 0) + bias, stored for the first mr
    // rows and, in the last vector, the first last_w lanes (an edge tile). A partial vector
    // goes through a zero-padded buffer with the same arithmetic, so each element of C gets
    // the same operations whether its tile is whole or not.
    // a_trans: op(A)[r, k] = a[k * lda + r] (else a[r * lda + k]).
    template <bool a_trans, int NVT, int MRT = MR>
    static void tile(int kc, const float* a, int64_t lda, const float* bp, int64_t ldbp, float* c,
                     int64_t ldc, float alpha, float beta, const float* bias, int mr, int last_w,
                     const Fused& f) {
        prefetch_fused(f, ldc, mr, NVT * W);
        B acc[MRT][NVT];
#pragma GCC unroll 24
        for (int r = 0; r < MRT; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) acc[r][v] = B(0.0f);
        for (int k = 0; k < kc; ++k) {
            B bv[NVT];
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) bv[v] = B::load_unaligned(bp + k * ldbp + v * W);
#pragma GCC unroll 24
            for (int r = 0; r < MRT; ++r) {
                const B av(a_trans ? a[int64_t(k) * lda + r] : a[r * lda + k]);
#pragma GCC unroll 4
                for (int v = 0; v < NVT; ++v) acc[r][v] = fused_fma(av, bv[v], acc[r][v]);
            }
        }
        store_tile(acc, c, ldc, alpha, beta, bias, mr, last_w, f);
    }

    // The end of tile() (and of any other micro-kernel for these loops, kernels/neon/): C = alpha
    // acc + beta C + bias for the first mr rows and, in the last vector, last_w lanes, then the
    // fused GELU f (if any) on those values.
    template <int MRT, int NVT>
    [[gnu::always_inline]] static inline void store_tile(const B (&acc)[MRT][NVT], float* c,
                                                         int64_t ldc, float alpha, float beta,
                                                         const float* bias, int mr, int last_w,
                                                         const Fused& f) {
        if (f.gelu_out || f.gelu_grad_input) {
            // A copy for the out-of-line epilogue: passing acc itself would let its address
            // escape, and GCC then keeps the accumulators in memory, storing all of them on every
            // k step (llvm-mca: the NEON 8x12 loop went from 8 to 12 cycles on exynos-m4).
            B held[MRT][NVT];
#pragma GCC unroll 24
            for (int r = 0; r < MRT; ++r)
#pragma GCC unroll 4
                for (int v = 0; v < NVT; ++v) held[r][v] = acc[r][v];
            return store_tile_fused<MRT, NVT>(held, c, ldc, alpha, beta, bias, mr, last_w, f);
        }
        const B alpha_v(alpha), beta_v(beta);
        const bool partial = last_w < W;
#pragma GCC unroll 24
        for (int r = 0; r < MRT; ++r) {
            if (r >= mr) break;
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) {
                float* cp = c + r * ldc + v * W;
                if (v == NVT - 1 && partial) {
                    store_partial(acc[r][v], alpha_v, beta, beta_v, bias ? bias + v * W : nullptr,
                                  cp, last_w);
                    continue;
                }
                epilogue(acc[r][v], alpha_v, beta, beta_v, cp, bias ? bias + v * W : nullptr)
                    .store_unaligned(cp);
            }
        }
    }

    // alpha acc + beta C + bias for one vector (C not read when beta == 0), written so that the
    // compiler has no multiply left to fuse into an add: left to itself GCC fuses a plain
    // `acc * alpha + bias` at some places of an unrolled epilogue and not at others (seen in the
    // aarch64 disassembly), and an element's rounding would then depend on where its tile falls.
    // fma(acc, alpha, beta * C) also gives the same result whether or not the compiler knows
    // beta = 1 (the later K blocks), since 1 * C = C.
    static B epilogue(B acc, B alpha_v, float beta, B beta_v, const float* c, const float* bias) {
        if (beta != 0.0f) {
            const B out = fused_fma(acc, alpha_v, beta_v * B::load_unaligned(c));
            return bias ? out + B::load_unaligned(bias) : out;
        }
        return bias ? fused_fma(acc, alpha_v, B::load_unaligned(bias)) : acc * alpha_v;
    }

    // The epilogue of tile() for a vector with only w valid lanes (no access past them): C and
    // bias are read through zero-padded buffers (load_lanes), the result written back the same
    // way (store_lanes).
    static B epilogue_partial(B acc, B alpha_v, float beta, B beta_v, const float* bias,
                              const float* cp, int w) {
        const B c_v = beta != 0.0f ? load_lanes(cp, w) : B(0.0f);
        alignas(64) float c_buf[W], bias_buf[W];
        c_v.store_aligned(c_buf);
        if (bias) load_lanes(bias, w).store_aligned(bias_buf);
        return epilogue(acc, alpha_v, beta, beta_v, c_buf, bias ? bias_buf : nullptr);
    }
    static void store_partial(B acc, B alpha_v, float beta, B beta_v, const float* bias, float* cp,
                              int w) {
        store_lanes(epilogue_partial(acc, alpha_v, beta, beta_v, bias, cp, w), cp, w);
    }
    // The first w lanes of p as a vector, the rest 0; and the first w lanes of v to p.
    static B load_lanes(const float* p, int w) {
        alignas(64) float buf[W] = {};
        for (int j = 0; j < w; ++j) buf[j] = p[j];
        return B::load_aligned(buf);
    }
    static void store_lanes(B v, float* p, int w) {
        alignas(64) float buf[W];
        v.store_aligned(buf);
        for (int j = 0; j < w; ++j) p[j] = buf[j];
    }

    // store_tile with the fused GELU, out of line (the accumulators reach it through the stack:
    // a staging tile in L1, and the GELU's code once per tile shape instead of in every copy of
    // the k loop). Each vector of the tile is finished as store_tile finishes it, then
    //   gelu_out:        gelu(out) stored to gelu_out, out to C;
    //   gelu_grad_input: gelu'(x) * out stored to C, x read from gelu_grad_input;
    // the operations of Elementwise::gelu_forward / gelu_grad_times over the same row of C (their
    // vectors start at the same columns and a partial one is the same zero-padded vector), so
    // the result is bit for bit what those kernels give on the stored tile, without reading the
    // tile back.
    template <int MRT, int NVT>
    [[gnu::noinline]] static void store_tile_fused(const B (&acc)[MRT][NVT], float* c, int64_t ldc,
                                                   float alpha, float beta, const float* bias,
                                                   int mr, int last_w, const Fused& f) {
        using E = Elementwise<Arch>;
        const B alpha_v(alpha), beta_v(beta);
        const bool partial = last_w < W;
        for (int r = 0; r < mr && r < MRT; ++r) {
            for (int v = 0; v < NVT; ++v) {
                const int64_t at = r * ldc + v * W;
                const float* bv = bias ? bias + v * W : nullptr;
                if (v == NVT - 1 && partial) {
                    B out = epilogue_partial(acc[r][v], alpha_v, beta, beta_v, bv, c + at, last_w);
                    if (f.gelu_out)
                        store_lanes(E::gelu(out), f.gelu_out + at, last_w);
                    else
                        out = E::gelu_grad(load_lanes(f.gelu_grad_input + at, last_w)) * out;
                    store_lanes(out, c + at, last_w);
                    continue;
                }
                B out = epilogue(acc[r][v], alpha_v, beta, beta_v, c + at, bv);
                if (f.gelu_out) E::gelu(out).store_unaligned(f.gelu_out + at);
                else out = E::gelu_grad(B::load_unaligned(f.gelu_grad_input + at)) * out;
                out.store_unaligned(c + at);
            }
        }
    }

    // Rows per register block for a panel of nv vectors. A full panel takes MR rows; a narrower
    // one (the N = 32 products of attention with 16-lane vectors, the head's last column panel)
    // takes more rows, so the block still holds about MR x NV accumulators (12 x 2 instead of
    // 6 x 2 for a 6 x 4 tile) and each loaded B vector still feeds as many FMAs. A multiple of
    // MR, so the row tiles after the tall blocks stay aligned to whole MR tiles.
    static constexpr int tall_rows(int nv) { return (NV / nv) * MR; }

    // tile() for a panel of nv vectors (1..NV) and rows MR or tall_rows(nv), picked at run time.
    template <bool a_trans, int NVT>
    static void tile_rows(bool tall, int kc, const float* a, int64_t lda, const float* bp,
                          int64_t ldbp, float* c, int64_t ldc, float alpha, float beta,
                          const float* bias, int mr, int last_w, const Fused& f) {
        if constexpr (tall_rows(NVT) > MR) {
            if (tall)
                return tile<a_trans, NVT, tall_rows(NVT)>(kc, a, lda, bp, ldbp, c, ldc, alpha,
                                                          beta, bias, tall_rows(NVT), last_w, f);
        }
        tile<a_trans, NVT, MR>(kc, a, lda, bp, ldbp, c, ldc, alpha, beta, bias, mr, last_w, f);
    }

    template <bool a_trans>
    static void tile_nv(int nv, bool tall, int kc, const float* a, int64_t lda, const float* bp,
                        int64_t ldbp, float* c, int64_t ldc, float alpha, float beta,
                        const float* bias, int mr, int last_w, const Fused& f) {
        static_assert(NV >= 1 && NV <= 4, "tile_nv handles panels of 1 to 4 vectors");
        switch (nv) {
            case 1:
                return tile_rows<a_trans, 1>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta,
                                             bias, mr, last_w, f);
            case 2:
                if constexpr (NV >= 2)
                    return tile_rows<a_trans, 2>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta,
                                                 bias, mr, last_w, f);
                break;
            case 3:
                if constexpr (NV >= 3)
                    return tile_rows<a_trans, 3>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta,
                                                 bias, mr, last_w, f);
                break;
            default:
                if constexpr (NV >= 4)
                    return tile_rows<a_trans, 4>(tall, kc, a, lda, bp, ldbp, c, ldc, alpha, beta,
                                                 bias, mr, last_w, f);
                break;
        }
    }

    // A plain B's rows are contiguous, so when M fits in one row block (each B panel then
    // serves at most MC / MR tiles, too few to repay packing it: a small weight gradient such
    // as the head's, M = 68) a panel of whole vectors is read in place. Otherwise, and for a
    // transposed B or a partial last panel, B is packed (measured on Zen 5: packing wins for
    // M >= 384 even with a plain B).
    static bool reads_b_directly(const GemmArgs& g, int w) {
        return !g.B16 && !g.Bq && !g.trans_b && w % W == 0 && g.M <= MC;
    }

    // Packs op(B)[pc:pc+kc, jc:jc+nc] as panels of NR columns (the last one panel_vectors(w)
    // vectors wide); panel p0 starts at bp + p0 * kc, columns past nc are zero.
    static void pack_b(float* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
        if (g.Bq) return pack_bq(bp, g, pc, kc, jc, nc);
        if (g.B16) return pack_b16(bp, g, pc, kc, jc, nc);
        for (int p0 = 0; p0 < nc; p0 += NR) {
            const int w = min_of(NR, nc - p0);
            const int pw = panel_vectors(w) * W;
            float* dst = bp + int64_t(p0) * kc;
            if (reads_b_directly(g, w)) continue;
            if (!g.trans_b) {  // op(B)[k, j] = B[k * ldb + j]: rows are contiguous
                for (int k = 0; k < kc; ++k) {
                    const float* src = g.B + int64_t(pc + k) * g.ldb + jc + p0;
                    float* d = dst + k * pw;
                    if (w == NR) {
#pragma GCC unroll 4
                        for (int v = 0; v < NV; ++v)
                            B::load_unaligned(src + v * W).store_aligned(d + v * W);
                    } else {
                        int j = 0;
                        for (; j < w; ++j) d[j] = src[j];
                        for (; j < pw; ++j) d[j] = 0.0f;
                    }
                }
            } else {  // op(B)[k, j] = B[j * ldb + k]: a transpose, 8 columns at a time
                const float* col0 = g.B + int64_t(jc + p0) * g.ldb + pc;
                int j = pack_transposed16(dst, pw, kc, w, [&](int col, int k) {
#if defined(__AVX512F__)
                    return _mm512_loadu_ps(col0 + int64_t(col) * g.ldb + k);
#else
                    (void)col, (void)k;
                    return 0;
#endif
                });
                for (; j + 8 <= w; j += 8) {
                    const float* src = col0 + int64_t(j) * g.ldb;
                    for (int k = 0; k < kc; ++k) {
                        float* d = dst + k * pw + j;
#pragma GCC unroll 8
                        for (int jj = 0; jj < 8; ++jj) d[jj] = src[jj * g.ldb + k];
                    }
                }
                for (; j < w; ++j) {
                    const float* src = col0 + int64_t(j) * g.ldb;
                    for (int k = 0; k < kc; ++k) dst[k * pw + j] = src[k];
                }
                for (int j = w; j < pw; ++j)
                    for (int k = 0; k < kc; ++k) dst[k * pw + j] = 0.0f;
            }
        }
    }

    // The transposed pack (op(B)[k, j] = B[j * ldb + k]) of a panel's first columns in blocks of
    // 16 columns x 16 k on AVX-512: load(col, k) gives the 16 values B[col][k .. k + 16) as fp32
    // (converted from 16 bits where B is), transpose16x16 turns 16 such rows into 16 panel rows.
    // The k past the last whole 16 come from a vector of each column's last 16 values. Returns
    // the columns packed (a multiple of 16; 0 on other instruction sets and for kc < 16, where
    // the caller packs every column itself).
    // The same values land in the same places as in the scalar loops: a copy, exact.
    template <class Load>
    static int pack_transposed16(float* dst, int pw, int kc, int w, const Load& load) {
#if defined(__AVX512F__)
        if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) {
            if (kc < 16) return 0;  // (a rank-8 LoRA factor's K): too short for a block
            const int k16 = kc / 16 * 16;
            int j = 0;
            for (; j + 16 <= w; j += 16) {
                for (int k0 = 0; k0 < k16; k0 += 16) {
                    __m512 r[16];
                    for (int i = 0; i < 16; ++i) r[i] = load(j + i, k0);
                    transpose16x16(r);
                    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + int64_t(k0 + i) * pw + j, r[i]);
                }
                if (k16 < kc) {  // the last kc % 16 values of each column, from its last 16
                    alignas(64) float tail[16];
                    for (int i = 0; i < 16; ++i) {
                        _mm512_store_ps(tail, load(j + i, kc - 16));
                        for (int k = k16; k < kc; ++k) dst[int64_t(k) * pw + j + i] = tail[k - (kc - 16)];
                    }
                }
            }
            return j;
        }
#endif
        (void)dst, (void)pw, (void)kc, (void)w, (void)load;
        return 0;
    }

    // pack_b for a 16-bit B (GemmArgs::B16): the same panels, each value converted exactly to
    // fp32 on the way (Elementwise::half_to_float). A plain B converts each panel row in place;
    // a transposed one (a weight [out, in] in x W^T) goes through pack_transposed16 (AVX-512) and
    // converts any other column's kc values, contiguous in the weight, into a buffer and
    // scatters them down the panel.
    static void pack_b16(float* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
        for (int p0 = 0; p0 < nc; p0 += NR) {
            const int w = min_of(NR, nc - p0);
            const int pw = panel_vectors(w) * W;
            float* dst = bp + int64_t(p0) * kc;
            if (!g.trans_b) {
                for (int k = 0; k < kc; ++k) {
                    float* d = dst + k * pw;
                    Elementwise<Arch>::half_to_float(
                        d, g.B16 + int64_t(pc + k) * g.ldb + jc + p0, w, g.b16_format);
                    for (int j = w; j < pw; ++j) d[j] = 0.0f;
                }
            } else {
                // Read only by the AVX-512 loads below (elsewhere each column is converted).
                [[maybe_unused]] const uint16_t* col0 = g.B16 + int64_t(jc + p0) * g.ldb + pc;
                const bool bf16 = g.b16_format == HalfFormat::bf16;
                alignas(64) float column[KC];
                for (int j = pack_transposed16(dst, pw, kc, w, [&](int col, int k) {
#if defined(__AVX512F__)
                         const __m256i h = _mm256_loadu_si256(
                             reinterpret_cast<const __m256i*>(col0 + int64_t(col) * g.ldb + k));
                         return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                                     : _mm512_cvtph_ps(h);
#else
                         (void)col, (void)k, (void)bf16;
                         return 0;
#endif
                     });
                     j < w; ++j) {
                    Elementwise<Arch>::half_to_float(
                        column, g.B16 + int64_t(jc + p0 + j) * g.ldb + pc, kc, g.b16_format);
                    for (int k = 0; k < kc; ++k) dst[k * pw + j] = column[k];
                }
                for (int j = w; j < pw; ++j)
                    for (int k = 0; k < kc; ++k) dst[k * pw + j] = 0.0f;
            }
        }
    }

    // pack_b for a block-quantized B (GemmArgs::Bq): the same panels, each value decoded to fp32
    // on the way (dequantize, the loader's scalar definition). A plain B (the input gradient
    // dy W) decodes each panel row in place; a transposed one (x W^T) decodes each column's kc
    // values, contiguous in the weight, and scatters them down the panel.
    static void pack_bq(float* bp, const GemmArgs& g, int pc, int kc, int jc, int nc) {
        alignas(64) float column[KC];
        for (int p0 = 0; p0 < nc; p0 += NR) {
            const int w = min_of(NR, nc - p0);
            const int pw = panel_vectors(w) * W;
            float* dst = bp + int64_t(p0) * kc;
            if (!g.trans_b) {
                for (int k = 0; k < kc; ++k) {
                    float* d = dst + k * pw;
                    dequantize(g.bq_format, g.Bq, g.bq_offset + int64_t(pc + k) * g.ldb + jc + p0, w, d);
                    for (int j = w; j < pw; ++j) d[j] = 0.0f;
                }
                continue;
            }
            for (int j = 0; j < w; ++j) {
                dequantize(g.bq_format, g.Bq, g.bq_offset + int64_t(jc + p0 + j) * g.ldb + pc, kc, column);
                for (int k = 0; k < kc; ++k) dst[k * pw + j] = column[k];
            }
            for (int j = w; j < pw; ++j)
                for (int k = 0; k < kc; ++k) dst[k * pw + j] = 0.0f;
        }
    }

    // Copies the row tiles of op(A)[ic+r0:ic+mc, pc:pc+kc] (r0 a multiple of MR) into packed_a:
    // tile t at packed_a + t * MR * kc as [kc, MR] (the transposed layout with lda = MR), rows
    // past mc zero.
    static void pack_a(float* packed_a, const GemmArgs& g, int pc, int kc, int ic, int mc, int r0) {
        for (int t0 = r0; t0 < mc; t0 += MR) {
            const int mr = min_of(MR, mc - t0);
            float* dst = packed_a + int64_t(t0) * kc;
            for (int k = 0; k < kc; ++k) {
                float* d = dst + k * MR;
                int r = 0;
                if (g.trans_a) {
                    const float* src = g.A + int64_t(pc + k) * g.lda + ic + t0;
                    for (; r < mr; ++r) d[r] = src[r];
                } else {
                    const float* src = g.A + int64_t(ic + t0) * g.lda + pc + k;
                    for (; r < mr; ++r) d[r] = src[int64_t(r) * g.lda];
                }
                for (; r < MR; ++r) d[r] = 0.0f;
            }
        }
    }

    // K == 0: C = beta * C + bias.
    static void scale_only(const GemmArgs& g) {
        for (int i = 0; i < g.M; ++i) {
            float* c = g.C + int64_t(i) * g.ldc;
            for (int j = 0; j < g.N; ++j) {
                float out = g.beta == 0.0f ? 0.0f : g.beta * c[j];
                if (g.bias) out += g.bias[j];
                c[j] = out;
            }
        }
        apply_epilogue(g, 0, g.M, 0, g.N);
    }

    // GemmArgs' fused GELU (gelu_out / gelu_grad_input) on the finished block
    // C[i0:i0+rows, j0:j0+cols].
    static void apply_epilogue(const GemmArgs& g, int i0, int rows, int j0, int cols) {
        if (!g.gelu_out && !g.gelu_grad_input) return;
        for (int i = i0; i < i0 + rows; ++i) {
            const int64_t at = int64_t(i) * g.ldc + j0;
            if (g.gelu_out) Elementwise<Arch>::gelu_forward(g.gelu_out + at, g.C + at, cols);
            if (g.gelu_grad_input)
                Elementwise<Arch>::gelu_grad_times(g.C + at, g.gelu_grad_input + at, cols);
        }
    }

    // ---- Narrow products: a vector column of the register tile would spend W lanes on
    // fewer columns of C (a rank-8 LoRA factor's N = 8 on a 16-lane vector; the head's 65th
    // column of 65 costs as much as 16), and its tall blocks broadcast from 24 rows of A at
    // once, which at lda = 2048 floats share one L1 set: a LoRA step's x A^T and dy B ran at
    // 10-20 GFLOP/s (docs/performance.md). Such columns are dot products instead, and a narrow
    // product with a transposed A is computed as its wide transpose.

    // The last columns of C computed as dot products of a row of A and a row of op(B)^T (both
    // contiguous in k): with a transposed B the last N % W, with a plain B (its few columns
    // gathered into rows first) all N < W of them, when that costs less than a vector column
    // (about K/W fused multiply-adds and a horizontal sum per element, against K per row). The
    // rule depends only on N and K, never on a thread's share of the columns (sgemm_parallel
    // splits columns at multiples of NR, which keeps N % W), so results stay bitwise the same
    // for any split.
    static int dot_columns(const GemmArgs& g) {
        if (g.trans_a || (!g.trans_b && (g.B16 || g.Bq))) return 0;
        const int r = g.trans_b ? g.N % W : (g.N < W ? g.N : 0);
        return r > 0 && int64_t(r) * (g.K / W + 8) < g.K ? r : 0;
    }

    // Rows of A per dot block: each of a block's rows x columns elements has its own register.
#if defined(__aarch64__)
    static constexpr int kDotRows = 2;  // 32 vector registers
#else
    static constexpr int kDotRows = W == 16 ? 2 : 1;  // AVX-512's 32 registers, else 16
#endif
    static constexpr int kDotCols = 8;

    // a * b + s rounded the same way in every dot block (a compiler left to contract it might
    // fuse it in some instantiations only).
    static float madd(float a, float b, float s) {
#if defined(__FMA__) || defined(__aarch64__)
        return std::fma(a, b, s);
#else
        return a * b + s;
#endif
    }

    // C[i, j] = x + beta * C[i, j] (C not read when beta == 0) + bias[j], for an element computed
    // outside the register tile (x already times alpha).
    static void store_element(const GemmArgs& g, float* c_row, int j, float x) {
        if (g.beta != 0.0f) x = std::fma(g.beta, c_row[j], x);
        if (g.bias) x += g.bias[j];
        c_row[j] = x;
    }

    // C[i:i+RB, j0:j0+JB] from A's rows i.. and b_rows[c] (K floats each) for column j0 + c: per
    // element W-lane partial sums over k (one fused multiply-add per k vector), their
    // horizontal sum, the k tail, then alpha, beta and bias. An element gets the same
    // operations in whichever block it falls.
    template <int RB, int JB>
    static void dot_block(const GemmArgs& g, int i, int j0, const float* const* b_rows) {
        B acc[RB][JB];
        for (int r = 0; r < RB; ++r)
            for (int c = 0; c < JB; ++c) acc[r][c] = B(0.0f);
        const float* a = g.A + int64_t(i) * g.lda;
        int k = 0;
        for (; k + W <= g.K; k += W) {
            B av[RB];
            for (int r = 0; r < RB; ++r) av[r] = B::load_unaligned(a + int64_t(r) * g.lda + k);
            for (int c = 0; c < JB; ++c) {
                const B bv = B::load_unaligned(b_rows[c] + k);
                for (int r = 0; r < RB; ++r) acc[r][c] = fused_fma(av[r], bv, acc[r][c]);
            }
        }
        for (int r = 0; r < RB; ++r) {
            const float* ar = a + int64_t(r) * g.lda;
            float* c_row = g.C + int64_t(i + r) * g.ldc;
            for (int c = 0; c < JB; ++c) {
                float sum = xsimd::hadd(acc[r][c]);
                for (int kk = k; kk < g.K; ++kk) sum = madd(ar[kk], b_rows[c][kk], sum);
                store_element(g, c_row, j0 + c, sum * g.alpha);
            }
        }
    }

    // Columns [first, N) of C by dot_block: kDotCols columns at a time over kDotRows rows, the
    // rest of the columns one at a time over 8 rows (so a lone column still has 8 independent
    // sums in flight), and the last rows one at a time.
    static void dot_product_columns(const GemmArgs& g, int first) {
        const int n = g.N - first;
        // Each column j as K contiguous floats: a transposed fp32 B's row in place; a 16-bit B's
        // row converted, or a plain B's column gathered, into scratch.
        thread_local ScratchFloats scratch;
        const bool gather = g.B16 || g.Bq || !g.trans_b;
        const float** b_rows = scratch.pointers(std::size_t(n));
        float* gathered = gather ? scratch.sized(std::size_t(n) * g.K) : nullptr;
        for (int c = 0; c < n; ++c) {
            const int j = first + c;
            if (!gather) {
                b_rows[c] = g.B + int64_t(j) * g.ldb;
                continue;
            }
            float* row = gathered + std::size_t(c) * g.K;
            if (g.Bq)
                dequantize(g.bq_format, g.Bq, g.bq_offset + int64_t(j) * g.ldb, g.K, row);
            else if (g.B16)
                Elementwise<Arch>::half_to_float(row, g.B16 + int64_t(j) * g.ldb, g.K, g.b16_format);
            else if (!g.trans_b)
                for (int k = 0; k < g.K; ++k) row[k] = g.B[int64_t(k) * g.ldb + j];
            b_rows[c] = row;
        }
        int c0 = 0;
        for (; c0 + kDotCols <= n; c0 += kDotCols) {
            const float* const* rows = b_rows + c0;
            int i = 0;
            for (; i + kDotRows <= g.M; i += kDotRows) dot_block<kDotRows, kDotCols>(g, i, first + c0, rows);
            for (; i < g.M; ++i) dot_block<1, kDotCols>(g, i, first + c0, rows);
        }
        for (; c0 < n; ++c0) {
            const float* const* rows = b_rows + c0;
            int i = 0;
            for (; i + 8 <= g.M; i += 8) dot_block<8, 1>(g, i, first + c0, rows);
            for (; i < g.M; ++i) dot_block<1, 1>(g, i, first + c0, rows);
        }
        apply_epilogue(g, 0, g.M, first, n);
    }

    // A narrow C (N < W) with a transposed A (a LoRA factor's gradient dy^T t, N = rank):
    // computed as C^T = op(B)^T op(A)^T, N rows of M columns, whose B (A's rows) is read in
    // wide panels, then added into C transposed. Not for a 16-bit B (it would become A).
    static bool transposes_narrow(const GemmArgs& g) {
        return g.trans_a && !g.B16 && !g.Bq && g.N < W && g.M >= 2 * W;
    }

    template <class Micro>
    static void run_transposed(const GemmArgs& g) {
        thread_local ScratchFloats scratch;
        float* ct = scratch.sized(std::size_t(g.N) * g.M);
        // op(B)^T is B read transposed when B is plain, B itself when it is transposed.
        GemmArgs t = gemm_args(!g.trans_b, false, g.N, g.M, g.K, g.B, g.ldb, g.A, g.lda, ct, g.M,
                               g.alpha, 0.0f);
        run_with<Micro>(t);
        for (int i = 0; i < g.M; ++i) {
            float* c_row = g.C + int64_t(i) * g.ldc;
            for (int j = 0; j < g.N; ++j) store_element(g, c_row, j, ct[std::size_t(j) * g.M + i]);
        }
        apply_epilogue(g, 0, g.M, 0, g.N);
    }

    // run_with<Micro> calls Micro::tile_nv<a_trans> (same signature as tile_nv here) for each
    // register block. Micro::kPacksA: every row tile is read from packed_a (pack_a's [kc, MR]
    // tiles, one after another), not only a partial last one.
    static constexpr bool kPacksA = false;
    static void run(const GemmArgs& g) { run_with<Gemm>(g); }

    template <class Micro>
    static void run_with(const GemmArgs& g) {
        if (g.M <= 0 || g.N <= 0) return;
        if (g.K <= 0) {
            scale_only(g);
            return;
        }
        if (transposes_narrow(g)) return run_transposed<Micro>(g);
        const int dots = dot_columns(g);
        if (dots > 0) {
            GemmArgs tiles = g;
            tiles.N = g.N - dots;
            if (tiles.N > 0) run_tiles<Micro>(tiles);
            dot_product_columns(g, g.N - dots);
            return;
        }
        run_tiles<Micro>(g);
    }

    template <class Micro>
    static void run_tiles(const GemmArgs& g) {
        Scratch& s = scratch();
        for (int jc = 0; jc < g.N; jc += NC) {
            const int nc = min_of(NC, g.N - jc);
            const int kc_step = (g.trans_a && g.lda >= KC_TN_MIN_LDA) ? KC_TN : KC;
            for (int pc = 0; pc < g.K; pc += kc_step) {
                const int kc = min_of(kc_step, g.K - pc);
                const bool first = pc == 0;
                const float beta = first ? g.beta : 1.0f;
                pack_b(s.packed_b, g, pc, kc, jc, nc);
                for (int ic = 0; ic < g.M; ic += MC) {
                    const int mc = min_of(MC, g.M - ic);
                    const int m_full = mc / MR * MR;  // rows in whole tiles
                    // Row tiles from ir = packed_from on are read from packed_a: only a partial
                    // last tile (packing all of a transposed A measured slower, even with rows
                    // 12 KB apart: the copy costs more than the strided broadcasts).
                    const int packed_from = Micro::kPacksA ? 0 : m_full;
                    if (packed_from < mc) pack_a(s.packed_a, g, pc, kc, ic, mc, packed_from);
                    for (int jr = 0; jr < nc; jr += NR) {
                        const int nr = min_of(NR, nc - jr);
                        const int nv = panel_vectors(nr);
                        const int last_w = nr - (nv - 1) * W;
                        const bool direct = reads_b_directly(g, nr);
                        const float* bp = direct ? g.B + int64_t(pc) * g.ldb + jc + jr
                                                 : s.packed_b + int64_t(jr) * kc;
                        const int64_t ldbp = direct ? g.ldb : nv * W;
                        const float* bias = first && g.bias ? g.bias + jc + jr : nullptr;
                        const int tall = tall_rows(nv);
                        for (int ir = 0; ir < mc;) {
                            const int i = ic + ir;
                            const int64_t at = int64_t(i) * g.ldc + jc + jr;
                            float* c = g.C + at;
                            const Fused f = pc + kc == g.K ? fused_at(g, at) : Fused{};
                            // A tall block only over whole row tiles.
                            const bool use_tall = tall > MR && ir + tall <= m_full;
                            if (ir >= packed_from)
                                Micro::template tile_nv<true>(
                                    nv, use_tall, kc, s.packed_a + int64_t(ir) * kc, MR, bp, ldbp,
                                    c, g.ldc, g.alpha, beta, bias, min_of(MR, mc - ir), last_w, f);
                            else if constexpr (!Micro::kPacksA) {
                                if (g.trans_a)
                                    Micro::template tile_nv<true>(
                                        nv, use_tall, kc, g.A + int64_t(pc) * g.lda + i, g.lda,
                                        bp, ldbp, c, g.ldc, g.alpha, beta, bias, MR, last_w, f);
                                else
                                    Micro::template tile_nv<false>(
                                        nv, use_tall, kc, g.A + int64_t(i) * g.lda + pc, g.lda,
                                        bp, ldbp, c, g.ldc, g.alpha, beta, bias, MR, last_w, f);
                            }
                            ir += use_tall ? tall : MR;
                        }
                    }
                }
            }
        }
    }
};

// The BLIS loops of the GEMMs whose operands are both packed into their own 16-bit formats (the
// FMLA .8h GEMM, kernels/neon/fp16_gemm.cpp; the VDPBF16PS GEMM, kernels/x86/bf16_gemm.cpp): N
// blocks of K::NC columns, K blocks of K::KC (B packed once per block), M blocks of K::MC rows (A
// packed once per block and N block), then every MR x NR tile with the fp32 epilogue's
// arguments (beta 1 after the first K block, the bias on the first, the fused GELU on the last).
// K provides MR, NR, KC, MC, NC, Epilogue (a Gemm), scratch() (PackBuffers), packed_k(kc) (the
// packed length of kc values of k: a tile or panel at row or column i starts at
// i * packed_k(kc)), pack_b, pack_a and tile. The loops split nothing an element depends on, so
// a kernel whose tile computes each element the same way wherever it falls stays bitwise equal
// across sgemm_parallel's splits.
template <class K>
void run_packed_blocks(const GemmArgs& g) {
    auto& s = K::scratch();
    for (int jc = 0; jc < g.N; jc += K::NC) {
        const int nc = min_of(K::NC, g.N - jc);
        for (int pc = 0; pc < g.K; pc += K::KC) {
            const int kc = min_of(K::KC, g.K - pc);
            const int64_t packed = K::packed_k(kc);
            const float beta = pc == 0 ? g.beta : 1.0f;
            K::pack_b(s.packed_b, g, pc, kc, jc, nc);
            for (int ic = 0; ic < g.M; ic += K::MC) {
                const int mc = min_of(K::MC, g.M - ic);
                K::pack_a(s.packed_a, g, pc, kc, ic, mc);
                for (int jr = 0; jr < nc; jr += K::NR) {
                    const int nr = min_of(K::NR, nc - jr);
                    const float* bias = pc == 0 && g.bias ? g.bias + jc + jr : nullptr;
                    for (int ir = 0; ir < mc; ir += K::MR) {
                        const int mr = min_of(K::MR, mc - ir);
                        const int64_t at = int64_t(ic + ir) * g.ldc + jc + jr;
                        using Fused = typename K::Epilogue::Fused;
                        const Fused f = pc + kc == g.K ? K::Epilogue::fused_at(g, at) : Fused{};
                        K::tile(kc, s.packed_a + ir * packed, s.packed_b + jr * packed, g.C + at, g.ldc, g.alpha,
                                beta, bias, mr, nr, f);
                    }
                }
            }
        }
    }
}

}  // namespace
}  // namespace pg::kernels::simd
