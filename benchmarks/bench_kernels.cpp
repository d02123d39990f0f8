// Per-kernel speed at the shapes of a PhoneGPT training step and of a ~64M-parameter base:
// every GEMM of a linear layer (forward x W^T + b, input gradient dy W, weight gradient
// dy^T x), on one thread and on all threads, against Eigen's GEMM and as a fraction of the
// measured FMA peak (fma_peak.hpp); then the elementwise kernels in GB/s.
//
// Usage: bench_kernels [--json] [--threads N] [--suite phonegpt|64m|all] [--arch NAME]
//                      [--seconds S] [--no-eigen]
//   --arch picks a kernel table this CPU can run ("avx512bw", "fma3+avx2", "sse2",
//   "arm64+neon+fmla-lane", "arm64+neon", "reference"); default: the one dispatch chose.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/thread_pool.hpp"
#include "eigen_gemm.hpp"
#include "fma_peak.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/kernel_table.hpp"

namespace {

using pg::kernels::GemmArgs;
using pg::kernels::gemm_args;
using pg::kernels::KernelTable;
using Buffer = pg::AlignedBuffer<float>;

struct Options {
    bool json = false;
    int threads = 0;
    std::string suite = "all";
    std::string arch;
    double seconds = 0.15;
    bool eigen = true;
};

// A linear layer y = x W^T (+ b) with W [out, in], over the suite's B*T rows or `rows`.
struct Linear {
    const char* name;
    int out, in;
    bool bias;
    int rows = 0;
};

struct Suite {
    const char* name;
    const char* description;
    int rows;  // B * T
    std::vector<Linear> layers;
    int vocab;
    int64_t params;  // for the optimizer kernels
    int head_size;   // attention tiles: 64 queries x 128 keys x head_size
};

std::vector<Suite> suites() {
    return {
        {"phonegpt", "PhoneGPT: 6 layers, C=128, B*T=4096", 4096,
         {{"attn.qkv", 384, 128, true},
          {"attn.proj", 128, 128, true},
          {"mlp.fc", 512, 128, true},
          {"mlp.proj", 128, 512, true},
          // The tied head as the engine runs it: chunks of 512 rows, the 65 real tokens.
          {"lm_head", 65, 128, false, 512}},
         65,
         6 * (12 * 128 * 128 + 13 * 128) + 68 * 128 + 128 * 128 + 2 * 128,
         32},
        {"64m", "64M base: 9 layers, C=768, B*T=1024", 1024,
         {{"attn.qkv", 2304, 768, true},
          {"attn.proj", 768, 768, true},
          {"mlp.fc", 3072, 768, true},
          {"mlp.proj", 768, 3072, true},
          {"lm_head", 65, 768, false, 512}},
         65,
         int64_t(9) * (12 * 768 * 768 + 13 * 768) + 68 * 768 + 1024 * 768 + 2 * 768,
         64},
    };
}

void fill_random(Buffer& b, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = d(rng);
}

// Which clock a measurement uses: work on the calling thread alone is timed in its CPU time
// (other processes on a shared machine do not count against it), work spread over a pool in
// wall time (and by best_pool_cpu_time below).
enum class Clock { thread_cpu, wall };

// Best seconds per call of f over repeated batches filling about `budget` seconds.
template <class F>
double best_time(F&& f, double budget, Clock which = Clock::thread_cpu) {
    f();  // warm caches, page in, size per-thread buffers
    auto clock = [&] {
        return which == Clock::thread_cpu ? pg_bench::thread_cpu_seconds() : pg_bench::now_seconds();
    };
    double best = 1e30;
    const double end = pg_bench::now_seconds() + budget;
    int batch = 1;
    do {
        const double t0 = clock();
        for (int i = 0; i < batch; ++i) f();
        const double dt = (clock() - t0) / batch;
        best = std::min(best, dt);
        if (dt * batch < 0.01) batch *= 2;
    } while (pg_bench::now_seconds() < end);
    return best;
}

// What a call spread over `pool` would take with the cores to itself: the largest CPU time any
// pool thread spent in it (read on every thread before and after), best of repeated calls,
// less what the reading itself costs (the same measurement of an empty call). On a shared
// machine wall time also counts other processes' turns on the cores.
template <class F>
double best_pool_cpu_time_raw(F&& f, pg::ThreadPool& pool, double budget) {
    std::vector<double> before(std::size_t(pool.size())), after(std::size_t(pool.size()));
    auto stamp = [&](std::vector<double>& v) {
        pool.run_on_all([&](int t) { v[std::size_t(t)] = pg_bench::thread_cpu_seconds(); });
    };
    f();
    double best = 1e30;
    const double end = pg_bench::now_seconds() + budget;
    do {
        stamp(before);
        f();
        stamp(after);
        double slowest = 0.0;
        for (std::size_t t = 0; t < before.size(); ++t)
            slowest = std::max(slowest, after[t] - before[t]);
        best = std::min(best, slowest);
    } while (pg_bench::now_seconds() < end);
    return best;
}

template <class F>
double best_pool_cpu_time(F&& f, pg::ThreadPool& pool, double budget) {
    static const double overhead = best_pool_cpu_time_raw([] {}, pool, 0.05);
    const double raw = best_pool_cpu_time_raw(f, pool, budget);
    return raw > 4.0 * overhead ? raw - overhead : 0.0;  // 0: too short to tell
}

struct GemmResult {
    std::string suite, layer, op;
    int M, N, K;
    double gflops_1t, gflops_all, gflops_all_cpu, eigen_1t;
    bool per_thread;  // the engine runs one such product per thread at once
};

struct ElemResult {
    std::string suite, kernel, size;
    double gbytes_per_s, speedup_vs_reference;
};

// The peak the table's instruction set can reach (an SSE2 table is held to the SSE2 peak).
const pg_bench::PeakUnit* peak_unit_for(const std::string& arch) {
    static const std::vector<pg_bench::PeakUnit> units = pg_bench::peak_units();
    const char* want = arch == "avx512bw"    ? "avx512"
                       : arch == "fma3+avx2" ? "avx2+fma"
                       : arch == "sse2"      ? "sse2 (mul+add)"
                       : arch == "arm64+neon" ? "neon"
                                              : nullptr;
    for (const auto& u : units)
        if (want && u.name == want) return &u;
    return units.empty() ? nullptr : &units.front();
}

// Times one GEMM on one thread, on the pool, and with Eigen, and appends the row. per_thread:
// products the engine does not split but runs one per thread at once (a head chunk, an
// attention tile): "all threads" is then every pool thread running its own copy concurrently.
void time_gemm(const char* suite, const char* layer, const char* op, const GemmArgs& g,
               const KernelTable& t, pg::ThreadPool& pool, const Options& o,
               std::vector<GemmResult>& out, bool per_thread = false) {
    const double flops = 2.0 * g.M * g.N * g.K;
    GemmResult r{suite, layer, op, g.M, g.N, g.K, 0, 0, 0, 0, per_thread};
    r.gflops_1t = flops / best_time([&] { t.sgemm(g); }, o.seconds) * 1e-9;
    if (per_thread && pool.size() > 1) {
        std::vector<std::vector<float>> own(std::size_t(pool.size()),
                                            std::vector<float>(std::size_t(g.M) * g.ldc));
        // Repeated inside one region, as the engine loops over its chunks or (sequence, head)
        // pairs, so the region's start-up is not what is measured.
        const int reps = int(std::max(1.0, 5e7 / flops));
        auto each = [&] {
            pool.run_on_all([&](int th) {
                GemmArgs mine = g;
                mine.C = own[std::size_t(th)].data();
                for (int rep = 0; rep < reps; ++rep) t.sgemm(mine);
            });
        };
        const double all = flops * reps * pool.size();
        r.gflops_all = all / best_time(each, o.seconds, Clock::wall) * 1e-9;
        const double cpu = best_pool_cpu_time(each, pool, o.seconds);
        r.gflops_all_cpu = cpu > 0.0 ? all / cpu * 1e-9 : 0.0;
        out.push_back(r);
        return;
    }
    auto parallel = [&] { pg::kernels::sgemm_parallel_with(t, g, pool); };
    if (pool.size() == 1) {
        r.gflops_all = r.gflops_all_cpu = flops / best_time(parallel, o.seconds) * 1e-9;
    } else {
        r.gflops_all = flops / best_time(parallel, o.seconds, Clock::wall) * 1e-9;
        const double cpu = best_pool_cpu_time(parallel, pool, o.seconds);
        r.gflops_all_cpu = cpu > 0.0 ? flops / cpu * 1e-9 : 0.0;
    }
    if (o.eigen && pg_bench::eigen_available())
        r.eigen_1t = flops / best_time([&] { pg_bench::eigen_sgemm(g); }, o.seconds) * 1e-9;
    out.push_back(r);
}

void run_gemms(const Suite& s, const KernelTable& t, pg::ThreadPool& pool, const Options& o,
               std::vector<GemmResult>& out) {
    for (const Linear& l : s.layers) {
        // Activations x [rows, in], dy [rows, out]; weight W [out, in].
        const int rows = l.rows > 0 ? l.rows : s.rows;
        const bool per_thread = l.rows > 0;  // the head: one chunk of rows per thread
        Buffer x(std::size_t(rows) * l.in), dy(std::size_t(rows) * l.out),
            w(std::size_t(l.out) * l.in), bias(l.out), y(std::size_t(rows) * l.out),
            dx(std::size_t(rows) * l.in), dw(std::size_t(l.out) * l.in);
        fill_random(x, 1);
        fill_random(dy, 2);
        fill_random(w, 3, -0.1f, 0.1f);
        fill_random(bias, 4);
        // y = x W^T + b [rows, out]; dx = dy W [rows, in]; dW += dy^T x [out, in]
        GemmArgs forward = gemm_args(false, true, rows, l.out, l.in, x.data(), l.in, w.data(),
                                     l.in, y.data(), l.out);
        forward.bias = l.bias ? bias.data() : nullptr;
        time_gemm(s.name, l.name, "fwd x.W^T+b", forward, t, pool, o, out, per_thread);
        time_gemm(s.name, l.name, "dx = dy.W",
                  gemm_args(false, false, rows, l.in, l.out, dy.data(), l.out, w.data(), l.in,
                            dx.data(), l.in),
                  t, pool, o, out, per_thread);
        time_gemm(s.name, l.name, "dW += dy^T.x",
                  gemm_args(true, false, l.out, l.in, rows, dy.data(), l.out, x.data(), l.in,
                            dw.data(), l.in, 1.0f, 1.0f),
                  t, pool, o, out, per_thread);
    }
    // One attention tile as the engine computes it per (sequence, head): 64 queries x 128
    // keys, Q, K, V read from the [rows, 3C] qkv activations (row stride 3C); K^T is the
    // engine's per-(sequence, head) transposed copy [hs, T] (T = nk here).
    const int C = s.layers[1].in, hs = s.head_size, nq = 64, nk = 128;
    Buffer qkv(std::size_t(nk) * 3 * C), dqkv(std::size_t(nk) * 3 * C), S(std::size_t(nq) * nk),
        y(std::size_t(nq) * C), kt(std::size_t(hs) * nk);
    fill_random(qkv, 5);
    fill_random(S, 6, 0.0f, 0.02f);
    fill_random(kt, 7);
    const float *Q = qkv.data(), *V = qkv.data() + 2 * C;
    time_gemm(s.name, "attn.tile", "S = Q.K^T",
              gemm_args(false, false, nq, nk, hs, Q, 3 * C, kt.data(), nk, S.data(), nk), t, pool,
              o, out, true);
    time_gemm(s.name, "attn.tile", "Y += P.V",
              gemm_args(false, false, nq, hs, nk, S.data(), nk, V, 3 * C, y.data(), C, 1.0f, 1.0f),
              t, pool, o, out, true);
    time_gemm(s.name, "attn.tile", "dK += dS^T.Q",
              gemm_args(true, false, nk, hs, nq, S.data(), nk, Q, 3 * C, dqkv.data() + C, 3 * C,
                        1.0f, 1.0f),
              t, pool, o, out, true);
}

void run_elementwise(const Suite& s, const KernelTable& t, const Options& o,
                     std::vector<ElemResult>& out) {
    const KernelTable& ref = pg::kernels::reference_table();
    const int C = s.layers[0].in, rows = s.rows, V = s.vocab;
    // The optimizer kernels stream; 16M parameters (4 x 64 MB) show the same GB/s as 64M
    // without asking a phone for 1 GB.
    const int64_t act = int64_t(rows) * C, hidden = int64_t(rows) * 4 * C,
                  P = std::min<int64_t>(s.params, int64_t(1) << 24);
    Buffer x(act), y(act), dy(act), w(C), b(C), dw(C), db(C), mean(rows), rstd(rows);
    Buffer h(hidden), hg(hidden), dh(hidden), logits(int64_t(rows) * V), dlogits(int64_t(rows) * V);
    Buffer p(P), g(P), m(P), v(P);
    fill_random(x, 5, -2.0f, 2.0f);
    fill_random(dy, 6);
    fill_random(w, 7);
    fill_random(b, 8);
    fill_random(h, 9, -4.0f, 4.0f);
    fill_random(dh, 10);
    fill_random(logits, 11, -5.0f, 5.0f);
    fill_random(p, 12);
    fill_random(g, 13);
    t.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, C,
                        1e-5f);
    auto add = [&](const char* name, const std::string& size, double bytes, auto&& call) {
        const double fast = best_time([&] { call(t); }, o.seconds);
        const double slow = best_time([&] { call(ref); }, o.seconds / 3);
        out.push_back({s.name, name, size, bytes / fast * 1e-9, slow / fast});
    };
    const std::string act_size = std::to_string(rows) + "x" + std::to_string(C);
    add("layernorm_forward", act_size, 3.0 * 4 * act, [&](const KernelTable& k) {
        k.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows,
                            C, 1e-5f);
    });
    add("layernorm_backward", act_size, 4.0 * 4 * act, [&](const KernelTable& k) {
        k.layernorm_backward(y.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(),
                             mean.data(), rstd.data(), rows, C);
    });
    const std::string hid_size = std::to_string(rows) + "x" + std::to_string(4 * C);
    add("gelu_forward", hid_size, 2.0 * 4 * hidden,
        [&](const KernelTable& k) { k.gelu_forward(hg.data(), h.data(), hidden); });
    add("gelu_backward", hid_size, 4.0 * 4 * hidden,
        [&](const KernelTable& k) { k.gelu_backward(hg.data(), h.data(), dh.data(), hidden); });
    // Dropout at p = 0.1 (the PhoneGPT recipe) over the residual stream, as the engine's
    // embedding / backward (apply) and projection (residual) sites run it.
    pg::kernels::DropoutArgs drop;
    drop.seed = 1234;
    drop.stream = 17;
    drop.p = 0.1f;
    drop.scale = 1.0f / (1.0f - drop.p);
    add("dropout_apply", act_size, 2.0 * 4 * act,
        [&](const KernelTable& k) { k.dropout_apply(y.data(), x.data(), act, drop); });
    add("dropout_residual", act_size, 3.0 * 4 * act, [&](const KernelTable& k) {
        k.dropout_residual(y.data(), x.data(), dy.data(), act, drop);
    });
    add("softmax_cross_entropy", std::to_string(rows) + "x" + std::to_string(V),
        2.0 * 4 * rows * V, [&](const KernelTable& k) {
            for (int r = 0; r < rows; ++r)
                k.softmax_cross_entropy(logits.data() + int64_t(r) * V, V, r % V,
                                        dlogits.data() + int64_t(r) * V, 1.0f / rows);
        });
    const std::string p_size = std::to_string(P);
    add("axpy", p_size, 3.0 * 4 * P,
        [&](const KernelTable& k) { k.axpy(m.data(), 1e-3f, g.data(), P); });
    volatile float sink_f = 0.0f;
    volatile double sink_d = 0.0;
    add("dot", p_size, 2.0 * 4 * P,
        [&](const KernelTable& k) { sink_f = k.dot(p.data(), g.data(), P); });
    add("sum_squares", p_size, 4.0 * P,
        [&](const KernelTable& k) { sink_d = k.sum_squares(g.data(), P); });
    add("adamw", p_size, 7.0 * 4 * P, [&](const KernelTable& k) {
        k.adamw(p.data(), g.data(), m.data(), v.data(), P, 1e-9f, 0.9f, 0.95f, 1e-8f, 0.0f, 0.5f,
                0.5f);
    });
    (void)sink_f;
    (void)sink_d;
}

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (a == "--json") {
            o.json = true;
        } else if (a == "--no-eigen") {
            o.eigen = false;
        } else if (a == "--threads") {
            const char* v = next();
            if (!v) return false;
            o.threads = std::atoi(v);
        } else if (a == "--suite") {
            const char* v = next();
            if (!v) return false;
            o.suite = v;
        } else if (a == "--arch") {
            const char* v = next();
            if (!v) return false;
            o.arch = v;
        } else if (a == "--seconds") {
            const char* v = next();
            if (!v) return false;
            o.seconds = std::atof(v);
        } else {
            return false;
        }
    }
    return o.suite == "all" || o.suite == "phonegpt" || o.suite == "64m";
}

}  // namespace

