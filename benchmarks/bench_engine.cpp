// Training-step speed and memory of the engine: forward + backward of one micro-batch.
//
//   bench_engine [--preset phonegpt] [--batch 32] [--seq 0 (= n_ctx)] [--threads 2]
//                [--steps 10] [--recompute] [--dropout 0] [--optimizer adamw|muon] [--profile] [--json]
//                [--paired]
//
// Prints the median and best ms per step over --steps timed steps (after one warm-up step),
// tokens/s, the step's GFLOP/s as a fraction of this machine's FMA peak for the same thread
// count (measured in the same run, fma_peak.hpp), the CPU time per step, the hypervisor's steal
// time per step on a virtual machine (steal_ms below), the process's peak
// resident memory (VmHWM) after the training steps, then the time of a forward-only pass
// (evaluation) of the same batch. --json prints the same figures as one JSON object. To mimic a training process's footprint it also
// holds what a trainer holds beside the engine: gradients and two AdamW moment buffers.
//
// --profile then runs --steps more steps with a StepProfile attached to the engine and the pool
// (core/step_profile.hpp), each step also zeroing the gradients and running the optimizer (the
// gradient norm and AdamW at learning rate 0, so the weights stay the same), and prints per
// phase and step: the caller's wall time, parallel regions, the work (CPU time of every thread
// in the regions plus the caller's outside them), the critical path (sum over regions of the
// busiest thread's CPU time, plus the work outside regions), that serial work, each thread's
// CPU time in regions, the threads' waiting time in regions (wall x threads - CPU), the
// imbalance (busiest / mean thread time over the regions), and the estimated bytes read,
// written and read across threads. CPU times stay meaningful on a loaded machine; compare the
// critical path of N threads with the work of one. The timed steps above run without it.
//
// --optimizer adamw|muon times the whole training step as a run makes it: a pg::Trainer (with
// the preset phonegpt-shakespeare-fast's settings: clipping 1.0, weight decay 0.1, that
// optimizer) on random tokens, each step sampling its batch, zeroing the gradients, running
// forward and backward, the gradient norm, clipping and the optimizer. It prints the median and
// best ms of that step beside the forward+backward above, their difference, and (muon) the Muon
// update alone (its GFLOP and GFLOP/s); --profile then profiles these trainer steps instead,
// with the trainer's own phases (batch sampling, gradient zeroing, gradient norm, gradient
// clipping, AdamW, Muon) beside the engine's.
//
// --paired measures how the step scales instead (issue 15's 1.8x): the same engine and batch
// on a 1-thread pool and a --threads pool, step by step in turn (1, N, N, 1, 1, N, ...: which
// one goes first alternates; --steps pairs after one warm-up pair), and prints both medians,
// the median of the pairs' ratios (each pair about a second apart, so a host whose speed drifts
// over tens of seconds slows both members of a pair alike, where two separate processes would
// each meet a different host), and the N-thread step's percent of the N-thread peak measured in
// the same run: once at the end, and beside each pair (the best of three 20 ms bursts on the
// N-thread pool right after it; the median of the pairs' percents), since the host's peak drifts
// as its step does. Nothing else is timed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>
#include <string>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "fma_peak.hpp"
#include "median.hpp"
#include "profile_table.hpp"
#include "process_stats.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "core/json.hpp"
#include "kernels/dispatch.hpp"
#include "model/config.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"
#include "model/model.hpp"
#include "train/muon.hpp"
#include "train/optimizer.hpp"
#include "train/trainer.hpp"

