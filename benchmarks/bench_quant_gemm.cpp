// The products through a block-quantized frozen weight (kernels/quant_gemm.hpp) at the linear
// layers of the 64M base and of SmolLM2-135M: the fp32 GEMM, the dequantize-while-packing GEMM
// (q8_0, q4_0) and the integer path (int8 activations x q8_0 / q4_0 codes), forward Y = X W^T
// and input gradient dX = dY W (the integer one through W's requantized transpose), on 1 and 2
// threads, in GFLOP-equivalent/s (2 M N K over the median time: the calling thread's CPU time on
// 1 thread, so other processes on a shared machine do not count; wall time on the pool), with
// each one's relative RMS error against the fp32 product of the same dequantized weight and
// against the fp32 product of the unquantized weight. Then the block-size study:
// the relative RMS error of the weight and of the integer product with blocks of 32, 64, 128
// values or one scale per row.
//
// Usage: bench_quant_gemm [--shape 64m|smollm2|all] [--rows 1024] [--threads N] [--reps 7]
//                         [--no-study]
// (phonegpt-bench quant ... runs the same; docs/quantization.md has figures and commands.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/half_float.hpp"
#include "kernels/quant_gemm.hpp"
#include "median.hpp"
#include "process_stats.hpp"

namespace {

using namespace pg::kernels;

struct Linear {
    const char* name;
    int out, in;
};

struct Shape {
    const char* name;
    std::vector<Linear> layers;
};

std::vector<Shape> shapes() {
    return {{"64m", {{"attn.qkv", 2304, 768}, {"attn.proj", 768, 768}, {"mlp.fc", 3072, 768}, {"mlp.proj", 768, 3072}}},
            {"smollm2",  // hidden 576, intermediate 1536, 9 heads and 3 kv heads of 64
             {{"q_proj", 576, 576}, {"k_proj", 192, 576}, {"o_proj", 576, 576}, {"gate_proj", 1536, 576},
              {"down_proj", 576, 1536}}}};
}

struct Options {
    std::string shape = "all";
    int rows = 1024;  // batch 4 x 256
    int threads = 2;
    int reps = 7;
    bool study = true;
};

std::vector<float> normals(std::size_t n, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// Trained weights have heavier tails than a normal: Student's t with 4 degrees of freedom.
std::vector<float> heavy_tailed(std::size_t n, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::student_t_distribution<float> d(4.0f);
    std::vector<float> v(n);
    for (float& x : v) x = scale * d(rng);
    return v;
}

double relative_rms(const std::vector<float>& got, const std::vector<float>& exact) {
    double err = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double d = double(got[i]) - exact[i];
        err += d * d;
        norm += double(exact[i]) * exact[i];
    }
    return std::sqrt(err / norm);
}

// Median seconds of reps calls (after one warm-up call), in the calling thread's CPU time or in
// wall time.
double median_seconds(const std::function<void()>& f, int reps, bool wall) {
    f();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const double t0 = wall ? pg_bench::now_seconds() : pg_bench::thread_cpu_seconds();
        f();
        t.push_back((wall ? pg_bench::now_seconds() : pg_bench::thread_cpu_seconds()) - t0);
    }
    return median_of(t);
}

struct Quantized {
    QuantFormat format;
    std::vector<unsigned char> bytes;
    std::vector<float> values;  // dequantized
};

Quantized quantize(QuantFormat f, const std::vector<float>& w, int rows, int cols) {
    Quantized q{f, std::vector<unsigned char>(quant_matrix_bytes(f, rows, cols)), std::vector<float>(w.size())};
    quantize_rows(f, w.data(), rows, cols, cols, q.bytes.data(), "bench weight");
    dequantize(f, q.bytes.data(), 0, int64_t(w.size()), q.values.data());
    return q;
}

