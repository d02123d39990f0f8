// Hugging Face config.json of the Llama family (LlamaForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM) to and from ModelConfig, with transformers' defaults for absent keys.
// What the engine does not compute (sliding windows, mixtures of experts, rope types other than
// Llama 3's, activations other than SiLU, ...) is refused naming the key, never ignored.
// GPT-2's config.json stays with the GPT-2 import (io/safetensors.hpp).
#pragma once

#include <string>

#include "model/config.hpp"

namespace pg::io {

// The transformers class a configuration is written as.
enum class HfFamily { llama, qwen2, qwen3 };
const char* hf_architecture_name(HfFamily family);  // "LlamaForCausalLM", ...

// config.json's model_type, read without the rest ("" when the key is absent), so a caller can
// route "gpt2" to the GPT-2 import. PG_ERR_FORMAT when the text is not a JSON object.
std::string hf_model_type(const std::string& config_json, const std::string& context);

// The geometry of a Llama, Qwen2 or Qwen3 config.json. `context` prefixes every message (the
// file's path). PG_ERR_UNSUPPORTED naming the key for what the engine does not implement,
// PG_ERR_FORMAT for a wrong type, PG_ERR_GEOMETRY for values no valid model has.
ModelConfig hf_decoder_config_from_json(const std::string& config_json, const std::string& context);

// The family a configuration is written as: q/k norms make Qwen3, biases on q/k/v alone make
// Qwen2, everything else Llama. PG_ERR_UNSUPPORTED when no family describes it (GPT-2's block,
// o_proj bias without MLP biases, ...), naming the field.
HfFamily hf_family_of(const ModelConfig& config);

// config.json as transformers writes it for that family (read back by
// hf_decoder_config_from_json to the same geometry; padded_vocab_size must equal vocab_size).
std::string hf_decoder_config_json(const ModelConfig& config);

}  // namespace pg::io
