#include "train/step_driver.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "train/schedule.hpp"

namespace pg {

std::string batch_tokens_message(int64_t B, int64_t T) {
    return std::to_string(B) + " x " + std::to_string(T) + " = " + std::to_string(B * T) +
           " tokens per micro-batch is above the limit of " + std::to_string(kMaxBatchTokens) +
           " (its activations would not fit a phone)";
}

int64_t count_scored(const int32_t* targets, std::size_t n) {
    int64_t scored = 0;
    for (std::size_t i = 0; i < n; ++i) scored += targets[i] >= 0;
    assert(scored > 0);  // capi::require_training_batch refused a batch with nothing to learn
    return scored;
}

TrainConfig resolve_train_config(const ModelConfig& model, TrainConfig cfg) {
    validate_train_config(cfg);
    const int n_ctx = model.n_ctx;
    if (cfg.seq_len == 0) cfg.seq_len = n_ctx;
    require(cfg.seq_len <= n_ctx, PG_ERR_INVALID_ARGUMENT,
            "train config: seq_len = " + std::to_string(cfg.seq_len) + " is above the model's n_ctx = " +
                std::to_string(n_ctx));
    require(int64_t(cfg.batch_size) * cfg.seq_len <= kMaxBatchTokens, PG_ERR_INVALID_ARGUMENT,
            "train config: batch_size x seq_len = " + batch_tokens_message(cfg.batch_size, cfg.seq_len));
    return cfg;
}

StepDriver::StepDriver(Model& model, const TrainConfig& cfg)
    : base_(model),
      frozen_base_(false),
      trained_(model.params()),
      n_trained_(model.num_params()),
      cfg_(resolve_train_config(model.config(), cfg)),
      pool_(std::make_unique<ThreadPool>(cfg_.n_threads)),
      grads_(std::size_t(n_trained_)),
      m_(std::size_t(n_trained_)),
      v_(std::size_t(n_trained_)),
      pieces_(optimizer_pieces(model.tensors(), model.num_params(), cfg_.decay_embeddings,
                               cfg_.optimizer == PG_OPTIMIZER_MUON)),
      sampler_(cfg_.seed) {
    if (cfg_.optimizer == PG_OPTIMIZER_MUON) muon_ = muon_matrices(model.tensors());
    require(cfg_.arithmetic == PG_ARITHMETIC_EXACT, PG_ERR_INVALID_ARGUMENT,
            "train config: arithmetic = " + std::to_string(int(cfg_.arithmetic)) +
                " is for a frozen base (LoRA training); full training multiplies its fp32 weights exactly "
                "(PG_ARITHMETIC_EXACT)");
}

StepDriver::StepDriver(const Model& base, const TrainConfig& cfg, FrozenBaseTarget target)
    : base_(base),
      frozen_base_(true),
      trained_(target.values),
      n_trained_(target.count),
      cfg_(resolve_train_config(base.config(), cfg)),
      pool_(std::make_unique<ThreadPool>(cfg_.n_threads)),
      grads_(std::size_t(n_trained_)),
      m_(std::size_t(n_trained_)),
      v_(std::size_t(n_trained_)),
      pieces_(std::move(target.pieces)),
      sampler_(cfg_.seed),
      arithmetic_(arithmetic_for(cfg_.arithmetic, base.storage(), "train config: arithmetic")) {
    require(trained_ != nullptr && n_trained_ > 0, PG_ERR_INTERNAL, "step driver: nothing to train");
    require(cfg_.optimizer == PG_OPTIMIZER_ADAMW, PG_ERR_INVALID_ARGUMENT,
            "train config: optimizer = " + std::to_string(int(cfg_.optimizer)) +
                " (Muon) is for full training; adapters over a frozen base train with AdamW (0)");
    for (const ParamPiece& p : pieces_) {
        // AdamW's determinism rests on pieces inside fixed blocks (train/optimizer.hpp).
        const bool inside = p.offset >= 0 && p.count > 0 && p.offset + p.count <= n_trained_ &&
                            p.offset / kOptimizerBlock == (p.offset + p.count - 1) / kOptimizerBlock;
        require(inside, PG_ERR_INTERNAL, "step driver: an optimizer piece leaves its block or the tensors");
    }
}

void StepDriver::restore(const TrainerState& state, const char* what) {
    const std::size_t n = std::size_t(n_trained_);
    require(state.adam_m.size() == n && state.adam_v.size() == n, PG_ERR_GEOMETRY,
            std::string(what) + ": AdamW moments have " + std::to_string(state.adam_m.size()) + " and " +
                std::to_string(state.adam_v.size()) + " values but " + std::to_string(n) +
                " parameters are trained");
    require(state.step >= 0, PG_ERR_FORMAT,
            std::string(what) + ": step = " + std::to_string(state.step) + " is negative");
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(state.adam_m[i]) || !std::isfinite(state.adam_v[i]))
            throw Error(PG_ERR_NOT_FINITE, std::string(what) + ": AdamW moment " + std::to_string(i) + " is not finite");
        if (state.adam_v[i] < 0.0f)
            throw Error(PG_ERR_FORMAT, std::string(what) + ": AdamW second moment " + std::to_string(i) + " is negative");
    }
    std::copy(state.adam_m.begin(), state.adam_m.end(), m_.data());
    std::copy(state.adam_v.begin(), state.adam_v.end(), v_.data());
    sampler_.set_state(state.sampler_rng);
    step_ = state.step;
    micro_batches_ = state.micro_batches;
}

