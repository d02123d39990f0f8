// Whole-split evaluation (every one of the N-1 predictions of a split scored exactly once) and
// the nanoGPT-style sampled estimate. The window rules are those documented above
// pg_eval_config in phonegpt.h and in docs/evaluation.md; plan_windows() is their one
// implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "eval/session.hpp"
#include "model/engine.hpp"
#include "phonegpt/phonegpt.h"

namespace pg {

// One forward window: inputs tokens[start, start + length), targets shifted by one; the
// positions [first_scored, length) are scored (their targets are tokens start+first_scored+1
// .. start+length).
struct EvalWindow {
    int64_t start = 0;
    int length = 0;
    int first_scored = 0;
    int scored() const { return length - first_scored; }
};

// The windows for a split of n_tokens (>= 2) with window W (>= 1) and stride S (1..W), in
// order. Their scored positions partition the n_tokens - 1 predictions.
std::vector<EvalWindow> plan_windows(int64_t n_tokens, int window, int stride);

struct EvalOptions {
    int window = 0;      // 0 = n_ctx
    int stride = 0;      // 0 = window
    int batch_size = 16;
    pg_progress_fn progress = nullptr;
    void* progress_user = nullptr;
};

struct EvalResult {
    double mean_loss = 0.0;
    double bits_per_token = 0.0;
    int64_t n_scored = 0;
    int64_t n_windows = 0;
    // The bytes the scored targets decode to with the model's tokenizer (each time a target is
    // scored; context-only positions add nothing) and the summed loss in bits over them; both
    // 0 when the model has no tokenizer. docs/evaluation.md, "Bits per byte".
    double bits_per_byte = 0.0;
    int64_t n_bytes = 0;
};

// Precondition of evaluate and evaluate_sampled: every token id is in [0, vocab_size)
// (capi::require_token_ids checks it at the C boundary).
//
// Whole-split score on the session's threads and scratch (its sequence is untouched); throws
// PG_ERR_INVALID_ARGUMENT for bad options or a scored target the model's tokenizer has no
// bytes for (a gap in a BPE id range; checked before any forward pass), and PG_ERR_CANCELLED
// when the progress callback asks to stop.
EvalResult evaluate(Session& session, const int32_t* tokens, std::size_t n, const EvalOptions& options);

struct SampledEvalOptions {
    int n_batches = 0;
    int batch_size = 0;
    uint64_t seed = 0;
};

// The mean over n_batches batches of batch_size windows of n_ctx inputs (n_ctx + 1 tokens) at
// offsets drawn uniformly from [0, n - n_ctx - 1] by pg::Rng(seed). An estimate. n_bytes counts
// every scored target of every window (windows overlap: a token scored twice counts twice).
EvalResult evaluate_sampled(Session& session, const int32_t* tokens, std::size_t n, const SampledEvalOptions& options);

// B sequences of T tokens (ids and targets checked by the caller; a target of -1 is not
// scored) through the model, a fixed number of sequences at a time (which bounds the
// activation memory whatever B is and keeps results independent of anything but the thread
// count). logits (optional): [B, T, vocab_size].
LossSum forward(Session& session, const int32_t* tokens, int B, int T, const int32_t* targets, float* logits);

}  // namespace pg
