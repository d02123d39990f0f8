// The fast fp32 model pass used by training, evaluation and pg_model_forward: forward,
// forward+backward, threaded over a ThreadPool, with kernels from lib/kernels. It is tested
// against the scalar reference in tests/support/reference_model.hpp, which is the truth.
//
// Every linear layer of a block goes through one function, which calls the attached
// LinearHook (model/linear_hook.hpp), if any, where an adapter adds its low-rank term.
//
// An Engine owns the activation memory for at most max_B sequences of max_T tokens; it is
// scratch, not state: any call may use any B <= max_B, T <= max_T. Calls on one Engine must not
// overlap (use one Engine per concurrent caller). Buffers that only a backward pass needs are
// allocated by the first forward_backward.
//
// Dropout masks: see model/dropout_mask.hpp (the reference model uses the same definition).
#pragma once

#include <cstdint>
#include <memory>

#include "core/aligned_buffer.hpp"
#include "core/step_profile.hpp"
#include "core/thread_pool.hpp"
#include "model/config.hpp"
#include "model/linear_hook.hpp"
#include "model/weights_view.hpp"

namespace pg {

// Dropout in nanoGPT's four places (embedding sum, attention probabilities, attention output
// projection, MLP output projection). Masks come from counter_hash(seed, stream, element), so
// they are independent of threading; `stream` must differ per micro-batch.
struct Dropout {
    float p = 0.0f;
    uint64_t seed = 0;
    uint64_t stream = 0;
};

// Sum of per-position losses over the scored positions (target >= 0) and their count.
struct LossSum {
    double sum = 0.0;
    int64_t count = 0;
    double mean() const { return count ? sum / double(count) : 0.0; }
};

// How an Engine trades speed for memory.
struct EngineOptions {
    // false: forward_backward keeps every layer's activations (fastest).
    // true: it keeps only each layer's input (the residual stream) and recomputes one layer's
    // activations at a time during the backward pass: about one extra forward pass of work for
    // well under half the activation memory (PhoneGPT preset, batch 64: 114 MB instead of
    // 304 MB). Results are bit-identical either way.
    bool recompute = false;
};

// Keys and values of one sequence's positions for every layer and KV head, [n_layer][n_kv_head]
// [n_ctx][head_dim] each (one head's keys contiguous; rotated, for rotary positions): the state
// of incremental generation.
struct KvCache {
    explicit KvCache(const ModelConfig& cfg);
    AlignedBuffer<float> keys, values;
};

class Engine {
public:
    Engine(const ModelConfig& cfg, int max_B, int max_T, EngineOptions options = EngineOptions{});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // inputs, targets: [B, T]; a target < 0 is not scored. targets may be null (no loss).
    // losses (optional, [B, T]): per-position cross-entropy, 0 where not scored.
    // logits (optional, [B, T, vocab_size]): padding columns dropped.
    // Every pass reads the weights through a WeightsView (fp32, or a 16-bit frozen base:
    // model/weights_view.hpp); the float* overloads take all of them in fp32, llm.c's order.
    LossSum forward(const WeightsView& weights, const int32_t* inputs, const int32_t* targets, int B,
                    int T, float* losses, float* logits, ThreadPool& pool);
    LossSum forward(const float* params, const int32_t* inputs, const int32_t* targets, int B,
                    int T, float* losses, float* logits, ThreadPool& pool);

    // The KV-cached pass of one sequence: computes positions [first, first + n) of tokens [n]
    // given the cache's positions [0, first) of every layer (from earlier calls), stores their
    // keys and values in the cache, and writes the logits [vocab_size] after the last one.
    // Preconditions (the caller checks them): 1 <= n <= max_B * max_T, first + n <= n_ctx, ids
    // in range. One position runs on the calling thread (a step of a small model is shorter
    // than a thread hand-off); more are split over the pool.
    void forward_cached(const WeightsView& weights, const int32_t* tokens, int first, int n, KvCache& cache,
                        float* logits, ThreadPool& pool);

    // Forward and backward with dropout; adds grad_scale * d(sum of scored losses)/d(params)
    // into grads (callers zero them; grad_scale = 1 / total scored positions gives the
    // gradient of the mean). targets must not be null.
    // grads == nullptr: a frozen base (needs a hook). No weight-gradient product runs (nor the
    // bias, LayerNorm and embedding gradients); input gradients still flow through every
    // layer into the hook's backward, which gets exactly what it gets with grads. A 16-bit
    // base is always frozen (grads must be null).
    LossSum forward_backward(const WeightsView& weights, float* grads, const int32_t* inputs,
                             const int32_t* targets, int B, int T, float grad_scale,
                             const Dropout& dropout, ThreadPool& pool);
    LossSum forward_backward(const float* params, float* grads, const int32_t* inputs,
                             const int32_t* targets, int B, int T, float grad_scale,
                             const Dropout& dropout, ThreadPool& pool);

    // The hook every block's linear layers call (borrowed; nullptr = the plain model, at no
    // cost). It stays attached until replaced.
    void set_linear_hook(LinearHook* hook);
    LinearHook* linear_hook() const;
    // Records every later pass's phases into profile (borrowed; nullptr, the default: none):
    // wall time and the traffic estimate per phase (core/step_profile.hpp). The CPU time per
    // thread comes from the pool, when the same profile is its observer.
    void set_profile(StepProfile* profile);
    // How many weight-gradient products (one per linear layer and the tied head) the last
    // forward_backward ran: 4 * n_layer + 1 normally, 0 with a frozen base.
    int64_t weight_gradient_gemms() const;
    // The base's input-gradient products (d(loss)/d(input) of a block linear) in the last
    // forward_backward: with a frozen base, only those some adapted linear needs run.
    int64_t input_gradient_gemms() const;

    int max_B() const;
    int max_T() const;
    // Bytes of activation memory held.
    std::size_t activation_bytes() const;
    // What activation_bytes() reports after a forward_backward of a full max_B x max_T batch
    // on n_threads, computed without allocating (the training memory plan): base_gradients
    // false for a frozen base.
    static std::size_t planned_training_bytes(const ModelConfig& cfg, int max_B, int max_T, EngineOptions options,
                                              int n_threads, bool base_gradients);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace pg
