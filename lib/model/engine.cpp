// The fp32 engine: the same model as tests/support/reference_model.hpp, built from the kernels of
// lib/kernels and threaded over a ThreadPool.
//
// What is kept between forward and backward, per layer ([N = B*T rows]):
//   ln1/ln2 mean and rstd [N], qkv [N,3C], attention output [N,C], attention log-sum-exp
//   [B,NH,T], residual after attention [N,C], MLP pre-activation [N,4C];
// and the residual stream entering each layer [L+1][N,C]. LayerNorm outputs, GELU outputs and
// dropout masks are recomputed in the backward pass (cheap, and they would double the memory);
// attention never materialises the [B,NH,T,T] probabilities (flash-style tiles, backward
// recomputes them from the log-sum-exp); the tied output projection and the cross-entropy run
// in chunks of rows, so [B,T,V] logits exist only when the caller asks for them.
// With EngineOptions::recompute only the residual stream is kept; each layer's activations are
// recomputed from its input just before its backward pass, into a single layer's buffers.
// Buffers only the backward pass needs are allocated by the first forward_backward, so an
// engine that only runs forward (evaluation, pg_model_forward) holds one layer's activations.
//
// Determinism: every parallel loop splits rows, columns or (batch, head) pairs into the pool's
// fixed chunks; each output element is written by one thread, and reductions (the linear
// layers' weight and bias gradients, split over the tokens; LayerNorm weight gradients) are
// summed per thread and then added in thread order. No atomics.
// Locality: the activation loops split rows the same way (ThreadPool::chunk), so each thread
// reads in the next region the rows it wrote in the last one, from its own cache; the weight
// gradients keep that (linear_backward_weights). bench_engine --profile reports what still
// crosses between threads.
#include "model/engine.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/engine_impl.hpp"

