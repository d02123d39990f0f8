#include "capi/model_args.hpp"

#include "capi/boundary.hpp"
#include "train/step_driver.hpp"

namespace pg {
namespace capi {

namespace {

// Messages are built only on failure: the loops compare, then throw.
[[noreturn]] void bad_id(const char* fn, const char* what, std::size_t i, int32_t v, const std::string& range) {
    throw Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + what + " " + std::to_string(i) + " = " +
                                             std::to_string(v) + " is outside " + range);
}

std::string ids_range(int vocab_size) { return "[0, vocab_size = " + std::to_string(vocab_size) + ")"; }
std::string targets_range(int vocab_size) {
    return "[-1, vocab_size = " + std::to_string(vocab_size) + ") (-1 = not scored)";
}

void require_shape(int32_t B, int32_t T, int32_t max_B, const ModelConfig& cfg, const char* fn) {
    require_arg(B >= 1 && B <= max_B, fn,
                ("B = " + std::to_string(B) + " is outside [1, " + std::to_string(max_B) + "]").c_str());
    require_arg(T >= 1 && T <= cfg.n_ctx, fn,
                ("T = " + std::to_string(T) + " is outside [1, n_ctx = " + std::to_string(cfg.n_ctx) + "]").c_str());
}

}  // namespace

void require_token_ids(const int32_t* tokens, std::size_t n, int vocab_size, const char* fn) {
    for (std::size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= vocab_size)
            throw Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": token " + std::to_string(i) + " is " +
                                                     std::to_string(tokens[i]) + ", outside the vocabulary [0, " +
                                                     std::to_string(vocab_size) + ")");
    }
}

void require_forward_batch(const int32_t* tokens, const int32_t* targets, int32_t B, int32_t T,
                           const ModelConfig& cfg, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, tokens);
    require_shape(B, T, INT32_MAX, cfg, fn);
    const std::size_t n = std::size_t(B) * std::size_t(T);
    const int V = cfg.vocab_size;
    for (std::size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= V)
            throw Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": tokens[" + std::to_string(i) + "] = " +
                                                     std::to_string(tokens[i]) + " is outside " + ids_range(V));
        if (targets && (targets[i] < -1 || targets[i] >= V))
            throw Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": targets[" + std::to_string(i) + "] = " +
                                                     std::to_string(targets[i]) + " is neither -1 nor in " +
                                                     ids_range(V));
    }
}

void require_training_batch(const int32_t* inputs, const int32_t* targets, int32_t B, int32_t T,
                            const ModelConfig& cfg, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, inputs);
    PG_REQUIRE_NOT_NULL(fn, targets);
    require_shape(B, T, 1 << 16, cfg, fn);
    require_arg(int64_t(B) * T <= kMaxBatchTokens, fn, batch_tokens_message(B, T).c_str());
    const std::size_t n = std::size_t(B) * std::size_t(T);
    const int V = cfg.vocab_size;
    bool scored = false;
    for (std::size_t i = 0; i < n; ++i) {
        if (inputs[i] < 0 || inputs[i] >= V) bad_id(fn, "input", i, inputs[i], ids_range(V));
        if (targets[i] < -1 || targets[i] >= V) bad_id(fn, "target", i, targets[i], targets_range(V));
        scored |= targets[i] >= 0;
    }
    require_arg(scored, fn, "every target is -1, nothing to learn from");
}

void require_tokenizer_fits(const Tokenizer& tok, const ModelConfig& cfg, const std::string& fn) {
    if (tok.vocab_size() != cfg.vocab_size)
        throw Error(PG_ERR_GEOMETRY, fn + ": the tokenizer has " + std::to_string(tok.vocab_size()) +
                                         " tokens but the model's vocab_size is " + std::to_string(cfg.vocab_size));
}

}  // namespace capi
}  // namespace pg