StepDriver::~StepDriver() = default;

void StepDriver::set_linear_hook(LinearHook* hook) {
    hook_ = hook;
    if (engine_) engine_->set_linear_hook(hook);
}

void StepDriver::set_profile(StepProfile* profile) {
    profile_ = profile;
    pool_->set_observer(profile);
    if (engine_) engine_->set_profile(profile);
}

TrainerState StepDriver::state() const {
    TrainerState s;
    s.config = cfg_;
    s.step = step_;
    s.adam_m.assign(m_.data(), m_.data() + m_.size());
    s.adam_v.assign(v_.data(), v_.data() + v_.size());
    sampler_.get_state(s.sampler_rng);
    s.micro_batches = micro_batches_;
    return s;
}

void StepDriver::set_data(const int32_t* tokens, std::size_t n) {
    require(tokens != nullptr, PG_ERR_INVALID_ARGUMENT, "trainer data: tokens is NULL");
    require(n >= std::size_t(cfg_.seq_len) + 1, PG_ERR_INVALID_ARGUMENT,
            "trainer data: " + std::to_string(n) + " tokens is fewer than seq_len + 1 = " +
                std::to_string(cfg_.seq_len + 1));
    const int32_t V = base_.config().vocab_size;
    for (std::size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= V)
            throw Error(PG_ERR_INVALID_ARGUMENT, "trainer data: token " + std::to_string(i) + " = " +
                                                     std::to_string(tokens[i]) + " is outside [0, " +
                                                     std::to_string(V) + ")");
    }
    data_.assign(tokens, tokens + n);  // only replaced once everything is checked
}

void StepDriver::set_threads(int n_threads) {
    TrainConfig changed = cfg_;
    changed.n_threads = n_threads;
    validate_train_config(changed);
    const int resolved = ThreadPool::resolve(n_threads);
    if (resolved != pool_->size()) {
        pool_ = std::make_unique<ThreadPool>(resolved);  // built first: a failure keeps the old pool
        pool_->set_observer(profile_);
    }
    cfg_.n_threads = n_threads;
}

float StepDriver::lr_at(int64_t step) const {
    require(step >= 0, PG_ERR_INVALID_ARGUMENT, "lr_at: step " + std::to_string(step) + " is negative");
    return learning_rate(cfg_, step);
}

Engine& StepDriver::engine_for(int B, int T) {
    if (!engine_ || B > engine_->max_B() || T > engine_->max_T()) {
        int max_B = engine_ ? std::max(B, engine_->max_B()) : B;
        int max_T = engine_ ? std::max(T, engine_->max_T()) : T;
        engine_.reset();  // release the old activations before allocating the new ones
        EngineOptions options;
        options.recompute = cfg_.recompute_activations;
        engine_ = std::make_unique<Engine>(base_.config(), max_B, max_T, options);
        engine_->set_linear_hook(hook_);
        engine_->set_profile(profile_);
    }
    return *engine_;
}

LossSum StepDriver::micro_batch(const int32_t* inputs, const int32_t* targets, int B, int T,
                             float grad_scale) {
    Engine& engine = engine_for(B, T);
    Dropout dropout{dropout_rate(cfg_, step_), cfg_.seed, micro_batches_};
    // A frozen base gets no gradient buffer: only the hook's gradients are accumulated.
    // (base_.weights() may be a 16-bit or quantized frozen base; full training's model is fp32:
    // params() refused anything else when the driver was made.)
    LossSum loss = engine.forward_backward(base_.weights(arithmetic_), frozen_base_ ? nullptr : grads_.data(), inputs,
                                           targets, B, T, grad_scale, dropout, *pool_);
    ++micro_batches_;
    return loss;
}

StepDriver::Rewind StepDriver::rewind_point() const {
    Rewind w;
    sampler_.get_state(w.sampler_rng);
    w.micro_batches = micro_batches_;
    return w;
}

void StepDriver::refuse_if_not_finite(const Rewind& before, double loss, double norm, const char* what) {
    if (std::isfinite(loss) && std::isfinite(norm)) return;
    // Back to the state before the call: the next call draws the same batches and dropout masks.
    sampler_.set_state(before.sampler_rng);
    micro_batches_ = before.micro_batches;
    throw Error(PG_ERR_NOT_FINITE,
                std::string("trainer: ") + (std::isfinite(loss) ? "the gradient norm" : "the loss") +
                    " is not finite (loss " + std::to_string(loss) + ", gradient norm " + std::to_string(norm) +
                    ") at step " + std::to_string(step_) + "; " + what +
                    " (the weights or the learning rate diverged: lower the learning rate or resume from an "
                    "earlier checkpoint)");
}