namespace {

// Milliseconds the hypervisor ran something else while this guest's vCPUs had work ("steal",
// the eighth field of /proc/stat's "cpu" line, summed over vCPUs); -1 where there is no such
// field. A 2-thread step moves at the pace of the slower vCPU in each parallel region, so steal
// on either one is lost whole: printed beside the timings, it tells a slow run of the host from
// a slow run of the code.
double steal_ms() {
    std::ifstream f("/proc/stat");
    std::string cpu;
    unsigned long long v[8] = {};
    if (!(f >> cpu) || cpu != "cpu") return -1.0;
    for (auto& x : v)
        if (!(f >> x)) return -1.0;
    return double(v[7]) * 1e3 / double(sysconf(_SC_CLK_TCK));
}

// Steal per step (or pair) between two steal_ms() readings; -1 where either is missing.
double steal_per(double start, double end, int steps) {
    return start < 0 || end < 0 ? -1.0 : (end - start) / steps;
}

// The dropout of step `stream` (the same seed in every benchmark step).
pg::Dropout step_dropout(float p, uint64_t stream) {
    pg::Dropout d;
    d.p = p;
    d.seed = 3;
    d.stream = stream;
    return d;
}

// What one timed training step needs: the engine, its buffers and the batch.
struct StepInputs {
    pg::Engine& engine;
    pg::AlignedBuffer<float>& params;
    pg::AlignedBuffer<float>& grads;
    const std::vector<int32_t>& inputs;
    const std::vector<int32_t>& targets;
    int batch, T;
    float dropout;
};

// Step s (its dropout stream) on pool: zeroes the gradients, runs forward and backward, and
// returns the milliseconds forward and backward took; *loss (if given) gets the mean loss.
double timed_step(const StepInputs& in, int s, pg::ThreadPool& pool, double* loss = nullptr) {
    const pg::Dropout d = step_dropout(in.dropout, uint64_t(s));
    in.grads.zero();
    const auto t0 = std::chrono::steady_clock::now();
    const double mean = in.engine
                            .forward_backward(in.params.data(), in.grads.data(), in.inputs.data(), in.targets.data(),
                                              in.batch, in.T, 1.0f / float(in.batch * in.T), d, pool)
                            .mean();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (loss) *loss = mean;
    return ms;
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

// FLOPs the engine's recomputation adds to a step (EngineOptions::recompute): the forward of
// every layer but the last, counted as step_flops counts, without the MLP's output projection,
// whose output the backward does not need (qkv, attention, attention projection and fc:
// 2 x 8 C^2 + 4 T C per token and layer). The fraction of peak counts step_flops only
// (model FLOPs); this gives the executed ones beside it.
double recompute_flops(const pg::ModelConfig& cfg, int B, int T) {
    const double C = cfg.n_embd;
    return (cfg.n_layer - 1) * (16.0 * C * C + 4.0 * T * C) * B * T;
}

// A profile's per-phase table, as text and as JSON (benchmarks/profile_table.hpp).
struct ProfileReport {
    std::string text;
    pg::io::JsonObject json;
};

ProfileReport report_profile(const pg::StepProfile& prof, int steps, double wall_step_ms, const char* what) {
    return {format_profile(prof, steps, wall_step_ms, what), profile_json(prof, steps, wall_step_ms)};
}

// Runs `steps` more training steps with a profile attached and returns the per-phase table.
ProfileReport profile_steps(pg::Engine& engine, pg::ThreadPool& pool, const pg::ModelConfig& cfg,
                          pg::AlignedBuffer<float>& params, pg::AlignedBuffer<float>& grads,
                          pg::AlignedBuffer<float>& adam_m, pg::AlignedBuffer<float>& adam_v,
                          const std::vector<int32_t>& inputs, const std::vector<int32_t>& targets, int batch, int T,
                          float dropout, int steps) {
    const pg::ParamLayout layout(cfg);
    const std::vector<pg::ParamPiece> pieces = pg::optimizer_pieces(pg::build_tensor_table(cfg), layout.total, false);
    pg::StepProfile prof(pool.size());
    pool.set_observer(&prof);
    engine.set_profile(&prof);
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
        const pg::Dropout d = step_dropout(dropout, uint64_t(1000 + s));
        {
            pg::StepProfile::Scope phase(&prof, "gradient zeroing");
            prof.add_bytes(0, layout.total * 4);
            grads.zero();
        }
        engine.forward_backward(params.data(), grads.data(), inputs.data(), targets.data(), batch, T,
                                1.0f / float(batch * T), d, pool);
        pg::StepProfile::Scope phase(&prof, "optimizer (norm, AdamW)");
        prof.add_bytes(layout.total * 4 * 5, layout.total * 4 * 3);
        const double norm = pg::global_grad_norm(grads.data(), layout.total, pool);
        pg::AdamWStep a;
        a.lr = 0.0f;  // the full update's work, the same weights
        a.t = s + 1;
        a.weight_decay = norm < 0.0 ? 1.0f : 0.0f;  // never: keeps the norm's result used
        pg::adamw_update(params.data(), grads.data(), adam_m.data(), adam_v.data(), pieces, a, pool);
    }
    const double wall_step_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
    pool.set_observer(nullptr);
    engine.set_profile(nullptr);
    return report_profile(prof, steps, wall_step_ms, "with gradient zeroing and the optimizer");
}

// The nominal FLOPs of one Muon update: per matrix (m x n after orienting it wide, m <= n) and
// Newton-Schulz iteration, X X^T (2 m^2 n), A^2 (2 m^3) and (b A + c A^2) X (2 m^2 n), as if
// every product were computed in full. PhoneGPT: 3.52 GFLOP.
double muon_flops(const std::vector<pg::MuonMatrix>& matrices) {
    double f = 0.0;
    for (const pg::MuonMatrix& mat : matrices) {
        const double m = std::min(mat.rows, mat.cols), n = std::max(mat.rows, mat.cols);
        f += pg::kMuonNsSteps * (4.0 * m * m * n + 2.0 * m * m * m);
    }
    return f;
}

// The whole training step of a pg::Trainer (--optimizer): the run's step, not the engine's pass.
struct TrainerFigures {
    double median_ms = 0.0, best_ms = 0.0, loss = 0.0;
    double muon_median_ms = 0.0, muon_best_ms = 0.0, muon_gflop = 0.0;  // muon only
    ProfileReport profile;
};

TrainerFigures time_trainer(const pg::ModelConfig& cfg, int batch, int T, int threads, bool recompute, float dropout,
                            pg_optimizer optimizer, int steps, bool profile) {
    pg::Model model(cfg);
    pg::init_gpt2_params(cfg, model.params(), 1);
    pg::TrainConfig tc;  // phonegpt-shakespeare-fast's settings (examples/cli/train_presets.cpp)
    tc.batch_size = batch;
    tc.seq_len = T;
    tc.n_threads = threads;
    tc.recompute_activations = recompute;
    tc.dropout = dropout;
    tc.optimizer = optimizer;
    tc.schedule = PG_LR_LINEAR;
    tc.lr_max = 3e-3f;
    tc.lr_min = 0.0f;
    tc.warmup_steps = 200;
    tc.total_steps = 6000;
    tc.weight_decay = 0.1f;
    tc.grad_clip = 1.0f;
    pg::Trainer trainer(model, tc);
    pg::Rng rng(5);
    std::vector<int32_t> data(std::size_t(1) << 18);
    for (auto& x : data) x = int32_t(rng.below(uint64_t(cfg.vocab_size)));
    trainer.set_data(data.data(), data.size());

    TrainerFigures f;
    trainer.step();  // warm-up: allocates the engine and the optimizer's scratch
    std::vector<double> ms;
    for (int s = 0; s < steps; ++s) {
        const auto t0 = std::chrono::steady_clock::now();
        f.loss = trainer.step().loss;
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    f.median_ms = median_of(ms);
    f.best_ms = *std::min_element(ms.begin(), ms.end());

    if (optimizer == PG_OPTIMIZER_MUON) {
        // The update alone at learning rate 0 (the weights stay the same), on the gradients of
        // the last step.
        const std::vector<pg::MuonMatrix> matrices = pg::muon_matrices(model.tensors());
        const std::size_t n = std::size_t(model.num_params());
        std::vector<float> momentum(n, 0.0f);
        std::vector<pg::MuonScratch> scratch;
        pg::ThreadPool pool(threads);
        pg::MuonStep ms_step;
        ms_step.lr = 0.0f;
        std::vector<double> mu_ms;
        for (int s = 0; s <= steps; ++s) {
            const auto t0 = std::chrono::steady_clock::now();
            pg::muon_update(model.params(), trainer.grads(), momentum.data(), matrices, ms_step, scratch, pool);
            const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (s > 0) mu_ms.push_back(t);
        }
        f.muon_median_ms = median_of(mu_ms);
        f.muon_best_ms = *std::min_element(mu_ms.begin(), mu_ms.end());
        f.muon_gflop = muon_flops(matrices) * 1e-9;
    }

    if (profile) {
        pg::StepProfile prof(trainer.threads());
        trainer.set_profile(&prof);
        const auto t0 = std::chrono::steady_clock::now();
        for (int s = 0; s < steps; ++s) trainer.step();
        const double wall_step_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
        trainer.set_profile(nullptr);
        f.profile = report_profile(prof, steps, wall_step_ms,
                                   optimizer == PG_OPTIMIZER_MUON ? "of the trainer (Muon + AdamW)" : "of the trainer (AdamW)");
    }
    return f;
}

// --paired: the same engine's step on 1 thread and on pool's threads, in turn.
void paired_scaling(const pg::ModelConfig& cfg, const StepInputs& r, bool recompute, pg::ThreadPool& pool, int pairs,
                    bool json, const std::string& preset) {
    pg::ThreadPool one(1);
    const double flops = step_flops(cfg, r.batch, r.T);
    const std::vector<pg_bench::PeakUnit> units = pg_bench::peak_units();
    // Right after each pair, the best of three 20 ms bursts of FMA chains on the N-thread pool:
    // the peak the host gave at that moment, beside the one measured once at the end (the best
    // of five 0.2 s runs).
    const pg_bench::PeakBurst burst(units.front(), 0.02);
    std::vector<double> ms1, msn, ratio, peak_beside, frac_beside;
    double steal_start = 0.0;
    for (int s = 0; s <= pairs; ++s) {
        if (s == 1) steal_start = steal_ms();
        // Which member goes first alternates, so neither always follows the other's caches.
        double a, b;
        if (s % 2 == 0) {
            a = timed_step(r, s, one);
            b = timed_step(r, s, pool);
        } else {
            b = timed_step(r, s, pool);
            a = timed_step(r, s, one);
        }
        if (s == 0) continue;
        ms1.push_back(a);
        msn.push_back(b);
        ratio.push_back(a / b);
        peak_beside.push_back(std::max({burst.gflops(pool), burst.gflops(pool), burst.gflops(pool)}));
        frac_beside.push_back(flops / (b * 1e-3) * 1e-9 / peak_beside.back());
    }
    const double steal_per_pair = steal_per(steal_start, steal_ms(), pairs);
    const double med1 = median_of(ms1), medn = median_of(msn), med_ratio = median_of(ratio);
    const double lo = *std::min_element(ratio.begin(), ratio.end()), hi = *std::max_element(ratio.begin(), ratio.end());
    const auto [peak_lo, peak_hi] = std::minmax_element(peak_beside.begin(), peak_beside.end());
    const double pct_beside = 100.0 * median_of(frac_beside);
    const double peak1 = pg_bench::measure_peak(units.front(), 1);
    const double peakn = pg_bench::measure_peak(units.front(), pool.size());
    const double pct1 = 100.0 * flops / (med1 * 1e-3) * 1e-9 / peak1;
    const double pctn = 100.0 * flops / (medn * 1e-3) * 1e-9 / peakn;
    // With recomputation, also of the FLOPs executed (model FLOPs plus the recomputed forward).
    const double executed = recompute ? (flops + recompute_flops(cfg, r.batch, r.T)) / flops : 1.0;
    if (json) {
        pg::io::JsonObject j;
        j.str("preset", preset)
            .integer("batch", r.batch)
            .integer("seq", r.T)
            .integer("threads", pool.size())
            .boolean("recompute", recompute)
            .num("dropout", r.dropout)
            .str("kernels", pg::kernels::active_arch_name())
            .integer("pairs", pairs)
            .num("step_ms_median_1", med1)
            .num("step_ms_median_n", medn)
            .num("pair_ratio_median", med_ratio)
            .num("pair_ratio_min", lo)
            .num("pair_ratio_max", hi)
            .num("peak_gflops_1", peak1)
            .num("peak_gflops_n", peakn)
            .num("fraction_of_peak_1", pct1 / 100.0)
            .num("fraction_of_peak_n", pctn / 100.0)
            .num("executed_fraction_of_peak_n", executed * pctn / 100.0)
            .num("peak_gflops_beside_n_median", median_of(peak_beside))
            .num("peak_gflops_beside_n_min", *peak_lo)
            .num("peak_gflops_beside_n_max", *peak_hi)
            .num("fraction_of_peak_beside_n", pct_beside / 100.0)
            .num("executed_fraction_of_peak_beside_n", executed * pct_beside / 100.0)
            .num("steal_ms_per_pair", steal_per_pair);
        std::printf("%s\n", j.text().c_str());
        return;
    }
    std::printf("preset %s  B=%d T=%d  1 and %d threads in turn  recompute %s  dropout %.2f  kernels %s\n",
                preset.c_str(), r.batch, r.T, pool.size(), recompute ? "on" : "off", double(r.dropout),
                pg::kernels::active_arch_name());
    std::printf("paired steps (%d pairs after a warm-up pair): 1 thread median %.1f ms, %d threads median %.1f ms\n",
                pairs, med1, pool.size(), medn);
    std::printf("scaling: median of the pairs' ratios %.2fx (lowest %.2fx, highest %.2fx)\n", med_ratio, lo, hi);
    std::printf("%d threads: %.1f%% of the measured %s peak (%.0f GFLOP/s); 1 thread: %.1f%% of %.0f GFLOP/s\n",
                pool.size(), pctn, units.front().name.c_str(), peakn, pct1, peak1);
    if (recompute)
        std::printf("with the recomputed forward: %d threads at %.1f%% of the peak in executed FLOPs\n", pool.size(),
                    executed * pctn);
    std::printf("%d threads against the peak measured right after each pair (%.0f to %.0f GFLOP/s): median %.1f%%",
                pool.size(), *peak_lo, *peak_hi, pct_beside);
    if (recompute) std::printf(", %.1f%% in executed FLOPs", executed * pct_beside);
    std::printf("\n");
    if (steal_per_pair >= 0)
        std::printf("hypervisor steal during the timed pairs: %.1f ms per pair (all vCPUs, /proc/stat)\n", steal_per_pair);
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: bench_engine [--preset NAME] [--batch B] [--seq T] [--threads N] [--steps S]"
                 " [--recompute] [--dropout P] [--optimizer adamw|muon] [--profile] [--json] [--paired]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    std::string preset = "phonegpt";
    int batch = 32, seq = 0, threads = 2, steps = 10;
    bool recompute = false, json = false, profile = false, paired = false;
    float dropout = 0.0f;
    std::string optimizer;  // empty: the engine's pass only
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
        else if (a == "--profile") profile = true;
        else if (a == "--optimizer") optimizer = value();
        else if (a == "--paired") paired = true;
        else usage();
    }
    if (batch < 1 || steps < 1) usage();
    if (paired && (threads < 2 || profile || !optimizer.empty())) usage();
    if (!optimizer.empty() && optimizer != "adamw" && optimizer != "muon") usage();

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
        const StepInputs step_inputs{engine, params, grads, inputs, targets, batch, T, dropout};
        if (paired) {
            paired_scaling(cfg, step_inputs, recompute, pool, steps, json, preset);
            return 0;
        }

        std::vector<double> ms;
        double loss = 0.0, cpu_start = 0.0, steal_start = 0.0;
        for (int s = 0; s <= steps; ++s) {
            if (s == 1) {
                cpu_start = pg_bench::process_cpu_seconds();
                steal_start = steal_ms();
            }
            const double step_ms = timed_step(step_inputs, s, pool, &loss);
            if (s > 0) ms.push_back(step_ms);
        }
        const double cpu_ms = (pg_bench::process_cpu_seconds() - cpu_start) * 1e3 / steps;
        const double steal_ms_per_step = steal_per(steal_start, steal_ms(), steps);
        const double median_ms = median_of(ms), best_ms = *std::min_element(ms.begin(), ms.end());
        const double flops = step_flops(cfg, batch, T);
        const double gflops = flops / (median_ms * 1e-3) * 1e-9;
        const double extra_flops = recompute ? recompute_flops(cfg, batch, T) : 0.0;
        const double executed_gflops = (flops + extra_flops) / (median_ms * 1e-3) * 1e-9;
        const double rss_mb = double(pg_bench::status_kib("VmHWM")) / 1024.0;
        // The limit, measured now on the widest vector unit with the same number of threads.
        const std::vector<pg_bench::PeakUnit> units = pg_bench::peak_units();
        const double peak = pg_bench::measure_peak(units.front(), pool.size());
        if (!json) {
            std::printf("preset %s  B=%d T=%d  threads %d  recompute %s  dropout %.2f  kernels %s\n",
                        preset.c_str(), batch, T, pool.size(), recompute ? "on" : "off", double(dropout),
                        pg::kernels::active_arch_name());
            std::printf("train step (forward+backward): median %.1f ms, best %.1f ms over %d steps  (loss %.4f)\n",
                        median_ms, best_ms, steps, loss);
            std::printf("%.0f tokens/s; %.2f GFLOP per step -> %.0f GFLOP/s = %.1f%% of the measured %s peak "
                        "(%.0f GFLOP/s on %d threads)\n",
                        batch * T / (median_ms * 1e-3), flops * 1e-9, gflops, 100.0 * gflops / peak,
                        units.front().name.c_str(), peak, pool.size());
            if (recompute)
                std::printf("with the recomputed forward (%.2f GFLOP more): %.0f GFLOP/s executed = %.1f%% of the peak\n",
                            extra_flops * 1e-9, executed_gflops, 100.0 * executed_gflops / peak);
            // CPU time (all threads) per step is less sensitive to other processes on a shared machine.
            std::printf("CPU time per step (all threads, incl. gradient zeroing): %.1f ms\n", cpu_ms);
            if (steal_ms_per_step >= 0)
                std::printf("hypervisor steal during the timed steps: %.1f ms per step (all vCPUs, /proc/stat)\n",
                            steal_ms_per_step);
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
        const double fwd_median_ms = median_of(fwd_ms), fwd_best_ms = *std::min_element(fwd_ms.begin(), fwd_ms.end());
        TrainerFigures tf;
        if (!optimizer.empty())
            tf = time_trainer(cfg, batch, T, threads, recompute, dropout,
                              optimizer == "muon" ? PG_OPTIMIZER_MUON : PG_OPTIMIZER_ADAMW, steps, profile);
        const ProfileReport prof = !profile           ? ProfileReport{}
                                   : !optimizer.empty() ? tf.profile
                                                        : profile_steps(engine, pool, cfg, params, grads, adam_m, adam_v,
                                                                        inputs, targets, batch, T, dropout, steps);
        if (json) {
            pg::io::JsonObject j;
            j.str("preset", preset).integer("batch", batch).integer("seq", T).integer("threads", pool.size())
                .boolean("recompute", recompute).num("dropout", double(dropout))
                .str("kernels", pg::kernels::active_arch_name()).num("step_ms_median", median_ms)
                .num("step_ms_best", best_ms).num("tokens_per_s", batch * T / (median_ms * 1e-3))
                .num("gflop_per_step", flops * 1e-9).num("gflops", gflops).num("peak_gflops", peak)
                .num("fraction_of_peak", gflops / peak).num("recompute_gflop", extra_flops * 1e-9)
                .num("executed_fraction_of_peak", executed_gflops / peak).num("cpu_ms_per_step", cpu_ms)
                .num("steal_ms_per_step", steal_ms_per_step)
                .num("activation_mb", double(engine.activation_bytes()) / 1e6).num("peak_rss_mb", rss_mb)
                .num("forward_ms_median", fwd_median_ms).num("loss", loss);
            if (!optimizer.empty())
                j.str("optimizer", optimizer).num("trainer_step_ms_median", tf.median_ms)
                    .num("trainer_step_ms_best", tf.best_ms).num("trainer_extra_ms_median", tf.median_ms - median_ms)
                    .num("muon_ms_median", tf.muon_median_ms).num("muon_ms_best", tf.muon_best_ms)
                    .num("muon_gflop", tf.muon_gflop);
            if (profile) j.object("profile", prof.json);
            std::printf("%s\n", j.text().c_str());
        } else {
            if (!optimizer.empty()) {
                std::printf("trainer step (%s: sampling, zeroing, forward+backward, norm, clipping, optimizer): median "
                            "%.1f ms, best %.1f ms; %+.1f ms over forward+backward's median\n",
                            optimizer.c_str(), tf.median_ms, tf.best_ms, tf.median_ms - median_ms);
                if (optimizer == "muon")
                    std::printf("Muon update alone: median %.2f ms, best %.2f ms; %.2f GFLOP nominal -> %.0f GFLOP/s "
                                "(best)\n",
                                tf.muon_median_ms, tf.muon_best_ms, tf.muon_gflop, tf.muon_gflop / (tf.muon_best_ms * 1e-3));
            }
            std::printf("forward only (evaluation): median %.1f ms, best %.1f ms\n", fwd_median_ms, fwd_best_ms);
            std::fputs(prof.text.c_str(), stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_engine: %s\n", e.what());
        return 1;
    }
    return 0;
}
