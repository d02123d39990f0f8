// phonegpt train's closing summary and its --json result (train.hpp).
#include <cinttypes>

#include "train.hpp"

namespace cli {

void report_training(const TrainPreset& preset, const TrainSetup& run, const Corpus& corpus,
                     const TrainPaths& paths, const TargetRule& rule, const ProgressLine& progress,
                     const TrainOutcome& outcome, long long eval_interval, double eval_seconds,
                     bool stop_at_target) {
    const pg_train_config& tc = run.config;
    const int64_t steps_run = outcome.step - outcome.start_step;
    const double step_seconds = progress.train_seconds();
    const double ms_per_step = steps_run ? step_seconds * 1e3 / double(steps_run) : 0.0;
    say("done: %" PRId64 " steps, %.1f ms/step (%s of training, %.1f s evaluating, %.1f s saving, %s in all); saved "
        "%s, %s, %s and %s\n",
        steps_run, ms_per_step, duration(step_seconds).c_str(), outcome.eval_seconds, outcome.save_seconds,
        duration(outcome.total_seconds).c_str(), paths.model.c_str(), paths.trainer.c_str(),
        (paths.checkpoint_dir + "/").c_str(), paths.scores.c_str());
    const std::string rule_line = rule.summary_line();
    if (!rule_line.empty()) say("%s", rule_line.c_str());
    if (!g_output.json) return;

    Json cfg;
    cfg.integer("batch", tc.batch_size).integer("seq_len", tc.seq_len).integer("accum", tc.grad_accum_steps)
        .flt("lr", tc.lr_max).flt("lr_min", tc.lr_min).integer("warmup", tc.warmup_steps)
        .integer("total_steps", tc.total_steps).flt("weight_decay", tc.weight_decay).flt("dropout", tc.dropout)
        .integer("dropout_ramp", tc.dropout_ramp_steps).flt("clip", tc.grad_clip).integer("seed", (long long)tc.seed).integer("threads", tc.n_threads)
        .boolean("recompute", tc.recompute_activations != 0)
        .str("schedule", tc.schedule == PG_LR_COSINE ? "cosine" : tc.schedule == PG_LR_LINEAR ? "linear" : "constant")
        .str("optimizer", tc.optimizer == PG_OPTIMIZER_MUON ? "muon" : "adamw")
        .flt("muon_momentum", tc.muon_momentum).flt("muon_lr_scale", tc.muon_lr_scale);
    // The recipe as resolved: the preset's defaults with the explicit options applied.
    Json recipe;
    recipe.str("preset", run.resumed ? "resumed" : preset.name).str("model", preset.model)
        .integer("steps", run.steps).integer("batch", tc.batch_size).flt("lr", tc.lr_max).flt("lr_min", tc.lr_min)
        .integer("warmup", tc.warmup_steps).flt("weight_decay", tc.weight_decay).flt("dropout", tc.dropout)
        .integer("dropout_ramp", tc.dropout_ramp_steps).flt("clip", tc.grad_clip).integer("eval_interval", eval_interval).num("eval_seconds", eval_seconds)
        .integer("seed", (long long)tc.seed);
    if (rule.has_target()) recipe.num("target", rule.target());
    else recipe.null("target");
    recipe.boolean("stop_at_target", stop_at_target);

    const size_t n_val = corpus.tokens.size() - corpus.n_train;
    Json j;
    j.boolean("ok", true).str("command", "train").str("data", corpus.path)
        .integer("train_tokens", (long long)corpus.n_train).integer("val_tokens", (long long)n_val)
        .object("model", model_json(run.model.get())).object("config", cfg).object("recipe", recipe)
        .str("simd", pg_simd_arch())
        .integer("start_step", outcome.start_step).integer("step", outcome.step)
        .boolean("interrupted", outcome.interrupted).boolean("stopped_at_target", outcome.stopped_at_target);
    if (std::isnan(outcome.last_train_loss)) j.null("last_train_loss");
    else j.flt("last_train_loss", outcome.last_train_loss);
    if (progress.recent_count()) j.num("recent_train_loss", progress.recent_loss());
    else j.null("recent_train_loss");
    j.integer("recent_train_loss_steps", progress.recent_count())
        .num("train_seconds", step_seconds).num("evaluation_seconds", outcome.eval_seconds)
        .num("save_seconds", outcome.save_seconds).num("seconds", outcome.total_seconds).num("ms_per_step", ms_per_step)
        .num("tokens_per_second", step_seconds > 0 ? double(progress.tokens()) / step_seconds : 0.0);
    if (outcome.have_val) j.object("val", eval_json(outcome.last_val));
    if (outcome.have_train_eval) j.object("train", eval_json(outcome.train_eval));
    j.object("rule", rule.json());
    j.array("evals", outcome.evals).str("model_path", paths.model).str("trainer_path", paths.trainer)
        .str("checkpoint_dir", paths.checkpoint_dir).str("scores_path", paths.scores);
    print_result(j);
}

}  // namespace cli
