// The mutable half of the model/trainer split for full training: the step driver
// (train/step_driver.hpp: gradients, AdamW moments, the step counter, the batch sampler and the
// dropout stream) over every weight of the model. The trainer borrows its Model and is the only
// writer of its weights.
#pragma once

#include "model/model.hpp"
#include "train/step_driver.hpp"
#include "train/train_config.hpp"

namespace pg {

// Every step that changes the weights is counted in the model's provenance
// (model/provenance.hpp), so a checkpoint says how much its weights were trained.
class Trainer : private StepDriver {
public:
    // Fresh state: zero moments, step 0, sampler seeded from cfg.seed. Validates cfg against
    // the model (seq_len 0 becomes n_ctx; seq_len > n_ctx is an error). Throws pg::Error.
    Trainer(Model& model, const TrainConfig& cfg);
    // Resumes from a snapshot taken by state(); checks its sizes against the model
    // (PG_ERR_GEOMETRY) and its values (PG_ERR_NOT_FINITE for non-finite moments, PG_ERR_FORMAT
    // for a negative second moment).
    Trainer(Model& model, const TrainerState& state);

    using StepDriver::activation_bytes;
    using StepDriver::compute_gradients;
    using StepDriver::config;
    using StepDriver::grads;
    using StepDriver::has_data;
    using StepDriver::lr_at;
    using StepDriver::pinned_cores;
    using StepDriver::set_data;
    using StepDriver::set_profile;
    using StepDriver::set_threads;
    using StepDriver::state;
    using StepDriver::step_count;
    using StepDriver::threads;
    StepResult step();
    StepResult step_batch(const int32_t* inputs, const int32_t* targets, int B, int T);

    Model& model() { return model_; }
    const Model& model() const { return model_; }

private:
    Model& model_;
};

}  // namespace pg
