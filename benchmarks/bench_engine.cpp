// Training-step speed and memory of the engine: forward + backward of one micro-batch.
//
//   bench_engine [--preset phonegpt] [--batch 32] [--seq 0 (= n_ctx)] [--threads 2]
//                [--steps 10] [--recompute] [--dropout 0] [--json]
//
// Prints the median and best ms per step over --steps timed steps (after one warm-up step),
// tokens/s, the step's GFLOP/s as a fraction of this machine's FMA peak for the same thread
// count (measured in the same run, fma_peak.hpp), the CPU time per step, the process's peak
// resident memory (VmHWM) after the training steps, then the time of a forward-only pass
// (evaluation) of the same batch. --json prints the same figures as one JSON object. To mimic a training process's footprint it also
// holds what a trainer holds beside the engine: gradients and two AdamW moment buffers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/resource.h>
#include <string>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "fma_peak.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "kernels/dispatch.hpp"
#include "model/config.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"

namespace {

long peak_rss_kib() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}

// User + system CPU seconds of the whole process so far.
double cpu_seconds() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// FLOPs of one training step (forward + backward = 3 x forward), counting every product of the
// full T x T attention as the figures do (the causal half is what the engine computes):
// per token and layer 2 x 12 C^2 for the four linear layers and 4 T C for Q K^T and P V, plus
// 2 C V for the tied head. PhoneGPT: 8.31 MFLOP per token.
double step_flops(const pg::ModelConfig& cfg, int B, int T) {
    const double C = cfg.n_embd, V = cfg.vocab_size;
    const double per_token = cfg.n_layer * (24.0 * C * C + 4.0 * T * C) + 2.0 * C * V;
    return 3.0 * per_token * B * T;
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: bench_engine [--preset NAME] [--batch B] [--seq T] [--threads N] [--steps S]"
                 " [--recompute] [--dropout P] [--json]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    std::string preset = "phonegpt";
    int batch = 32, seq = 0, threads = 2, steps = 10;
    bool recompute = false, json = false;
    float dropout = 0.0f;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "--preset") preset = value();
        else if (a == "--batch") batch = std::atoi(value());
        else if (a == "--seq") seq = std::atoi(value());
        else if (a == "--threads") threads = std::atoi(value());
        else if (a == "--steps") steps = std::atoi(value());
        else if (a == "--recompute") recompute = true;
        else if (a == "--dropout") dropout = float(std::atof(value()));
        else if (a == "--json") json = true;
        else usage();
    }
    if (batch < 1 || steps < 1) usage();

    try {
        const pg::ModelConfig cfg = pg::model_preset(preset.c_str());
        const int T = seq > 0 ? seq : cfg.n_ctx;
        const pg::ParamLayout layout(cfg);
        pg::AlignedBuffer<float> params(size_t(layout.total)), grads(size_t(layout.total)),
            adam_m(size_t(layout.total)), adam_v(size_t(layout.total));
        pg::init_gpt2_params(cfg, params.data(), 1);

        pg::Rng rng(2);
        std::vector<int32_t> inputs(size_t(batch) * T), targets(size_t(batch) * T);
        for (auto& x : inputs) x = int32_t(rng.below(uint64_t(cfg.vocab_size)));
        for (auto& x : targets) x = int32_t(rng.below(uint64_t(cfg.vocab_size)));

        pg::ThreadPool pool(threads);
        pg::EngineOptions options;
        options.recompute = recompute;
        pg::Engine engine(cfg, batch, T, options);

        std::vector<double> ms;
        double loss = 0.0, cpu_start = 0.0;
        for (int s = 0; s <= steps; ++s) {
            pg::Dropout d;
            d.p = dropout;
            d.seed = 3;
            d.stream = uint64_t(s);
            grads.zero();
            if (s == 1) cpu_start = cpu_seconds();
            const auto t0 = std::chrono::steady_clock::now();
            loss = engine
                       .forward_backward(params.data(), grads.data(), inputs.data(), targets.data(), batch, T,
                                         1.0f / float(batch * T), d, pool)
                       .mean();
            const auto t1 = std::chrono::steady_clock::now();
            if (s > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        const double cpu_ms = (cpu_seconds() - cpu_start) * 1e3 / steps;
        std::sort(ms.begin(), ms.end());
        const double median_ms = ms[ms.size() / 2], flops = step_flops(cfg, batch, T);
        const double gflops = flops / (median_ms * 1e-3) * 1e-9;
        const double rss_mb = double(peak_rss_kib()) / 1024.0;
        // The limit, measured now on the widest vector unit with the same number of threads.
        const std::vector<pg_bench::PeakUnit> units = pg_bench::peak_units();
        const double peak = pg_bench::measure_peak(units.front(), pool.size());
        if (!json) {
            std::printf("preset %s  B=%d T=%d  threads %d  recompute %s  dropout %.2f  kernels %s\n",
                        preset.c_str(), batch, T, pool.size(), recompute ? "on" : "off", double(dropout),
                        pg::kernels::active_arch_name());
            std::printf("train step (forward+backward): median %.1f ms, best %.1f ms over %d steps  (loss %.4f)\n",
                        median_ms, ms.front(), steps, loss);
            std::printf("%.0f tokens/s; %.2f GFLOP per step -> %.0f GFLOP/s = %.1f%% of the measured %s peak "
                        "(%.0f GFLOP/s on %d threads)\n",
                        batch * T / (median_ms * 1e-3), flops * 1e-9, gflops, 100.0 * gflops / peak,
                        units.front().name.c_str(), peak, pool.size());
            // CPU time (all threads) per step is less sensitive to other processes on a shared machine.
            std::printf("CPU time per step (all threads, incl. gradient zeroing): %.1f ms\n", cpu_ms);
            std::printf("engine activations %.1f MB; peak RSS %.1f MB\n", double(engine.activation_bytes()) / 1e6,
                        rss_mb);
        }

        // Evaluation: forward with per-position losses, no logits kept.
        std::vector<float> losses(inputs.size());
        std::vector<double> fwd_ms;
        for (int s = 0; s <= steps; ++s) {
            const auto t0 = std::chrono::steady_clock::now();
            engine.forward(params.data(), inputs.data(), targets.data(), batch, T, losses.data(), nullptr, pool);
            const auto t1 = std::chrono::steady_clock::now();
            if (s > 0) fwd_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        std::sort(fwd_ms.begin(), fwd_ms.end());
        if (json) {
            std::printf("{\"preset\": \"%s\", \"batch\": %d, \"seq\": %d, \"threads\": %d, \"recompute\": %s, "
                        "\"dropout\": %.3f, \"kernels\": \"%s\", \"step_ms_median\": %.3f, \"step_ms_best\": %.3f, "
                        "\"tokens_per_s\": %.1f, \"gflop_per_step\": %.4f, \"gflops\": %.2f, \"peak_gflops\": %.2f, "
                        "\"fraction_of_peak\": %.4f, \"cpu_ms_per_step\": %.3f, \"activation_mb\": %.2f, "
                        "\"peak_rss_mb\": %.2f, \"forward_ms_median\": %.3f, \"loss\": %.6f}\n",
                        preset.c_str(), batch, T, pool.size(), recompute ? "true" : "false", double(dropout),
                        pg::kernels::active_arch_name(), median_ms, ms.front(), batch * T / (median_ms * 1e-3),
                        flops * 1e-9, gflops, peak, gflops / peak, cpu_ms, double(engine.activation_bytes()) / 1e6,
                        rss_mb, fwd_ms[fwd_ms.size() / 2], loss);
        } else {
            std::printf("forward only (evaluation): median %.1f ms, best %.1f ms\n", fwd_ms[fwd_ms.size() / 2],
                        fwd_ms.front());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_engine: %s\n", e.what());
        return 1;
    }
    return 0;
}
