// phonegpt eval --checkpoint PATH: a model's loss on a whole split (eval.hpp).
#include <cinttypes>

#include "eval.hpp"

namespace cli {

CheckpointScore score_checkpoint(const std::string& path, const Options& opt, const EvalRequest& request) {
    CheckpointScore s;
    s.path = path;
    // Without --base-storage the model is scored as the file holds it (a 16-bit file as 16-bit).
    ModelPtr model = load_base(opt, path);
    const pg_tokenizer* tok = tokenizer_of(model.get(), "encode --data with");
    const Corpus corpus = load_corpus(request.data_path, tok, request.train_fraction);
    const size_t begin = request.split == "val" ? corpus.n_train : 0;
    const size_t end = request.split == "train" ? corpus.n_train : corpus.tokens.size();
    if (end - begin < 2)
        throw UsageError{"--data: the " + request.split + " split has fewer than 2 tokens, nothing to score"};

    const pg_model_config config = config_of(model.get());
    s.model = model_json(model.get());
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.window = int32_t(opt.integer("window", 0, 0, config.n_ctx));
    ec.stride = int32_t(opt.integer("stride", 0, 0, config.n_ctx));
    ec.n_threads = request.threads;
    s.window = ec.window ? ec.window : config.n_ctx;
    s.stride = ec.stride ? ec.stride : s.window;
    s.figures = evaluate(model.get(), corpus.tokens.data() + begin, end - begin, ec,
                         "scoring " + path + " on the " + request.split + " split", nullptr, arithmetic_named(opt));
    return s;
}

int cmd_eval(int argc, char** argv) {
    Options opt("eval",
                {
                    {"checkpoint", "PATH", "the model to score (a model.bin or trainer.bin)"},
                    {"checkpoints", "DIR", "score every checkpoint (.bin, .pgck) in DIR instead, in step order"},
                    {"out", "PATH", "with --checkpoints: the scores table to write (default DIR/scores.csv)"},
                    {"data", "PATH", "text to score (default: $PG_DATA_PATH, else ../shared/data/tinyshakespeare.txt)"},
                    {"train-fraction", "F", "the split point used in training (default 0.9)"},
                    {"split", "NAME", "val (default), train or all"},
                    {"window", "W", "window length (default: the model's context)"},
                    {"stride", "S", "window stride (default: the window, non-overlapping)"},
                    kBaseStorage,
                    kWeightsSpelling,
                    kArithmetic,
                    {"threads", "N", "threads (default: all cores)"},
                    {"json", nullptr, "print one JSON object of results on stdout"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    const char* synopsis = "--checkpoint PATH | --checkpoints DIR [--out scores.csv] [options]";
    const char* what =
        "Scores a model on a whole split: the mean cross-entropy (natural log) over every scored\n"
        "position, in windows of the model's context (each prediction scored exactly once).\n"
        "With --checkpoints, scores every checkpoint in a folder (ordered by the step-N in their\n"
        "names) and writes step,checkpoint,val_loss,val_bits,n_scored rows to a CSV file.\n"
        "A loss that is not finite (a diverged model) is never a score: --checkpoint fails with\n"
        "exit code 1, --checkpoints lists the file as skipped.";
    if (opt.handle_help_and_output(synopsis, what)) return 0;
    if (opt.has("checkpoint") == opt.has("checkpoints"))
        throw UsageError{opt.has("checkpoint") ? "--checkpoint and --checkpoints are alternatives: give one"
                                               : "--checkpoint PATH or --checkpoints DIR is required"};
    if (opt.has("out") && !opt.has("checkpoints")) throw UsageError{"--out goes with --checkpoints DIR"};
    EvalRequest request;
    request.data_path = resolve_data_path(opt);
    request.train_fraction = opt.real("train-fraction", 0.9, 0.0, 1.0);
    request.split = opt.text("split", "val");
    if (request.split != "val" && request.split != "train" && request.split != "all")
        throw UsageError{"--split must be val, train or all, got \"" + request.split + "\""};
    request.threads = int(opt.integer("threads", 0, 0, 1024));
    if (opt.has("checkpoints")) return eval_folder(opt, request);

    const std::string ckpt = opt.text("checkpoint", "");
    const CheckpointScore s = score_checkpoint(ckpt, opt, request);
    const EvalFigures& f = s.figures;
    say("%s split of %s: loss %.4f, %s, %" PRId64 " scored positions (%" PRId64 " bytes) in %" PRId64
        " windows, %.1f s\n",
        request.split.c_str(), request.data_path.c_str(), f.loss, bits_text(f).c_str(), f.scored, f.bytes, f.windows,
        f.seconds);
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "eval").str("checkpoint", ckpt).str("data", request.data_path)
            .str("split", request.split).integer("window", s.window).integer("stride", s.stride)
            .object("model", s.model).num("loss", f.loss).num("bits_per_char", f.bits);
        add_bits_per_byte(j, f).integer("scored", f.scored).integer("windows", f.windows).num("seconds", f.seconds);
        print_result(j);
    }
    return 0;
}

}  // namespace cli