void StepDriver::apply_update(StepResult& r, const Rewind& before) {
    const int64_t n = n_trained_;
    double norm = 0.0;
    {
        StepProfile::Scope phase(profile_, "gradient norm");
        if (profile_) profile_->add_bytes(n * 4, 0);
        norm = global_grad_norm(grads_.data(), n, *pool_);
    }
    refuse_if_not_finite(before, double(r.loss), norm,
                         "the step was refused: weights, moments, step count, sampler and dropout stream are "
                         "unchanged");
    if (cfg_.grad_clip > 0.0f && norm > double(cfg_.grad_clip)) {
        StepProfile::Scope phase(profile_, "gradient clipping");
        if (profile_) profile_->add_bytes(n * 4, n * 4);
        scale_gradients(grads_.data(), n, float(double(cfg_.grad_clip) / norm), *pool_);
    }
    AdamWStep s;
    s.lr = learning_rate(cfg_, step_);
    s.beta1 = cfg_.beta1;
    s.beta2 = cfg_.beta2;
    s.eps = cfg_.eps;
    s.weight_decay = cfg_.weight_decay;
    s.t = step_ + 1;
    {
        StepProfile::Scope phase(profile_, "AdamW");
        if (profile_) {
            int64_t count = 0;
            for (const ParamPiece& p : pieces_) count += p.count;
            profile_->add_bytes(count * 4 * 4, count * 4 * 3);  // p, g, m, v read; p, m, v written
        }
        adamw_update(trained_, grads_.data(), m_.data(), v_.data(), pieces_, s, *pool_);
    }
    if (!muon_.empty()) {
        StepProfile::Scope phase(profile_, "Muon");
        // Muon's momentum lives in the first-moment slots of its matrices (their v stays 0).
        MuonStep ms;
        ms.lr = s.lr * cfg_.muon_lr_scale;
        ms.momentum = cfg_.muon_momentum;
        ms.weight_decay = cfg_.weight_decay;
        muon_update(trained_, grads_.data(), m_.data(), muon_, ms, muon_scratch_, *pool_);
    }
    ++step_;
    r.step = step_;
    r.lr = s.lr;
    r.grad_norm = float(norm);
}

StepResult StepDriver::step() {
    require(has_data(), PG_ERR_STATE, "trainer: no training data (call set_data first)");
    const Rewind before = rewind_point();
    const int B = cfg_.batch_size, T = cfg_.seq_len, accum = cfg_.grad_accum_steps;
    batch_inputs_.resize(std::size_t(B) * T);
    batch_targets_.resize(std::size_t(B) * T);
    {
        StepProfile::Scope phase(profile_, "gradient zeroing");
        if (profile_) profile_->add_bytes(0, n_trained_ * 4);
        grads_.zero();
    }
    const float grad_scale = float(1.0 / (double(B) * double(T) * double(accum)));
    LossSum total;
    for (int a = 0; a < accum; ++a) {
        {
            StepProfile::Scope phase(profile_, "batch sampling");
            sampler_.sample(data_.data(), data_.size(), B, T, batch_inputs_.data(), batch_targets_.data());
        }
        LossSum l = micro_batch(batch_inputs_.data(), batch_targets_.data(), B, T, grad_scale);
        total.sum += l.sum;
        total.count += l.count;
    }
    StepResult r;
    r.loss = float(total.mean());
    r.tokens = int64_t(B) * T * accum;
    apply_update(r, before);
    return r;
}

StepResult StepDriver::step_batch(const int32_t* inputs, const int32_t* targets, int B, int T) {
    const Rewind before = rewind_point();
    StepResult r;
    r.loss = gradients_of(inputs, targets, B, T);
    r.tokens = int64_t(B) * T;
    apply_update(r, before);
    return r;
}

float StepDriver::gradients_of(const int32_t* inputs, const int32_t* targets, int B, int T) {
    const int64_t scored = count_scored(targets, std::size_t(B) * std::size_t(T));
    grads_.zero();
    return float(micro_batch(inputs, targets, B, T, float(1.0 / double(scored))).mean());
}

float StepDriver::compute_gradients(const int32_t* inputs, const int32_t* targets, int B, int T) {
    const Rewind before = rewind_point();
    const float loss = gradients_of(inputs, targets, B, T);
    refuse_if_not_finite(before, double(loss), global_grad_norm(grads_.data(), n_trained_, *pool_),
                         "the gradients are not usable (the trainer's dropout stream is unchanged)");
    return loss;
}

}  // namespace pg
