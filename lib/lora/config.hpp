// A LoRA adapter's configuration (PEFT's LoraConfig for GPT-2's block linears), checked once
// here. It travels with the adapter (in memory and in its files); nothing about an adapter's
// geometry is assumed anywhere else.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/linear_hook.hpp"
#include "phonegpt/phonegpt.h"

namespace pg::lora {

// The targets are the engine's block linears (model/linear_hook.hpp); a target's pg_lora_target
// bit is 1 << its LinearKind, so the public bits and the hook's kinds are one numbering.
inline uint32_t target_bit(LinearKind t) { return 1u << static_cast<int>(t); }
static_assert(PG_LORA_ATTN_C_ATTN == 1 << int(LinearKind::attn_qkv) &&
                  PG_LORA_ATTN_C_PROJ == 1 << int(LinearKind::attn_proj) &&
                  PG_LORA_MLP_C_FC == 1 << int(LinearKind::mlp_fc) &&
                  PG_LORA_MLP_C_PROJ == 1 << int(LinearKind::mlp_proj),
              "pg_lora_target bits follow LinearKind");
// Input and output widths of a target in a base of this configuration (GPT-2: C, 3C, 4C; the
// Llama family: q/k/v fused as attn_qkv, gate/up fused as mlp_fc).
int64_t target_in(LinearKind t, const ModelConfig& base);
int64_t target_out(LinearKind t, const ModelConfig& base);

struct LoraConfig {
    int rank = 8;
    float alpha = 8.0f;
    bool use_rslora = false;
    float dropout = 0.0f;
    uint32_t target_modules = PG_LORA_ATTN_C_ATTN;
    std::vector<int32_t> layers;  // sorted, distinct; empty = every layer of the base
    uint64_t init_seed = 1337;
    bool freeze_a = false;

    bool targets(LinearKind t) const { return (target_modules & target_bit(t)) != 0; }
    // alpha / rank, or alpha / sqrt(rank) with rsLoRA (double, rounded once).
    float scale() const;
};

// Reads the fields struct_size covers (defaults for the rest), copies and sorts the layer list,
// validates; throws pg::Error(PG_ERR_INVALID_ARGUMENT) naming the first bad field.
LoraConfig lora_config_from_c(const pg_lora_config& c);
// The full-sized C struct; `layers` points into cfg.layers (valid while cfg lives).
pg_lora_config lora_config_to_c(const LoraConfig& cfg);
// The checks that need no base. Throws PG_ERR_INVALID_ARGUMENT naming the field.
void validate_lora_config(const LoraConfig& cfg);
// The checks against a base's geometry (rank <= min(in, out) of every target, layers inside
// the base). Throws PG_ERR_GEOMETRY naming both sides.
void check_lora_config_against(const LoraConfig& cfg, const ModelConfig& base);
// The adapted layers of a base with n_layer layers: cfg.layers, or all of them.
std::vector<int32_t> adapted_layers(const LoraConfig& cfg, int n_layer);

}  // namespace pg::lora