void run_layer(const Linear& l, const Options& o, pg::ThreadPool& one, pg::ThreadPool& many) {
    const int M = o.rows, N = l.out, K = l.in;
    const double flops = 2.0 * M * N * K;
    const std::vector<float> W = normals(std::size_t(N) * K, 0.02f, 1), X = normals(std::size_t(M) * K, 1.0f, 2),
                             dY = normals(std::size_t(M) * N, 1e-3f, 3);
    const Quantized q8 = quantize(QuantFormat::q8_0, W, N, K), q4 = quantize(QuantFormat::q4_0, W, N, K);
    std::vector<unsigned char> q8t(quant_matrix_bytes(QuantFormat::q8_0, K, N));
    transpose_quantized(QuantFormat::q8_0, q8.bytes.data(), N, K, q8t.data());

    std::vector<float> y(std::size_t(M) * N), dx(std::size_t(M) * K);
    auto fp32 = [&](bool forward, const float* w, const Quantized* q, pg::ThreadPool& pool) {
        GemmArgs g = forward ? gemm_args(false, true, M, N, K, X.data(), K, w, K, y.data(), N)
                             : gemm_args(false, false, M, K, N, dY.data(), N, w, K, dx.data(), K);
        if (q) {
            g.B = nullptr;
            g.Bq = q->bytes.data();
            g.bq_format = q->format;
        }
        sgemm_parallel(g, pool);
    };
    auto integer = [&](bool forward, const void* w, QuantFormat f, pg::ThreadPool& pool) {
        QuantLinearArgs a;
        a.M = M, a.format = f, a.W = w;
        if (forward) a.N = N, a.K = K, a.X = X.data(), a.ldx = K, a.Y = y.data(), a.ldy = N;
        else a.N = K, a.K = N, a.X = dY.data(), a.ldx = N, a.Y = dx.data(), a.ldy = K;
        quant_linear(a, &pool);
    };
    // The exact products of each dequantized weight, fp32 on the fp32 path.
    std::vector<float> exact_y8, exact_y4, exact_dx8, exact_y, exact_dx;
    fp32(true, q8.values.data(), nullptr, one), exact_y8 = y;
    fp32(true, q4.values.data(), nullptr, one), exact_y4 = y;
    fp32(false, q8.values.data(), nullptr, one), exact_dx8 = dx;
    fp32(true, W.data(), nullptr, one), exact_y = y;
    fp32(false, W.data(), nullptr, one), exact_dx = dx;

    struct Row {
        const char* op;
        std::function<void(pg::ThreadPool&)> run;
        const std::vector<float>* out;
        const std::vector<float>* exact;
        bool forward;
    };
    const std::vector<Row> rows = {
        {"fwd fp32", [&](pg::ThreadPool& p) { fp32(true, W.data(), nullptr, p); }, nullptr, nullptr, true},
        {"fwd dequant q8_0", [&](pg::ThreadPool& p) { fp32(true, nullptr, &q8, p); }, &y, &exact_y8, true},
        {"fwd dequant q4_0", [&](pg::ThreadPool& p) { fp32(true, nullptr, &q4, p); }, &y, &exact_y4, true},
        {"fwd int8 x q8_0", [&](pg::ThreadPool& p) { integer(true, q8.bytes.data(), QuantFormat::q8_0, p); }, &y,
         &exact_y8, true},
        {"fwd int8 x q4_0", [&](pg::ThreadPool& p) { integer(true, q4.bytes.data(), QuantFormat::q4_0, p); }, &y,
         &exact_y4, true},
        {"dX  fp32", [&](pg::ThreadPool& p) { fp32(false, W.data(), nullptr, p); }, nullptr, nullptr, false},
        {"dX  dequant q8_0", [&](pg::ThreadPool& p) { fp32(false, nullptr, &q8, p); }, &dx, &exact_dx8, false},
        {"dX  int8 x q8_0^T", [&](pg::ThreadPool& p) { integer(false, q8t.data(), QuantFormat::q8_0, p); }, &dx,
         &exact_dx8, false},
    };
    for (const Row& r : rows) {
        const double t1 = median_seconds([&] { r.run(one); }, o.reps, false);
        const double err = r.out ? relative_rms(*r.out, *r.exact) : 0.0;
        const double err_fp32 = r.out ? relative_rms(*r.out, r.forward ? exact_y : exact_dx) : 0.0;
        const double tn = median_seconds([&] { r.run(many); }, o.reps, true);
        std::printf("  %-10s %4dx%-4d x %4d  %-18s %7.1f ms %7.1f GFLOP/s | %d threads %7.1f ms %7.1f GFLOP/s",
                    l.name, N, K, M, r.op, t1 * 1e3, flops / t1 * 1e-9, many.size(), tn * 1e3, flops / tn * 1e-9);
        if (r.out) std::printf(" | rel. error %.2e (vs fp32 W %.2e)", err, err_fp32);
        std::printf("\n");
    }
}

