#include "lora/lora_trainer.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "train/schedule.hpp"
#include "train/trainer.hpp"

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

}  // namespace

LoraTrainer::LoraTrainer(const Model& base, Adapter& adapter, const TrainConfig& cfg)
    : base_(base),
      adapter_(adapter),
      cfg_(cfg),
      pool_((validate_train_config(cfg), cfg.n_threads)),
      grads_(static_cast<std::size_t>(adapter.num_params())),
      m_(static_cast<std::size_t>(adapter.num_params())),
      v_(static_cast<std::size_t>(adapter.num_params())),
      hook_(adapter, grads_.data()),
      pieces_(adapter_pieces(adapter)),
      sampler_(cfg.seed) {
    check_adapter_matches_base(adapter, base);
    if (cfg_.seq_len == 0) cfg_.seq_len = base.config().n_ctx;
    require(cfg_.seq_len <= base.config().n_ctx, PG_ERR_INVALID_ARGUMENT,
            "lora trainer: seq_len = " + std::to_string(cfg_.seq_len) + " is above the base's n_ctx = " +
                std::to_string(base.config().n_ctx));
    adapter_.record().seed = cfg_.seed;
}

LoraTrainer::~LoraTrainer() = default;

void LoraTrainer::set_data(const int32_t* tokens, std::size_t n) {
    require(tokens != nullptr, PG_ERR_INVALID_ARGUMENT, "lora trainer: tokens is NULL");
    require(n >= std::size_t(cfg_.seq_len) + 1, PG_ERR_INVALID_ARGUMENT,
            "lora trainer: " + std::to_string(n) + " tokens are fewer than seq_len + 1 = " +
                std::to_string(cfg_.seq_len + 1));
    const int32_t V = base_.config().vocab_size;
    for (std::size_t i = 0; i < n; ++i)
        require(tokens[i] >= 0 && tokens[i] < V, PG_ERR_INVALID_ARGUMENT,
                "lora trainer: token " + std::to_string(i) + " = " + std::to_string(tokens[i]) + " is outside [0, " +
                    std::to_string(V) + ")");
    data_.assign(tokens, tokens + n);
}

Engine& LoraTrainer::engine_for(int B, int T) {
    if (!engine_ || engine_->max_B() < B || engine_->max_T() < T) {
        const int max_B = engine_ && engine_->max_B() > B ? engine_->max_B() : B;
        const int max_T = engine_ && engine_->max_T() > T ? engine_->max_T() : T;
        EngineOptions options;
        options.recompute = cfg_.recompute_activations;
        engine_ = std::make_unique<Engine>(base_.config(), max_B, max_T, options);
        engine_->set_linear_hook(&hook_);
    }
    return *engine_;
}

LossSum LoraTrainer::micro_batch(const int32_t* inputs, const int32_t* targets, int B, int T, float grad_scale) {
    Engine& engine = engine_for(B, T);
    const Dropout dropout{cfg_.dropout, cfg_.seed, micro_batches_};
    // grads == nullptr: the base is frozen; only the hook's gradients are accumulated.
    const LossSum loss = engine.forward_backward(base_.params(), nullptr, inputs, targets, B, T, grad_scale,
                                                 dropout, pool_);
    ++micro_batches_;
    return loss;
}

void LoraTrainer::apply_update(LoraStepResult& r, const uint64_t sampler_before[4], uint64_t micro_before) {
    const int64_t n = adapter_.num_params();
    const double norm = global_grad_norm(grads_.data(), n, pool_);
    if (!std::isfinite(r.loss) || !std::isfinite(norm)) {
        sampler_.set_state(sampler_before);
        micro_batches_ = micro_before;
        throw Error(PG_ERR_NOT_FINITE, "lora trainer: the " + std::string(std::isfinite(r.loss) ? "gradient norm" : "loss") +
                                           " is not finite at step " + std::to_string(step_) +
                                           "; the step was refused and the adapter is unchanged");
    }
    if (cfg_.grad_clip > 0.0f && norm > double(cfg_.grad_clip))
        scale_gradients(grads_.data(), n, float(double(cfg_.grad_clip) / norm), pool_);
    AdamWStep s;
    s.lr = learning_rate(cfg_, step_);
    s.beta1 = cfg_.beta1;
    s.beta2 = cfg_.beta2;
    s.eps = cfg_.eps;
    s.weight_decay = cfg_.weight_decay;
    s.t = step_ + 1;
    adamw_update(adapter_.params(), grads_.data(), m_.data(), v_.data(), pieces_, s, pool_);
    ++step_;
    r.step = step_;
    r.lr = s.lr;
    r.grad_norm = float(norm);
    TrainingRecord& rec = adapter_.record();
    rec.steps += 1;
    rec.tokens += r.tokens;
    rec.losses.push_back(r.loss);
    rec.learning_rates.push_back(r.lr);
}

LoraStepResult LoraTrainer::step() {
    require(!data_.empty(), PG_ERR_STATE, "lora trainer: no training data (call set_data first)");
    uint64_t sampler_before[4];
    sampler_.get_state(sampler_before);
    const uint64_t micro_before = micro_batches_;
    const int B = cfg_.batch_size, T = cfg_.seq_len, accum = cfg_.grad_accum_steps;
    batch_inputs_.resize(std::size_t(B) * T);
    batch_targets_.resize(std::size_t(B) * T);
    grads_.zero();
    const float grad_scale = float(1.0 / (double(B) * double(T) * double(accum)));
    LossSum total;
    for (int a = 0; a < accum; ++a) {
        sampler_.sample(data_.data(), data_.size(), B, T, batch_inputs_.data(), batch_targets_.data());
        const LossSum l = micro_batch(batch_inputs_.data(), batch_targets_.data(), B, T, grad_scale);
        total.sum += l.sum;
        total.count += l.count;
    }
    LoraStepResult r;
    r.loss = float(total.mean());
    r.tokens = int64_t(B) * T * accum;
    apply_update(r, sampler_before, micro_before);
    return r;
}

LoraStepResult LoraTrainer::step_batch(const int32_t* inputs, const int32_t* targets, int B, int T) {
    // Precondition (capi::require_training_batch): see pg::count_scored.
    const int64_t scored = count_scored(targets, std::size_t(B) * std::size_t(T));
    uint64_t sampler_before[4];
    sampler_.get_state(sampler_before);
    const uint64_t micro_before = micro_batches_;
    grads_.zero();
    LoraStepResult r;
    r.loss = float(micro_batch(inputs, targets, B, T, float(1.0 / double(scored))).mean());
    r.tokens = int64_t(B) * T;
    apply_update(r, sampler_before, micro_before);
    return r;
}

}  // namespace pg::lora
