// The model's geometry, checked once here so that nothing downstream has to.
#pragma once

#include <cstdint>

#include "phonegpt/phonegpt.h"

namespace pg {

// The values match pg_norm_kind, pg_position_kind and pg_mlp_kind.
enum class NormKind : int { layernorm = 0, rmsnorm = 1 };
enum class PositionKind : int { learned = 0, rotary = 1 };
enum class MlpKind : int { gelu = 0, swiglu = 1 };

// The defaults are GPT-2's block at the PhoneGPT shape; the fields after layernorm_eps describe
// the Llama family (pg_model_config says what each means).
struct ModelConfig {
    int n_layer = 6;
    int n_head = 4;
    int n_embd = 128;
    int n_ctx = 128;
    int vocab_size = 65;
    int padded_vocab_size = 68;
    float layernorm_eps = 1e-5f;
    NormKind norm = NormKind::layernorm;
    bool qk_norm = false;
    PositionKind positions = PositionKind::learned;
    float rope_theta = 10000.0f;
    float rope_scaling_factor = 0.0f;  // 0: no Llama 3 frequency scaling
    float rope_low_freq_factor = 1.0f;
    float rope_high_freq_factor = 4.0f;
    int rope_original_max_positions = 8192;
    int n_kv_head = 0;   // 0: n_head
    int head_size = 0;   // pg_model_config.head_dim; 0: n_embd / n_head
    bool qkv_bias = true;
    bool linear_bias = true;
    MlpKind mlp = MlpKind::gelu;
    int mlp_hidden = 0;  // 0: 4 * n_embd
    bool tied_head = true;

    int head_dim() const { return head_size > 0 ? head_size : n_embd / n_head; }
    int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
    int mlp_width() const { return mlp_hidden > 0 ? mlp_hidden : 4 * n_embd; }
    int q_width() const { return n_head * head_dim(); }
    int kv_width() const { return kv_heads() * head_dim(); }
    // GPT-2's block exactly (the fused c_attn layout and llm.c's tensor order).
    bool is_gpt2() const;
};

// Upper bounds that keep every size computation far from int64 overflow and every index within
// int32 where kernels use it; generous for phone-sized models (a 64M base is well inside).
constexpr int kMaxLayers = 1024;
constexpr int kMaxEmbd = 1 << 16;
constexpr int kMaxCtx = 1 << 17;  // Llama 3.2's 131,072 positions
constexpr int kMaxMlpHidden = 1 << 18;
constexpr int kMaxVocab = 1 << 22;
constexpr int64_t kMaxParams = int64_t(1) << 33;

// Converts from the C struct, reading only the fields struct_size covers (defaults for the
// rest) and resolving padded_vocab_size = 0. Throws pg::Error(PG_ERR_INVALID_ARGUMENT) naming
// the first bad field.
ModelConfig model_config_from_c(const pg_model_config& c);
// The full-sized C struct (struct_size = sizeof); the C boundary copies what a caller has room for.
pg_model_config model_config_to_c(const ModelConfig& m);
// Throws pg::Error naming the first bad field.
void validate_model_config(const ModelConfig& m);
// validate_model_config, then throws pg::Error(PG_ERR_UNSUPPORTED) naming the first field of a
// valid configuration that the engine does not run (a mix of GPT-2's block and the Llama
// family's): models and engines are only made for what it runs.
void require_engine_supports(const ModelConfig& m);
// Number of parameters (including padding rows) of a valid configuration.
int64_t count_params(const ModelConfig& m);
// "phonegpt", "tiny", the published shapes and the small test shapes of the Llama family
// (phonegpt.h lists them). Throws PG_ERR_INVALID_ARGUMENT for other names.
ModelConfig model_preset(const char* name);

}  // namespace pg
