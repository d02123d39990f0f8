// phonegpt train: the training loop, its evaluations and saves (train.hpp).
#include <cinttypes>
#include <csignal>
#include <cstdio>

#include "train.hpp"

namespace cli {

namespace {

const char* const kScoresHeader = "step,val_loss,val_bits,elapsed_s,train_loss\n";

// Ctrl-C during training: finish the current step, save, and report.
volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

std::string train_loss_field(double train_loss) { return std::isnan(train_loss) ? "" : std::to_string(train_loss); }

// The run stopped being finite at `step` (the library refused a step or an evaluation with
// PG_ERR_NOT_FINITE): stop with exit code 1, naming what and where the last good files are
// (they were written at the last finite evaluation, never after it).
[[noreturn]] void diverged(int64_t step, const std::string& what, int64_t last_saved_step, const TrainPaths& paths) {
    std::string message = "the run diverged at step " + std::to_string(step) + ": " + what + "; stopped. ";
    message += last_saved_step >= 0 ? paths.model + " and " + paths.trainer + " hold step " +
                                          std::to_string(last_saved_step) + ", the last finite evaluation"
                                    : "nothing was saved (no finite evaluation yet)";
    message += " (lower --lr, or keep --clip on)";
    Json d;
    d.integer("step", step).str("what", what);
    if (last_saved_step >= 0) d.integer("last_saved_step", last_saved_step).str("model_path", paths.model);
    else d.null("last_saved_step").null("model_path");
    throw RuntimeError{message, pg_status_name(PG_ERR_NOT_FINITE), d};
}

}  // namespace

int cmd_train(int argc, char** argv) {
    Options opt("train", train_options(), argc, argv);
    if (opt.handle_help_and_output(kTrainSynopsis, kTrainWhat)) return 0;

    const TrainPreset& preset = find_train_preset(opt.text("preset", "phonegpt"));
    const std::string data_path = resolve_data_path(opt);
    const double train_fraction = opt.real("train-fraction", 0.9, 0.0, 1.0);
    const double eval_seconds = opt.real("eval-seconds", preset.eval_seconds, 0.0, 1e9);
    const long long eval_windows = opt.integer("eval-windows", 0, 0, 1LL << 40);
    const long long log_interval = opt.integer("log-interval", 10, 1, 1LL << 40);
    TargetRule rule(opt.real("target", preset.target, 0.0, 1e9));
    const bool stop_at_target = opt.has("stop-at-target");
    if (stop_at_target && !rule.has_target()) throw UsageError{"--stop-at-target needs a target (--target LOSS)"};
    if (rule.has_target() && eval_windows > 0)
        throw UsageError{"the target rule needs whole-split evaluations: drop --eval-windows"};

    const std::string text = read_file(data_path);
    TrainSetup run = set_up_training(opt, preset, text);
    const pg_train_config& tc = run.config;
    const long long steps = run.steps;
    const long long eval_interval = opt.integer(
        "eval-interval", preset.eval_interval >= 0 ? preset.eval_interval : std::max(1LL, steps / 4), 0, 1LL << 40);
    const pg_model_config mc = config_of(run.model.get());
    int64_t n_params = 0;
    check(pg_model_num_params(run.model.get(), &n_params), "pg_model_num_params");

    const Corpus corpus = load_corpus(data_path, run.tok, train_fraction);
    const size_t n_val = corpus.tokens.size() - corpus.n_train;
    if (corpus.n_train < size_t(tc.seq_len) + 1)
        throw UsageError{"--data: the training split has " + std::to_string(corpus.n_train) +
                         " tokens, fewer than the sequence length + 1 = " + std::to_string(tc.seq_len + 1)};
    if (rule.has_target() && n_val < 2)
        throw UsageError{"--target: the validation split has fewer than 2 tokens, nothing to score"};
    check(pg_trainer_set_data(run.trainer.get(), corpus.tokens.data(), corpus.n_train), "pg_trainer_set_data");
    TrainOutcome outcome;
    check(pg_trainer_step_count(run.trainer.get(), &outcome.start_step), "pg_trainer_step_count");
    outcome.step = outcome.start_step;

    TrainPaths paths;
    paths.out_dir = opt.text("out", "out");
    paths.checkpoint_dir = paths.out_dir + "/checkpoints";
    paths.model = paths.out_dir + "/model.bin";
    paths.trainer = paths.out_dir + "/trainer.bin";
    paths.scores = paths.out_dir + "/scores.csv";
    make_dir(paths.out_dir);
    make_dir(paths.checkpoint_dir);
    // A resumed run appends to its scores; a new run starts them afresh.
    std::string scores = kScoresHeader;
    if (run.resumed && file_exists(paths.scores)) {
        std::string previous = read_file(paths.scores);
        if (previous.rfind(kScoresHeader, 0) == 0) scores = previous;
    }
    write_file_atomically(paths.scores, scores);

    say("phonegpt train: %s, %zu tokens (train %zu, validation %zu), vocabulary %d\n", data_path.c_str(),
        corpus.tokens.size(), corpus.n_train, n_val, mc.vocab_size);
    say("model: %d layers, %d heads, width %d, context %d, %" PRId64 " parameters; kernels: %s\n", mc.n_layer,
        mc.n_head, mc.n_embd, mc.n_ctx, n_params, pg_simd_arch());
    if (run.resumed) say("resuming %s: its own settings, to step %lld\n", opt.text("resume", "").c_str(), steps);
    else say("preset %s (model shape %s; explicit options override its defaults)\n", preset.name, preset.model);
    const char* schedule_name = tc.schedule == PG_LR_COSINE ? "cosine" : tc.schedule == PG_LR_LINEAR ? "linear" : "constant";
    std::string optimizer_note = "AdamW";
    if (tc.optimizer == PG_OPTIMIZER_MUON) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "Muon (momentum %g, lr x %g) + AdamW", tc.muon_momentum, tc.muon_lr_scale);
        optimizer_note = buf;
    }
    const std::string ramp_note =
        tc.dropout_ramp_steps > 0 ? " (from 0 over " + std::to_string(tc.dropout_ramp_steps) + " steps)" : "";
    say("training: %lld steps from %" PRId64 ", batch %d x %d tokens x %d accum, %s, lr %g -> %g %s, warm-up %d, "
        "weight decay %g, dropout %g%s, clip %g, seed %" PRIu64 ", %s%s\n",
        steps, outcome.start_step, tc.batch_size, tc.seq_len, tc.grad_accum_steps, optimizer_note.c_str(), tc.lr_max,
        tc.lr_min, schedule_name, tc.warmup_steps, tc.weight_decay, tc.dropout, ramp_note.c_str(), tc.grad_clip, tc.seed,
        run.threads_note.c_str(), tc.recompute_activations ? ", recomputing activations" : "");
    {
        std::string when = eval_interval > 0 ? "every " + std::to_string(eval_interval) + " steps" : "";
        if (eval_seconds > 0) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%severy %g s", when.empty() ? "" : " or ", eval_seconds);
            when += buf;
            if (eval_interval > 0) when += " (whichever comes first)";
        }
        if (when.empty()) when = "only at the end";
        char target[128] = "none";
        if (rule.has_target())
            std::snprintf(target, sizeof target, "loss <= %g at two consecutive evaluations%s", rule.target(),
                          stop_at_target ? ", then stop" : "");
        say("evaluation: %s, %s; target rule: %s\n", when.c_str(),
            eval_windows > 0 ? ("first " + std::to_string(eval_windows) + " windows").c_str() : "whole split",
            target);
    }

    std::signal(SIGINT, on_sigint);
    const double t_start = now_seconds();
    ProgressLine progress(outcome.start_step, steps, log_interval);
    double loss_sum_since_eval = 0, last_eval_end = t_start;
    int64_t steps_since_eval = 0, last_eval_step = -1, last_saved_step = -1;
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.n_threads = tc.n_threads;
    size_t n_scored_val = n_val;  // --eval-windows > 0: the split's first windows only (a partial score)
    if (eval_windows > 0) n_scored_val = std::min(n_val, size_t(eval_windows) * size_t(mc.n_ctx) + 1);

    // Evaluates (when there is a validation split), keeps this step's checkpoint, appends the
    // scores row, applies the target rule and saves model.bin and trainer.bin. A loss that is
    // not finite saves nothing: the run diverged.
    auto evaluate_and_save = [&](int64_t at_step) {
        const double train_loss = steps_since_eval ? loss_sum_since_eval / double(steps_since_eval) : NAN;
        loss_sum_since_eval = 0;
        steps_since_eval = 0;
        const bool scored = n_val >= 2;
        if (scored) {
            const double t_eval = now_seconds();
            try {
                outcome.last_val = evaluate(run.model.get(), corpus.tokens.data() + corpus.n_train, n_scored_val, ec,
                                            "the validation evaluation");
            } catch (const RuntimeError& e) {
                if (e.status != pg_status_name(PG_ERR_NOT_FINITE)) throw;
                diverged(at_step, e.message, last_saved_step, paths);
            }
            outcome.eval_seconds += now_seconds() - t_eval;
            outcome.have_val = true;
            say("eval at step %" PRId64 ": validation loss %.4f (%s) over %" PRId64 " positions, %.1f s\n", at_step,
                outcome.last_val.loss, bits_text(outcome.last_val).c_str(), outcome.last_val.scored,
                outcome.last_val.seconds);
        }
        const double elapsed = now_seconds() - t_start;
        const double t_save = now_seconds();
        char name[64];
        std::snprintf(name, sizeof name, "step-%06" PRId64 ".bin", at_step);
        const std::string checkpoint = paths.checkpoint_dir + "/" + name;
        pg_save_options so;
        pg_save_options_default(&so);
        check(pg_model_save(run.model.get(), checkpoint.c_str(), &so), "pg_model_save");

        char row[256];
        if (scored)
            std::snprintf(row, sizeof row, "%" PRId64 ",%.6f,%.6f,%.3f,%s\n", at_step, outcome.last_val.loss,
                          outcome.last_val.bits, elapsed, train_loss_field(train_loss).c_str());
        else
            std::snprintf(row, sizeof row, "%" PRId64 ",,,%.3f,%s\n", at_step, elapsed,
                          train_loss_field(train_loss).c_str());
        scores += row;
        write_file_atomically(paths.scores, scores);
        double save_seconds = now_seconds() - t_save;

        Json e;
        if (scored) e = eval_json(outcome.last_val);
        e.integer("step", at_step);
        if (std::isnan(train_loss)) e.null("train_loss");
        else e.num("train_loss", train_loss);
        e.num("elapsed_seconds", elapsed).str("checkpoint", checkpoint);
        outcome.evals.push_back(e);

        if (scored) {
            const bool first_met = rule.add(at_step, outcome.last_val.loss, elapsed);
            const std::string line = rule.progress_line(at_step, outcome.last_val.loss, elapsed, first_met);
            if (!line.empty()) say("%s", line.c_str());
        }
        const double t_save_final = now_seconds();
        check(pg_model_save(run.model.get(), paths.model.c_str(), &so), "pg_model_save");
        check(pg_trainer_save(run.trainer.get(), paths.trainer.c_str(), &so), "pg_trainer_save");
        save_seconds += now_seconds() - t_save_final;
        outcome.save_seconds += save_seconds;
        last_eval_step = last_saved_step = at_step;
        last_eval_end = now_seconds();
    };

    pg_step_result r{};
    r.struct_size = sizeof r;
    while (outcome.step < steps && !g_interrupted) {
        const double t0 = now_seconds();
        const pg_status s = pg_trainer_step(run.trainer.get(), &r);
        // The trainer refuses a step whose loss or gradient norm is not finite (and changes nothing).
        if (s == PG_ERR_NOT_FINITE)
            diverged(outcome.step + 1, call_message("pg_trainer_step"), last_saved_step, paths);
        check(s, "pg_trainer_step");
        progress.add(r, now_seconds() - t0);
        outcome.step = r.step;
        outcome.last_train_loss = r.loss;
        loss_sum_since_eval += r.loss;
        ++steps_since_eval;
        const bool due_by_steps = eval_interval > 0 && outcome.step % eval_interval == 0;
        const bool due_by_time = eval_seconds > 0 && now_seconds() - last_eval_end >= eval_seconds;
        if ((due_by_steps || due_by_time) && outcome.step < steps) {
            evaluate_and_save(outcome.step);
            if (stop_at_target && rule.met()) {
                outcome.stopped_at_target = true;
                say("stopping at step %" PRId64 ": the target rule is met (--stop-at-target)\n", outcome.step);
                break;
            }
        }
    }
    std::signal(SIGINT, SIG_DFL);
    outcome.interrupted = g_interrupted != 0;
    if (outcome.interrupted) say("interrupted at step %" PRId64 ": saving\n", outcome.step);
    if (last_eval_step != outcome.step) evaluate_and_save(outcome.step);

    if (opt.has("eval-train")) {
        const double t_eval = now_seconds();
        outcome.train_eval = evaluate(run.model.get(), corpus.tokens.data(), corpus.n_train, ec, "the training-split evaluation");
        outcome.eval_seconds += now_seconds() - t_eval;
        outcome.have_train_eval = true;
        say("training split: loss %.4f (%s) over %" PRId64 " positions, %.1f s\n", outcome.train_eval.loss,
            bits_text(outcome.train_eval).c_str(), outcome.train_eval.scored, outcome.train_eval.seconds);
    }
    outcome.total_seconds = now_seconds() - t_start;
    report_training(preset, run, corpus, paths, rule, progress, outcome, eval_interval, eval_seconds,
                    stop_at_target);
    return outcome.interrupted ? 1 : 0;
}

}  // namespace cli
