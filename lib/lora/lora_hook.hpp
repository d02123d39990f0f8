// The LoRA term in the engine's one linear path (model/linear_hook.hpp). For an adapted
// (layer, kind) with input x [rows, in]:
//   forward:  out += scale * (x~ A^T) B^T,   x~ = dropout(x) in training, x otherwise
//   backward: T = x~ A^T, U = scale * dout B,
//             dB += scale * dout^T T,  dA += U^T x~ (not with freeze_a),  din += mask * (U A)
// Linears the adapter does not target are left alone. A target on a row slice of a fused linear
// (q/k/v_proj of attn_qkv, gate/up_proj of mlp_fc) reads and writes its columns of out / dout. The products and the branch's dropout
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

    bool adapts(int layer, LinearKind kind) const override { return adapter_.on_linear(layer, kind).count > 0; }
    void forward(int layer, LinearKind kind, const float* in, int64_t rows, int n_in, float* out,
                 int n_out, const LinearHookContext& ctx) override;
    void backward(int layer, LinearKind kind, const float* in, const float* dout, int64_t rows,
                  int n_in, float* din, int n_out, const LinearHookContext& ctx) override;

private:
    // x~ of target m for this call: `in` itself, or its dropped copy in scratch_x_.
    const float* branch_input(const AdaptedLinear& m, const float* in, int64_t rows, const LinearHookContext& ctx);
    // One target's backward: its factors' gradients, and its input gradient written into din
    // (overwrite) or added to it (din null: none).
    void slice_backward(const AdaptedLinear& m, const float* in, const float* dout, int64_t rows, float* din,
                        bool overwrite, const LinearHookContext& ctx);
    const Adapter& adapter_;
    float* grads_;
    AlignedBuffer<float> scratch_x_, scratch_t_, scratch_u_, scratch_dx_, scratch_sum_;
};

}  // namespace pg::lora
