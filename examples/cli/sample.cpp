// phonegpt sample: text generated after a prompt, streamed (or one JSON object).
#include <cstdio>

#include "cli.hpp"

namespace cli {

namespace {

struct SampleStream {
    pg_tokenizer* tok;
    bool print;
};

int on_token(void* user, int32_t token) {
    auto* s = static_cast<SampleStream*>(user);
    if (s->print) {
        std::string piece = decode(s->tok, &token, 1);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace

int cmd_sample(int argc, char** argv) {
    Options opt("sample",
                {
                    {"checkpoint", "PATH", "the model to sample from (a model.bin or trainer.bin)"},
                    {"prompt", "TEXT", "text to continue (default: a newline)"},
                    {"tokens", "N", "tokens to generate (default 256)"},
                    {"temperature", "T", "softmax temperature, 0 = greedy (default 1.0)"},
                    {"top-k", "K", "keep the K most likely tokens, 0 = off (default)"},
                    {"top-p", "P", "keep the smallest set with probability >= P, 1 = off (default)"},
                    {"seed", "S", "sampling seed (default 1337)"},
                    {"threads", "N", "threads (default: all cores)"},
                    {"json", nullptr, "print one JSON object (with the text) on stdout instead of streaming"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    if (opt.handle_help_and_output("--checkpoint PATH [options]",
                                   "Generates text after a prompt with the model's tokenizer."))
        return 0;
    if (!opt.has("checkpoint")) throw UsageError{"--checkpoint PATH is required"};
    const std::string ckpt = opt.text("checkpoint", "");
    const std::string prompt = opt.text("prompt", "\n");
    if (prompt.empty()) throw UsageError{"--prompt must hold at least one character"};
    pg_sample_config sc;
    pg_sample_config_default(&sc);
    sc.max_tokens = int32_t(opt.integer("tokens", 256, 1, 1 << 24));
    sc.temperature = float(opt.real("temperature", 1.0, 0.0, 100.0));
    sc.top_k = int32_t(opt.integer("top-k", 0, 0, 1 << 22));
    sc.top_p = float(opt.real("top-p", 1.0, 0.0, 1.0));
    sc.seed = uint64_t(opt.integer("seed", 1337, 0, INT64_MAX));
    sc.n_threads = int32_t(opt.integer("threads", 0, 0, 1024));

    ModelPtr model = load_model(ckpt);
    pg_tokenizer* tok = tokenizer_of(model.get(), "encode --prompt with");
    const std::vector<int32_t> prompt_ids = encode(tok, prompt);

    SampleStream stream{tok, !g_output.json};
    sc.on_token = on_token;
    sc.on_token_user = &stream;
    std::vector<int32_t> out(size_t(sc.max_tokens));
    size_t n_out = 0;
    if (!g_output.json) {
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
        std::fflush(stdout);
    }
    const double t0 = now_seconds();
    check(pg_generate(model.get(), prompt_ids.data(), prompt_ids.size(), &sc, out.data(), out.size(), &n_out),
          "pg_generate");
    const double seconds = now_seconds() - t0;
    const std::string text = decode(tok, out.data(), n_out);
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "sample").str("checkpoint", ckpt).str("prompt", prompt)
            .str("text", text).integer("tokens", (long long)n_out).flt("temperature", sc.temperature)
            .integer("top_k", sc.top_k).flt("top_p", sc.top_p).integer("seed", (long long)sc.seed)
            .num("seconds", seconds).num("tokens_per_second", seconds > 0 ? double(n_out) / seconds : 0.0);
        print_result(j);
    } else {
        std::printf("\n");
        std::fprintf(stderr, "(%zu tokens in %.2f s)\n", n_out, seconds);
    }
    return 0;
}

}  // namespace cli
