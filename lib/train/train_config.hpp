// Training configuration and the complete mutable training state (what a checkpoint with
// training state stores so that resuming reproduces the uninterrupted run bit for bit).
#pragma once

#include <cstdint>
#include <vector>

#include "phonegpt/phonegpt.h"

namespace pg {

struct TrainConfig {
    int batch_size = 32;
    int seq_len = 0;  // 0 = n_ctx (resolved by the trainer)
    int grad_accum_steps = 1;
    pg_lr_schedule schedule = PG_LR_COSINE;
    float lr_max = 1e-3f;
    float lr_min = 1e-4f;
    int warmup_steps = 100;
    int64_t total_steps = 5000;
    float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
    float weight_decay = 0.1f;
    bool decay_embeddings = false;
    float grad_clip = 1.0f;
    float dropout = 0.0f;
    uint64_t seed = 1337;
    int n_threads = 0;
    bool recompute_activations = false;  // speed/memory trade only: results are identical
    pg_optimizer optimizer = PG_OPTIMIZER_ADAMW;
    float muon_momentum = 0.95f;
    float muon_lr_scale = 1.0f;
    int dropout_ramp_steps = 0;  // dropout rises from 0 over these steps (schedule.hpp)
    pg_arithmetic arithmetic = PG_ARITHMETIC_EXACT;  // of passes over a frozen base (never saved)
};

// Reads the fields struct_size covers (defaults for the rest) and validates; throws pg::Error.
TrainConfig train_config_from_c(const pg_train_config& c);
// The full-sized C struct (struct_size = sizeof); the C boundary copies what a caller has room for.
pg_train_config train_config_to_c(const TrainConfig& t);
void validate_train_config(const TrainConfig& t);

struct TrainerState {
    TrainConfig config;
    int64_t step = 0;                 // optimizer steps completed
    std::vector<float> adam_m, adam_v;  // one per parameter, llm.c order
    uint64_t sampler_rng[4] = {0, 0, 0, 0};  // batch-offset generator state
    uint64_t micro_batches = 0;       // micro-batches run so far (the dropout stream)
};

}  // namespace pg