// In phonegpt-bench this is a subcommand (phonegpt_bench.cpp).
#ifdef PG_BENCH_SUBCOMMANDS
int bench_kernels_main(int argc, char** argv) {
#else
int main(int argc, char** argv) {
#endif
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: %s [--json] [--threads N] [--suite phonegpt|64m|all] [--arch NAME] "
                     "[--seconds S] [--no-eigen]\n",
                     argv[0]);
        return 2;
    }
    const KernelTable* table = &pg::kernels::active_table();
    if (!o.arch.empty()) {
        table = nullptr;
        for (const KernelTable* t : pg::kernels::available_tables())
            if (o.arch == t->name) table = t;
        if (!table) {
            std::fprintf(stderr, "bench_kernels: this CPU cannot run kernel table \"%s\"\n",
                         o.arch.c_str());
            return 2;
        }
    }
    const int threads = o.threads > 0 ? o.threads : pg::ThreadPool::hardware_threads();
    pg::ThreadPool pool(threads);

    const pg_bench::PeakUnit* unit = peak_unit_for(table->name);
    const double peak_1t = unit ? pg_bench::measure_peak(*unit, 1) : 0.0;
    const double peak_all = unit ? (threads > 1 ? pg_bench::measure_peak(*unit, threads) : peak_1t)
                                 : 0.0;

    std::vector<GemmResult> gemms;
    std::vector<ElemResult> elems;
    std::vector<const char*> descriptions;
    for (const Suite& s : suites()) {
        if (o.suite != "all" && o.suite != s.name) continue;
        descriptions.push_back(s.description);
        run_gemms(s, *table, pool, o, gemms);
        run_elementwise(s, *table, o, elems);
    }
    auto frac = [](double v, double peak) { return peak > 0 ? 100.0 * v / peak : 0.0; };

    if (o.json) {
        pg::io::JsonObject out;
        out.str("arch", table->name).integer("threads", threads);
        pg_bench::add_pinning(out, pool);
        out.str("peak_unit", unit ? unit->name : "").num("peak_gflops_1_thread", peak_1t).num("peak_gflops_all_threads", peak_all);
        std::vector<pg::io::JsonObject> gemm_rows, elem_rows;
        for (const auto& r : gemms) {
            gemm_rows.emplace_back();
            gemm_rows.back().str("suite", r.suite).str("layer", r.layer).str("op", r.op).integer("M", r.M)
                .integer("N", r.N).integer("K", r.K).num("gflops_1_thread", r.gflops_1t)
                .num("gflops_all_threads", r.gflops_all).num("peak_fraction_all_threads", frac(r.gflops_all, peak_all) / 100.0)
                .num("gflops_all_threads_cpu_time", r.gflops_all_cpu).num("eigen_gflops_1_thread", r.eigen_1t)
                .boolean("one_per_thread", r.per_thread);
        }
        for (const auto& r : elems) {
            elem_rows.emplace_back();
            elem_rows.back().str("suite", r.suite).str("kernel", r.kernel).str("size", r.size)
                .num("gbytes_per_s", r.gbytes_per_s).num("speedup_vs_reference", r.speedup_vs_reference);
        }
        std::printf("%s\n", out.array("gemm", gemm_rows).array("elementwise", elem_rows).text().c_str());
        return 0;
    }

    std::printf("kernel table: %s, %d threads; CPU features: %s; core: %s\n", table->name,
                threads, pg::kernels::cpu_features(), pg::kernels::cpu_core());
    std::printf("%s\n", pg_bench::pinning_line(pool).c_str());
    std::printf("FMA peak (%s): %.1f GFLOP/s on 1 thread, %.1f on %d threads\n",
                unit ? unit->name.c_str() : "?", peak_1t, peak_all, threads);
    for (const char* d : descriptions) std::printf("suite: %s\n", d);
    std::printf("\n%-9s %-10s %-13s %5s %5s %5s | %8s %6s | %8s %6s %8s | %8s\n", "suite",
                "layer", "op", "M", "N", "K", "1 thr", "%peak", "all thr", "%peak", "cpu-est",
                "Eigen 1t");
    for (const auto& r : gemms)
        std::printf("%-9s %-10s %-13s %5d %5d %5d | %8.1f %5.0f%% | %8.1f %5.0f%% %8.1f | %8.1f\n",
                    r.suite.c_str(), r.layer.c_str(), r.op.c_str(), r.M, r.N, r.K, r.gflops_1t,
                    frac(r.gflops_1t, peak_1t), r.gflops_all, frac(r.gflops_all, peak_all),
                    r.gflops_all_cpu, r.eigen_1t);
    std::printf("(GFLOP/s. %%peak: of the measured FMA peak for the same thread count. all thr:\n"
                " wall time; cpu-est: flops / the longest CPU time of any pool thread in the call,\n"
                " what the pool reaches with its cores to itself (differs from all thr when\n"
                " other processes share the cores; 0.0 = the call is too short to tell).\n"
                " lm_head and attn.tile: the engine does not split these, it runs one per thread\n"
                " (a chunk of rows, a (sequence, head)); their all thr is every thread running\n"
                " its own copy at once.\n"
                " Eigen 0.0 = not run.)\n\n");
    std::printf("%-9s %-22s %-12s %9s %10s\n", "suite", "kernel (1 thread)", "size", "GB/s",
                "x reference");
    for (const auto& r : elems)
        std::printf("%-9s %-22s %-12s %9.2f %10.1f\n", r.suite.c_str(), r.kernel.c_str(),
                    r.size.c_str(), r.gbytes_per_s, r.speedup_vs_reference);
    return 0;
}