// The integer product's relative RMS error against the exact product of the dequantized weight
// (and the weight's own relative RMS quantization error), for int8 codes with blocks of `block`
// values along K and an fp16 scale each, or with block = K, one fp32 scale per row. The same
// rounding rules as quant_blocks.hpp / quant_gemm.hpp, in plain loops.
void block_study(const char* label, const std::vector<float>& W, int N, int K, const std::vector<float>& X, int M) {
    auto quantize_block = [](const float* x, int n, bool fp16_scale, float* q, float& scale) {
        float amax = 0.0f;
        for (int t = 0; t < n; ++t) amax = std::max(amax, std::fabs(x[t]));
        scale = amax / 127.0f;
        if (fp16_scale) scale = fp16_to_float(float_to_fp16(scale));
        for (int t = 0; t < n; ++t)
            q[t] = scale == 0.0f ? 0.0f : std::clamp(std::nearbyint(x[t] / scale), -127.0f, 127.0f);
    };
    for (int block : {32, 64, 128, K}) {
        const bool per_row = block == K;
        const int nb = K / block;
        std::vector<float> qw(W.size()), sw(std::size_t(N) * nb), wd(W.size());
        for (int j = 0; j < N; ++j)
            for (int b = 0; b < nb; ++b) {
                const std::size_t at = std::size_t(j) * K + b * block;
                quantize_block(&W[at], block, !per_row, &qw[at], sw[std::size_t(j) * nb + b]);
                for (int t = 0; t < block; ++t) wd[at + t] = qw[at + t] * sw[std::size_t(j) * nb + b];
            }
        std::vector<float> qx(X.size()), sx(std::size_t(M) * nb);
        for (int i = 0; i < M; ++i)
            for (int b = 0; b < nb; ++b)
                quantize_block(&X[std::size_t(i) * K + b * block], block, false, &qx[std::size_t(i) * K + b * block],
                               sx[std::size_t(i) * nb + b]);
        std::vector<float> got(std::size_t(M) * N), exact(got.size()), original(got.size());
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                double e = 0.0, s = 0.0, w = 0.0;
                for (int b = 0; b < nb; ++b) {
                    double d = 0.0;
                    for (int t = 0; t < block; ++t) {
                        const std::size_t k = std::size_t(b) * block + t;
                        d += double(qx[std::size_t(i) * K + k]) * qw[std::size_t(j) * K + k];
                        e += double(X[std::size_t(i) * K + k]) * wd[std::size_t(j) * K + k];
                        w += double(X[std::size_t(i) * K + k]) * W[std::size_t(j) * K + k];
                    }
                    s += d * sx[std::size_t(i) * nb + b] * sw[std::size_t(j) * nb + b];
                }
                got[std::size_t(i) * N + j] = float(s);
                exact[std::size_t(i) * N + j] = float(e);
                original[std::size_t(i) * N + j] = float(w);
            }
        std::printf("  %-28s %-22s weight %.2e  int8 product vs dequantized W %.2e, vs fp32 W %.2e  %.3f bytes/weight\n",
                    label, per_row ? "one fp32 scale per row" : (std::to_string(block) + " values, fp16 scale").c_str(),
                    relative_rms(wd, W), relative_rms(got, exact), relative_rms(got, original),
                    per_row ? 1.0 + 4.0 / K : 1.0 + 2.0 / block);
    }
}

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--no-study") {
            o.study = false;
            continue;
        }
        if (!v) return false;
        ++i;
        if (a == "--shape") o.shape = v;
        else if (a == "--rows") o.rows = std::atoi(v);
        else if (a == "--threads") o.threads = std::atoi(v);
        else if (a == "--reps") o.reps = std::atoi(v);
        else return false;
    }
    return (o.shape == "all" || o.shape == "64m" || o.shape == "smollm2") && o.rows > 0 && o.threads > 0 &&
           o.reps > 0;
}

}  // namespace

#ifdef PG_BENCH_SUBCOMMANDS
int bench_quant_gemm_main(int argc, char** argv) {
#else
int main(int argc, char** argv) {
#endif
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: %s [--shape 64m|smollm2|all] [--rows 1024] [--threads N] [--reps 7] [--no-study]\n",
                     argv[0]);
        return 2;
    }
    pg::ThreadPool one(1), many(o.threads);
    std::printf("fp32 table %s  int8 kernel %s  cpu: %s\n", active_arch_name(), int8_gemm_name(), cpu_features());
    for (const Shape& s : shapes()) {
        if (o.shape != "all" && o.shape != s.name) continue;
        std::printf("%s, %d rows: 1 thread | %d threads | error against the fp32 product of the dequantized weight\n",
                    s.name, o.rows, o.threads);
        for (const Linear& l : s.layers) run_layer(l, o, one, many);
    }
    if (o.study) {
        std::printf("block size (int8 codes, activations in the same blocks; 64 rows of x ~ N(0, 1), 256 x 768 W):\n");
        const std::vector<float> X = normals(std::size_t(64) * 768, 1.0f, 7);
        block_study("W ~ N(0, 0.02)", normals(std::size_t(256) * 768, 0.02f, 8), 256, 768, X, 64);
        block_study("W ~ 0.02 t(4) (heavy tails)", heavy_tailed(std::size_t(256) * 768, 0.02f, 9), 256, 768, X, 64);
    }
    return 0;
}
