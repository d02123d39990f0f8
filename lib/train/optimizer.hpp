// The optimizer's pieces: which parameters AdamW decays, the global gradient norm, clipping
// and the AdamW update itself (the arithmetic is pg::kernels::adamw).
//
// Determinism: the parameter vector is cut into fixed blocks of kOptimizerBlock floats at
// absolute positions, independent of the thread count. The norm sums the per-block partial sums
// (each in double) in block order, and every element's update is computed on the same block
// boundaries, so both give the same bits for any number of threads.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.hpp"
#include "model/params.hpp"

namespace pg {

constexpr int64_t kOptimizerBlock = 16384;

// A contiguous run of parameters with one weight-decay setting, inside one block.
struct ParamPiece {
    int64_t offset = 0;
    int64_t count = 0;
    bool decay = false;
};

// Pieces covering [0, total) exactly once, in order: the 2-D linear weights are decayed, plus
// wte and wpe when decay_embeddings; biases, LayerNorm parameters (and embeddings otherwise)
// are not. With skip_linear_weights (Muon updates those: train/muon.hpp) the pieces cover
// everything but the 2-D linear weights.
std::vector<ParamPiece> optimizer_pieces(const std::vector<TensorEntry>& tensors, int64_t total,
                                         bool decay_embeddings, bool skip_linear_weights = false);

// sqrt(sum of g^2) over g[0, n), accumulated in double in block order.
double global_grad_norm(const float* g, int64_t n, ThreadPool& pool);

// g *= factor over g[0, n).
void scale_gradients(float* g, int64_t n, float factor, ThreadPool& pool);

struct AdamWStep {
    float lr = 0.0f;
    float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
    float weight_decay = 0.0f;
    int64_t t = 1;  // 1-based step number, for the bias corrections 1 - beta^t
};

// One AdamW update of every piece (decayed pieces with s.weight_decay, others with 0).
void adamw_update(float* params, const float* grads, float* m, float* v,
                  const std::vector<ParamPiece>& pieces, const AdamWStep& s, ThreadPool& pool);

}  // namespace pg
