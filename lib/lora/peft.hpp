// PEFT interop: a folder PEFT's PeftModel.from_pretrained opens for a Hugging Face GPT-2 base
// (the safetensors export of pg_model_export): adapter_config.json (peft_type LORA, r,
// lora_alpha, lora_dropout, target_modules by GPT-2 module name, fan_in_fan_out = true as GPT-2's
// Conv1D layers need, use_rslora, layers_to_transform with layers_pattern "h") and
// adapter_model.safetensors, which is the adapter file itself: its tensors already carry PEFT's
// names and shapes (A [r, in], B [out, r]) and PEFT ignores the phonegpt.* metadata.
#pragma once

#include <string>

#include "lora/adapter.hpp"

namespace pg::lora {

std::string peft_adapter_config_json(const LoraConfig& cfg);

// Writes both files into `folder` (which must exist) atomically, then reads them back and checks
// them against the adapter before returning (PG_ERR_IO when they differ).
void export_peft(const Adapter& adapter, const std::string& folder);

}  // namespace pg::lora
