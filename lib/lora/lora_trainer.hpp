// Training an adapter over a frozen base: the one step driver of full training
// (train/step_driver.hpp) with the adapter's tensors as what is trained. The engine runs
// forward_backward with no base gradient buffer (no weight-gradient products, no base gradient
// or optimizer memory), the adapter's LoraHook accumulates dA and dB into the driver's gradient
// buffer, and AdamW (with the schedule, clipping and accumulation of the pg_train_config)
// updates only the adapter (only B with freeze_a). The base's dropout is the configuration's;
// the LoRA branch's is the adapter's. Each step appends its loss and learning rate to the
// adapter's training record.
#pragma once

#include <cstdint>

#include "lora/adapter.hpp"
#include "lora/lora_hook.hpp"
#include "model/model.hpp"
#include "train/step_driver.hpp"
#include "train/train_config.hpp"

namespace pg::lora {

class LoraTrainer {
public:
    // Borrows both; the base is never written. Checks the adapter belongs to the base, that the
    // base was trained (check_base_trained; allow_untrained_base lifts that) and cfg against it
    // (seq_len 0 becomes n_ctx). Throws pg::Error.
    LoraTrainer(const Model& base, Adapter& adapter, const TrainConfig& cfg, bool allow_untrained_base = false);
    // Resumes from a snapshot taken by state() (with the adapter as it was then: the adapter
    // training checkpoint holds both): continues the run bit for bit given the same base, data
    // and thread count. Checks as above, plus the state against the adapter (PG_ERR_GEOMETRY,
    // PG_ERR_NOT_FINITE, PG_ERR_FORMAT as Trainer's resume).
    LoraTrainer(const Model& base, Adapter& adapter, const TrainerState& state, bool allow_untrained_base = false);
    ~LoraTrainer();

    // Everything the run changes besides the adapter: configuration, step, AdamW moments (one
    // per adapter parameter), sampler state and the dropout stream.
    TrainerState state() const { return driver_.state(); }
    const Adapter& adapter() const { return adapter_; }

    void set_data(const int32_t* tokens, std::size_t n) { driver_.set_data(tokens, n); }
    StepResult step();
    StepResult step_batch(const int32_t* inputs, const int32_t* targets, int B, int T);
    int64_t step_count() const { return driver_.step_count(); }
    float lr_at(int64_t step) const { return driver_.lr_at(step); }
    const TrainConfig& config() const { return driver_.config(); }
    const Model& base() const { return driver_.base(); }
    // Gradients of the batch's mean loss with respect to every factor (A's too with freeze_a),
    // left in grads(); no update, nothing recorded. As StepDriver::compute_gradients.
    float compute_gradients(const int32_t* inputs, const int32_t* targets, int B, int T) {
        return driver_.compute_gradients(inputs, targets, B, T);
    }
    // dA and dB of the last step (or compute_gradients), laid out like adapter.params().
    const float* grads() const { return driver_.grads(); }
    std::size_t activation_bytes() const { return driver_.activation_bytes(); }
    // The resolved thread count (n_threads <= 0: all cores), as Trainer::threads.
    int threads() const { return driver_.threads(); }
    // As Trainer::set_threads and Trainer::pinned_cores.
    void set_threads(int n_threads) { driver_.set_threads(n_threads); }
    const std::vector<CpuCore>& pinned_cores() const { return driver_.pinned_cores(); }
    // Records the phases of later steps (StepDriver::set_profile; nullptr: none).
    void set_profile(StepProfile* profile) { driver_.set_profile(profile); }

private:
    // Appends a finished step to the adapter's training record.
    StepResult recorded(const StepResult& r);

    Adapter& adapter_;
    StepDriver driver_;
    LoraHook hook_;  // writes its gradients into driver_'s buffer
};

}  // namespace pg::lora
