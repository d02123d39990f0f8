// A session: the mutable inference state over a read-only model (llama.cpp's context over a
// model; XNNPACK's runtime over a subgraph). It owns its thread pool (the thread count is
// chosen once, at creation), the engine's scratch (grown to the largest batch asked for) and
// one sequence's KV cache with its window; evaluation, forward passes and generation run on a
// session. Many sessions may read one model at once; one session is used by one thread at a
// time. Adapters attach to a session (its LinearHook), never to the model.
//
// The sequence and its window: tokens are appended to the sequence; the window holds the last
// ones, at most n_ctx, at positions 0..length-1 (positions are learned and absolute, so a
// token's keys and values depend on where it sits in the window). Appended tokens are computed
// lazily, all pending ones in one batched pass, when logits are needed. When the pending tokens
// do not fit the window, it slides: it becomes the last max(slide_keep, pending) tokens of the
// sequence (at most n_ctx) and the cache is rebuilt over them in one pass. slide_keep = n_ctx
// makes every prediction see exactly the last n_ctx tokens (nanoGPT's crop) at the cost of one
// rebuild per token once the window is full; a smaller one rebuilds once per
// n_ctx - slide_keep + 1 tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/thread_pool.hpp"
#include "model/engine.hpp"
#include "model/linear_hook.hpp"
#include "model/model.hpp"

namespace pg {

struct SessionOptions {
    int n_threads = 0;   // <= 0: all cores
    int slide_keep = 0;  // 0 = n_ctx; else in [1, n_ctx]
    Arithmetic arithmetic = Arithmetic::exact;  // of every pass over the model (the caller checks it fits)
};

class Session {
public:
    // Precondition: options.slide_keep in [0, n_ctx] (the C boundary checks it).
    Session(const Model& model, const SessionOptions& options);
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const Model& model() const { return model_; }
    // What every pass of this session reads: the model's weights in the session's arithmetic.
    WeightsView weights() const { return model_.weights(arithmetic_); }
    ThreadPool& pool() { return pool_; }
    int n_threads() const { return pool_.size(); }

    // The engine for batches of up to B sequences of T tokens (grown when needed), with the
    // session's hook attached.
    Engine& engine(int B, int T);

    // The hook every linear layer of every pass on this session calls (borrowed; nullptr =
    // the plain model). Where adapters attach. Detaching or replacing it drops the cache.
    void set_linear_hook(LinearHook* hook);
    LinearHook* linear_hook() const { return hook_; }

    // --- the sequence (preconditions: ids in [0, vocab_size), checked by the caller) ---

    // Forgets the sequence (the cache's memory is kept).
    void reset();
    // Appends tokens to the sequence; they are computed when logits() is next called.
    void append(const int32_t* tokens, std::size_t n);
    // The logits [vocab_size] for the token after the sequence (padding columns excluded);
    // computes the pending tokens first. Precondition: position() > 0.
    const float* logits();
    // Tokens appended since the last reset (computed or pending).
    int64_t position() const { return position_; }
    // The computed window (pending tokens are not in it yet).
    const int32_t* window() const { return window_.data(); }
    int window_length() const { return length_; }
    // How many times the window slid since the last reset.
    int64_t slides() const { return slides_; }
    // Positions run through the model since creation (cached steps and rebuilds): what
    // continuing a sequence costs.
    int64_t computed_positions() const { return computed_; }
    int slide_keep() const { return slide_keep_; }
    // slide_keep in [1, n_ctx] (the caller checks it).
    void set_slide_keep(int slide_keep) { slide_keep_ = slide_keep; }

private:
    void compute_pending();

    const Model& model_;
    ThreadPool pool_;
    int slide_keep_;
    Arithmetic arithmetic_;
    std::unique_ptr<Engine> engine_;  // scratch, (re)allocated for the largest batch asked for
    LinearHook* hook_ = nullptr;
    // The sequence's state: created with the first append.
    std::unique_ptr<KvCache> cache_;
    std::vector<int32_t> window_;   // [n_ctx]
    std::vector<int32_t> pending_;  // appended, not computed yet
    std::vector<float> logits_;     // [vocab_size]
    int length_ = 0;
    int64_t position_ = 0;
    int64_t slides_ = 0;
    int64_t computed_ = 0;
};

}  // namespace pg
