// phonegpt sample: text generated after a prompt, streamed (or one JSON object).
#include <cstdio>
#include <string>
#include <utility>

#include "cli.hpp"

namespace cli {

namespace {

void print_piece(const std::string& piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
}

// The generated text as the streaming decoder emits it (complete UTF-8), cut right after the
// first occurrence of the stop string: pg_session_generate stops after the token that completes it,
// and that token's text may go on past it. Printed as it comes unless --json.
struct SampleStream {
    SampleStream(const pg_tokenizer* tok, std::string stop_text, bool print_text)
        : stream(tok), stop(std::move(stop_text)), print(print_text) {}
    TextStream stream;
    std::string stop;  // empty = none
    bool print = true;
    std::string text;  // what is shown: the whole text, or up to the stop string's end
    bool stopped = false;

    void add(const std::string& piece) {
        if (stopped) return;
        const std::size_t before = text.size();
        text += piece;
        if (!stop.empty()) {
            const std::size_t from = before + 1 > stop.size() ? before + 1 - stop.size() : 0;
            const std::size_t at = text.find(stop, from);
            if (at != std::string::npos) {
                text.resize(at + stop.size());
                stopped = true;
            }
        }
        if (print) print_piece(text.substr(before));
    }
};

int on_token(void* user, int32_t token) {
    auto* s = static_cast<SampleStream*>(user);
    s->add(s->stream.push(token));
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
                    {"stop", "TEXT", "stop after the token that completes TEXT in the generated text; nothing "
                                     "after TEXT is printed (a newline from the shell: $'\\n')"},
                    {"threads", "N", "threads (default: all cores)"},
                    kBaseStorage,
                    kArithmetic,
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

    ModelPtr model = load_base(opt, ckpt);
    pg_session_config session_config;
    pg_session_config_default(&session_config);
    session_config.n_threads = sc.n_threads;
    session_config.arithmetic = arithmetic_named(opt);
    pg_session* session = nullptr;
    check(pg_session_create(model.get(), &session_config, &session), "pg_session_create");
    std::unique_ptr<pg_session, void (*)(pg_session*)> owned(session, pg_session_free);
    const pg_tokenizer* tok = tokenizer_of(model.get(), "encode --prompt with");
    const std::vector<int32_t> prompt_ids = encode(tok, prompt);

    SampleStream stream(tok, opt.text("stop", ""), !g_output.json);
    if (opt.has("stop") && stream.stop.empty()) throw UsageError{"--stop must hold at least one character"};
    const char* stops[1] = {stream.stop.c_str()};
    if (!stream.stop.empty()) {
        sc.stop_strings = stops;
        sc.n_stop_strings = 1;
    }
    sc.on_token = on_token;
    sc.on_token_user = &stream;
    std::vector<int32_t> out(size_t(sc.max_tokens));
    size_t n_out = 0;
    if (!g_output.json) {
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
        std::fflush(stdout);
    }
    const double t0 = now_seconds();
    check(pg_session_append(session, prompt_ids.data(), prompt_ids.size()), "pg_session_append");
    check(pg_session_generate(session, &sc, out.data(), out.size(), &n_out), "pg_session_generate");
    const double seconds = now_seconds() - t0;
    stream.add(stream.stream.finish());
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "sample").str("checkpoint", ckpt).str("prompt", prompt)
            .str("text", stream.text).boolean("stopped", stream.stopped).integer("tokens", (long long)n_out)
            .flt("temperature", sc.temperature).integer("top_k", sc.top_k).flt("top_p", sc.top_p).integer("seed", (long long)sc.seed)
            .num("seconds", seconds).num("tokens_per_second", seconds > 0 ? double(n_out) / seconds : 0.0);
        print_result(j);
    } else {
        std::printf("\n");
        std::fprintf(stderr, "(%zu tokens in %.2f s)\n", n_out, seconds);
    }
    return 0;
}

}  // namespace cli
