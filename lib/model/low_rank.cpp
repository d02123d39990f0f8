#include "model/low_rank.hpp"

#include "kernels/dispatch.hpp"
#include "model/dropout_mask.hpp"

namespace pg {

namespace k = kernels;

void low_rank_forward(const LowRankFactors& f, const float* x, int rows, float* out, bool accumulate, float* t,
                      ThreadPool& pool) {
    // t [rows, r] = x [rows, in] A^T;  out [rows, out] (+)= scale t B^T.
    k::sgemm_parallel(k::gemm_args(false, true, rows, f.rank, f.in, x, f.in, f.A, f.in, t, f.rank), pool);
    k::sgemm_parallel(k::gemm_args(false, true, rows, f.out, f.rank, t, f.rank, f.B, f.rank, out, f.out_stride(), f.scale,
                                   accumulate ? 1.0f : 0.0f),
                      pool);
}

void low_rank_backward(const LowRankFactors& f, const float* x, const float* dout, int rows, float* dA, float* dB,
                       float* dx, bool accumulate_dx, float* t, float* u, ThreadPool& pool) {
    const int r = f.rank;
    // t [rows, r] = x A^T (as in forward), u [rows, r] = scale dout [rows, out] B [out, r].
    k::sgemm_parallel(k::gemm_args(false, true, rows, r, f.in, x, f.in, f.A, f.in, t, r), pool);
    k::sgemm_parallel(k::gemm_args(false, false, rows, r, f.out, dout, f.out_stride(), f.B, r, u, r, f.scale), pool);
    // dB [out, r] += scale dout^T t;  dA [r, in] += u^T x.
    k::sgemm_parallel(k::gemm_args(true, false, f.out, r, rows, dout, f.out_stride(), t, r, dB, r, f.scale, 1.0f), pool);
    if (dA) k::sgemm_parallel(k::gemm_args(true, false, r, f.in, rows, u, r, x, f.in, dA, f.in, 1.0f, 1.0f), pool);
    // dx [rows, in] (+)= u A.
    if (!dx) return;
    k::sgemm_parallel(k::gemm_args(false, false, rows, f.in, r, u, r, f.A, f.in, dx, f.in, 1.0f,
                                   accumulate_dx ? 1.0f : 0.0f),
                      pool);
}

void add_low_rank(float* W, const LowRankFactors& f, float sign, ThreadPool& pool) {
    // W [out, in] += sign scale B [out, r] A [r, in].
    k::sgemm_parallel(k::gemm_args(false, false, f.out, f.in, f.rank, f.B, f.rank, f.A, f.in, W, f.in,
                                   sign * f.scale, 1.0f),
                      pool);
}

void low_rank_dropout(float* dst, const float* src, int64_t n, const Dropout& d, int layer, LinearKind kind,
                      int slice, ThreadPool& pool) {
    const DropoutPlace place = low_rank_dropout_place(kind, slice);
    pool.parallel_for(n, [&](int, int64_t begin, int64_t end) {
        k::dropout_apply(dst + begin, src + begin, end - begin, dropout_args(d, place, layer, uint64_t(begin)));
    });
}

void low_rank_dropout_backward(float* dst, const float* add, int64_t n, const Dropout& d, int layer,
                               LinearKind kind, int slice, ThreadPool& pool) {
    const DropoutPlace place = low_rank_dropout_place(kind, slice);
    pool.parallel_for(n, [&](int, int64_t begin, int64_t end) {
        k::dropout_residual(dst + begin, dst + begin, add + begin, end - begin,
                            dropout_args(d, place, layer, uint64_t(begin)));
    });
}

}  // namespace pg