namespace pg {

using namespace engine_detail;

// Lays out several arrays in one 64-byte aligned allocation: plan() each size, allocate(),
// then take() them in the same order.
struct Engine::Impl::Carver {
    std::vector<int64_t> sizes;
    size_t next = 0;
    float* base = nullptr;
    Carver& plan(int64_t n) {
        sizes.push_back((n + 15) / 16 * 16);
        return *this;
    }
    void allocate(AlignedBuffer<float>& memory) {
        int64_t total = 0;
        for (int64_t n : sizes) total += n;
        memory.resize(size_t(total));
        base = memory.data();
    }
    float* take() {
        float* q = base;
        base += sizes[next++];
        return q;
    }
};
void Engine::Impl::plan_layer(Carver& c) const {
    const int64_t N = rows(), C = cfg.n_embd;
    c.plan(N).plan(N).plan(N * 3 * C).plan(N * C).plan(N * cfg.n_head).plan(N * C).plan(N).plan(N).plan(N * 4 * C);
}
Engine::Impl::LayerActs Engine::Impl::take_layer(Carver& c) {
    LayerActs a;
    a.ln1_mean = c.take();
    a.ln1_rstd = c.take();
    a.qkv = c.take();
    a.atty = c.take();
    a.lse = c.take();
    a.res2 = c.take();
    a.ln2_mean = c.take();
    a.ln2_rstd = c.take();
    a.fch = c.take();
    return a;
}

Engine::Impl::Impl(const ModelConfig& config, int B, int T, EngineOptions opt)
    : cfg(config), layout(config), max_B(B), max_T(T), options(opt) {
    validate_model_config(cfg);
    require(B >= 1 && T >= 1 && T <= cfg.n_ctx && int64_t(B) * T <= (int64_t(1) << 30) / (4 * cfg.n_embd),
            PG_ERR_INVALID_ARGUMENT,
            "Engine: need 1 <= max_B, 1 <= max_T <= n_ctx = " + std::to_string(cfg.n_ctx) +
                " and max_B * max_T * 4 * n_embd < 2^30 (got max_B = " + std::to_string(B) +
                ", max_T = " + std::to_string(T) + ")");
    // What a forward pass needs; the backward pass's extra buffers come with the first
    // forward_backward, so an engine used only for evaluation never holds them.
    const int64_t N = rows(), C = cfg.n_embd;
    Carver c;
    c.plan(N * C).plan(N * C);  // the residual stream, ping-ponged between two buffers
    plan_layer(c);
    c.plan(N * C).plan(N * 4 * C).plan(N * C).plan(N).plan(N).plan(N);
    c.allocate(forward_memory);
    resid.push_back(c.take());
    resid.push_back(c.take());
    layers.push_back(take_layer(c));
    ln_out = c.take();
    big_a = c.take();
    branch = c.take();
    lnf_mean = c.take();
    lnf_rstd = c.take();
    row_loss = c.take();
}

void Engine::Impl::ensure_backward_memory() {
    if (dresid) return;
    const int64_t N = rows(), C = cfg.n_embd;
    const int extra_layers = options.recompute ? 0 : cfg.n_layer - 1;
    Carver c;
    for (int l = 2; l <= cfg.n_layer; ++l) c.plan(N * C);  // the rest of the residual stream
    for (int l = 0; l < extra_layers; ++l) plan_layer(c);
    c.plan(N * C).plan(N * C);
    c.allocate(backward_memory);
    for (int l = 2; l <= cfg.n_layer; ++l) resid.push_back(c.take());
    for (int l = 0; l < extra_layers; ++l) layers.push_back(take_layer(c));
    datty = c.take();
    dresid = c.take();
}

// The batch must fit the buffers this engine was built for: its own invariant, checked on
// every call (the C boundary cannot know max_B x max_T). The ids are the caller's
// precondition, checked once at the C boundary (capi/model_args.hpp): inputs in
// [0, vocab_size), targets (NULL = none) in [-1, vocab_size); debug builds assert them.
void Engine::Impl::check_call(const int32_t* inputs, const int32_t* targets, int B, int T) const {
    require(inputs != nullptr, PG_ERR_INVALID_ARGUMENT, "Engine: inputs is NULL");
    require(B >= 1 && B <= max_B && T >= 1 && T <= max_T, PG_ERR_INVALID_ARGUMENT,
            "Engine: batch " + std::to_string(B) + " x " + std::to_string(T) +
                " does not fit the engine's " + std::to_string(max_B) + " x " + std::to_string(max_T));
#ifndef NDEBUG
    for (int64_t i = 0; i < int64_t(B) * T; ++i) {
        assert(inputs[i] >= 0 && inputs[i] < cfg.vocab_size);
        assert(!targets || (targets[i] >= -1 && targets[i] < cfg.vocab_size));
    }
#else
    (void)targets;
#endif
}

Engine::Engine(const ModelConfig& cfg, int max_B, int max_T, EngineOptions options)
    : impl_(std::make_unique<Impl>(cfg, max_B, max_T, options)) {}

Engine::~Engine() = default;

LossSum Engine::forward(const float* params, const int32_t* inputs, const int32_t* targets, int B, int T,
                        float* losses, float* logits, ThreadPool& pool) {
    require(params != nullptr, PG_ERR_INVALID_ARGUMENT, "Engine::forward: params is NULL");
    return forward(WeightsView::fp32(impl_->layout, params), inputs, targets, B, T, losses, logits, pool);
}

LossSum Engine::forward(const WeightsView& w, const int32_t* inputs, const int32_t* targets, int B, int T,
                        float* losses, float* logits, ThreadPool& pool) {
    Impl& m = *impl_;
    m.check_call(inputs, targets, B, T);
    const Dropout none;
    m.encoder_forward(w, inputs, B, T, none, pool);
    // Nothing is kept for a backward pass, so every layer can use the first slot.
    const int L = m.cfg.n_layer;
    for (int l = 0; l < L; ++l)
        m.block_forward(w, l, m.layers[0], m.resid[l % 2], m.resid[(l + 1) % 2], B, T, none, false, pool);
    return m.head(w, false, nullptr, m.resid[L % 2], targets, B * T, losses, logits, 0.0f, pool);
}

LossSum Engine::forward_backward(const float* params, float* grads, const int32_t* inputs,
                                 const int32_t* targets, int B, int T, float grad_scale,
                                 const Dropout& dropout, ThreadPool& pool) {
    require(params != nullptr, PG_ERR_INVALID_ARGUMENT, "Engine::forward_backward: params is NULL");
    return forward_backward(WeightsView::fp32(impl_->layout, params), grads, inputs, targets, B, T, grad_scale,
                            dropout, pool);
}

LossSum Engine::forward_backward(const WeightsView& weights, float* grads, const int32_t* inputs,
                                 const int32_t* targets, int B, int T, float grad_scale,
                                 const Dropout& dropout, ThreadPool& pool) {
    Impl& m = *impl_;
    // A training pass never multiplies in fp16: its gradients (a LoRA adapter's) are taken
    // through the exact fp32 products of the fp16 base.
    WeightsView w = weights;
    w.fp16_arithmetic = false;
    require(!(grads && w.any_half()), PG_ERR_STATE,
            "Engine::forward_backward: a 16-bit base is frozen: it trains through a hook, without weight gradients");
    require(grads != nullptr || m.hook != nullptr, PG_ERR_INVALID_ARGUMENT,
            "Engine::forward_backward: no gradient buffer and no hook: nothing to train");
    require(targets != nullptr, PG_ERR_INVALID_ARGUMENT, "Engine::forward_backward: targets is NULL");
    check_dropout(dropout);
    m.check_call(inputs, targets, B, T);
    GptTensors<float> g_tensors{};
    if (grads) g_tensors = bind_tensors(m.layout, grads);
    const GptTensors<float>* g = grads ? &g_tensors : nullptr;
    const int L = m.cfg.n_layer;
    m.ensure_backward_memory();
    m.weight_gradient_gemms = 0;
    m.recomputing = false;
    m.gelu_layer = m.ln2_layer = -1;

    m.encoder_forward(w, inputs, B, T, dropout, pool);
    for (int l = 0; l < L; ++l)
        m.block_forward(w, l, m.slot(l), m.resid[l], m.resid[l + 1], B, T, dropout, true, pool);
    LossSum result = m.head(w, true, g, m.resid[L], targets, B * T, nullptr, nullptr, grad_scale, pool);
    for (int l = L - 1; l >= 0; --l) {
        // With recomputation the single slot holds the last layer's activations; rebuild the
        // others from their stored input.
        if (m.options.recompute && l != L - 1) {
            m.recomputing = true;
            m.block_forward(w, l, m.slot(l), m.resid[l], nullptr, B, T, dropout, true, pool);
            m.recomputing = false;
        }
        m.block_backward(w, g, l, B, T, dropout, pool);
    }
    // The embeddings' gradients are weight gradients only: nothing flows further.
    if (g) m.encoder_backward(*g, inputs, B, T, dropout, pool);
    return result;
}

KvCache::KvCache(const ModelConfig& cfg)
    : keys(size_t(cfg.n_layer) * cfg.n_ctx * cfg.n_embd), values(size_t(cfg.n_layer) * cfg.n_ctx * cfg.n_embd) {}

void Engine::forward_cached(const WeightsView& w, const int32_t* tokens, int first, int n, KvCache& cache,
                            float* logits, ThreadPool& pool) {
    Impl& m = *impl_;
    // Preconditions, checked by the caller (the session).
    assert(n >= 1 && int64_t(n) <= m.rows() && first >= 0 && first + n <= m.cfg.n_ctx);
    const Dropout none;
    m.first_position = first;
    m.encoder_forward(w, tokens, 1, n, none, pool, first);
    const int L = m.cfg.n_layer;
    for (int l = 0; l < L; ++l) {
        const Impl::CachedPass pass{&cache, first, l == L - 1};
        m.block_forward(w, l, m.layers[0], m.resid[l % 2], m.resid[(l + 1) % 2], 1, n, none, false, pool, &pass);
    }
    m.first_position = 0;
    m.head(w, false, nullptr, m.resid[L % 2], nullptr, 1, nullptr, logits, 0.0f, pool);
}

void Engine::set_linear_hook(LinearHook* hook) { impl_->hook = hook; }
void Engine::set_profile(StepProfile* profile) { impl_->profile = profile; }
LinearHook* Engine::linear_hook() const { return impl_->hook; }
int64_t Engine::weight_gradient_gemms() const { return impl_->weight_gradient_gemms; }

int Engine::max_B() const { return impl_->max_B; }
int Engine::max_T() const { return impl_->max_T; }
std::size_t Engine::activation_bytes() const {
    const Impl& m = *impl_;
    std::size_t floats = m.forward_memory.size() + m.backward_memory.size();
    for (const auto& s : m.attn_scratch) floats += s.s.size() + s.dp.size() + s.m.size() + s.l.size() + s.d.size();
    for (const auto& h : m.head_scratch) floats += h.logits.size() + h.dwte.size() + h.dlnf.size();
    floats += m.dw_partials.size();
    return floats * sizeof(float);
}

namespace {

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C, float eps, ThreadPool& pool) {
    for_rows(pool, N, [&](int, int64_t r0, int64_t r1) {
        k::layernorm_forward(out + r0 * C, mean + r0, rstd + r0, x + r0 * C, w, b, r1 - r0, C, eps);
    });
}

// dx[N, C] += LayerNorm input gradient; dw, db [C] += weight gradients (summed per thread,
// then added in thread order), unless dw is null (a frozen base: the kernel computes the sums
// alongside dx anyway, they are just not kept).
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C,
                        ThreadPool& pool, StepProfile* profile) {
    StepProfile::Scope phase(profile, "backward layernorm");
    const int nt = pool.size();
    if (profile) profile->add_bytes(int64_t(N) * (3 * C + 2) * 4, int64_t(N) * C * 4);
    std::vector<float> partial(size_t(nt) * 2 * C, 0.0f);
    pool.parallel_for(N, [&](int t, int64_t r0, int64_t r1) {
        float* pw = partial.data() + size_t(t) * 2 * C;
        k::layernorm_backward(dx + r0 * C, pw, pw + C, dout + r0 * C, x + r0 * C, w, mean + r0,
                              rstd + r0, r1 - r0, C);
    });
    if (!dw) return;
    StepProfile::Scope reduction(profile, kReductionPhase);
    for (int t = 0; t < nt; ++t) {
        const float* pw = partial.data() + size_t(t) * 2 * C;
        for (int i = 0; i < C; ++i) {
            dw[i] += pw[i];
            db[i] += pw[C + i];
        }
    }
}

