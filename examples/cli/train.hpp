// phonegpt train: its presets and option table (train_presets.cpp), the target rule
// (target_rule.cpp), the progress line (progress.cpp), setting up a new or resumed run
// (train_setup.cpp), the training loop (train.cpp) and its report (train_report.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"

namespace cli {

// A preset: a model shape (a pg_model_config_preset name) and the recipe's defaults.
// Explicit options override any of them; a change of recipe is an edit of its row.
struct TrainPreset {
    const char* name;
    const char* model;        // pg_model_config_preset name
    long long steps;
    int batch;
    double lr, lr_min;        // lr_min NAN: lr / 10
    int warmup;
    double weight_decay, dropout, clip;
    long long eval_interval;  // -1: steps / 4
    double eval_seconds;      // 0: no time-based evaluations
    uint64_t seed;
    double target;            // NAN: no target rule
    const char* schedule;     // --schedule's default: cosine, linear or constant
    const char* optimizer;    // --optimizer's default: adamw or muon
    double muon_lr_scale;     // --muon-lr-scale's default
    long long dropout_ramp;   // --dropout-ramp's default (steps; 0: the full dropout from the start)
};
const TrainPreset& find_train_preset(const std::string& name);
std::vector<OptionSpec> train_options();
extern const char* const kTrainSynopsis;
extern const char* const kTrainWhat;

// The target rule: the run reaches `target` when the validation loss is <= target at two
// consecutive evaluations; the first such pair is kept. Also tracks the best evaluation.
// Only finite losses are scores (evaluate() refuses the others before they get here).
class TargetRule {
public:
    explicit TargetRule(double target) : target_(target) {}
    bool has_target() const { return !std::isnan(target_); }
    double target() const { return target_; }
    bool met() const { return met_; }
    // Returns true when this evaluation completes the first pair. loss must be finite.
    bool add(int64_t step, double loss, double seconds_since_start);
    // The line said after an evaluation (empty without a target).
    std::string progress_line(int64_t step, double loss, double seconds_since_start, bool first_met) const;
    std::string summary_line() const;  // for the end of the run (empty without a target)
    Json json() const;

private:
    double target_;  // NAN: no target given (only the best is tracked)
    bool met_ = false;
    int64_t pair_steps_[2] = {0, 0};
    double pair_losses_[2] = {0, 0};
    double seconds_to_pair_ = 0;
    bool have_previous_ = false;
    int64_t previous_step_ = 0;
    double previous_loss_ = 0;
    bool have_best_ = false;
    int64_t best_step_ = 0;
    double best_loss_ = 0;
};

// The per-step progress line: the loss, learning rate, gradient norm, speed and ETA, every
// log_interval steps (and at the first and last step), timed over pg_trainer_step only.
class ProgressLine {
public:
    ProgressLine(int64_t start_step, long long steps, long long log_interval)
        : start_step_(start_step), steps_(steps), log_interval_(log_interval) {}
    void add(const pg_step_result& r, double seconds);
    double train_seconds() const { return step_seconds_; }
    int64_t tokens() const { return tokens_; }
    // The mean of the last (at most 50) step losses, and how many.
    double recent_loss() const;
    int recent_count() const { return int(recent_.size()); }

private:
    int64_t start_step_;
    long long steps_, log_interval_;
    double step_seconds_ = 0, window_seconds_ = 0;
    int64_t window_steps_ = 0, tokens_ = 0;
    std::vector<float> recent_;
};

// A run ready to step: a new model and trainer from the options, or a resumed trainer.bin
// with its own settings (see train_setup.cpp for what may change on resume).
struct TrainSetup {
    ModelPtr model;
    TrainerPtr trainer;
    const pg_tokenizer* tok = nullptr;  // borrowed from the model
    pg_train_config config{};     // as the trainer reports it
    bool resumed = false;
    long long steps = 0;          // the step to train to
    std::string threads_note;     // how the thread count was chosen (said at the start)
};
TrainSetup set_up_training(const Options& opt, const TrainPreset& preset, const std::string& text);

// What the run did, for the report (train_report.cpp).
struct TrainOutcome {
    int64_t start_step = 0, step = 0;
    bool interrupted = false, stopped_at_target = false;
    float last_train_loss = NAN;  // NAN: no step ran
    std::vector<Json> evals;
    bool have_val = false;
    EvalFigures last_val;
    bool have_train_eval = false;
    EvalFigures train_eval;
    double total_seconds = 0;
    // Where the time went besides the steps (progress.train_seconds()): the evaluations (the
    // validation ones during the run and --eval-train's) and the saves (checkpoint, model.bin,
    // trainer.bin and scores.csv at each evaluation).
    double eval_seconds = 0, save_seconds = 0;
};
struct TrainPaths {
    std::string out_dir, checkpoint_dir, model, trainer, scores;
};
void report_training(const TrainPreset& preset, const TrainSetup& run, const Corpus& corpus,
                     const TrainPaths& paths, const TargetRule& rule, const ProgressLine& progress,
                     const TrainOutcome& outcome, long long eval_interval, double eval_seconds,
                     bool stop_at_target);

}  // namespace cli
