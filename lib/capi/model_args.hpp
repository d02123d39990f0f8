// The checks of model-shaped arguments, made once at the C boundary: token ids, a batch for a
// forward pass or a training step, a tokenizer for a model. Internal code (lib/model, lib/train,
// lib/lora, lib/eval) states these as preconditions and trusts them. `fn` names the C function
// in every message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pg {
namespace capi {

// Every id in [0, vocab_size): "fn: token i is v, outside the vocabulary [0, V)".
void require_token_ids(const int32_t* tokens, std::size_t n, int vocab_size, const char* fn);

// A forward pass's batch: tokens [B, T] with 1 <= B, 1 <= T <= n_ctx, ids in [0, vocab_size);
// targets (NULL = none) in [-1, vocab_size), -1 = not scored.
void require_forward_batch(const int32_t* tokens, const int32_t* targets, int32_t B, int32_t T,
                           const ModelConfig& cfg, const char* fn);

// A training step's batch (pg_trainer_step_batch, pg_trainer_compute_gradients,
// pg_lora_trainer_step_batch): inputs and targets [B, T], 1 <= B <= 65536, 1 <= T <= n_ctx,
// B x T <= kMaxBatchTokens, inputs in [0, vocab_size), targets in [-1, vocab_size) and at least
// one scored. What Trainer::step_batch and LoraTrainer::step_batch assume.
void require_training_batch(const int32_t* inputs, const int32_t* targets, int32_t B, int32_t T,
                            const ModelConfig& cfg, const char* fn);

// The tokenizer belongs to the model: its vocabulary is the model's vocab_size (the checkpoint
// reader checks a tokenizer read from a file the same way). What Model::set_tokenizer assumes.
void require_tokenizer_fits(const Tokenizer& tok, const ModelConfig& cfg, const std::string& fn);

}  // namespace capi
}  // namespace pg
