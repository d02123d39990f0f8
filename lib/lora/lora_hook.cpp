#include "lora/lora_hook.hpp"

#include <algorithm>
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

// The engine calls the hook only on linears it adapts (LinearHook::adapts), with their shapes.
Adapter::Span adapted_span(const Adapter& adapter, int layer, LinearKind kind, int n_in, int n_out) {
    const Adapter::Span span = adapter.on_linear(layer, kind);
    require(span.count > 0, PG_ERR_INTERNAL,
            "lora hook: called for layer " + std::to_string(layer) + " " + linear_kind_name(kind) +
                ", which the adapter does not adapt");
    const int64_t rows = linear_rows(kind, adapter.base().config);
    for (int i = 0; i < span.count; ++i) {
        const AdaptedLinear& m = span.first[i];
        require(m.in == n_in && rows == n_out, PG_ERR_INTERNAL,
                "lora hook: layer " + std::to_string(m.layer) + " " + linear_kind_name(kind) + " is [" +
                    std::to_string(n_out) + ", " + std::to_string(n_in) + "] in the engine but the adapter's " +
                    target_name(m.target) + " expects [" + std::to_string(rows) + ", " + std::to_string(m.in) + "]");
    }
    return span;
}

}  // namespace

LoraHook::LoraHook(const Adapter& adapter, float* grads) : adapter_(adapter), grads_(grads) {}

const float* LoraHook::branch_input(const AdaptedLinear& m, const float* in, int64_t rows,
                                    const LinearHookContext& ctx) {
    const float p = adapter_.config().dropout;
    if (!ctx.training || p == 0.0f) return in;
    const int64_t n = rows * m.in;
    float* x = scratch(scratch_x_, n);
    low_rank_dropout(x, in, n, lora_dropout(p, ctx), m.layer, m.kind, target_slice(m.target), ctx.pool);
    return x;
}

void LoraHook::forward(int layer, LinearKind kind, const float* in, int64_t rows, int n_in,
                       float* out, int n_out, const LinearHookContext& ctx) {
    const Adapter::Span span = adapted_span(adapter_, layer, kind, n_in, n_out);
    int64_t covered = 0;
    for (int i = 0; i < span.count; ++i) covered += span.first[i].out;
    // Overwriting a fused output only some slices of which are adapted: the rest is zero.
    bool accumulate = !ctx.overwrite;
    if (!accumulate && covered < n_out) {
        ctx.pool.parallel_for(rows * n_out, [&](int, int64_t b, int64_t e) { std::fill(out + b, out + e, 0.0f); });
        accumulate = true;
    }
    float* t = scratch(scratch_t_, rows * adapter_.config().rank);
    for (int i = 0; i < span.count; ++i) {
        const AdaptedLinear& m = span.first[i];
        const float* x = branch_input(m, in, rows, ctx);
        low_rank_forward(low_rank_factors(adapter_, m), x, static_cast<int>(rows), out + m.row_offset, accumulate, t,
                         ctx.pool);
    }
}

void LoraHook::slice_backward(const AdaptedLinear& m, const float* in, const float* dout, int64_t rows, float* din,
                              bool overwrite, const LinearHookContext& ctx) {
    const int r = adapter_.config().rank, R = static_cast<int>(rows);
    const float* x = branch_input(m, in, rows, ctx);
    float* t = scratch(scratch_t_, rows * r);
    float* u = scratch(scratch_u_, rows * r);
    float* dA = adapter_.config().freeze_a ? nullptr : grads_ + m.a_offset;
    float* dB = grads_ + m.b_offset;
    const LowRankFactors f = low_rank_factors(adapter_, m);
    const float* dslice = dout + m.row_offset;
    // din (+)= mask * (U A): straight into din without dropout (its last product, after every
    // read of x, which may be din), through the mask with it.
    if (x == in || !din) {  // (no input gradient wanted: the factors' gradients only)
        low_rank_backward(f, x, dslice, R, dA, dB, din, !overwrite, t, u, ctx.pool);
        return;
    }
    const int64_t n = rows * m.in;
    float* dx = scratch(scratch_dx_, n);
    low_rank_backward(f, x, dslice, R, dA, dB, dx, false, t, u, ctx.pool);
    const Dropout d = lora_dropout(adapter_.config().dropout, ctx);
    if (overwrite)
        low_rank_dropout(din, dx, n, d, m.layer, m.kind, target_slice(m.target), ctx.pool);  // din = mask * dx / (1 - p)
    else
        low_rank_dropout_backward(din, dx, n, d, m.layer, m.kind, target_slice(m.target), ctx.pool);
}

void LoraHook::backward(int layer, LinearKind kind, const float* in, const float* dout, int64_t rows,
                        int n_in, float* din, int n_out, const LinearHookContext& ctx) {
    const Adapter::Span span = adapted_span(adapter_, layer, kind, n_in, n_out);
    require(grads_ != nullptr, PG_ERR_INTERNAL, "lora hook: backward without a gradient buffer");
    if (span.count == 1 || !din) {
        for (int i = 0; i < span.count; ++i) slice_backward(span.first[i], in, dout, rows, din, ctx.overwrite, ctx);
        return;
    }
    // Several slices of one input: their input gradients summed apart first, since din may be
    // the very input every slice still reads.
    const int64_t n = rows * n_in;
    float* sum = scratch(scratch_sum_, n);
    for (int i = 0; i < span.count; ++i) slice_backward(span.first[i], in, dout, rows, sum, i == 0, ctx);
    ctx.pool.parallel_for(n, [&](int, int64_t b, int64_t e) {
        if (ctx.overwrite)
            std::copy(sum + b, sum + e, din + b);
        else
            for (int64_t j = b; j < e; ++j) din[j] += sum[j];
    });
}

}  // namespace pg::lora
