#include "lora/lora_trainer.hpp"

#include <vector>

#include "train/optimizer.hpp"

namespace pg::lora {

namespace {

// AdamW pieces over the adapter's allocation: every factor decayed with the configured weight
// decay (as torch.optim.AdamW over a PEFT model's trainable parameters), cut at the optimizer's
// absolute block boundaries; with freeze_a the A factors get no piece at all (no update, no
// decay).
std::vector<ParamPiece> adapter_pieces(const Adapter& a) {
    std::vector<ParamPiece> pieces;
    for (const AdapterTensor& t : a.tensors()) {
        if (t.is_a && a.config().freeze_a) continue;
        for (int64_t at = t.offset, end = t.offset + t.numel; at < end;) {
            const int64_t block_end = (at / kOptimizerBlock + 1) * kOptimizerBlock;
            const int64_t stop = block_end < end ? block_end : end;
            pieces.push_back({at, stop - at, true});
            at = stop;
        }
    }
    return pieces;
}

// The adapter and the base checked before anything is allocated for them.
const Model& checked_base(const Model& base, const Adapter& adapter, bool allow_untrained_base) {
    check_adapter_matches_base(adapter, base);
    check_base_trained(base, allow_untrained_base, "lora trainer");
    return base;
}

}  // namespace

LoraTrainer::LoraTrainer(const Model& base, Adapter& adapter, const TrainConfig& cfg, bool allow_untrained_base)
    : adapter_(adapter),
      driver_(checked_base(base, adapter, allow_untrained_base), cfg,
              FrozenBaseTarget{adapter.params(), adapter.num_params(), adapter_pieces(adapter)}),
      hook_(adapter, driver_.gradient_buffer()) {
    driver_.set_linear_hook(&hook_);
    adapter_.record().seed = driver_.config().seed;
}

LoraTrainer::LoraTrainer(const Model& base, Adapter& adapter, const TrainerState& state, bool allow_untrained_base)
    : LoraTrainer(base, adapter, state.config, allow_untrained_base) {
    driver_.restore(state, "adapter training state");
}

LoraTrainer::~LoraTrainer() = default;

StepResult LoraTrainer::recorded(const StepResult& r) {
    TrainingRecord& rec = adapter_.record();
    rec.steps += 1;
    rec.tokens += r.tokens;
    rec.losses.push_back(r.loss);
    rec.learning_rates.push_back(r.lr);
    return r;
}

StepResult LoraTrainer::step() { return recorded(driver_.step()); }

StepResult LoraTrainer::step_batch(const int32_t* inputs, const int32_t* targets, int B, int T) {
    return recorded(driver_.step_batch(inputs, targets, B, T));
}

}  // namespace pg::lora
