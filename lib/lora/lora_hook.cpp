#include "lora/lora_hook.hpp"

#include <string>

#include "core/error.hpp"
#include "model/low_rank.hpp"

namespace pg::lora {

namespace {

// Grows a scratch buffer to at least n floats (contents are overwritten by every user).
float* scratch(AlignedBuffer<float>& b, int64_t n) {
    if (b.size() < static_cast<std::size_t>(n)) b.resize(static_cast<std::size_t>(n));
    return b.data();
}

// The LoRA branch's dropout for the pass the context describes.
Dropout lora_dropout(float p, const LinearHookContext& ctx) { return Dropout{p, ctx.seed, ctx.stream}; }

// The engine calls the hook only on layers it adapts (LinearHook::adapts), with their shapes.
void check_adapted(const AdaptedLinear* adapted, int layer, LinearKind kind, int n_in, int n_out) {
    require(adapted != nullptr, PG_ERR_INTERNAL,
            "lora hook: called for layer " + std::to_string(layer) + " " + linear_kind_name(kind) +
                ", which the adapter does not adapt");
    const AdaptedLinear& m = *adapted;
    require(m.in == n_in && m.out == n_out, PG_ERR_INTERNAL,
            "lora hook: layer " + std::to_string(m.layer) + " " + linear_kind_name(m.target) +
                " is [" + std::to_string(n_out) + ", " + std::to_string(n_in) +
                "] in the engine but the adapter has [" + std::to_string(m.out) + ", " +
                std::to_string(m.in) + "]");
}

}  // namespace

LoraHook::LoraHook(const Adapter& adapter, float* grads) : adapter_(adapter), grads_(grads) {}

const float* LoraHook::branch_input(int layer, LinearKind kind, const float* in, int64_t rows,
                                    int n_in, const LinearHookContext& ctx) {
    const float p = adapter_.config().dropout;
    if (!ctx.training || p == 0.0f) return in;
    const int64_t n = rows * n_in;
    float* x = scratch(scratch_x_, n);
    low_rank_dropout(x, in, n, lora_dropout(p, ctx), layer, kind, ctx.pool);
    return x;
}

void LoraHook::forward(int layer, LinearKind kind, const float* in, int64_t rows, int n_in,
                       float* out, int n_out, const LinearHookContext& ctx) {
    const AdaptedLinear* m = adapter_.find(layer, kind);
    check_adapted(m, layer, kind, n_in, n_out);
    const float* x = branch_input(layer, kind, in, rows, n_in, ctx);
    float* t = scratch(scratch_t_, rows * adapter_.config().rank);
    low_rank_forward(low_rank_factors(adapter_, *m), x, static_cast<int>(rows), out, !ctx.overwrite, t, ctx.pool);
}

void LoraHook::backward(int layer, LinearKind kind, const float* in, const float* dout, int64_t rows,
                        int n_in, float* din, int n_out, const LinearHookContext& ctx) {
    const AdaptedLinear* m = adapter_.find(layer, kind);
    check_adapted(m, layer, kind, n_in, n_out);
    require(grads_ != nullptr, PG_ERR_INTERNAL, "lora hook: backward without a gradient buffer");
    const int r = adapter_.config().rank, R = static_cast<int>(rows);
    const float* x = branch_input(layer, kind, in, rows, n_in, ctx);
    float* t = scratch(scratch_t_, rows * r);
    float* u = scratch(scratch_u_, rows * r);
    float* dA = adapter_.config().freeze_a ? nullptr : grads_ + m->a_offset;
    float* dB = grads_ + m->b_offset;
    // din (+)= mask * (U A): straight into din without dropout (its last product, after every
    // read of x, which may be din), through the mask with it.
    if (x == in || !din) {  // (no input gradient wanted: the factors' gradients only)
        low_rank_backward(low_rank_factors(adapter_, *m), x, dout, R, dA, dB, din, !ctx.overwrite, t, u,
                          ctx.pool);
        return;
    }
    const int64_t n = rows * n_in;
    float* dx = scratch(scratch_dx_, n);
    low_rank_backward(low_rank_factors(adapter_, *m), x, dout, R, dA, dB, dx, false, t, u, ctx.pool);
    const Dropout d = lora_dropout(adapter_.config().dropout, ctx);
    if (ctx.overwrite)
        low_rank_dropout(din, dx, n, d, layer, kind, ctx.pool);  // din = mask * dx / (1 - p)
    else
        low_rank_dropout_backward(din, dx, n, d, layer, kind, ctx.pool);
}

}  // namespace pg::lora