// out[N, C] = dout * dropout mask (the gradient flowing into a dropped branch).
void dropout_backward(float* out, const float* dout, int N, int C, const Dropout& d,
                      DropoutPlace place, int layer, ThreadPool& pool) {
    pool.parallel_for(N, [&](int, int64_t r0, int64_t r1) {
        const int64_t i = r0 * C;
        k::dropout_apply(out + i, dout + i, (r1 - r0) * C, dropout_args(d, place, layer, uint64_t(i)));
    });
}

}  // namespace

// ----------------------------------------------------------------------------------------
// encoder: resid[0][b,t,:] = dropout(wte[inputs[b,t]] + wpe[first_position + t])

void Engine::Impl::encoder_forward(const WeightsView& v, const int32_t* inputs, int B, int T,
                                   const Dropout& d, ThreadPool& pool, int first_position) {
    StepProfile::Scope phase(profile, "forward encoder");
    const int C = cfg.n_embd;
    traffic(2 * int64_t(B) * T * C, int64_t(B) * T * C);
    const bool drop = dropout_active(d);
    const WeightMatrix wte = v.matrix(kWte);
    const float* wpe = v.f32[kWpe];
    float* out = resid[0];
    for_rows(pool, int64_t(B) * T, [&](int, int64_t r0, int64_t r1) {
        for (int64_t n = r0; n < r1; ++n) {
            float* o = out + n * C;
            // A 16-bit embedding row is widened into the output row itself, then summed.
            const float* we = wte.row(inputs[n], C, o);
            const float* pe = wpe + (first_position + n % T) * C;
            for (int i = 0; i < C; ++i) o[i] = we[i] + pe[i];
            if (drop) k::dropout_apply(o, o, C, dropout_args(d, kDropEmbedding, 0, uint64_t(n * C)));
        }
    });
}

