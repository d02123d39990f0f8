// A Hugging Face model folder in and out: config.json, the weights (model.safetensors or an
// index and its shards) and tokenizer.json when it is there. The Llama family (LlamaForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM) maps by name onto the public tensor table, whose entries
// carry transformers' names; GPT2LMHeadModel goes through the GPT-2 mapping (io/safetensors.hpp).
#pragma once

#include <memory>
#include <string>

#include "model/model.hpp"

namespace pg::io {

// The storage an import asks for: as the file holds its matrices (F32 -> fp32, F16 -> fp16,
// BF16 -> bf16), or one of the model storages (a 16-bit one is filled from the file directly:
// no fp32 copy of the model ever exists).
constexpr int kHfStorageAsStored = -1;

// The model, and in *tokenizer the folder's tokenizer (tokenizer.json, or the one a GPT-2 export
// of this library carries; null when there is none), whose vocabulary is the model's vocab_size.
// Throws PG_ERR_IO (files), PG_ERR_FORMAT (a broken file), PG_ERR_UNSUPPORTED (a feature the
// engine does not compute, named), PG_ERR_GEOMETRY (a tensor whose shape config.json
// contradicts), PG_ERR_NOT_FINITE (NaN or infinity in a weight).
Model import_hf_folder(const std::string& folder, int storage, std::unique_ptr<Tokenizer>* tokenizer);

// Writes config.json and model.safetensors into `folder` (created if absent; each file
// atomically), matrices in the model's storage (F32, F16 or BF16), norms and biases in F32.
// A tokenizer is not written: a tokenizer.json already in the folder stays.
void export_hf_folder(const Model& model, const std::string& folder);

}  // namespace pg::io
