// The model's geometry, checked once here so that nothing downstream has to.
#pragma once

#include <cstdint>

#include "phonegpt/phonegpt.h"

namespace pg {

struct ModelConfig {
    int n_layer = 6;
    int n_head = 4;
    int n_embd = 128;
    int n_ctx = 128;
    int vocab_size = 65;
    int padded_vocab_size = 68;
    float layernorm_eps = 1e-5f;

    int head_dim() const { return n_embd / n_head; }
};

// Upper bounds that keep every size computation far from int64 overflow and every index within
// int32 where kernels use it; generous for phone-sized models (a 64M base is well inside).
constexpr int kMaxLayers = 1024;
constexpr int kMaxEmbd = 1 << 16;
constexpr int kMaxCtx = 1 << 16;
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
// Number of parameters (including padding rows) of a valid configuration.
int64_t count_params(const ModelConfig& m);
// "phonegpt", "tiny". Throws PG_ERR_INVALID_ARGUMENT for other names.
ModelConfig model_preset(const char* name);

}  // namespace pg
