#include "train/trainer.hpp"

namespace pg {

Trainer::Trainer(Model& model, const TrainConfig& cfg) : StepDriver(model, cfg), model_(model) {}

Trainer::Trainer(Model& model, const TrainerState& state) : Trainer(model, state.config) {
    restore(state, "trainer state");
}

}  // namespace pg
