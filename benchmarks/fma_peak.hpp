// The machine's fp32 FMA peak, measured: chains of independent vector FMAs with enough
// accumulators to hide the FMA latency, on one thread and on every core at once. The widest
// vector unit the CPU and OS offer is used (AVX-512, AVX2+FMA, or NEON; SSE2 has no FMA, so
// there it is a multiply and an add per lane, counted as 2 flops). Shared by bench_peak and
// bench_kernels (which reports each kernel as a fraction of this peak).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/thread_pool.hpp"
#include "core/json.hpp"
#include "process_stats.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace pg_bench {

// Accumulator count: 12 covers latency 4 x throughput 2 (Zen 4, Intel) and 4 x 2 on big ARM
// cores with room to spare, and fits in 16 registers.
constexpr int kChains = 12;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) inline float fma_chains_avx512(int64_t iters) {
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    __m512 s = acc[0];
    for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}
__attribute__((target("avx2,fma"))) inline float fma_chains_avx2(int64_t iters) {
    __m256 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001f * c);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    float out[8];
    __m256 s = acc[0];
    for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}
inline float mul_add_chains_sse2(int64_t iters) {
    __m128 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm_set1_ps(0.001f * c);
    const __m128 a = _mm_set1_ps(0.999999f), b = _mm_set1_ps(1e-7f);
    for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], a), b);
    }
    float out[4];
    __m128 s = acc[0];
    for (int c = 1; c < kChains; ++c) s = _mm_add_ps(s, acc[c]);
    _mm_storeu_ps(out, s);
    return out[0] + out[3];
}
#elif defined(__aarch64__)
inline float fma_chains_neon(int64_t iters) {
    float32x4_t acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = vdupq_n_f32(0.001f * c);
    const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
    for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = vfmaq_f32(b, acc[c], a);
    }
    float32x4_t s = acc[0];
    for (int c = 1; c < kChains; ++c) s = vaddq_f32(s, acc[c]);
    return vaddvq_f32(s);
}
#endif

struct PeakUnit {
    std::string name;  // "avx512", "avx2+fma", "sse2 (mul+add)", "neon"
    int lanes;
    float (*run)(int64_t iters);
};

// The vector units to measure on this CPU, widest first.
inline std::vector<PeakUnit> peak_units() {
    std::vector<PeakUnit> units;
#if defined(__x86_64__)
    __builtin_cpu_init();
    // __builtin_cpu_supports checks the OS (XCR0) too for avx/avx512 in GCC 12's libgcc.
    if (__builtin_cpu_supports("avx512f")) units.push_back({"avx512", 16, &fma_chains_avx512});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        units.push_back({"avx2+fma", 8, &fma_chains_avx2});
    units.push_back({"sse2 (mul+add)", 4, &mul_add_chains_sse2});
#elif defined(__aarch64__)
    units.push_back({"neon", 4, &fma_chains_neon});
#endif
    return units;
}

// One burst of the chains of about `seconds` on every thread of a pool, its iteration count
// calibrated once on one thread. Run on the pool the kernels use, so the peak runs on the cores
// that pool is pinned to (PG_PIN_THREADS).
class PeakBurst {
public:
    PeakBurst(const PeakUnit& u, double seconds) : unit_(u) {
        for (;;) {
            const double t0 = now_seconds();
            volatile float sink = u.run(iters_);
            (void)sink;
            if (now_seconds() - t0 > seconds / 4 || iters_ > (int64_t(1) << 40)) break;
            iters_ *= 2;
        }
        iters_ *= 4;
    }
    // GFLOP/s of the pool's threads running one burst at once. One thread is timed in thread
    // CPU time, several in wall time (all must run at once).
    double gflops(pg::ThreadPool& pool) const {
        const bool cpu = pool.size() == 1;
        const double t0 = cpu ? thread_cpu_seconds() : now_seconds();
        pool.run_on_all([&](int) {
            volatile float s = unit_.run(iters_);
            (void)s;
        });
        const double dt = (cpu ? thread_cpu_seconds() : now_seconds()) - t0;
        return 2.0 * unit_.lanes * kChains * double(iters_) * pool.size() / dt * 1e-9;
    }

private:
    const PeakUnit& unit_;
    int64_t iters_ = 1 << 16;
};

// GFLOP/s of `threads` threads each running the chains for about `seconds`; best of `repeats`.
inline double measure_peak(const PeakUnit& u, int threads, double seconds = 0.2, int repeats = 5) {
    const PeakBurst burst(u, seconds);
    pg::ThreadPool pool(threads);
    double best = 0.0;
    for (int r = 0; r < repeats; ++r) best = std::max(best, burst.gflops(pool));
    return best;
}

// The pool's pinning (PG_PIN_THREADS=big) as bench_peak and bench_kernels print it: a line of
// text, and JSON members ("pinning": its text, "pinned_cpus": [{"cpu": N, "capacity": C}, ...]).
// Call it after the pool has run a region, so a refused sched_setaffinity shows.
inline std::string pinning_line(const pg::ThreadPool& pool) { return "threads: " + pool.pinning(); }

inline void add_pinning(pg::io::JsonObject& out, const pg::ThreadPool& pool) {
    std::vector<pg::io::JsonObject> cpus;
    for (const pg::CpuCore& c : pool.pinned_cores()) {
        cpus.emplace_back();
        cpus.back().integer("cpu", c.index).integer("capacity", c.capacity);
    }
    out.str("pinning", pool.pinning()).array("pinned_cpus", cpus);
}

}  // namespace pg_bench
