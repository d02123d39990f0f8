// PEFT interop: a folder PEFT's PeftModel.from_pretrained opens for a Hugging Face GPT-2 or
// Llama-family base (pg_model_export / the HF folder export): adapter_config.json (peft_type LORA,
// r, lora_alpha, lora_dropout, target_modules by module name, fan_in_fan_out = true for GPT-2's
// Conv1D layers and false for the Llama family's nn.Linear, use_rslora, layers_to_transform with
// layers_pattern "h" or "layers") and
// adapter_model.safetensors, which is the adapter file itself: its tensors already carry PEFT's
// names and shapes (A [r, in], B [out, r]) and PEFT ignores the phonegpt.* metadata.
#pragma once

#include <string>

#include "core/file_io.hpp"
#include "lora/adapter.hpp"

namespace pg::lora {

std::string peft_adapter_config_json(const LoraConfig& cfg, const ModelConfig& base);

// Writes both files into `folder` (which must exist) atomically, then reads them back and checks
// them against the adapter before returning (PG_ERR_IO when they differ).
void export_peft(const Adapter& adapter, const std::string& folder);

// Reads `folder`/adapter_config.json and `folder`/adapter_model.safetensors (PEFT's LoRA for a
// Hugging Face GPT-2 base: tensors base_model.model.transformer.h.{i}.{module}.lora_{A,B}.weight;
// for a Llama-family base base_model.model.model.layers.{i}.{module}.lora_{A,B}.weight; F32 / F16
// / BF16 / F64) as an adapter of `base` (lib/lora/peft_import.cpp). The adapted modules,
// the layers, the rank and every shape are read from the files; the two files must agree
// (PG_ERR_FORMAT naming both) and fit the base (PG_ERR_GEOMETRY naming both sides); what PEFT
// expresses but this library does not (DoRA, rank_pattern, LoRA biases, modules_to_save, other
// modules) is PG_ERR_UNSUPPORTED. init_seed is 0 (PEFT does not record it) and the training
// record empty, except for a pair written by export_peft, which comes back whole.
Adapter import_peft(const std::string& folder, const Model& base);
// The same from the files' contents (`config_name` names the first in messages).
Adapter import_peft_from(const std::string& config_json, const std::string& config_name, const io::ByteSource& tensors,
                         const Model& base);

}  // namespace pg::lora
