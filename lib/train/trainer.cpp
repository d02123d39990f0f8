#include "train/trainer.hpp"

namespace pg {

Trainer::Trainer(Model& model, const TrainConfig& cfg) : StepDriver(model, cfg), model_(model) {}

Trainer::Trainer(Model& model, const TrainerState& state) : Trainer(model, state.config) {
    restore(state, "trainer state");
}

StepResult Trainer::step() {
    const StepResult r = StepDriver::step();
    model_.provenance().record_step(r.tokens);
    return r;
}

StepResult Trainer::step_batch(const int32_t* inputs, const int32_t* targets, int B, int T) {
    const StepResult r = StepDriver::step_batch(inputs, targets, B, T);
    model_.provenance().record_step(r.tokens);
    return r;
}

}  // namespace pg
