// The engine's linear layers (see engine.cpp for the engine as a whole): linear() and
// linear_backward(), where a LinearHook adds its term, their weight gradients, the residual
// projections and the GELU rows.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "kernels/quant_gemm.hpp"
#include "model/engine_impl.hpp"

namespace pg {

using namespace engine_detail;

// ----------------------------------------------------------------------------------------
// The linear layers of a block: every one of them goes through linear() (forward) and
// linear_backward(), the only places where the hook adds its term.

// A product split over rows (sgemm_parallel over activations, whose rows each thread wrote
// itself): A and C once, B once per thread that packs it.
void Engine::Impl::gemm_traffic(const k::GemmArgs& g, ThreadPool& pool) const {
    if (!profile) return;
    const int64_t M = g.M, N = g.N, K = g.K;
    const bool split = pool.size() > 1 && k::gemm_worth_splitting(g);
    const int64_t b = K * N * (split ? pool.size() : 1) / (g.B16 ? 2 : 1);
    const int64_t c = M * N;
    traffic(M * K + b + (g.beta != 0.0f ? c : 0) + (g.gelu_grad_input ? c : 0), c + (g.gelu_out ? c : 0));
}

LinearHookContext Engine::Impl::hook_context(const Dropout& d, ThreadPool& pool, bool training) const {
    LinearHookContext ctx{pool};
    ctx.training = training;
    ctx.seed = d.seed;
    ctx.stream = d.stream;
    ctx.first_position = first_position;
    return ctx;
}

// The hook if it has a term for this layer, else null (the layer is the base's alone).
LinearHook* Engine::Impl::hook_for(int layer, LinearKind kind) const {
    return hook && hook->adapts(layer, kind) ? hook : nullptr;
}

// out[N, OC] = inp[N, C] . w[OC, C]^T + bias[OC] + hook term (accumulate: out += all of it);
// gelu_out (if given) = gelu(out) as well, fused into the GEMM's tiles.
void Engine::Impl::linear(int layer, LinearKind kind, float* out, const float* inp, const WeightMatrix& w,
                          const float* bias, int N, int C, int OC, bool accumulate, const Dropout& d, bool training,
                          ThreadPool& pool, float* gelu_out) {
    StepProfile::Scope phase(profile, kForwardLinearPhase[recomputing][int(kind)]);
    LinearHook* const term = hook_for(layer, kind);
    if (w.int8_arithmetic) {  // int8 x int8 products of a quantized base (Arithmetic::int8)
        k::QuantLinearArgs q;
        q.M = N;
        q.N = OC;
        q.K = C;
        q.X = inp;
        q.ldx = C;
        q.W = w.quant_blocks();
        q.format = w.quant_format;
        q.Y = out;
        q.ldy = OC;
        q.bias = bias;
        q.accumulate = accumulate;
        k::quant_linear(q, &pool);
        if (term) term->forward(layer, kind, inp, N, C, out, OC, hook_context(d, pool, training));
        if (gelu_out)
            pool.parallel_for(N, [&](int, int64_t r0, int64_t r1) {
                k::gelu_forward(gelu_out + r0 * OC, out + r0 * OC, (r1 - r0) * OC);
            });
        return;
    }
    if (N == 1) {  // the cached generation step: a matrix-vector product on this thread
        float* widened = row_scratch(C);
        for (int o = 0; o < OC; ++o) {
            const float y = bias ? k::dot(w.row(o, C, widened), inp, C) + bias[o] : k::dot(w.row(o, C, widened), inp, C);
            out[o] = accumulate ? out[o] + y : y;
        }
        if (term) term->forward(layer, kind, inp, N, C, out, OC, hook_context(d, pool, training));
        if (gelu_out) k::gelu_forward(gelu_out, out, OC);
        return;
    }
    k::GemmArgs g = gemm_args(false, true, N, OC, C, inp, C, nullptr, C, out, OC, 1.0f, accumulate ? 1.0f : 0.0f);
    w.set_gemm_b(g);
    g.bias = bias;
    if (!term) {
        g.gelu_out = gelu_out;
        gemm_traffic(g, pool);
        k::sgemm_parallel(g, pool);
        return;
    }
    if (gelu_out) {
        // The hook's term first (written into out, or added with accumulate), then the base
        // product added to it with the GELU on its register tiles: no GELU pass after both.
        LinearHookContext ctx = hook_context(d, pool, training);
        ctx.overwrite = !accumulate;
        term->forward(layer, kind, inp, N, C, out, OC, ctx);
        g.beta = 1.0f;
        g.gelu_out = gelu_out;
        k::sgemm_parallel(g, pool);
        return;
    }
    k::sgemm_parallel(g, pool);
    term->forward(layer, kind, inp, N, C, out, OC, hook_context(d, pool, training));
}

// The backward of linear(): dinp[N, C] = dout[N, OC] . w[OC, C] + the hook's input
// gradient (overwritten), times gelu'(gelu_in) elementwise if gelu_in is given (the
// backward of a GELU whose input was gelu_in, fused into the GEMM's tiles);
// with dw (null: a frozen base): dw[OC, C] += dout^T . inp and dbias[OC] += column sums of
// dout. dinp may be inp (its last read is before the first write). dinp null (a frozen base,
// nothing below reads the input gradient): no base product, the hook's own gradients only.
void Engine::Impl::linear_backward(int layer, LinearKind kind, float* dinp, float* dw, float* dbias,
                                   const float* dout, const float* inp, const WeightMatrix& w, int N, int C, int OC,
                                   const Dropout& d, ThreadPool& pool, const float* gelu_in) {
    if (dw) {
        StepProfile::Scope phase(profile, kWeightGradPhase[int(kind)]);
        linear_backward_weights(dw, dbias, dout, inp, N, C, OC, pool);
    }
    StepProfile::Scope phase(profile, kInputGradPhase[int(kind)]);
    LinearHook* const term = hook_for(layer, kind);
    if (!dinp) {
        assert(!dw);
        if (term) term->backward(layer, kind, inp, dout, N, C, nullptr, OC, hook_context(d, pool, true));
        return;
    }
    ++input_gradient_gemms;
    k::GemmArgs g = gemm_args(false, false, N, C, OC, dout, OC, nullptr, C, dinp, C);
    w.set_gemm_b(g);
    if (!term) {
        g.gelu_grad_input = gelu_in;
        gemm_traffic(g, pool);
        k::sgemm_parallel(g, pool);
        return;
    }
    const LinearHookContext ctx = hook_context(d, pool, true);
    if (!gelu_in && dinp != inp) {
        k::sgemm_parallel(g, pool);
        term->backward(layer, kind, inp, dout, N, C, dinp, OC, ctx);
        return;
    }
    // The hook's part first, written into dinp (which may be the input the hook reads: the
    // GELU output, or SwiGLU's silu(gate) * up; it reads all of it first), then the base
    // product added to it and the GELU's derivative, if any, applied on the GEMM's tiles.
    LinearHookContext overwrite = ctx;
    overwrite.overwrite = true;
    term->backward(layer, kind, inp, dout, N, C, dinp, OC, overwrite);
    g.beta = 1.0f;
    g.gelu_grad_input = gelu_in;
    k::sgemm_parallel(g, pool);
}

int64_t Engine::Impl::weight_gradient_scratch_floats(const ModelConfig& cfg, int64_t N, int nt) {
    // The largest dw_partials any block linear's linear_backward_weights asks for.
    const Dims d(cfg);
    const int shapes[4][2] = {{d.QKV, d.C}, {d.C, d.Q}, {d.F, d.C}, {d.C, d.H}};  // {OC, C} of each kind
    int64_t most = 0;
    for (const auto& sh : shapes) {
        const int OC = sh[0], IC = sh[1];
        const k::GemmArgs whole = gemm_args(true, false, OC, IC, int(N), nullptr, OC, nullptr, IC, nullptr, IC, 1.0f, 1.0f);
        const bool split = nt > 1 && k::gemm_worth_splitting(whole);
        most = std::max(most, int64_t(nt) * OC + (split ? int64_t(nt - 1) * OC * IC : 0));
    }
    return most;
}

// dw[OC, C] += dout[N, OC]^T . inp[N, C]; dbias[OC] += column sums of dout.
//
// Split over the tokens (the product's K), not over dw: thread t takes the rows
// ThreadPool::chunk(N, nt, t), which are the rows it wrote itself in the regions before
// (every activation loop of the engine splits rows that way), so each thread reads only
// its own share of dout and inp, from its own cache, and every thread computes all of dw's
// columns in whole register panels. Thread 0 adds its product straight into dw; the others
// write theirs into their own partials, which the reduction then adds into dw in thread
// order, each thread taking a slice of dw's rows. What crosses between cores is the
// partials (nt - 1 times dw), whatever the batch; a split of dw's columns makes every thread
// read all of dout, (nt - 1) / nt of it written by another core. Deterministic for a
// thread count; one thread (or a product too small to split) is the single product.
void Engine::Impl::linear_backward_weights(float* dw, float* dbias, const float* dout, const float* inp, int N,
                                           int C, int OC, ThreadPool& pool) {
    ++weight_gradient_gemms;
    const int nt = pool.size();
    const int64_t wsize = int64_t(OC) * C;
    const k::GemmArgs whole = gemm_args(true, false, OC, C, N, dout, OC, inp, C, dw, C, 1.0f, 1.0f);
    const bool split = nt > 1 && k::gemm_worth_splitting(whole);
    // Per thread: its column sums of dout [OC]; then, for threads 1.., its share of dw.
    const size_t need = size_t(nt) * size_t(OC) + (split ? size_t(nt - 1) * size_t(wsize) : 0);
    if (dw_partials.size() < need) dw_partials.resize(need);
    float* bias_acc = dw_partials.data();
    float* w_partial = bias_acc + size_t(nt) * size_t(OC);
    traffic(int64_t(N) * (OC + C) + wsize, wsize * (split ? nt : 1));
    if (!split) {
        k::sgemm(whole);
    }
    pool.run_on_all([&](int t) {
        int64_t r0, r1;
        ThreadPool::chunk(N, nt, t, &r0, &r1);
        if (split) {
            float* c = t == 0 ? dw : w_partial + size_t(t - 1) * size_t(wsize);
            if (r1 > r0) {
                k::GemmArgs part = whole;
                part.K = int(r1 - r0);
                part.A = dout + r0 * OC;
                part.B = inp + r0 * C;
                part.C = c;
                part.beta = t == 0 ? 1.0f : 0.0f;
                k::sgemm(part);
            } else if (t > 0) {
                std::memset(c, 0, sizeof(float) * size_t(wsize));
            }
        }
        if (!dbias) return;
        float* acc = bias_acc + size_t(t) * size_t(OC);
        std::memset(acc, 0, sizeof(float) * size_t(OC));
        for (int64_t r = r0; r < r1; ++r) k::axpy(acc, 1.0f, dout + r * OC, OC);
    });
    StepProfile::Scope phase(profile, kReductionPhase);
    if (split) {
        traffic(wsize * nt, wsize, wsize * (nt - 1));
        pool.parallel_for(OC, [&](int, int64_t o0, int64_t o1) {
            float* dst = dw + o0 * C;
            const int64_t n = (o1 - o0) * C;
            for (int t = 1; t < nt; ++t) k::axpy(dst, 1.0f, w_partial + size_t(t - 1) * size_t(wsize) + o0 * C, n);
        });
    }
    if (!dbias) return;
    // Column sums added in thread order.
    traffic(int64_t(nt) * OC + OC, OC, int64_t(nt - 1) * OC);
    for (int t = 0; t < nt; ++t)
        for (int c = 0; c < OC; ++c) dbias[c] += bias_acc[size_t(t) * OC + c];
}

// A residual block's output projection and the residual add:
// out[N, OC] = x + dropout(inp[N, C] . w^T + bias + hook term); the mask index is n * OC + c.
// Without dropout the projection accumulates straight onto a copy of x; with it, it goes
// through `branch` [N, OC] first.
void Engine::Impl::linear_residual(int layer, LinearKind kind, float* out, const float* x, const float* inp,
                                   const WeightMatrix& w, const float* bias, int N, int C, int OC, const Dropout& d,
                                   DropoutPlace place, bool training, ThreadPool& pool) {
    StepProfile::Scope phase(profile, kForwardLinearPhase[recomputing][int(kind)]);
    if (!dropout_active(d)) {
        traffic(int64_t(N) * OC, int64_t(N) * OC);
        for_rows(pool, N, [&](int, int64_t r0, int64_t r1) {
            std::memcpy(out + r0 * OC, x + r0 * OC, sizeof(float) * size_t((r1 - r0) * OC));
        });
        linear(layer, kind, out, inp, w, bias, N, C, OC, true, d, training, pool);
        return;
    }
    linear(layer, kind, branch, inp, w, bias, N, C, OC, false, d, training, pool);
    traffic(2 * int64_t(N) * OC, int64_t(N) * OC);
    pool.parallel_for(N, [&](int, int64_t r0, int64_t r1) {
        const int64_t i = r0 * OC;
        k::dropout_residual(out + i, x + i, branch + i, (r1 - r0) * OC, dropout_args(d, place, layer, uint64_t(i)));
    });
}

void Engine::Impl::gelu_rows(float* out, const float* x, int N, int width, ThreadPool& pool) {
    for_rows(pool, N, [&](int, int64_t r0, int64_t r1) {
        k::gelu_forward(out + r0 * width, x + r0 * width, (r1 - r0) * width);
    });
}

void Engine::Impl::swiglu_rows(float* out, const float* fch, int N, int H, ThreadPool& pool) {
    for_rows(pool, N, [&](int, int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) k::swiglu_forward(out + r * H, fch + r * 2 * H, fch + r * 2 * H + H, H);
    });
}

}  // namespace pg
