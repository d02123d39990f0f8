// Training an adapter over a frozen base. A step is the full trainer's (lib/train/trainer.hpp)
// with the base frozen: the engine runs forward_backward with no base gradient buffer (no
// weight-gradient products, no base gradient or optimizer memory), the adapter's LoraHook
// accumulates dA and dB, and AdamW (with the schedule, clipping and accumulation of the
// pg_train_config) updates only the adapter (only B with freeze_a). The base's dropout is the
// configuration's; the LoRA branch's is the adapter's. Each step appends its loss and learning
// rate to the adapter's training record.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/thread_pool.hpp"
#include "lora/adapter.hpp"
#include "lora/lora_hook.hpp"
#include "model/engine.hpp"
#include "model/model.hpp"
#include "train/batch_sampler.hpp"
#include "train/optimizer.hpp"
#include "train/train_config.hpp"

namespace pg::lora {

struct LoraStepResult {
    int64_t step = 0;
    float loss = 0.0f;
    float lr = 0.0f;
    float grad_norm = 0.0f;
    int64_t tokens = 0;
};

class LoraTrainer {
public:
    // Borrows both; the base is never written. Checks the adapter belongs to the base and cfg
    // against it (seq_len 0 becomes n_ctx). Throws pg::Error.
    LoraTrainer(const Model& base, Adapter& adapter, const TrainConfig& cfg);
    ~LoraTrainer();

    void set_data(const int32_t* tokens, std::size_t n);
    LoraStepResult step();
    LoraStepResult step_batch(const int32_t* inputs, const int32_t* targets, int B, int T);
    int64_t step_count() const { return step_; }
    const Model& base() const { return base_; }
    const TrainConfig& config() const { return cfg_; }
    const float* grads() const { return grads_.data(); }

private:
    Engine& engine_for(int B, int T);
    LossSum micro_batch(const int32_t* inputs, const int32_t* targets, int B, int T, float grad_scale);
    void apply_update(LoraStepResult& r, const uint64_t sampler_before[4], uint64_t micro_before);

    const Model& base_;
    Adapter& adapter_;
    TrainConfig cfg_;
    ThreadPool pool_;
    std::unique_ptr<Engine> engine_;
    AlignedBuffer<float> grads_, m_, v_;
    LoraHook hook_;
    std::vector<ParamPiece> pieces_;
    BatchSampler sampler_;
    std::vector<int32_t> data_, batch_inputs_, batch_targets_;
    int64_t step_ = 0;
    uint64_t micro_batches_ = 0;
};

}  // namespace pg::lora