// dresid holds d(loss)/d(resid[0]); it is consumed (dropout applied in place).
void Engine::Impl::encoder_backward(const GptTensors<float>& g, const int32_t* inputs, int B, int T,
                                    const Dropout& d, ThreadPool& pool) {
    StepProfile::Scope phase(profile, "backward encoder");
    const int C = cfg.n_embd;
    const int64_t N = int64_t(B) * T;
    if (dropout_active(d)) {
        traffic(N * C, N * C);
        dropout_backward(dresid, dresid, int(N), C, d, kDropEmbedding, 0, pool);
    }
    // wpe by positions, wte by channels: each thread reads rows of every sequence.
    const int nt = pool.size();
    traffic(2 * N * C + 2 * int64_t(T) * C, int64_t(T) * C + N * C, 2 * N * C * (nt - 1) / nt);
    const float* dx = dresid;
    // wpe: each thread owns positions and sums over the batch in order.
    pool.parallel_for(T, [&](int, int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t)
            for (int b = 0; b < B; ++b) k::axpy(g.wpe + t * C, 1.0f, dx + (int64_t(b) * T + t) * C, C);
    });
    // wte: each thread owns a slice of the channels and walks all positions in order, so
    // repeated tokens never race.
    pool.parallel_for(C, [&](int, int64_t c0, int64_t c1) {
        for (int64_t n = 0; n < N; ++n) {
            float* row = g.wte + int64_t(inputs[n]) * C;
            const float* dr = dx + n * C;
            for (int64_t c = c0; c < c1; ++c) row[c] += dr[c];
        }
    });
}

