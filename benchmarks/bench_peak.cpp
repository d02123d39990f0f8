// Measures the fp32 FMA peak of this machine, per core and with every core busy, for each
// vector unit it has (bench_kernels reports kernels as a fraction of the widest one).
// Usage: bench_peak [--json] [--threads N] [--seconds S]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "fma_peak.hpp"

#include "kernels/dispatch.hpp"

namespace {

// x86: the "model name". ARM: "Hardware" where the kernel gives it, and the distinct
// "CPU part" codes, which tell a phone's core types apart (e.g. 0xd05 Cortex-A55,
// 0xd41 Cortex-A78, 0xd44 Cortex-X1, 0xd46 Cortex-A510, 0xd47 Cortex-A710, 0xd4d Cortex-A715).
std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line, model, parts;
    while (std::getline(f, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos || colon + 2 > line.size()) continue;
        const std::string value = line.substr(colon + 2);
        if (model.empty() && (line.rfind("model name", 0) == 0 || line.rfind("Hardware", 0) == 0))
            model = value;
        if (line.rfind("CPU part", 0) == 0 && parts.find(value) == std::string::npos)
            parts += (parts.empty() ? "" : " ") + value;
    }
    if (!parts.empty()) model += (model.empty() ? "" : ", ") + std::string("CPU parts ") + parts;
    return model.empty() ? "unknown" : model;
}

// The features dispatch detected (aarch64: the ARMv8.2+ extensions from HWCAP); on x86 the
// vector units measured below.
std::string cpu_features() {
#if defined(__aarch64__)
    return pg::kernels::cpu_features();
#else
    std::string s;
    for (const auto& u : pg_bench::peak_units()) s += (s.empty() ? "" : " ") + u.name;
    return s;
#endif
}

}  // namespace

// In phonegpt-bench this is a subcommand (phonegpt_bench.cpp).
#ifdef PG_BENCH_SUBCOMMANDS
int bench_peak_main(int argc, char** argv) {
#else
int main(int argc, char** argv) {
#endif
    bool json = false;
    int threads = int(std::thread::hardware_concurrency());
    double seconds = 0.2;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--json")) {
            json = true;
        } else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = std::atof(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [--json] [--threads N] [--seconds S]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    const std::string model = cpu_model(), features = cpu_features();
    // The pinning measure_peak's pools get for `threads` (each builds its own, the same way).
    pg::ThreadPool probe(threads);
    probe.run_on_all([](int) {});
    pg::io::JsonObject out;
    if (json) {
        out.str("cpu", model).str("features", features).str("core", pg::kernels::cpu_core()).integer("threads", threads);
        pg_bench::add_pinning(out, probe);
    } else {
        std::printf("CPU: %s\nfeatures: %s\ncore (GEMM variant chosen for): %s\n%s\n"
                    "FMA peak (fp32, GFLOP/s), best of 5 runs of %.2f s:\n",
                    model.c_str(), features.c_str(), pg::kernels::cpu_core(),
                    pg_bench::pinning_line(probe).c_str(), seconds);
        std::printf("%-16s %12s %14s\n", "unit", "1 thread", (std::to_string(threads) + " threads").c_str());
    }
    std::vector<pg::io::JsonObject> units;
    for (const auto& u : pg_bench::peak_units()) {
        const double one = pg_bench::measure_peak(u, 1, seconds);
        const double all = threads > 1 ? pg_bench::measure_peak(u, threads, seconds) : one;
        if (json) {
            units.emplace_back();
            units.back().str("unit", u.name).integer("lanes", u.lanes).num("gflops_1_thread", one)
                .num("gflops_all_threads", all);
        } else {
            std::printf("%-16s %12.1f %14.1f\n", u.name.c_str(), one, all);
        }
    }
    if (json) std::printf("%s\n", out.array("units", units).text().c_str());
    return 0;
}
