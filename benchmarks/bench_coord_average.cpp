// Averaging adapters at the 64M "Ailoos" shape (GPT-2 vocabulary 50,257, 12 layers, width 512,
// 8 heads, context 256): N adapters of rank r on attn.c_attn, each method of
// lib/coordinator/average.hpp. Prints seconds, the peak memory the call added (VmHWM reset through
// /proc/self/clear_refs before each call, minus the resident size before it) and the reported
// error. Usage: bench_coord_average [n_adapters=100] [rank=8]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "lora/adapter.hpp"
#include "coordinator/average.hpp"
#include "model/params.hpp"
#include "process_stats.hpp"

using namespace pg::lora;

namespace {

std::vector<Adapter> make_adapters(const pg::Model& base, int n, int rank, bool freeze_a) {
    std::vector<Adapter> out;
    for (int i = 0; i < n; ++i) {
        LoraConfig cfg;
        cfg.rank = rank;
        cfg.freeze_a = freeze_a;
        cfg.init_seed = freeze_a ? 1 : uint64_t(100 + i);
        Adapter a = Adapter::create(base, cfg);
        pg::Rng rng(uint64_t(7 + i));
        for (const auto& m : a.linears())
            for (int64_t j = 0; j < rank * m.out; ++j) a.b(m)[j] = float(rng.uniform() - 0.5) * 0.01f;
        a.record().tokens = 4 * 256 * 30;
        out.push_back(std::move(a));
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 100;
    const int rank = argc > 2 ? std::atoi(argv[2]) : 8;
    if (argc > 3 || n < 1 || rank < 1) {
        std::fprintf(stderr, "usage: %s [n_adapters=100] [rank=8]\n", argv[0]);
        return 2;
    }
    pg::ModelConfig mc = pg::model_preset("tiny");
    mc.n_layer = 12, mc.n_head = 8, mc.n_embd = 512, mc.n_ctx = 256;
    mc.vocab_size = 50257, mc.padded_vocab_size = 50304;
    pg::Model base(mc);
    pg::init_gpt2_params(base.config(), base.params(), 1);
    const std::vector<Adapter> free_a = make_adapters(base, n, rank, false);
    const std::vector<Adapter> frozen = make_adapters(base, n, rank, true);
    std::printf("averaging %d adapters of rank %d on attn.c_attn, 64M shape (12 x 512), 1 thread\n", n, rank);
    std::printf("%-20s %9s %9s %10s %6s %11s %12s\n", "method (inputs)", "wall s", "cpu s", "peak +MiB", "rank",
                "rel. error", "svd residual");
    struct Run { AverageMethod method; const std::vector<Adapter>* in; int count; };
    const int cat_count = std::min(n, 512 / rank);  // cat's rank must stay <= the width
    const Run runs[] = {{AverageMethod::kFedAvgFactors, &free_a, n}, {AverageMethod::kSvd, &free_a, n},
                        {AverageMethod::kFrozenA, &frozen, n}, {AverageMethod::kConcat, &free_a, n},
                        {AverageMethod::kConcat, &free_a, cat_count}};
    for (const Run& r : runs) {
        std::vector<const Adapter*> in;
        std::vector<double> weights;
        for (int i = 0; i < r.count; ++i) in.push_back(&(*r.in)[i]), weights.push_back(1.0 + i % 5);
        const long before = pg_bench::status_kib("VmRSS");
        pg_bench::reset_peak_rss();
        AverageReport rep;
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = pg_bench::process_cpu_seconds();
        std::string refused;
        try {
            const Adapter out = average_adapters(in, weights, {r.method, rank}, &rep);
        } catch (const std::exception& e) {
            refused = e.what();
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu = pg_bench::process_cpu_seconds() - c0;
        const double peak = double(pg_bench::status_kib("VmHWM") - before) / 1024.0;
        const std::string label = std::string(average_method_name(r.method)) + " (" + std::to_string(r.count) + ")";
        if (!refused.empty())
            std::printf("%-20s refused: %.110s\n", label.c_str(), refused.c_str());
        else
            std::printf("%-20s %9.2f %9.2f %10.1f %6d %11.3g %12.3g\n", label.c_str(), s, cpu, peak, rep.rank,
                        rep.relative_error, rep.svd_residual);
    }
    return 0;
}
