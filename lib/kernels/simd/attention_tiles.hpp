// The attention-tile kernels of one instruction set (kernels/dispatch.hpp: attn_scores,
// attn_accumulate). A part of simd_kernels.hpp: it is included there, inside that header's
// anonymous namespace, before make_table, and uses only what that header already includes
// (min_of and fused_fma from tile_common.hpp).
//
// Each is a register tile of MR rows x NV vectors (the GEMM's shape for the instruction set,
// make_table's parameters) over the whole, shallow depth K (the head size for the scores; at
// most one tile of keys or queries for the accumulations), with no packing of full tiles and no
// blocking: A is broadcast from where it lies (contiguous in k for a plain A, in rows for a
// transposed one), B's rows are read in place. Only a partial last row tile of A and the
// partial last vector of B's columns go through zero-padded per-thread copies, so nothing is
// read past an operand. What the causal mask hides is skipped at the granularity of the tile:
// the scores of a row tile stop at the vector holding its last row's last visible key, and an
// accumulation's k range stops (plain A: P V, dS K) or starts (transposed A: P^T dY, dS^T Q)
// where the row tile's products become 0.
#pragma once

template <class Arch, int MR, int NV>
struct AttentionTiles {
    using B = xsimd::batch<float, Arch>;
    static constexpr int W = int(B::size);
    static_assert(NV >= 1 && NV <= 4, "AttentionTiles handles column tiles of 1 to 4 vectors");

    // Per-thread zero-padded copies: a partial row tile of A, the partial last vector of B.
    struct Buffers {
        ScratchFloats a, b;
    };
    static Buffers& buffers() {
        thread_local Buffers s;
        return s;
    }

    static B load_lanes(const float* src, int w) { return Lanes<Arch>::load(src, w); }
    static void store_lanes(B v, float* dst, int w) { Lanes<Arch>::store(v, dst, w); }

    // Columns [n_full, N) of B [K, N] (ldb) as K rows of W floats, zero-padded; returns them
    // (null when N is a multiple of W).
    static const float* pack_tail(ScratchFloats& scratch, const float* b, int64_t ldb, int K, int N) {
        const int n_full = N - N % W, w = N - n_full;
        if (w == 0) return nullptr;
        float* buf = scratch.zeroed(size_t(K) * W);
        for (int k = 0; k < K; ++k)
            for (int j = 0; j < w; ++j) buf[size_t(k) * W + j] = b[k * ldb + n_full + j];
        return buf;
    }

    // Rows [i0, i0 + mr) of op(A) [M, K] as a full MR-row tile with zero rows past mr: plain, an
    // [MR, K] copy (lda K); transposed, a [K, MR] copy (lda MR). Returns the tile and its lda.
    template <bool trans>
    static const float* pack_rows(ScratchFloats& scratch, const float* a, int64_t lda, int mr, int K,
                                  int64_t& lda_out) {
        float* buf = scratch.zeroed(size_t(K) * MR);
        for (int r = 0; r < mr; ++r)
            for (int k = 0; k < K; ++k) {
                if (trans)
                    buf[size_t(k) * MR + r] = a[k * lda + r];
                else
                    buf[size_t(r) * K + k] = a[r * lda + k];
            }
        lda_out = trans ? MR : K;
        return buf;
    }

