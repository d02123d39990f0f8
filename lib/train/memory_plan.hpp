// The training memory plan: the peak resident memory of a training configuration, computed from
// the configuration before anything is allocated (pg_train_memory_plan). Each term mirrors an
// allocation: the weights in their storage, the trained tensors with their gradients and AdamW
// moments, the engine's activations and per-thread scratch (Engine::planned_training_bytes, the
// same plan the engine carves its buffers from), the copy of the moments a checkpoint writes,
// the training tokens the trainer copies, and the process's own code and runtime.
// bench_memory_plan measures the plan against a session's VmHWM (docs/phone.md).
#pragma once

#include <cstdint>
#include <string>

#include "model/config.hpp"
#include "model/model.hpp"
#include "train/train_config.hpp"

namespace pg {

struct TrainingMemoryPlan {
    int64_t weights_bytes = 0;     // the model (full training) or the frozen base, in its storage
    int64_t trained_bytes = 0;     // an adapter's values (full training: inside the weights)
    int64_t gradient_bytes = 0;
    int64_t optimizer_bytes = 0;   // AdamW moments (and Muon's per-thread scratch)
    int64_t activation_bytes = 0;  // the engine for one micro-batch, plus the batch and LoRA scratch
    int64_t checkpoint_bytes = 0;  // the moments' copy a checkpoint holds while it writes
    int64_t data_bytes = 0;        // the trainer's copy of the training tokens
    int64_t runtime_bytes = 0;     // the process's code, C++ runtime and thread stacks
    int64_t peak_bytes = 0;        // the sum
    int batch_size = 0;
};

// What an adapter over a frozen base adds (full training: no such thing).
struct AdapterShape {
    int64_t params = 0;  // A and B values
    int rank = 0;
    bool dropout = false;  // LoRA dropout: two [rows, widest input] scratch buffers
};

// cfg is validated and resolved against the model (seq_len 0 = n_ctx); n_threads <= 0 is this
// machine's core count. Throws pg::Error for an invalid configuration.
TrainingMemoryPlan plan_training_memory(const ModelConfig& model, WeightStorage storage, const AdapterShape* adapter,
                                        const TrainConfig& cfg, int64_t n_data_tokens);

// The largest batch_size (at most what kMaxBatchTokens allows for the sequence length) whose
// plan fits budget_bytes, and its plan; PG_ERR_OUT_OF_MEMORY naming batch 1's figures and the
// budget when even that does not fit.
TrainingMemoryPlan largest_batch_within(const ModelConfig& model, WeightStorage storage, const AdapterShape* adapter,
                                        TrainConfig cfg, int64_t n_data_tokens, int64_t budget_bytes);

// "214.3 MiB (weights 4.6, gradients 4.6, optimizer 9.2, activations 180.1, ... at batch 32)".
std::string describe_memory_plan(const TrainingMemoryPlan& plan);
std::string mib_text(int64_t bytes);

}  // namespace pg
