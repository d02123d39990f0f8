// The one optimizer step of libphonegpt, shared by full training (Trainer, train/trainer.hpp)
// and adapter training over a frozen base (lora::LoraTrainer): the gradients, AdamW moments, the
// step counter, the batch sampler and the dropout stream of the tensors being trained.
//
// What is trained is either the model's own weights (the engine adds their gradients) or
// tensors outside the model over a frozen base (the engine runs with no base gradient at all:
// no weight-gradient products, no base gradient or optimizer memory, and the attached
// LinearHook accumulates the trained tensors' gradients into gradient_buffer()).
//
// One optimizer step (step()):
//   1. zero the gradients;
//   2. grad_accum_steps times: sample B windows of T+1 tokens, Engine::forward_backward with
//      grad_scale = 1 / (B*T*accum) (so the gradients are those of the mean loss over the whole
//      step) and Dropout{p, seed, stream = micro-batch counter};
//   3. global gradient norm (double, fixed block order); if grad_clip > 0 and the norm exceeds
//      it, scale the gradients by grad_clip / norm;
//   4. AdamW over the trained pieces with lr = learning_rate(cfg, step) and bias corrections
//      for t = step + 1; with optimizer Muon, the 2-D linear weights are left out of the AdamW
//      pieces and updated by muon_update (train/muon.hpp) at lr x muon_lr_scale, its momentum
//      kept in their AdamW first-moment slots (so the state and checkpoints keep one layout).
// A step whose loss or gradient norm is not finite is refused (PG_ERR_NOT_FINITE) before
// step 4, and the sampler and micro-batch counter are put back: a refused step changes nothing
// (trained tensors, moments, step count, sampler, dropout stream), so a retry draws the same
// batches. Same configuration, seed, data and thread count give the same bits; state()
// captures everything that changes, so restore(state) continues a run bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/step_profile.hpp"
#include "core/thread_pool.hpp"
#include "model/engine.hpp"
#include "model/linear_hook.hpp"
#include "model/model.hpp"
#include "train/batch_sampler.hpp"
#include "train/muon.hpp"
#include "train/optimizer.hpp"
#include "train/train_config.hpp"

namespace pg {

struct StepResult {
    int64_t step = 0;        // steps completed after this one
    float loss = 0.0f;       // mean loss over the step's scored positions
    float lr = 0.0f;         // learning rate used
    float grad_norm = 0.0f;  // global gradient norm before clipping
    int64_t tokens = 0;      // input tokens processed
};

// The most tokens one micro-batch may hold (batch_size x seq_len, or a caller's B x T): a bound
// on the activation memory a configuration can demand, checked before anything is allocated
// (a training state read from a file is checked against it when its header is read).
constexpr int64_t kMaxBatchTokens = int64_t(1) << 16;
// "B x T = N tokens per micro-batch is above the limit of ..." for a refused B x T.
std::string batch_tokens_message(int64_t B, int64_t T);

// The number of scored positions (targets >= 0) of a caller's batch of n positions.
// Precondition of step_batch and compute_gradients (StepDriver, Trainer, LoraTrainer): the
// batch passed capi::require_training_batch (shape, ids in range, at least one scored target).
int64_t count_scored(const int32_t* targets, std::size_t n);

// cfg validated (validate_train_config) and checked against the model: seq_len 0 becomes n_ctx,
// seq_len > n_ctx and batch_size x seq_len > kMaxBatchTokens are PG_ERR_INVALID_ARGUMENT.
TrainConfig resolve_train_config(const ModelConfig& model, TrainConfig cfg);

// Tensors trained over a frozen base: n floats at `values`, and the AdamW pieces (each inside
// one kOptimizerBlock-aligned block of [0, n), with its decay flag) that are updated; floats no
// piece covers are left alone.
struct FrozenBaseTarget {
    float* values = nullptr;
    int64_t count = 0;
    std::vector<ParamPiece> pieces;
};

class StepDriver {
public:
    // Full training of `model`'s weights (the decayed ones as optimizer_pieces says). Fresh
    // state: zero moments, step 0, sampler seeded from cfg.seed. Throws pg::Error.
    StepDriver(Model& model, const TrainConfig& cfg);
    // Training `target` over the frozen `base`: set_linear_hook must attach the hook that adds
    // the target's term and accumulates its gradients into gradient_buffer() before a step.
    StepDriver(const Model& base, const TrainConfig& cfg, FrozenBaseTarget target);
    ~StepDriver();
    StepDriver(const StepDriver&) = delete;
    StepDriver& operator=(const StepDriver&) = delete;

