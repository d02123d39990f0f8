// The LoRA term in the engine's one linear path (model/linear_hook.hpp). For an adapted
// (layer, kind) with input x [rows, in]:
//   forward:  out += scale * (x~ A^T) B^T,   x~ = dropout(x) in training, x otherwise
//   backward: T = x~ A^T, U = scale * dout B,
//             dB += scale * dout^T T,  dA += U^T x~ (not with freeze_a),  din += mask * (U A)
// Linears the adapter does not target are left alone. The products and the branch's dropout
// masks are the model's low-rank term (model/low_rank.hpp); this hook finds the adapted
// linear, its factors and its gradients.
#pragma once

#include <vector>

#include "core/aligned_buffer.hpp"
#include "lora/adapter.hpp"
#include "model/linear_hook.hpp"

namespace pg::lora {

class LoraHook final : public LinearHook {
public:
    // Borrows the adapter (read in forward and backward) and, for training, a gradient buffer
    // of adapter.num_params() floats laid out like adapter.params() (nullptr: forward only).
    LoraHook(const Adapter& adapter, float* grads);

    bool adapts(int layer, LinearKind kind) const override { return adapter_.find(layer, kind) != nullptr; }
    void forward(int layer, LinearKind kind, const float* in, int64_t rows, int n_in, float* out,
                 int n_out, const LinearHookContext& ctx) override;
    void backward(int layer, LinearKind kind, const float* in, const float* dout, int64_t rows,
                  int n_in, float* din, int n_out, const LinearHookContext& ctx) override;

private:
    // x~ for this call: `in` itself, or its dropped copy in scratch_x_.
    const float* branch_input(int layer, LinearKind kind, const float* in, int64_t rows, int n_in,
                              const LinearHookContext& ctx);
    const Adapter& adapter_;
    float* grads_;
    AlignedBuffer<float> scratch_x_, scratch_t_, scratch_u_, scratch_dx_;
};

}  // namespace pg::lora
