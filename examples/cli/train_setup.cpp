// phonegpt train: a new run from the options, or a resumed trainer.bin (train.hpp).
//
// A resumed run keeps its own settings: the options that would change its arithmetic (shape,
// batch, rates, schedule, seed, dropout, ...) are refused. Two may be given:
//  - --steps: the step to train to; by default the run's own schedule length (its total_steps),
//    so a run stopped early continues to where it was going.
//  - --threads: the count the run was made with changes nothing; another count continues it
//    only behind --allow-thread-change (results then match up to float rounding).
#include <string>

#include "tokenizer_files.hpp"
#include "train.hpp"

namespace cli {

namespace {

int32_t trainer_threads(pg_trainer* t) {
    int32_t n = 0;
    check(pg_trainer_n_threads(t, &n), "pg_trainer_n_threads");
    return n;
}

// "1 thread", "2 threads": the count as the training line and the resume messages print it.
std::string threads_phrase(int32_t n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

pg_train_config trainer_config(pg_trainer* t) {
    pg_train_config tc;
    pg_train_config_default(&tc);
    check(pg_trainer_get_config(t, &tc), "pg_trainer_get_config");
    return tc;
}

void resume(const Options& opt, TrainSetup& run) {
    for (const char* o : {"preset", "layers", "heads", "embd", "ctx", "batch", "accum", "lr", "lr-min", "schedule",
                          "optimizer", "muon-momentum", "muon-lr-scale", "warmup", "weight-decay", "dropout", "dropout-ramp", "clip", "seed", "tokenizer", "merges", "encoding"})
        if (opt.has(o)) throw UsageError{std::string("--") + o + " cannot be changed when resuming (--resume)"};
    if (opt.has("recompute"))
        throw UsageError{"--recompute cannot be applied to a resumed run (pg_trainer_resume sets up the trainer)"};
    pg_model* m = nullptr;
    pg_trainer* t = nullptr;
    check(pg_trainer_resume(opt.text("resume", "").c_str(), &m, &t), "pg_trainer_resume");
    run.model.reset(m);
    run.trainer.reset(t);
    run.resumed = true;
    run.tok = tokenizer_of(run.model.get(), "encode --data with");

    const int32_t made_with = trainer_threads(t);
    if (opt.has("threads")) {
        const int32_t asked = int32_t(opt.integer("threads", 0, 0, 1024));
        check_flags(pg_trainer_set_threads(t, asked), "pg_trainer_set_threads");
        const int32_t now = trainer_threads(t);
        if (now != made_with && !opt.has("allow-thread-change"))
            throw UsageError{"--threads " + std::to_string(asked) + " gives " + threads_phrase(now) +
                             " but the run was made with " + std::to_string(made_with) +
                             ": another count changes the rounding of every later step, so the run would match "
                             "its uninterrupted self only up to float rounding; pass --allow-thread-change to "
                             "accept that, or --threads " + std::to_string(made_with)};
        if (now != made_with)
            run.threads_note = std::to_string(made_with) + " -> " + threads_phrase(now) +
                               " (--allow-thread-change: from here on the results match the "
                               "uninterrupted run only up to float rounding)";
    }
    if (run.threads_note.empty())
        run.threads_note = threads_phrase(made_with) + ", as the run was made with";

    int64_t start_step = 0;
    check(pg_trainer_step_count(t, &start_step), "pg_trainer_step_count");
    const pg_train_config tc = trainer_config(t);
    run.steps = opt.integer("steps", tc.total_steps, 1, 1LL << 40);
    if (start_step >= run.steps) {
        if (opt.has("steps"))
            throw UsageError{"--steps " + std::to_string(run.steps) + " is not beyond the resumed step " +
                             std::to_string(start_step)};
        throw UsageError{"the resumed run is complete: step " + std::to_string(start_step) + " of its " +
                         std::to_string(tc.total_steps) + "-step schedule; pass --steps N (N > " +
                         std::to_string(start_step) + ") to train further (at lr_min past the schedule)"};
    }
}

void create(const Options& opt, const TrainPreset& preset, const std::string& text, TrainSetup& run) {
    if (opt.has("allow-thread-change")) throw UsageError{"--allow-thread-change goes with --resume"};
    run.steps = opt.integer("steps", preset.steps, 1, 1LL << 40);
    const uint64_t seed = uint64_t(opt.integer("seed", (long long)preset.seed, 0, INT64_MAX));
    // --tokenizer FILE's vocabulary, or the whole file's characters (so validation text never
    // holds a character the model cannot represent).
    TokenizerPtr owned;
    if (opt.has("tokenizer")) {
        owned = load_tokenizer(opt);
    } else {
        pg_tokenizer* built = nullptr;
        check(pg_tokenizer_create_char(text.data(), text.size(), &built), "pg_tokenizer_create_char");
        owned.reset(built);
    }
    pg_tokenizer* built = owned.get();
    pg_model_config mc;
    pg_model_config_default(&mc);
    check_flags(pg_model_config_preset(preset.model, &mc), "pg_model_config_preset");
    mc.n_layer = int32_t(opt.integer("layers", mc.n_layer, 1, 1024));
    mc.n_head = int32_t(opt.integer("heads", mc.n_head, 1, 65536));
    mc.n_embd = int32_t(opt.integer("embd", mc.n_embd, 1, 65536));
    mc.n_ctx = int32_t(opt.integer("ctx", mc.n_ctx, 1, 65536));
    check(pg_tokenizer_vocab_size(built, &mc.vocab_size), "pg_tokenizer_vocab_size");
    mc.padded_vocab_size = 0;  // round up to a multiple of 4
    pg_model* m = nullptr;
    check_flags(pg_model_create(&mc, seed, &m), "pg_model_create");
    run.model.reset(m);
    check(pg_model_set_tokenizer(run.model.get(), built), "pg_model_set_tokenizer");
    run.tok = tokenizer_of(run.model.get(), "encode --data with");

    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = int32_t(opt.integer("batch", preset.batch, 1, 65536));
    tc.grad_accum_steps = int32_t(opt.integer("accum", 1, 1, 65536));
    tc.lr_max = float(opt.real("lr", preset.lr, 0.0, 10.0));
    tc.lr_min = float(opt.real("lr-min", std::isnan(preset.lr_min) ? tc.lr_max / 10.0 : preset.lr_min, 0.0, 10.0));
    const std::string schedule = opt.text("schedule", preset.schedule);
    if (schedule == "cosine") tc.schedule = PG_LR_COSINE;
    else if (schedule == "linear") tc.schedule = PG_LR_LINEAR;
    else if (schedule == "constant") tc.schedule = PG_LR_CONSTANT;
    else throw UsageError{"--schedule must be cosine, linear or constant, got \"" + schedule + "\""};
    const std::string optimizer = opt.text("optimizer", preset.optimizer);
    if (optimizer == "adamw") tc.optimizer = PG_OPTIMIZER_ADAMW;
    else if (optimizer == "muon") tc.optimizer = PG_OPTIMIZER_MUON;
    else throw UsageError{"--optimizer must be adamw or muon, got \"" + optimizer + "\""};
    tc.muon_momentum = float(opt.real("muon-momentum", tc.muon_momentum, 0.0, 0.999999));
    tc.muon_lr_scale = float(opt.real("muon-lr-scale", preset.muon_lr_scale, 1e-6, 1000.0));
    tc.warmup_steps = int32_t(opt.integer("warmup", preset.warmup, 0, 1 << 30));
    tc.total_steps = run.steps;
    tc.weight_decay = float(opt.real("weight-decay", preset.weight_decay, 0.0, 10.0));
    tc.dropout = float(opt.real("dropout", preset.dropout, 0.0, 0.99));
    tc.dropout_ramp_steps = int32_t(opt.integer("dropout-ramp", preset.dropout_ramp, 0, 1 << 30));
    tc.grad_clip = float(opt.real("clip", preset.clip, 0.0, 1e9));
    tc.seed = seed;
    tc.n_threads = int32_t(opt.integer("threads", 0, 0, 1024));
    tc.recompute_activations = opt.has("recompute") ? 1 : 0;
    clamp_warmup(tc, opt.has("warmup"), "train");
    pg_trainer* t = nullptr;
    check_flags(pg_trainer_create(run.model.get(), &tc, &t), "pg_trainer_create");
    run.trainer.reset(t);
    // The checkpoints record the count actually used (not "all cores"), so a resume on a
    // machine with other cores still continues bit for bit.
    const int32_t threads = trainer_threads(t);
    check(pg_trainer_set_threads(t, threads), "pg_trainer_set_threads");
    run.threads_note = threads_phrase(threads);
}

}  // namespace

TrainSetup set_up_training(const Options& opt, const TrainPreset& preset, const std::string& text) {
    TrainSetup run;
    if (opt.has("resume")) resume(opt, run);
    else create(opt, preset, text, run);
    run.config = trainer_config(run.trainer.get());
    return run;
}

}  // namespace cli
