// Evaluation and sampling figures for a PhoneGPT-shaped model on Tiny Shakespeare, through the
// public C API:
//   1. the whole-split validation score (last 10%) of a model, with its run time;
//   2. the sampled nanoGPT-style estimate beside it;
//   3. generation throughput (chars/s) with the KV cache, inside the window and past it with
//      both slide policies.
// Usage: bench_eval [tinyshakespeare.txt] [--threads N] [--sample-threads N] [--tokens N]
//                   [--seed S] [--model checkpoint.pgm] [--json]
// --json prints the same figures as one JSON object instead of the lines (written with the
// library's one JSON writer, io/json.hpp; every figure comes through the C API).
// Without --model it uses a freshly initialised PhoneGPT model (expected score ~ ln 65 = 4.17).
#include <phonegpt/phonegpt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "process_stats.hpp"

namespace {

void check(pg_status s, const char* what) {
    if (s != PG_OK) {
        std::fprintf(stderr, "%s failed: %s: %s\n", what, pg_status_name(s), pg_last_error());
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string path = "../shared/data/tinyshakespeare.txt";
    std::string model_path;
    int threads = 0, sample_threads = 1, n_tokens = 2000;
    uint64_t seed = 1;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--threads") threads = std::atoi(next());
        else if (a == "--sample-threads") sample_threads = std::atoi(next());
        else if (a == "--tokens") n_tokens = std::atoi(next());
        else if (a == "--seed") seed = std::strtoull(next(), nullptr, 10);
        else if (a == "--model") model_path = next();
        else if (a == "--json") json = true;
        else if (a.rfind("--", 0) == 0) {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        } else path = a;
    }

    char* text = nullptr;
    size_t len = 0;
    check(pg_read_file(path.c_str(), &text, &len), "reading the data");
    pg_tokenizer* tok = nullptr;
    check(pg_tokenizer_create_char(text, len, &tok), "building the tokenizer");
    size_t n = 0;
    pg_tokenizer_encode(tok, text, len, nullptr, 0, &n);
    std::vector<int32_t> ids(n);
    check(pg_tokenizer_encode(tok, text, len, ids.data(), ids.size(), &n), "encoding");
    pg_buffer_free(text);
    size_t n_train = 0;
    check(pg_split_index(n, 0.9, &n_train), "splitting");
    const int32_t* val = ids.data() + n_train;
    const size_t n_val = n - n_train;

    pg_model* model = nullptr;
    if (model_path.empty()) {
        pg_model_config c;
        pg_model_config_default(&c);
        check(pg_model_create(&c, seed, &model), "creating the model");
        check(pg_model_set_tokenizer(model, tok), "setting the tokenizer");
        if (!json)
            std::printf("model: fresh PhoneGPT (seed %llu), %s kernels\n", (unsigned long long)seed, pg_simd_arch());
    } else {
        check(pg_model_load(model_path.c_str(), &model), "loading the model");
        if (!json) std::printf("model: %s, %s kernels\n", model_path.c_str(), pg_simd_arch());
    }
    if (!json) std::printf("data: %zu tokens, validation = last %zu\n", n, n_val);
    // The JSON object's fields, in the order the figures are measured.
    pg::io::JsonObject fields;
    fields.str("kernels", pg_simd_arch()).integer("validation_tokens", (long long)n_val);
    auto add = [&fields](const char* name, double value) { fields.num(name, value); };

    // 1. Whole split, on a session of `threads` threads (the sampled estimate reuses it).
    pg_session_config eval_sc;
    pg_session_config_default(&eval_sc);
    eval_sc.n_threads = threads;
    pg_session* eval_session = nullptr;
    check(pg_session_create(model, &eval_sc, &eval_session), "pg_session_create");
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.n_threads = threads;
    pg_eval_result r;
    r.struct_size = sizeof r;
    double t0 = pg_bench::now_seconds(), c0 = pg_bench::process_cpu_seconds();
    check(pg_session_evaluate(eval_session, val, n_val, &ec, &r), "pg_session_evaluate");
    double t1 = pg_bench::now_seconds(), c1 = pg_bench::process_cpu_seconds();
    if (!json)
        std::printf("whole-split validation: loss %.6f (%.4f bits/char), %lld positions in %lld windows, "
                    "%.2f s wall, %.2f s CPU (%d threads, batch %d); ln 65 = %.6f\n",
                    r.mean_loss, r.bits_per_token, (long long)r.n_scored, (long long)r.n_windows, t1 - t0,
                    c1 - c0, threads, ec.batch_size, std::log(65.0));
    add("whole_split_loss", r.mean_loss);
    add("whole_split_seconds", t1 - t0);
    add("whole_split_cpu_seconds", c1 - c0);

    // 2. The sampled estimate (nanoGPT: 200 batches; 20 of 16 here for time).
    t0 = pg_bench::now_seconds();
    pg_eval_sampled_config esc;
    pg_eval_sampled_config_default(&esc);
    esc.n_batches = 20;
    esc.batch_size = 16;
    esc.seed = 1337;
    check(pg_session_evaluate_sampled(eval_session, val, n_val, &esc, &r), "pg_session_evaluate_sampled");
    t1 = pg_bench::now_seconds();
    if (!json) std::printf("sampled estimate (20 x 16 windows of 128): loss %.6f, %.2f s\n", r.mean_loss, t1 - t0);
    add("sampled_estimate_loss", r.mean_loss);

    pg_session_free(eval_session);

    // 3. Generation throughput at batch 1, each run on a fresh session (its creation timed too).
    pg_session_config gen_sc;
    pg_session_config_default(&gen_sc);
    gen_sc.n_threads = sample_threads;
    const int32_t prompt[1] = {0};  // "\n"
    struct Run {
        const char* what;
        const char* key;
        int max_tokens;
        int slide_keep;
    };
    const Run runs[] = {{"inside the window (127 tokens)", "chars_per_cpu_s_inside_window", 127, 0},
                        {"past the window, slide_keep = n_ctx (exact crop)", "chars_per_cpu_s_exact_crop", n_tokens, 0},
                        {"past the window, slide_keep = 64", "chars_per_cpu_s_slide_keep_64", n_tokens, 64}};
    std::vector<int32_t> out(size_t(n_tokens) + 128);
    size_t last_produced = 0;  // the tokens of the last run, the sample printed below
    for (const Run& run : runs) {
        pg_sample_config sc;
        pg_sample_config_default(&sc);
        sc.max_tokens = run.max_tokens;
        sc.slide_keep = run.slide_keep;
        sc.n_threads = sample_threads;
        size_t produced = 0;
        double total = 0.0, cpu = 0.0;
        int repeats = 0;
        // Repeat short runs until about a second has passed, for a stable figure.
        do {
            t0 = pg_bench::now_seconds();
            const double c0 = pg_bench::process_cpu_seconds();
            pg_session* session = nullptr;
            check(pg_session_create(model, &gen_sc, &session), "pg_session_create");
            check(pg_session_append(session, prompt, 1), "pg_session_append");
            check(pg_session_generate(session, &sc, out.data(), out.size(), &produced), "pg_session_generate");
            pg_session_free(session);
            cpu += pg_bench::process_cpu_seconds() - c0;
            total += pg_bench::now_seconds() - t0;
            ++repeats;
        } while (total < 1.0);
        const double per_run = total / repeats, cpu_per_run = cpu / repeats;
        if (!json)
            std::printf("generation %s: %zu chars in %.4f s = %.0f chars/s wall, %.0f chars/s per CPU-second "
                        "(%d thread%s, %d runs)\n",
                        run.what, produced, per_run, double(produced) / per_run, double(produced) / cpu_per_run,
                        sample_threads, sample_threads == 1 ? "" : "s", repeats);
        add(run.key, double(produced) / cpu_per_run);
        last_produced = produced;
    }
    // At most the first 200 of the tokens the last run produced (--tokens may be fewer).
    const size_t shown = std::min<size_t>(200, last_produced);
    size_t text_len = 0;
    pg_tokenizer_decode(tok, out.data(), shown, nullptr, 0, &text_len);
    std::vector<char> sample(text_len + 1);
    check(pg_tokenizer_decode(tok, out.data(), shown, sample.data(), sample.size(), &text_len), "decoding");
    if (json)
        std::printf("%s\n", fields.integer("eval_threads", threads).integer("sample_threads", sample_threads).text().c_str());
    else
        std::printf("first %zu chars of the last sample:\n%s\n", shown, sample.data());

    pg_model_free(model);
    pg_tokenizer_free(tok);
    return 0;
}