    // acc[r][v] = sum over k in [kb, ke) of op(A)[r, k] * (vector v of B's row k), with
    // op(A)[r, k] = a[k * lda + r] (trans) or a[r * lda + k]; vector v < NVT - 1 of row k at
    // b + k * ldb + v * W, the last one at last + k * ldl (B itself or its padded tail).
    template <bool trans, int NVT>
    [[gnu::always_inline]] static inline void product(B (&acc)[MR][NVT], const float* a, int64_t lda,
                                                      const float* b, int64_t ldb, const float* last,
                                                      int64_t ldl, int kb, int ke) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) acc[r][v] = B(0.0f);
        for (int k = kb; k < ke; ++k) {
            B bv[NVT];
#pragma GCC unroll 4
            for (int v = 0; v + 1 < NVT; ++v) bv[v] = B::load_unaligned(b + k * ldb + v * W);
            bv[NVT - 1] = B::load_unaligned(last + k * ldl);
#pragma GCC unroll 16
            for (int r = 0; r < MR; ++r) {
                const B av(trans ? a[k * lda + r] : a[r * lda + k]);
#pragma GCC unroll 4
                for (int v = 0; v < NVT; ++v) acc[r][v] = fused_fma(av, bv[v], acc[r][v]);
            }
        }
    }

    // The lanes of the last vector of a column tile whose first column is cols before B's end,
    // and where that vector's rows are read from.
    template <int NVT>
    static int last_vector(const float* b, int64_t ldb, const float* tail, int cols, const float*& last,
                           int64_t& ldl) {
        const int w = min_of(W, cols - (NVT - 1) * W);
        last = w == W ? b + (NVT - 1) * W : tail;
        ldl = w == W ? ldb : W;
        return w;
    }

    template <int NVT>
    static void scores_tile(float* s, int64_t lds, const float* a, int64_t lda, const float* bt,
                            int64_t ldb, const float* tail, int K, float alpha, int mr, int cols) {
        const float* last;
        int64_t ldl;
        const int w = last_vector<NVT>(bt, ldb, tail, cols, last, ldl);
        B acc[MR][NVT];
        product<false, NVT>(acc, a, lda, bt, ldb, last, ldl, 0, K);
        const B alpha_v(alpha);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            if (r >= mr) break;
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v)
                store_lanes(acc[r][v] * alpha_v, s + r * lds + v * W, v + 1 < NVT ? W : w);
        }
    }

    template <bool trans, int NVT>
    static void accumulate_tile(float* c, int64_t ldc, const float* a, int64_t lda, const float* b,
                                int64_t ldb, const float* tail, int kb, int ke, int mr, int cols) {
        const float* last;
        int64_t ldl;
        const int w = last_vector<NVT>(b, ldb, tail, cols, last, ldl);
        B acc[MR][NVT];
        product<trans, NVT>(acc, a, lda, b, ldb, last, ldl, kb, ke);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            if (r >= mr) break;
#pragma GCC unroll 4
            for (int v = 0; v < NVT; ++v) {
                float* cp = c + r * ldc + v * W;
                const int lanes = v + 1 < NVT ? W : w;
                store_lanes(load_lanes(cp, lanes) + acc[r][v], cp, lanes);
            }
        }
    }

    // f(std::integral_constant<int, nv>) for nv (1..NV) vectors.
    template <class F>
    static void with_vectors(int nv, F&& f) {
        switch (nv) {
            case 1:
                return f(std::integral_constant<int, 1>());
            case 2:
                if constexpr (NV >= 2) return f(std::integral_constant<int, 2>());
                break;
            case 3:
                if constexpr (NV >= 3) return f(std::integral_constant<int, 3>());
                break;
            default:
                if constexpr (NV >= 4) return f(std::integral_constant<int, 4>());
                break;
        }
    }

    static void scores(float* S, int64_t lds, const float* A, int64_t lda, const float* Bt, int64_t ldb,
                       int M, int N, int K, float alpha, int diag) {
        Buffers& buf = buffers();
        const float* tail = pack_tail(buf.b, Bt, ldb, K, N);
        for (int i0 = 0; i0 < M; i0 += MR) {
            const int mr = min_of(MR, M - i0);
            // Past the visible keys of the tile's last row.
            const int64_t end = min_of<int64_t>(N, int64_t(i0) + mr + diag);
            if (end <= 0) continue;
            int64_t la = lda;
            const float* a = mr == MR ? A + i0 * lda : pack_rows<false>(buf.a, A + i0 * lda, lda, mr, K, la);
            for (int j0 = 0; j0 < end; j0 += NV * W) {
                const int nv = min_of(NV, int((end - j0 + W - 1) / W));
                with_vectors(nv, [&](auto nvt) {
                    scores_tile<decltype(nvt)::value>(S + i0 * lds + j0, lds, a, la, Bt + j0, ldb, tail, K, alpha, mr, N - j0);
                });
            }
        }
    }

    template <bool trans>
    static void accumulate_as(float* C, int64_t ldc, const float* A, int64_t lda, const float* Bm,
                              int64_t ldb, int M, int N, int K, int diag) {
        Buffers& buf = buffers();
        const float* tail = pack_tail(buf.b, Bm, ldb, K, N);
        for (int i0 = 0; i0 < M; i0 += MR) {
            const int mr = min_of(MR, M - i0);
            // The k where op(A) is not 0 for some row of the tile.
            const int kb = trans && i0 > diag ? i0 - diag : 0;
            const int ke = trans ? K : int(min_of<int64_t>(K, int64_t(i0) + mr + diag));
            if (kb >= ke) continue;
            const float* a0 = trans ? A + i0 : A + i0 * lda;
            int64_t la = lda;
            const float* a = mr == MR ? a0 : pack_rows<trans>(buf.a, a0, lda, mr, K, la);
            for (int j0 = 0; j0 < N; j0 += NV * W) {
                const int nv = min_of(NV, (N - j0 + W - 1) / W);
                with_vectors(nv, [&](auto nvt) {
                    accumulate_tile<trans, decltype(nvt)::value>(C + i0 * ldc + j0, ldc, a, la, Bm + j0, ldb, tail, kb, ke, mr,
                                                N - j0);
                });
            }
        }
    }

    static void accumulate(float* C, int64_t ldc, const float* A, int64_t lda, bool trans_a, const float* Bm,
                           int64_t ldb, int M, int N, int K, int diag) {
        if (trans_a)
            accumulate_as<true>(C, ldc, A, lda, Bm, ldb, M, N, K, diag);
        else
            accumulate_as<false>(C, ldc, A, lda, Bm, ldb, M, N, K, diag);
    }
};
