// The low-rank term an adapter adds to a block's linear layer W [out, in]:
//   delta W = scale * B A,   A [rank, in], B [out, rank]   (LoRA; lib/lora/lora_hook.hpp)
// and its products, written once here beside the engine's linear() so that lib/lora computes
// through the model and never reaches the kernels itself. Every product is one
// sgemm_parallel, so results are the same bits for the same thread count.
//
// Dropout on the branch input uses the model's counter-hash masks (model/dropout_mask.hpp) in
// slot low_rank_dropout_place(kind, slice) of the micro-batch's 16, element index
// (layer << 40) | (row * in + column): the masks do not depend on threads and a backward pass
// recomputes exactly its forward's.
#pragma once

#include <cstdint>

#include "core/thread_pool.hpp"
#include "model/engine.hpp"
#include "model/linear_hook.hpp"

namespace pg {

struct LowRankFactors {
    const float* A = nullptr;  // [rank, in], row-major
    const float* B = nullptr;  // [out, rank], row-major
    int rank = 0, in = 0, out = 0;
    float scale = 1.0f;
    // Row stride of the out / dout the products read and write (0: out). A term on a row slice
    // of a fused linear writes its columns of the fused output [rows, ld_out].
    int ld_out = 0;
    int out_stride() const { return ld_out > 0 ? ld_out : out; }
};

// out[rows, out] (+)= scale * (x[rows, in] A^T) B^T (+= with accumulate, = otherwise).
// t: scratch [rows, rank].
void low_rank_forward(const LowRankFactors& f, const float* x, int rows, float* out, bool accumulate, float* t,
                      ThreadPool& pool);

// The backward of low_rank_forward for d(loss)/d(out) = dout [rows, out]:
//   t = x A^T, u = scale * dout B                  (scratch, [rows, rank] each)
//   dB [out, rank] += scale * dout^T t
//   dA [rank, in]  += u^T x                        (skipped when dA is null: a frozen A)
//   dx [rows, in]  (+)= u A                        (+= with accumulate_dx, = otherwise;
//                                                   skipped when dx is null)
void low_rank_backward(const LowRankFactors& f, const float* x, const float* dout, int rows, float* dA, float* dB,
                       float* dx, bool accumulate_dx, float* t, float* u, ThreadPool& pool);

// W [out, in] += sign * scale * B A (merge: sign = 1, unmerge: sign = -1).
void add_low_rank(float* W, const LowRankFactors& f, float sign, ThreadPool& pool);

// dst[n] = dropout(src) on the low-rank branch of (layer, kind, slice): the masks of the pass
// whose dropout seed and stream are d.seed, d.stream, probability d.p.
void low_rank_dropout(float* dst, const float* src, int64_t n, const Dropout& d, int layer, LinearKind kind,
                      int slice, ThreadPool& pool);
// dst[n] += mask * add / (1 - p): the backward of low_rank_dropout into an input gradient.
void low_rank_dropout_backward(float* dst, const float* add, int64_t n, const Dropout& d, int layer,
                               LinearKind kind, int slice, ThreadPool& pool);

}  // namespace pg
