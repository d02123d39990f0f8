// Muon: the optimizer step for the blocks' 2-D linear weights when pg_train_config.optimizer
// is PG_OPTIMIZER_MUON (phonegpt.h states the update). Each weight matrix's momentum is mixed
// with its gradient (Nesterov) and replaced by an approximately orthogonal matrix of the same
// shape (five Newton-Schulz iterations of a quintic), so every direction of the matrix moves
// by about the same amount instead of the few that dominate the gradient.
//
// Determinism: one matrix is computed start to finish by one thread with single-threaded GEMMs
// (kernels::sgemm), so the result is the same bits for any thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/thread_pool.hpp"
#include "model/params.hpp"

namespace pg {

// The quintic's coefficients (X <- a X + (b A + c A^2) X with A = X X^T) and its iteration count.
constexpr float kMuonNsA = 3.4445f, kMuonNsB = -4.7750f, kMuonNsC = 2.0315f;
constexpr int kMuonNsSteps = 5;

// One matrix Muon updates: rows x cols floats, row-major, at `offset` in the parameters.
struct MuonMatrix {
    int64_t offset = 0;
    int rows = 0, cols = 0;
};

// Every 2-D linear weight of the table (is_linear_weight), in table order.
std::vector<MuonMatrix> muon_matrices(const std::vector<TensorEntry>& tensors);

// Working memory of one thread, grown to the largest matrix it is handed.
struct MuonScratch {
    AlignedBuffer<float> x, y, gram, poly, mixed, ortho;
    void reserve(int rows, int cols);
};

// out = NS5(g / (|g|_F + 1e-7)) for g[rows, cols] (out must not alias g; scratch.reserve'd
// by the call). Works on the wide orientation (min(rows, cols) x max), so the Gram matrix is
// the small one.
void newton_schulz5(const float* g, int rows, int cols, float* out, MuonScratch& scratch);

struct MuonStep {
    float lr = 0.0f;            // the schedule's rate times muon_lr_scale
    float momentum = 0.95f;
    float weight_decay = 0.0f;
};

// For every matrix: m = mu m + (1 - mu) g; u = (1 - mu) g + mu m;
// W -= lr (0.2 sqrt(max(rows, cols)) NS5(u) + weight_decay W). `scratch` gets one entry per
// thread of `pool`.
void muon_update(float* params, const float* grads, float* momentum, const std::vector<MuonMatrix>& matrices,
                 const MuonStep& s, std::vector<MuonScratch>& scratch, ThreadPool& pool);

}  // namespace pg
