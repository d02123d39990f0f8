// Generation with a key/value cache: an incremental single-sequence forward that appends one
// position at a time (no recomputation of the window per token), token sampling (temperature,
// top-k, top-p), and the pg_generate loop (stop strings, streaming callback).
//
// The window: the cache holds the positions of the last tokens of the sequence, at most n_ctx
// of them, at positions 0..len-1 (positions are learned and absolute, so a token's keys and
// values depend on where it sits in the window). Appending to a full window slides it: the
// window becomes the last `slide_keep` tokens of the sequence (including the new one) and the
// cache is rebuilt over them in one batched pass. slide_keep = n_ctx makes every prediction see
// exactly the last n_ctx tokens (nanoGPT's crop) at the cost of one rebuild per token once the
// window is full; a smaller slide_keep rebuilds once per n_ctx - slide_keep + 1 tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "model/model.hpp"
#include "phonegpt/phonegpt.h"

namespace pg {

class KvCacheForward {
public:
    // slide_keep in [1, n_ctx]. Allocates everything a generation needs up front: appending a
    // token allocates nothing. n_threads (<= 0: all cores) split the batched rebuilds; the
    // single-position step runs on the calling thread (a 128-wide step is shorter than a
    // thread hand-off).
    KvCacheForward(const Model& model, int slide_keep, int n_threads);

    // Starts a sequence: the window is the last min(n, n_ctx) tokens (n >= 1), all positions
    // are computed at once, and logits() is the prediction after the last token.
    void start(const int32_t* tokens, std::size_t n);
    // Appends one token: one cached position, or a slide when the window is full.
    void append(int32_t token);

    // Logits [vocab_size] for the token after the window (padding columns excluded).
    const float* logits() const { return logits_.data(); }
    const int32_t* window() const { return window_.data(); }
    int window_length() const { return length_; }
    // How many times the window slid since start().
    int64_t slides() const { return slides_; }

private:
    // Computes positions [first, length_) of the window, whose cache rows [0, first) are
    // already filled, and the logits after position length_ - 1.
    void compute(int first);
    // Attention of the new rows' queries (in qkv_) over the cached keys and values of one layer,
    // into att_out_: one row at position pos with dot/axpy, or rows first..first+rows-1 with
    // GEMMs per head.
    void attend_step(const float* k_layer, const float* v_layer, int pos);
    void attend_rows(const float* k_layer, const float* v_layer, int first, int rows);
    // out[rows, n_out] = in[rows, n_in] W^T + b, W [n_out, n_in].
    void linear(float* out, const float* in, const float* W, const float* b, int rows, int n_in,
                int n_out);

    const Model& model_;
    const ModelConfig cfg_;
    const int slide_keep_;
    ThreadPool pool_;
    std::vector<int32_t> window_;  // [n_ctx]
    int length_ = 0;
    int64_t slides_ = 0;
    // Caches [n_layer][n_head][n_ctx][head_dim]: one head's keys are contiguous.
    AlignedBuffer<float> k_cache_, v_cache_;
    // Activations for up to n_ctx rows.
    AlignedBuffer<float> x_, ln_, qkv_, att_out_, proj_, fc_, fc_gelu_, mean_, rstd_, scores_, logits_;
};

struct SampleOptions {
    float temperature = 1.0f;  // 0 = greedy
    int top_k = 0;             // 0 = off
    float top_p = 1.0f;        // 1 = off
};

// Throws PG_ERR_INVALID_ARGUMENT, naming `function` and the option, unless temperature is
// finite and >= 0, top_k >= 0 and top_p in (0, 1].
void validate_sample_options(const SampleOptions& options, const char* function);

// Picks the next token from logits. Draws at most one number from the Rng per call (none when
// greedy). Candidates are ranked by logit, ties by lower id, so top_k = 1 is greedy.
class TokenSampler {
public:
    TokenSampler(int vocab_size, const SampleOptions& options);
    int32_t pick(const float* logits, Rng& rng);

private:
    int vocab_;
    SampleOptions opt_;
    std::vector<int32_t> order_;
    std::vector<double> probs_;
};

// Everything pg_generate takes, validated.
struct GenerateOptions {
    SampleOptions sampling;
    uint64_t seed = 1337;
    int max_tokens = 256;
    int n_threads = 0;
    pg_token_fn on_token = nullptr;
    void* on_token_user = nullptr;
    std::vector<std::string> stop_strings;
    int slide_keep = 0;  // 0 = n_ctx
};

// Generates up to max_tokens tokens after `prompt` (its ids already checked), passing each to
// on_token and writing the first `capacity` of them to `out`. Returns the number generated.
// Throws pg::Error for bad options.
std::size_t generate(const Model& model, const int32_t* prompt, std::size_t n_prompt,
                     const GenerateOptions& options, int32_t* out, std::size_t capacity);

}  // namespace pg
