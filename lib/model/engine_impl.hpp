// The engine's private parts, shared by lib/model/engine*.cpp only (engine.cpp says how the
// engine works): Engine::Impl with its buffers and small inline helpers, and the profile phase
// names and row loop that several of its files use.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/error.hpp"
#include "core/step_profile.hpp"
#include "kernels/dispatch.hpp"
#include "model/dropout_mask.hpp"
#include "model/engine.hpp"
#include "model/linear_hook.hpp"
#include "model/params.hpp"

namespace pg {

// Used by more than one of the engine's files; nothing else includes this header.
namespace engine_detail {

namespace k = pg::kernels;

using k::gemm_args;

// The phases of a profiled pass (Engine::set_profile, core/step_profile.hpp), by linear kind
// (LinearKind order) and pass: [0] the forward pass, [1] recomputing a layer in the backward.
const char* const kForwardLinearPhase[2][kNumLinearKinds] = {
    {"forward qkv", "forward attn_proj (+residual)", "forward fc (+gelu)", "forward fc_proj (+residual)"},
    {"recompute qkv", "recompute attn_proj (+residual)", "recompute fc (+gelu)", "recompute fc_proj"}};
const char* const kForwardLayerNormPhase[2] = {"forward layernorm", "recompute layernorm"};
const char* const kForwardAttentionPhase[2] = {"forward attention", "recompute attention"};
const char* const kWeightGradPhase[kNumLinearKinds] = {"backward qkv dW", "backward attn_proj dW", "backward fc dW",
                                                      "backward fc_proj dW"};
// The MLP's GELU derivative is fused into fc_proj's input gradient (it yields d(fc output)).
const char* const kInputGradPhase[kNumLinearKinds] = {"backward qkv dX", "backward attn_proj dX",
                                                     "backward fc dX", "backward fc_proj dX (+gelu')"};
const char* const kReductionPhase = "weight-gradient reduction";

// pool.parallel_for over rows, except that a single row (the cached generation step) runs on
// the calling thread: waking the pool costs more than one row of any of these loops.
inline void for_rows(ThreadPool& pool, int64_t n, const std::function<void(int, int64_t, int64_t)>& fn) {
    if (n == 1)
        fn(0, 0, 1);
    else
        pool.parallel_for(n, fn);
}

}  // namespace engine_detail

struct Engine::Impl {
    // What one layer keeps from forward to backward.
    // Widths (Dims): QKV = q_width + 2 * kv_width (3C for GPT-2), Q = q_width (C), F = the
    // MLP's first linear's outputs (4C, or gate and up: 2 * mlp_hidden).
    struct LayerActs {
        float *ln1_mean, *ln1_rstd;  // [N]     (RMSNorm: the mean is unused)
        float* qkv;                  // [N, QKV] q, k, v as attention reads them (normed, rotated)
        float* atty;                 // [N, Q]   attention output (before c_proj)
        float* lse;                  // [B, NH, T] log-sum-exp of each attention row
        float* res2;                 // [N, C]   residual after the attention block
        float *ln2_mean, *ln2_rstd;  // [N]
        float* fch;                  // [N, F]   MLP pre-activation
        float* qk_raw;               // [N, Q + kv_width] q and k before their norms (qk_norm only)
        float* qk_rstd;              // [N, NH + NKV] the per-head norms' rstd (qk_norm only)
    };
    // The configuration's widths, computed once.
    struct Dims {
        int C, Q, KV, QKV, H, F, NH, NKV, hd;
        bool swiglu, rms, rotary;
        explicit Dims(const ModelConfig& c)
            : C(c.n_embd), Q(c.q_width()), KV(c.kv_width()), QKV(c.q_width() + 2 * c.kv_width()), H(c.mlp_width()),
              F(c.mlp == MlpKind::swiglu ? 2 * c.mlp_width() : c.mlp_width()), NH(c.n_head), NKV(c.kv_heads()),
              hd(c.head_dim()), swiglu(c.mlp == MlpKind::swiglu), rms(c.norm == NormKind::rmsnorm),
              rotary(c.positions == PositionKind::rotary) {}
        // big_a's width: the MLP activation's output, d(fc output) (GELU) and d(qkv).
        int64_t big_width() const { return std::max<int64_t>(std::max(H, swiglu ? 0 : F), QKV); }
    };
    // Per-thread attention tiles.
    struct AttnScratch {
        AlignedBuffer<float> s, dp, m, l, d;
        // K and V of one (sequence, head) transposed to [hs, T], so the products with K^T and
        // V^T read a plain B in place instead of transposing it again for every tile.
        AlignedBuffer<float> kt, vt;
    };
    // Per-thread buffers of the output head.
    struct HeadScratch {
        AlignedBuffer<float> logits;  // [loss_chunk_rows(V), V]; in backward, then their gradient
        AlignedBuffer<float> dwte;             // [V, C] this thread's share of d(wte)
        AlignedBuffer<float> dlnf;             // [2C]   its share of d(ln_f weight), d(ln_f bias)
    };

