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
//
// The engine's files: engine_impl.hpp (Engine::Impl, its buffers and the methods below), this
// file (construction, memory planning and the public Engine methods that drive each pass),
// engine_block.cpp (the embedding and the transformer blocks), engine_linear.cpp (the linear
// layers and the hook), engine_attention.cpp (attention) and engine_head.cpp (ln_f, the tied
// logits and the cross-entropy).
#include "model/engine.hpp"

#include <algorithm>
#include <cassert>
#include <string>
#include <vector>

#include "model/engine_impl.hpp"
#include "model/rope.hpp"

namespace pg {

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
void Engine::Impl::plan_layer_of(Carver& c, const ModelConfig& cfg, int64_t N) {
    const Dims d(cfg);
    c.plan(N).plan(N).plan(N * d.QKV).plan(N * d.Q).plan(N * d.NH).plan(N * d.C).plan(N).plan(N).plan(N * d.F);
    c.plan(cfg.qk_norm ? N * (d.Q + d.KV) : 0).plan(cfg.qk_norm ? N * (d.NH + d.NKV) : 0);
}
// What the constructor carves: the residual stream's two buffers, one layer, the shared buffers.
void Engine::Impl::plan_forward(Carver& c, const ModelConfig& cfg, int64_t N) {
    const Dims d(cfg);
    const int64_t C = cfg.n_embd;
    c.plan(N * C).plan(N * C);  // the residual stream, ping-ponged between two buffers
    plan_layer_of(c, cfg, N);
    c.plan(N * C).plan(N * d.big_width()).plan(N * C).plan(N).plan(N).plan(N);
}
// What ensure_backward_memory carves.
void Engine::Impl::plan_backward(Carver& c, const ModelConfig& cfg, int64_t N, bool recompute) {
    const int64_t C = cfg.n_embd;
    const int extra_layers = recompute ? 0 : cfg.n_layer - 1;
    for (int l = 2; l <= cfg.n_layer; ++l) c.plan(N * C);  // the rest of the residual stream
    for (int l = 0; l < extra_layers; ++l) plan_layer_of(c, cfg, N);
    c.plan(N * cfg.q_width()).plan(N * C);
}

int64_t Engine::Impl::forward_floats(const ModelConfig& cfg, int64_t N) {
    Carver c;
    plan_forward(c, cfg, N);
    int64_t total = 0;
    for (int64_t n : c.sizes) total += n;
    return total;
}

int64_t Engine::Impl::backward_floats(const ModelConfig& cfg, int64_t N, bool recompute) {
    Carver c;
    plan_backward(c, cfg, N, recompute);
    int64_t total = 0;
    for (int64_t n : c.sizes) total += n;
    return total;
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
    a.qk_raw = c.take();
    a.qk_rstd = c.take();
    return a;
}

Engine::Impl::Impl(const ModelConfig& config, int B, int T, EngineOptions opt)
    : cfg((require_engine_supports(config), config)), dims(config), layout(config), max_B(B), max_T(T), options(opt) {
    // The widest activation row (GPT-2: the MLP's 4 * n_embd).
    const int64_t widest = std::max<int64_t>({int64_t(4) * dims.C, dims.F, dims.QKV, dims.H});
    require(B >= 1 && T >= 1 && T <= cfg.n_ctx && int64_t(B) * T <= (int64_t(1) << 30) / widest,
            PG_ERR_INVALID_ARGUMENT,
            "Engine: need 1 <= max_B, 1 <= max_T <= n_ctx = " + std::to_string(cfg.n_ctx) +
                " and max_B * max_T * " + std::to_string(widest) + " (the widest activation row) < 2^30 (got max_B = " +
                std::to_string(B) + ", max_T = " + std::to_string(T) + ")");
    if (dims.rotary) {
        const size_t half = size_t(dims.hd / 2);
        rope_cos.resize(size_t(T) * half);
        rope_sin.resize(size_t(T) * half);
        rope_angles(cfg, 0, T, rope_cos.data(), rope_sin.data());
    }
    // What a forward pass needs; the backward pass's extra buffers come with the first
    // forward_backward, so an engine used only for evaluation never holds them.
    Carver c;
    plan_forward(c, cfg, rows());
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
    const int extra_layers = options.recompute ? 0 : cfg.n_layer - 1;
    Carver c;
    plan_backward(c, cfg, rows(), options.recompute);
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
    // through the exact fp32 products of the fp16 base (fp16's range is narrow enough for an
    // activation gradient to overflow it). bf16 arithmetic stays on: bf16 has fp32's range,
    // so nothing overflows that fp32 would not, the rounding of the activations is the trade
    // PyTorch's bf16 autocast makes in training, and the user opted in to it
    // (Arithmetic::bf16).
    WeightsView w = weights;
    w.fp16_arithmetic = false;
    require(!(grads && w.frozen_only()), PG_ERR_STATE,
            "Engine::forward_backward: a 16-bit or quantized base is frozen: it trains through a hook, without weight gradients");
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
    m.weight_gradient_gemms = m.input_gradient_gemms = 0;
    m.recomputing = false;
    m.gelu_layer = m.ln2_layer = -1;
    // A frozen base: the backward goes down to the lowest adapted layer only.
    m.backward_floor = 0;
    if (!g) {
        m.backward_floor = L;
        for (int l = L - 1; l >= 0; --l)
            for (int k = 0; k < kNumLinearKinds; ++k)
                if (m.hook_for(l, LinearKind(k))) m.backward_floor = l;
    }

    m.encoder_forward(w, inputs, B, T, dropout, pool);
    for (int l = 0; l < L; ++l)
        m.block_forward(w, l, m.slot(l), m.resid[l], m.resid[l + 1], B, T, dropout, true, pool);
    // (a hook that adapts nothing has no gradient to take: the loss alone)
    const bool backward = m.backward_floor < L;
    LossSum result = m.head(w, backward, g, m.resid[L], targets, B * T, nullptr, nullptr, grad_scale, pool);
    for (int l = L - 1; l >= m.backward_floor; --l) {
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
    : keys(size_t(cfg.n_layer) * cfg.n_ctx * cfg.kv_width()), values(size_t(cfg.n_layer) * cfg.n_ctx * cfg.kv_width()) {}

void Engine::forward_cached(const WeightsView& w, const int32_t* tokens, int first, int n, KvCache& cache,
                            float* logits, ThreadPool& pool) {
    Impl& m = *impl_;
    // Preconditions, checked by the caller (the session).
    assert(n >= 1 && int64_t(n) <= m.rows() && first >= 0 && first + n <= m.cfg.n_ctx);
    const Dropout none;
    m.first_position = first;
    if (m.dims.rotary) {  // the angles of this pass's positions, the same values the batch table holds
        const size_t half = size_t(m.dims.hd / 2);
        if (m.cached_cos.size() < size_t(n) * half) {
            m.cached_cos.resize(size_t(n) * half);
            m.cached_sin.resize(size_t(n) * half);
        }
        rope_angles(m.cfg, first, n, m.cached_cos.data(), m.cached_sin.data());
    }
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
int64_t Engine::input_gradient_gemms() const { return impl_->input_gradient_gemms; }

int Engine::max_B() const { return impl_->max_B; }
int Engine::max_T() const { return impl_->max_T; }
std::size_t Engine::activation_bytes() const {
    const Impl& m = *impl_;
    std::size_t floats = m.forward_memory.size() + m.backward_memory.size();
    for (const auto& s : m.attn_scratch)
        floats += s.s.size() + s.dp.size() + s.m.size() + s.l.size() + s.d.size() + s.kt.size() + s.vt.size();
    for (const auto& h : m.head_scratch) floats += h.logits.size() + h.dwte.size() + h.dlnf.size();
    floats += m.dw_partials.size();
    return floats * sizeof(float);
}

std::size_t Engine::planned_training_bytes(const ModelConfig& cfg, int max_B, int max_T, EngineOptions options,
                                           int n_threads, bool base_gradients) {
    const int64_t N = int64_t(max_B) * max_T;
    int64_t floats = Impl::forward_floats(cfg, N) + Impl::backward_floats(cfg, N, options.recompute) +
                     Impl::attention_scratch_floats(cfg, max_T, n_threads) +
                     Impl::head_scratch_floats(cfg, N, n_threads, base_gradients);
    if (base_gradients) floats += Impl::weight_gradient_scratch_floats(cfg, N, n_threads);
    return std::size_t(floats) * sizeof(float);
}

}  // namespace pg