// ----------------------------------------------------------------------------------------
// one transformer block: x [N, C] -> out [N, C]

// a: where this layer's activations go (its own slot, or a shared one when nothing needs
// to be kept). out == nullptr: only rebuild what the backward pass reads (recomputation),
// skipping the MLP's output projection, whose result is already in the residual stream.
// training: the pass will be followed by a backward pass (the hook's dropout is on).
// cached (the KV-cached pass of one sequence, B = 1): attention reads and extends the
// cache instead of attending within the batch; on the last layer only the last row goes on
// past the cache update, so `out` then holds one row.
void Engine::Impl::block_forward(const WeightsView& v, int l, LayerActs& a, const float* x, float* out,
                                 int B, int T, const Dropout& d, bool training, ThreadPool& pool,
                                 const CachedPass* cached) {
    const int C = cfg.n_embd;
    const GptTensors<const float> w = v.fp32_tensors();
    int N = B * T;
    ln2_layer = -1;  // ln_out gets ln_1's output
    {
        StepProfile::Scope phase(profile, kForwardLayerNormPhase[recomputing]);
        traffic(int64_t(N) * C, int64_t(N) * (C + 2));
        layernorm_forward(ln_out, a.ln1_mean, a.ln1_rstd, x, w.ln1w + l * C, w.ln1b + l * C, N, C,
                          cfg.layernorm_eps, pool);
    }
    linear(l, LinearKind::attn_qkv, a.qkv, ln_out, v.matrix(kQkvw).at(int64_t(l) * 3 * C * C), w.qkvb + l * 3 * C, N, C,
           3 * C, false, d, training, pool);
    if (cached) {
        store_keys_values(*cached->cache, l, a.qkv, N, cached->first);
        const float* q = a.qkv;
        int first = cached->first;
        if (cached->last_row_only && N > 1) {
            // Every row's keys and values are cached; only the last row predicts.
            q += int64_t(N - 1) * 3 * C;
            x += int64_t(N - 1) * C;
            first += N - 1;
            N = 1;
        }
        attention_cached(a.atty, q, N, first, *cached->cache, l, pool);
    } else {
        attention_forward(a, l, B, T, d, pool);
    }
    linear_residual(l, LinearKind::attn_proj, a.res2, x, a.atty, v.matrix(kAttprojw).at(int64_t(l) * C * C),
                    w.attprojb + l * C, N, C, C, d, kDropAttnProj, training, pool);
    {
        StepProfile::Scope phase(profile, kForwardLayerNormPhase[recomputing]);
        traffic(int64_t(N) * C, int64_t(N) * (C + 2));
        layernorm_forward(ln_out, a.ln2_mean, a.ln2_rstd, a.res2, w.ln2w + l * C, w.ln2b + l * C, N, C,
                          cfg.layernorm_eps, pool);
    }
    ln2_layer = l;
    // fch = ln_2(x) W_fc^T + b, and its GELU into big_a (when recomputing, for the backward
    // pass that follows, which reads it first)
    linear(l, LinearKind::mlp_fc, a.fch, ln_out, v.matrix(kFcw).at(int64_t(l) * 4 * C * C), w.fcb + l * 4 * C, N, C,
           4 * C, false, d, training, pool, big_a);
    gelu_layer = l;
    if (!out) return;
    linear_residual(l, LinearKind::mlp_proj, out, a.res2, big_a, v.matrix(kFcprojw).at(int64_t(l) * C * 4 * C),
                    w.fcprojb + l * C, N, 4 * C, C, d, kDropMlpProj, training, pool);
}

