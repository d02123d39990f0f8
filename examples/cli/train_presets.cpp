// phonegpt train's presets (the recipes table) and its options.
#include <cmath>

#include "tokenizer_files.hpp"
#include "train.hpp"

namespace cli {

namespace {

const TrainPreset kTrainPresets[] = {
    // name                  model       steps  batch lr    lr_min warmup wd   drop clip eval  eval_s seed      target  schedule  optimizer muon_lr ramp
    {"phonegpt",             "phonegpt", 2000,  32,   2e-3, NAN,   100,   0.1, 0.0, 1.0, -1,   0,     1337,     NAN,    "cosine", "adamw",  1.0, 0},
    {"tiny",                 "tiny",     2000,  32,   2e-3, NAN,   100,   0.1, 0.0, 1.0, -1,   0,     1337,     NAN,    "cosine", "adamw",  1.0, 0},
    {"phonegpt-shakespeare", "phonegpt", 16000, 32,   2e-3, 1e-4,  200,   0.1, 0.1, 1.0, 500,  300,   20261105, 1.4697, "cosine", "adamw",  1.0, 0},
    // The rule within 25M tokens (docs/results.md): Muon on the block matrices at 2.5 times the
    // schedule's learning rate, dropout rising from 0 over the first 3,000 steps, and a linear decay
    // that ends at step 3,800 (15.6M tokens). docs/cli.md lists its earlier forms and the flags
    // that give each back.
    {"phonegpt-shakespeare-fast", "phonegpt", 3800, 32, 3e-3, 0.0,   200,   0.1, 0.1, 1.0, 200,  0,     20261105, 1.4697, "linear", "muon",   2.5, 3000},
};

}  // namespace

const TrainPreset& find_train_preset(const std::string& name) {
    std::string names;
    for (const TrainPreset& p : kTrainPresets) {
        if (name == p.name) return p;
        names += std::string(names.empty() ? "" : ", ") + p.name;
    }
    throw UsageError{"--preset must be one of " + names + ", got \"" + name + "\""};
}

const char* const kTrainSynopsis = "[options]";
const char* const kTrainWhat =
    "Trains a GPT on a text file. The vocabulary is the sorted set of the whole file's characters,\n"
    "or --tokenizer FILE's (a byte-level BPE, say); the first 90% of the encoded text is the\n"
    "training split, the last 10% the validation split.\n"
    "At every evaluation and at the end writes OUT/model.bin (the model and its tokenizer),\n"
    "OUT/trainer.bin (plus the training state, for --resume), OUT/checkpoints/step-NNNNNN.bin\n"
    "(that evaluation's model) and a row of OUT/scores.csv. A run whose loss or gradient stops\n"
    "being finite has diverged: it stops there with exit code 1, keeping the files of its last\n"
    "finite evaluation.";

std::vector<OptionSpec> train_options() {
    std::vector<OptionSpec> options = {
        {"preset", "NAME",
         "phonegpt (default: 6 layers, 4 heads, width 128, context 128), tiny, phonegpt-shakespeare or "
         "phonegpt-shakespeare-fast (recipes: the phonegpt shape, and defaults that replace those below: see "
         "docs/cli.md)"},
        {"layers", "N", "override the preset's layer count"},
        {"heads", "N", "override the preset's head count"},
        {"embd", "N", "override the preset's width"},
        {"ctx", "N", "override the preset's context length (also the training sequence length)"},
        {"data", "PATH", "training text (default: $PG_DATA_PATH, else ../shared/data/tinyshakespeare.txt)"},
        {"train-fraction", "F", "fraction of the text used for training (default 0.9)"},
        {"steps", "N", "optimizer steps (default 2000); also the schedule length. With --resume: the step to "
                       "train to (default: the run's own schedule length; beyond it the rate stays lr-min)"},
        {"batch", "B", "sequences per micro-batch (default 32)"},
        {"accum", "N", "micro-batches per step (default 1)"},
        {"lr", "LR", "peak learning rate (default 2e-3)"},
        {"lr-min", "LR", "final learning rate (default lr/10)"},
        {"schedule", "KIND", "cosine (default), linear or constant"},
        {"optimizer", "NAME", "adamw (default) or muon (Muon on the blocks' 2-D linear weights, AdamW on the rest; "
                              "docs/cli.md)"},
        {"muon-momentum", "MU", "Muon's momentum (default 0.95)"},
        {"muon-lr-scale", "S", "Muon's learning rate as a multiple of the schedule's (default 1)"},
        {"warmup", "N", "warm-up steps (default 100)"},
        {"weight-decay", "W", "AdamW weight decay on the linear weights (default 0.1)"},
        {"dropout", "P", "dropout probability (default 0)"},
        {"dropout-ramp", "N", "dropout rises linearly from 0 over the first N steps (default 0: the full rate "
                              "from the first step)"},
        {"clip", "C", "global gradient-norm bound, 0 = off (default 1.0)"},
        {"recompute", nullptr, "recompute each layer's activations before its backward pass: less memory, "
                               "about a fifth more compute, identical results"},
        {"eval-interval", "N", "evaluate and save every N steps (default: steps/4); 0 = only at the end"},
        {"eval-seconds", "S", "also evaluate and save once S seconds have passed since the last evaluation "
                              "(default 0 = off)"},
        {"eval-windows", "N", "score only the first N validation windows (default: the whole split)"},
        {"eval-train", nullptr, "also score the whole training split at the end"},
        {"target", "LOSS", "target rule: report when the validation loss is <= LOSS at two consecutive "
                           "evaluations"},
        {"stop-at-target", nullptr, "stop once the target rule is met (default: continue to --steps)"},
        {"log-interval", "N", "steps between progress lines (default 10)"},
        {"seed", "S", "seed for the weights, batches and dropout (default 1337)"},
        {"threads", "N", "threads (default: all cores; the run records the count). With --resume: the count "
                         "the run was made with (the default), or another one with --allow-thread-change"},
        {"allow-thread-change", nullptr, "with --resume: continue on a --threads count other than the run's; "
                                         "the kernels then split their work differently, so the results "
                                         "match the uninterrupted run only up to float rounding"},
        {"out", "DIR", "output folder (default: out)"},
        {"resume", "PATH", "continue the run saved in a trainer.bin (its model and settings)"},
        {"json", nullptr, "print one JSON object of results on stdout (progress on stderr)"},
        {"quiet", nullptr, "no progress lines"},
        {"help", nullptr, "this help"},
    };
    // --tokenizer FILE (and --merges, --encoding) instead of the character vocabulary.
    const std::vector<OptionSpec> files = tokenizer_file_options();
    options.insert(options.begin() + 6, files.begin(), files.end());  // after --data
    return options;
}

}  // namespace cli