    // What block_forward needs in a KV-cached pass.
    struct CachedPass {
        KvCache* cache;
        int first;           // the position of the pass's first row
        bool last_row_only;  // the last layer
    };

    ModelConfig cfg;
    Dims dims;
    ParamLayout layout;
    int max_B, max_T;
    EngineOptions options;

    // Everything below points into these two.
    AlignedBuffer<float> forward_memory, backward_memory;
    // The residual stream entering each layer, and the last layer's output: [L+1][N, C] for
    // forward_backward; a forward pass alternates between the first two.
    std::vector<float*> resid;
    std::vector<LayerActs> layers;  // 1 for forward passes; L for forward_backward without recompute
    float* ln_out = nullptr;      // [N, C]  a LayerNorm output (forward, and recomputed in backward)
    float* big_a = nullptr;       // [N, big_width] GELU/SwiGLU output; in backward dfch (GELU), then dqkv
    float* datty = nullptr;       // [N, Q]  in backward d(attention output)
    float* branch = nullptr;      // [N, C]  a block's output before dropout; in backward d(ln input)
    float* dresid = nullptr;      // [N, C]  gradient of the residual stream
    float* lnf_mean = nullptr;    // [N]
    float* lnf_rstd = nullptr;    // [N]
    float* row_loss = nullptr;    // [N]
    std::vector<AttnScratch> attn_scratch;
    std::vector<HeadScratch> head_scratch;
    AlignedBuffer<float> cached_scores;  // [rows, len] one head's scores in a cached pass
    // Rotary angles [max_T, head_dim / 2] of positions 0.., and of a cached pass's positions.
    AlignedBuffer<float> rope_cos, rope_sin, cached_cos, cached_sin;
    int first_position = 0;              // of the current pass (non-zero only in a cached one)
    LinearHook* hook = nullptr;      // borrowed; null = the plain model
    AlignedBuffer<float> widened;    // one row of a 16-bit matrix, in one-position passes
    AlignedBuffer<float> dw_partials;  // per-thread column sums and weight-gradient partials
    int64_t weight_gradient_gemms = 0;  // in the last forward_backward
    int64_t input_gradient_gemms = 0;   // base input-gradient products in the last forward_backward
    // The lowest layer the current backward pass reaches (forward_backward): 0 when the base
    // trains, else the lowest layer the hook adapts (n_layer: none). Nothing below it reads a
    // gradient, so no layer below runs backward and the floor layer stops at its lowest
    // adapted linear (block_backward).
    int backward_floor = 0;
    StepProfile* profile = nullptr;     // borrowed; null: not profiled
    bool recomputing = false;           // block_forward is rebuilding a layer for its backward
    // The layer whose GELU (or SwiGLU) output big_a holds, and whose ln_2 output ln_out holds (-1: none):
    // the last layer's GELU after a forward pass, and both after a layer is recomputed, so
    // block_backward does not compute them a second time.
    int gelu_layer = -1, ln2_layer = -1;

    // Estimated traffic of the current phase's kernels, in floats (see StepProfile).
    void traffic(int64_t read, int64_t written, int64_t cross = 0) const {
        if (profile) profile->add_bytes(read * 4, written * 4, cross * 4);
    }
    // A product's traffic, for the profile (engine_linear.cpp).
    void gemm_traffic(const kernels::GemmArgs& g, ThreadPool& pool) const;

    // Construction and memory planning (engine.cpp).
    Impl(const ModelConfig& config, int B, int T, EngineOptions opt);

    int64_t rows() const { return int64_t(max_B) * max_T; }

    // Room for one widened row of n values (the one-position paths run on one thread).
    float* row_scratch(int n) {
        if (widened.size() < size_t(n)) widened.resize(size_t(n));
        return widened.data();
    }

    struct Carver;
    static void plan_layer_of(Carver& c, const ModelConfig& cfg, int64_t N);
    static void plan_forward(Carver& c, const ModelConfig& cfg, int64_t N);
    static void plan_backward(Carver& c, const ModelConfig& cfg, int64_t N, bool recompute);
    // The carved allocations' sizes in floats (forward_memory, then backward_memory).
    static int64_t forward_floats(const ModelConfig& cfg, int64_t N);
    static int64_t backward_floats(const ModelConfig& cfg, int64_t N, bool recompute);
    // Per-thread and shared scratch a forward_backward of N = B x T rows sizes on nt threads
    // (engine_attention.cpp, engine_head.cpp, engine_linear.cpp).
    static int64_t attention_scratch_floats(const ModelConfig& cfg, int T, int nt);
    static int64_t head_scratch_floats(const ModelConfig& cfg, int64_t N, int nt, bool base_gradients);
    static int64_t weight_gradient_scratch_floats(const ModelConfig& cfg, int64_t N, int nt);
    static LayerActs take_layer(Carver& c);
    void ensure_backward_memory();
    void check_call(const int32_t* inputs, const int32_t* targets, int B, int T) const;