// dresid: d(loss)/d(resid[l+1]) on entry, d(loss)/d(resid[l]) on exit. g == nullptr: a
// frozen base (no weight gradient is computed; input gradients and the hook's still are).
void Engine::Impl::block_backward(const WeightsView& v, const GptTensors<float>* g, int l, int B, int T,
                                  const Dropout& d, ThreadPool& pool) {
    const int C = cfg.n_embd, N = B * T;
    const GptTensors<const float> w = v.fp32_tensors();
    const bool drop = dropout_active(d);
    LayerActs& a = slot(l);
    const float* x = resid[size_t(l)];
    float* dln = branch;  // branch is free in the backward pass
    // This layer's weight gradients, or nulls for a frozen base.
    using G = GptTensors<float>;
    auto grad = [&](float* G::*tensor, int64_t per_layer) -> float* {
        return g ? g->*tensor + l * per_layer : nullptr;
    };

    // resid[l+1] = res2 + dropout(fcproj(gelu(fch)))
    const float* dfcproj = dresid;
    if (drop) {
        StepProfile::Scope phase(profile, "backward dropout");
        traffic(int64_t(N) * C, int64_t(N) * C);
        dropout_backward(branch, dresid, N, C, d, kDropMlpProj, l, pool);
        dfcproj = branch;
    }
    if (gelu_layer != l) {
        StepProfile::Scope phase(profile, "backward recompute (gelu, layernorm)");
        traffic(int64_t(N) * 4 * C, int64_t(N) * 4 * C);
        gelu_rows(big_a, a.fch, N, 4 * C, pool);  // recompute the GELU output
    }
    const bool have_ln2 = ln2_layer == l;
    gelu_layer = ln2_layer = -1;  // big_a and ln_out are overwritten from here on
    // dfch = gelu'(fch) * d(GELU output), into big_a (the GELU output is no longer needed)
    linear_backward(l, LinearKind::mlp_proj, big_a, grad(&G::fcprojw, int64_t(C) * 4 * C),
                    grad(&G::fcprojb, C), dfcproj, big_a, v.matrix(kFcprojw).at(int64_t(l) * C * 4 * C), N,
                    4 * C, C, d, pool, a.fch);
    if (!have_ln2) {
        StepProfile::Scope phase(profile, "backward recompute (gelu, layernorm)");
        traffic(int64_t(N) * (C + 2), int64_t(N) * C);
        layernorm_forward(ln_out, a.ln2_mean, a.ln2_rstd, a.res2, w.ln2w + l * C, w.ln2b + l * C, N, C,
                          cfg.layernorm_eps, pool);  // recompute ln_2's output
    }
    linear_backward(l, LinearKind::mlp_fc, dln, grad(&G::fcw, int64_t(4) * C * C),
                    grad(&G::fcb, 4 * C), big_a, ln_out, v.matrix(kFcw).at(int64_t(l) * 4 * C * C), N, C,
                    4 * C, d, pool);
    layernorm_backward(dresid, grad(&G::ln2w, C), grad(&G::ln2b, C), dln, a.res2,
                       w.ln2w + l * C, a.ln2_mean, a.ln2_rstd, N, C, pool, profile);

    // res2 = x + dropout(attproj(attention(qkv(ln_1(x)))))
    const float* dattproj = dresid;
    if (drop) {
        StepProfile::Scope phase(profile, "backward dropout");
        traffic(int64_t(N) * C, int64_t(N) * C);
        dropout_backward(branch, dresid, N, C, d, kDropAttnProj, l, pool);
        dattproj = branch;
    }
    linear_backward(l, LinearKind::attn_proj, datty, grad(&G::attprojw, int64_t(C) * C),
                    grad(&G::attprojb, C), dattproj, a.atty, v.matrix(kAttprojw).at(int64_t(l) * C * C), N,
                    C, C, d, pool);
    float* dqkv = big_a;
    attention_backward(dqkv, datty, a, l, B, T, d, pool);
    {
        StepProfile::Scope phase(profile, "backward recompute (gelu, layernorm)");
        traffic(int64_t(N) * (C + 2), int64_t(N) * C);
        layernorm_forward(ln_out, a.ln1_mean, a.ln1_rstd, x, w.ln1w + l * C, w.ln1b + l * C, N, C,
                          cfg.layernorm_eps, pool);  // recompute ln_1's output
    }
    linear_backward(l, LinearKind::attn_qkv, dln, grad(&G::qkvw, int64_t(3) * C * C),
                    grad(&G::qkvb, 3 * C), dqkv, ln_out, v.matrix(kQkvw).at(int64_t(l) * 3 * C * C), N, C,
                    3 * C, d, pool);
    layernorm_backward(dresid, grad(&G::ln1w, C), grad(&G::ln1b, C), dln, x,
                       w.ln1w + l * C, a.ln1_mean, a.ln1_rstd, N, C, pool, profile);
}

}  // namespace pg
