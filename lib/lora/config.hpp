// A LoRA adapter's configuration (PEFT's LoraConfig for the block linears), checked once
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

// An adapter's targets by Hugging Face module name: GPT-2's four fused linears, or the Llama
// family's seven projections. A target's pg_lora_target bit is 1 << its Target. A Llama target is
// a slice of one of the engine's fused linears (model/linear_hook.hpp): q/k/v are row ranges of
// attn_qkv, gate/up of mlp_fc; its term lands on those rows of the fused product.
enum class Target : int {
    attn_c_attn = 0, attn_c_proj, mlp_c_fc, mlp_c_proj,
    q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj,
};
constexpr int kNumTargets = 11;
inline uint32_t target_bit(Target t) { return 1u << static_cast<int>(t); }
static_assert(PG_LORA_ATTN_C_ATTN == 1 << int(Target::attn_c_attn) && PG_LORA_MLP_C_PROJ == 1 << int(Target::mlp_c_proj) &&
                  PG_LORA_Q_PROJ == 1 << int(Target::q_proj) && PG_LORA_DOWN_PROJ == 1 << int(Target::down_proj) &&
                  PG_LORA_ALL_LINEARS == 15 && PG_LORA_LLAMA_ALL_LINEARS == 0x7f0,
              "pg_lora_target bits follow Target");
// "attn.c_attn" ... "mlp.c_proj" (GPT-2), "q_proj" ... "down_proj" (Llama family).
const char* target_name(Target t);
// The module's path inside a block: "attn.c_attn", "self_attn.q_proj", "mlp.gate_proj".
const char* target_module(Target t);
// The engine linear the target is (a slice of).
LinearKind target_kind(Target t);
// Which of the (up to three) slices of its fused linear the target is: 0 for whole linears,
// q_proj and gate_proj; 1 for k_proj and up_proj; 2 for v_proj.
int target_slice(Target t);
// The bits of the base family's targets (PG_LORA_ALL_LINEARS or PG_LORA_LLAMA_ALL_LINEARS), and
// PEFT's default targets for it (c_attn; q_proj and v_proj).
uint32_t family_targets(const ModelConfig& base);
uint32_t default_targets(const ModelConfig& base);
// "q_proj, k_proj, ..." for the family's targets.
std::string family_target_names(const ModelConfig& base);
// Input and output widths of a target in a base of this configuration, and the first row of its
// slice in the fused linear (0 for a whole linear).
int64_t target_in(Target t, const ModelConfig& base);
int64_t target_out(Target t, const ModelConfig& base);
int64_t target_row_offset(Target t, const ModelConfig& base);
// The row count of the engine linear `kind` (the fused width for attn_qkv and a SwiGLU mlp_fc).
int64_t linear_rows(LinearKind kind, const ModelConfig& base);

struct LoraConfig {
    int rank = 8;
    float alpha = 8.0f;
    bool use_rslora = false;
    float dropout = 0.0f;
    uint32_t target_modules = 0;  // 0: default_targets(base), resolved when an adapter is made
    std::vector<int32_t> layers;  // sorted, distinct; empty = every layer of the base
    uint64_t init_seed = 1337;
    bool freeze_a = false;

    bool targets(Target t) const { return (target_modules & target_bit(t)) != 0; }
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
// target_modules, or the base family's default for 0.
uint32_t resolved_targets(const LoraConfig& cfg, const ModelConfig& base);
// The checks against a base (every target a module of the base's family: PG_ERR_INVALID_ARGUMENT
// naming the target and the family's modules; rank <= min(in, out) of every target, layers inside
// the base: PG_ERR_GEOMETRY naming both sides), for the resolved targets.
void check_lora_config_against(const LoraConfig& cfg, const ModelConfig& base);
// The adapted layers of a base with n_layer layers: cfg.layers, or all of them.
std::vector<int32_t> adapted_layers(const LoraConfig& cfg, int n_layer);

}  // namespace pg::lora