    LayerActs& slot(int l) { return layers[layers.size() == 1 ? 0 : size_t(l)]; }

    // The embedding and the transformer blocks (engine_block.cpp).
    void encoder_forward(const WeightsView& v, const int32_t* inputs, int B, int T,
                         const Dropout& d, ThreadPool& pool, int first_position = 0);
    void encoder_backward(const GptTensors<float>& g, const int32_t* inputs, int B, int T,
                          const Dropout& d, ThreadPool& pool);
    void block_forward(const WeightsView& v, int l, LayerActs& a, const float* x, float* out,
                       int B, int T, const Dropout& d, bool training, ThreadPool& pool,
                       const CachedPass* cached = nullptr);
    void block_backward(const WeightsView& v, const GptTensors<float>* g, int l, int B, int T,
                        const Dropout& d, ThreadPool& pool);

    // The linear layers, where the hook adds its term (engine_linear.cpp).
    LinearHookContext hook_context(const Dropout& d, ThreadPool& pool, bool training) const;
    LinearHook* hook_for(int layer, LinearKind kind) const;
    void linear(int layer, LinearKind kind, float* out, const float* inp, const WeightMatrix& w, const float* bias,
                int N, int C, int OC, bool accumulate, const Dropout& d, bool training, ThreadPool& pool,
                float* gelu_out = nullptr);
    void linear_backward(int layer, LinearKind kind, float* dinp, float* dw, float* dbias, const float* dout,
                         const float* inp, const WeightMatrix& w, int N, int C, int OC, const Dropout& d,
                         ThreadPool& pool, const float* gelu_in = nullptr);
    void linear_backward_weights(float* dw, float* dbias, const float* dout, const float* inp, int N, int C,
                                 int OC, ThreadPool& pool);
    void linear_residual(int layer, LinearKind kind, float* out, const float* x, const float* inp, const WeightMatrix& w,
                         const float* bias, int N, int C, int OC, const Dropout& d, DropoutPlace place,
                         bool training, ThreadPool& pool);
    static void gelu_rows(float* out, const float* x, int N, int width, ThreadPool& pool);
    // out[N, H] = silu(gate) * up of fch [N, 2H] (gate columns, then up columns).
    static void swiglu_rows(float* out, const float* fch, int N, int H, ThreadPool& pool);

    // The Llama family's q/k steps between the qkv linear and attention (engine_attention.cpp):
    // per-head RMSNorm (qk_norm: the layer's weights, raw values kept in a.qk_raw) and the
    // rotation of each of B sequences of T rows by the angles cos/sin [T, head_dim / 2]; and
    // their backward on dqkv [N, QKV] in place (dqnorm, dknorm: weight gradients, or null).
    void qk_forward(LayerActs& a, const float* w_qnorm, const float* w_knorm, int B, int T, const float* cos,
                    const float* sin, ThreadPool& pool);
    void qk_backward(float* dqkv, const LayerActs& a, const float* w_qnorm, const float* w_knorm, float* dqnorm,
                     float* dknorm, int B, int T, ThreadPool& pool);

    // Attention, over a batch and against a KV cache (engine_attention.cpp).
    // fn(scratch, pair, b, h) for every (sequence b, head h) of a batch of B sequences, pair =
    // b * n_head + h, split over the pool's threads, each with its own scratch.
    // heads: per sequence, n_head (one query head each) or kv_heads() (one KV head's group).
    void for_each_head(int B, int heads, ThreadPool& pool,
                       const std::function<void(AttnScratch&, int64_t pair, int b, int h)>& fn);
    void attention_forward(LayerActs& a, int layer, int B, int T, const Dropout& d, ThreadPool& pool);
    void attention_backward(float* dqkv, const float* datty, const LayerActs& a, int layer, int B, int T,
                            const Dropout& d, ThreadPool& pool);
    void store_keys_values(KvCache& cache, int l, const float* qkv, int rows, int first) const;
    void attention_cached(float* y, const float* q, int rows, int first, const KvCache& cache, int l,
                          ThreadPool& pool);

    // The head: ln_f, tied logits and cross-entropy, forward and backward (engine_head.cpp).
    LossSum head(const WeightsView& v, bool backward, const GptTensors<float>* g, const float* x,
                 const int32_t* targets, int N, float* losses, float* user_logits, float grad_scale,
                 ThreadPool& pool);
};

}  // namespace pg