    // A complete snapshot (configuration with seq_len resolved, step, moments, sampler state,
    // micro-batch counter). Not included: the data and the gradients (recomputed every step).
    TrainerState state() const;
    // Continues from a snapshot taken by state() with this driver's configuration; checks its
    // sizes against the trained tensors (PG_ERR_GEOMETRY) and its values (PG_ERR_NOT_FINITE for
    // non-finite moments, PG_ERR_FORMAT for a negative second moment or step). `what` names the
    // snapshot in messages ("trainer state"). Nothing changes unless everything is accepted.
    void restore(const TrainerState& state, const char* what);
    const TrainConfig& config() const { return cfg_; }

    // Later steps run on n_threads (<= 0: all cores), which config() (and so a saved state)
    // then records. The kernels split their work by thread count, so a run that changes it
    // matches an unchanged one only up to float rounding; the same resolved count changes
    // nothing at all.
    void set_threads(int n_threads);
    int threads() const { return pool_->size(); }
    // The cores the steps' threads are pinned to (ThreadPool::pinned_cores; empty: not pinned).
    const std::vector<CpuCore>& pinned_cores() const { return pool_->pinned_cores(); }

    // The hook every engine this driver allocates calls (borrowed; nullptr = none).
    void set_linear_hook(LinearHook* hook);

    // Records the phases of every later step into `profile` (borrowed; nullptr, the default:
    // none), core/step_profile.hpp: the engine's own phases, and around them "batch sampling",
    // "gradient zeroing", "gradient norm", "gradient clipping", "AdamW" and "Muon". The profile
    // also becomes the thread pool's observer (the current pool's and a later set_threads's).
    // Changes no result.
    void set_profile(StepProfile* profile);

    // Copies the training tokens; needs at least seq_len+1, all in [0, vocab_size).
    void set_data(const int32_t* tokens, std::size_t n);
    bool has_data() const { return !data_.empty(); }

    // One optimizer step on sampled micro-batches (needs data: PG_ERR_STATE otherwise).
    StepResult step();
    // One optimizer step on a caller's batch [B, T]; targets of -1 are not scored.
    // Precondition (checked at the C boundary): see count_scored.
    StepResult step_batch(const int32_t* inputs, const int32_t* targets, int B, int T);
    // Gradients of the mean loss over the batch's scored positions, left in grads(); no update.
    // Returns that mean loss; PG_ERR_NOT_FINITE (micro-batch counter put back) if the loss or
    // the gradient norm is not finite.
    float compute_gradients(const int32_t* inputs, const int32_t* targets, int B, int T);

    // The trained tensors' gradients, laid out like them.
    const float* grads() const { return grads_.data(); }
    float* gradient_buffer() { return grads_.data(); }
    int64_t step_count() const { return step_; }
    // The model whose weights the engine reads (the trained one, or the frozen base).
    const Model& base() const { return base_; }
    float lr_at(int64_t step) const;
    // Bytes of the engine's activation memory (0 before the first step): what a step holds
    // besides the weights, the trained tensors' gradients and AdamW moments.
    std::size_t activation_bytes() const { return engine_ ? engine_->activation_bytes() : 0; }

private:
    Engine& engine_for(int B, int T);
    LossSum micro_batch(const int32_t* inputs, const int32_t* targets, int B, int T, float grad_scale);
    // What a refused call puts back (everything else it touches is scratch).
    struct Rewind {
        uint64_t sampler_rng[4];
        uint64_t micro_batches;
    };
    Rewind rewind_point() const;
    // Throws PG_ERR_NOT_FINITE after restoring `before` unless loss and norm are finite.
    void refuse_if_not_finite(const Rewind& before, double loss, double norm, const char* what);
    // compute_gradients without the finiteness check (step_batch checks in apply_update).
    float gradients_of(const int32_t* inputs, const int32_t* targets, int B, int T);
    // Refusal check, clipping and AdamW on the gradients now in grads_ and the loss in r;
    // fills lr, grad_norm and step.
    void apply_update(StepResult& r, const Rewind& before);

    const Model& base_;       // the weights the engine reads
    bool frozen_base_;        // true: the engine computes no gradient for base_
    float* trained_;          // what AdamW updates: base_'s weights or the frozen-base target
    int64_t n_trained_;
    TrainConfig cfg_;
    std::unique_ptr<ThreadPool> pool_;  // replaced by set_threads
    std::unique_ptr<Engine> engine_;  // scratch; (re)allocated for the largest batch seen
    LinearHook* hook_ = nullptr;
    StepProfile* profile_ = nullptr;
    AlignedBuffer<float> grads_, m_, v_;
    std::vector<ParamPiece> pieces_;  // what AdamW updates
    std::vector<MuonMatrix> muon_;     // what Muon updates (empty for AdamW)
    std::vector<MuonScratch> muon_scratch_;  // one per thread
    BatchSampler sampler_;
    Arithmetic arithmetic_ = Arithmetic::exact;  // of the passes over a frozen base
    std::vector<int32_t> data_;
    std::vector<int32_t> batch_inputs_, batch_targets_;
    int64_t step_ = 0;
    uint64_t micro_batches_ = 0;
};

}  // namespace pg
