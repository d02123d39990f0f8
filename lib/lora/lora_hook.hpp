// The LoRA term in the engine's one linear path (model/linear_hook.hpp). For an adapted
// (layer, kind) with input x [rows, in]:
//   forward:  out += scale * (x~ A^T) B^T,   x~ = dropout(x) in training, x otherwise
//   backward: T = x~ A^T, U = scale * dout B,
//             dB += scale * dout^T T,  dA += U^T x~ (not with freeze_a),  din += mask * (U A)
// Linears the adapter does not target are left alone. Every product is one sgemm_parallel, so
// results are the same bits for the same thread count.
//
// Dropout on the LoRA branch uses the engine's counter-hash masks (model/dropout_mask.hpp) in
// the stream slots after nanoGPT's four sites: slot 4 + kind of the micro-batch's 16, element
// index (layer << 40) | (row * in + column), so the masks do not depend on threads and the
// backward pass recomputes exactly the forward's.
#pragma once

#include <vector>

#include "core/aligned_buffer.hpp"
#include "lora/adapter.hpp"
#include "model/linear_hook.hpp"

namespace pg::lora {

// The stream slot of a kind's LoRA dropout within a micro-batch's 16 (nanoGPT's sites use 0..3).
constexpr uint64_t kLoraDropoutSlot = 4;

class LoraHook final : public LinearHook {
public:
    // Borrows the adapter (read in forward and backward) and, for training, a gradient buffer
    // of adapter.num_params() floats laid out like adapter.params() (nullptr: forward only).
    LoraHook(const Adapter& adapter, float* grads);

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
