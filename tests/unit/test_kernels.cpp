// Every kernel table this CPU can run (avx512bw / fma3+avx2 / sse2 / arm64+neon, and the scalar
// reference) against a double-precision truth or the scalar reference, on odd sizes so every
// vector tail and GEMM edge tile is exercised. Under qemu the same binary checks the lower x86
// paths and aarch64 (tests/cmake/kernels_dispatch.cmake), with PG_EXPECT_ARCH naming the table
// that dispatch must have chosen there.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/kernel_table.hpp"
#include "kernel_tables_under_test.hpp"
#include "kernels/reference/reference_kernels.hpp"
#include "phonegpt/phonegpt.h"

using pg::kernels::GemmArgs;
using pg::kernels::KernelTable;

namespace {

std::vector<float> random_vector(std::size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

const int kOddSizes[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 64, 65, 128 + 3, 257, 1000};

// op(A)[i, k] and op(B)[k, j] of a GemmArgs.
float op_a(const GemmArgs& g, int i, int k) {
    return g.trans_a ? g.A[int64_t(k) * g.lda + i] : g.A[int64_t(i) * g.lda + k];
}
float op_b(const GemmArgs& g, int k, int j) {
    return g.trans_b ? g.B[int64_t(j) * g.ldb + k] : g.B[int64_t(k) * g.ldb + j];
}

struct GemmCase {
    bool ta, tb;
    int M, N, K;
    int pad;  // extra leading-dimension elements
    float alpha, beta;
    bool bias;
};

// One case's arguments and random inputs (C starts as C0; NaN where beta = 0 must not read it).
struct GemmProblem {
    GemmArgs g;
    std::vector<float> A, B, C0, bias;
    explicit GemmProblem(const GemmCase& c) {
        g.trans_a = c.ta;
        g.trans_b = c.tb;
        g.M = c.M;
        g.N = c.N;
        g.K = c.K;
        g.alpha = c.alpha;
        g.beta = c.beta;
        g.lda = (c.ta ? c.M : c.K) + c.pad;
        g.ldb = (c.tb ? c.K : c.N) + c.pad;
        g.ldc = c.N + c.pad;
        A = random_vector(std::size_t(c.ta ? c.K : c.M) * g.lda + 1, 1 + c.M);
        B = random_vector(std::size_t(c.tb ? c.N : c.K) * g.ldb + 1, 2 + c.N);
        C0 = random_vector(std::size_t(c.M) * g.ldc, 3 + c.K);
        bias = random_vector(std::size_t(c.N), 4);
        if (c.beta == 0.0f)
            for (int i = 0; i < c.M; ++i)
                for (int j = 0; j < c.N; ++j) C0[std::size_t(i) * g.ldc + j] = std::nanf("");
        g.A = A.data();
        g.B = B.data();
        g.bias = c.bias ? bias.data() : nullptr;
    }
};

// One case's double-precision product and the bound a float GEMM must stay within,
// |C - truth| <= 2e-6 * (K + 8) * (|alpha| sum_k |a b| + |beta c| + |bias|). Computed once per
// case and shared by every table checked against it: under qemu this scalar loop in double costs
// about what a table's GEMM does.
struct GemmTruth {
    std::vector<double> value, tolerance;  // [M, N]
    GemmTruth(const GemmProblem& p, const GemmCase& c)
        : value(std::size_t(c.M) * c.N), tolerance(std::size_t(c.M) * c.N) {
        const GemmArgs& g = p.g;
        for (int i = 0; i < c.M; ++i) {
            for (int j = 0; j < c.N; ++j) {
                double acc = 0.0, mag = 0.0;
                for (int k = 0; k < c.K; ++k) {
                    double prod = double(op_a(g, i, k)) * double(op_b(g, k, j));
                    acc += prod;
                    mag += std::fabs(prod);
                }
                const double c_old = p.C0[std::size_t(i) * g.ldc + j];
                double truth = c.alpha * acc;
                double scale = std::fabs(c.alpha) * mag;
                if (c.beta != 0.0f) {
                    truth += c.beta * c_old;
                    scale += std::fabs(c.beta * c_old);
                }
                if (c.bias) {
                    truth += p.bias[j];
                    scale += std::fabs(p.bias[j]);
                }
                value[std::size_t(i) * c.N + j] = truth;
                tolerance[std::size_t(i) * c.N + j] = 2e-6 * (c.K + 8) * (scale + 1e-30);
            }
        }
    }
};

// C, computed by table t from the problem's C0, against the truth; padding columns untouched.
void check_against_truth(const KernelTable& t, const GemmCase& c, const GemmProblem& p,
                         const GemmTruth& truth, const std::vector<float>& C) {
    CAPTURE(t.name, c.ta, c.tb, c.M, c.N, c.K, c.pad, c.alpha, c.beta, c.bias);
    const int ldc = p.g.ldc;
    int bad = 0;
    for (int i = 0; i < c.M; ++i) {
        for (int j = 0; j < c.N; ++j) {
            const double got = C[std::size_t(i) * ldc + j];
            const double want = truth.value[std::size_t(i) * c.N + j];
            if (!(std::fabs(got - want) <= truth.tolerance[std::size_t(i) * c.N + j]) && bad++ < 5)
                FAIL_CHECK("C[" << i << "," << j << "] = " << got << ", expected " << want);
        }
        for (int j = c.N; j < ldc; ++j)
            if (std::memcmp(&C[std::size_t(i) * ldc + j], &p.C0[std::size_t(i) * ldc + j], 4) != 0 &&
                bad++ < 5)
                FAIL_CHECK("padding C[" << i << "," << j << "] was written");
    }
    CHECK(bad == 0);
}

// Runs case c with every table under test (serially) and checks each against one truth.
void check_gemm_on_every_table(const GemmCase& c) {
    GemmProblem prob(c);
    const GemmTruth truth(prob, c);
    for (auto* t : pg::test::kernel_tables_under_test()) {
        std::vector<float> C = prob.C0;
        GemmArgs g = prob.g;
        g.C = C.data();
        t->sgemm(g);
        check_against_truth(*t, c, prob, truth, C);
    }
}

// The GEMM shapes every table must get right: each layout, edge tiles in M and N, K across
// several K blocks, N across several N blocks, leading dimensions larger than the rows.
std::vector<GemmCase> gemm_cases() {
    std::vector<GemmCase> cases;
    const bool layouts[4][2] = {{false, true}, {false, false}, {true, false}, {true, true}};
    for (auto& l : layouts) {
        for (int M : {1, 7, 13, 50})
            for (int N : {1, 5, 17, 33, 68})
                for (int K : {1, 3, 19}) cases.push_back({l[0], l[1], M, N, K, 0, 1.0f, 0.0f, false});
        cases.push_back({l[0], l[1], 37, 45, 300, 3, 0.5f, 1.0f, true});   // two K blocks
        cases.push_back({l[0], l[1], 25, 67, 129, 1, 1.0f, -0.75f, false});
        cases.push_back({l[0], l[1], 200, 20, 40, 2, 1.0f, 1.0f, true});   // several row blocks
        cases.push_back({l[0], l[1], 9, 530, 21, 0, 2.0f, 0.0f, true});     // two N blocks
        cases.push_back({l[0], l[1], 12, 32, 0, 0, 1.0f, 0.5f, true});      // K = 0
        cases.push_back({l[0], l[1], 260, 20, 300, 0, 1.0f, 1.0f, true});  // TN: short K blocks
        // Narrow products (a rank-8 or rank-5 LoRA factor's): dot blocks, ragged in rows and K,
        // and with a transposed A the product's wide transpose (Gemm::dot_columns and
        // transposes_narrow).
        for (int N : {5, 8}) {
            cases.push_back({l[0], l[1], 71, N, 613, 1, 0.5f, 0.0f, true});
            cases.push_back({l[0], l[1], 70, N, 600, 0, 1.0f, 1.0f, false});
        }
    }
    return cases;
}

std::vector<const KernelTable*> tables() { return pg::test::kernel_tables_under_test(); }

}  // namespace

TEST_CASE("dispatch picks a table this CPU runs, honouring PG_EXPECT_ARCH and force_reference",
          "[kernels]") {
    const auto all = pg::kernels::available_tables();
    REQUIRE(all.size() >= 2);
    CHECK(std::string(all.back()->name) == "reference");
    const std::string active = pg::kernels::active_arch_name();
    bool found = false;
    for (auto* t : all) found = found || active == t->name;
    CHECK(found);
    // Set by the qemu tests (and usable by hand): the table dispatch must have chosen here.
    if (const char* expect = std::getenv("PG_EXPECT_ARCH")) CHECK(active == expect);
    if (!std::getenv("PG_KERNELS")) CHECK(active == all.front()->name);
    CHECK(std::string(pg_simd_arch()) == active);

    CHECK(std::string(pg::kernels::force_reference(true)) == active);
    CHECK(std::string(pg::kernels::active_arch_name()) == "reference");
    CHECK(std::string(pg::kernels::force_reference(false)) == "reference");
    CHECK(std::string(pg::kernels::active_arch_name()) == active);
}

TEST_CASE("sgemm matches a double-precision product on every table, layout and edge", "[kernels]") {
    for (const auto& c : gemm_cases()) check_gemm_on_every_table(c);
}

TEST_CASE("sgemm at the PhoneGPT layer shapes (reduced rows) on every table", "[kernels]") {
    // x W^T + b, dy W, dy^T x for W [out, in] with (out, in) of qkv, fc, proj and the head.
    const int shapes[][2] = {{384, 128}, {128, 512}, {68, 128}};
    const int rows = 61;
    for (auto& s : shapes) {
        const int out = s[0], in = s[1];
        check_gemm_on_every_table({false, true, rows, out, in, 0, 1.0f, 0.0f, true});
        check_gemm_on_every_table({false, false, rows, in, out, 0, 1.0f, 0.0f, false});
        check_gemm_on_every_table({true, false, out, in, rows, 0, 1.0f, 1.0f, false});
    }
}

TEST_CASE("sgemm_parallel is bitwise equal to sgemm for any thread count", "[kernels]") {
    pg::ThreadPool pool2(2), pool3(3);
    const GemmCase cases[] = {
        // Each above sgemm_parallel's 1.6e7-flop threshold, so the pool really splits them.
        {false, true, 203, 70, 600, 0, 1.0f, 0.0f, true},    // rows split (activations)
        {true, false, 40, 131, 1600, 0, 1.0f, 1.0f, false},  // columns split (weight gradient)
        {false, false, 57, 57, 2600, 2, 0.5f, 0.25f, false},
        // x W^T with a ragged N split by columns: the last N % W columns are dot products
        // (Gemm::dot_columns) in every thread's share alike.
        {false, true, 16, 131, 4000, 0, 1.0f, 0.5f, true},
        // alpha acc + bias with beta = 0 (the forward linear layers) and two K blocks, where a
        // compiler left to fuse multiply-adds itself fuses at some places of a tile only (and
        // xsimd's AVX-512 fma is x * y + z): a row split with tall blocks (a 1-vector last
        // panel), a column split by panels, a weight gradient's column split by vectors.
        {false, true, 203, 49, 900, 0, 0.75f, 0.0f, true},
        {false, false, 40, 531, 800, 0, 0.75f, 0.0f, true},
        {true, false, 40, 531, 800, 0, 0.75f, 0.0f, true},
        // Narrow products, rows split: x A^T and dy B (dot blocks), dy^T t (its transpose).
        {false, true, 1001, 8, 1100, 0, 1.0f, 0.0f, false},
        {false, false, 1001, 8, 1100, 1, 0.5f, 1.0f, false},
        {true, false, 1001, 8, 1100, 0, 0.5f, 1.0f, false},
        {false, false, 1003, 5, 1900, 0, 1.0f, 0.0f, true},
    };
    for (const auto& c : cases) {
        GemmProblem prob(c);
        const GemmTruth truth(prob, c);
        for (auto* t : tables()) {
            CAPTURE(t->name, c.M, c.N, c.K);
            GemmArgs g = prob.g;
            std::vector<float> serial = prob.C0, two = prob.C0, three = prob.C0;
            g.C = serial.data();
            t->sgemm(g);
            g.C = two.data();
            pg::kernels::sgemm_parallel_with(*t, g, pool2);
            g.C = three.data();
            pg::kernels::sgemm_parallel_with(*t, g, pool3);
            CHECK(std::memcmp(serial.data(), two.data(), serial.size() * 4) == 0);
            CHECK(std::memcmp(serial.data(), three.data(), serial.size() * 4) == 0);
            check_against_truth(*t, c, prob, truth, three);  // and so the serial and 2-thread C
        }
    }
}

TEST_CASE("sgemm epilogues apply the table's GELU to every element, serial and split", "[kernels]") {
    // gelu_out leaves C as the plain product and writes gelu(C) there; gelu_grad_input turns C
    // into gelu'(gelu_grad_input) * C. Both must equal the table's own gelu kernels on the plain
    // product, bit for bit, whatever the tile (edges, tall blocks, dot-product columns) or
    // thread split.
    pg::ThreadPool pool2(2);
    const GemmCase cases[] = {
        {false, true, 61, 512, 128, 0, 1.0f, 0.0f, true},   // the MLP's fc forward, ragged rows
        {false, false, 61, 512, 128, 0, 1.0f, 0.0f, false}, // its input gradient dy W
        {false, true, 37, 45, 300, 3, 0.5f, 1.0f, true},    // two K blocks, padding
        {false, true, 16, 131, 4000, 0, 1.0f, 0.0f, true},  // dot-product columns, split
        {false, false, 203, 70, 600, 0, 1.0f, 0.0f, false}, // split by rows
        {false, true, 5, 9, 0, 0, 1.0f, 0.5f, true},        // K = 0
        {false, true, 61, 101, 200, 0, 1.0f, 0.0f, true},   // tall blocks of a 1-vector panel
    };
    for (auto* t : tables()) {
        for (const auto& c : cases) {
            for (bool split : {false, true}) {
                CAPTURE(t->name, c.M, c.N, c.K, split);
                GemmProblem prob(c);
                GemmArgs& g = prob.g;
                auto run = [&](GemmArgs& args) {
                    if (split) pg::kernels::sgemm_parallel_with(*t, args, pool2);
                    else t->sgemm(args);
                };
                std::vector<float> plain = prob.C0;
                g.C = plain.data();
                run(g);

                std::vector<float> with_gelu = prob.C0, aux(prob.C0.size(), -3.0f);
                g.C = with_gelu.data();
                g.gelu_out = aux.data();
                run(g);
                CHECK(std::memcmp(with_gelu.data(), plain.data(), plain.size() * 4) == 0);
                int bad = 0;
                for (int i = 0; i < c.M; ++i) {
                    std::vector<float> expect(std::size_t(c.N));
                    t->gelu_forward(expect.data(), plain.data() + std::size_t(i) * g.ldc, c.N);
                    bad += std::memcmp(expect.data(), aux.data() + std::size_t(i) * g.ldc, 4 * std::size_t(c.N)) != 0;
                    for (int j = c.N; j < g.ldc; ++j) bad += aux[std::size_t(i) * g.ldc + j] != -3.0f;
                }
                CHECK(bad == 0);

                // aux now holds gelu(plain): use it as the GELU input of the backward epilogue.
                std::vector<float> times = prob.C0;
                g.C = times.data();
                g.gelu_out = nullptr;
                g.gelu_grad_input = aux.data();
                run(g);
                bad = 0;
                for (int i = 0; i < c.M; ++i) {
                    std::vector<float> expect(std::size_t(c.N), 0.0f);
                    t->gelu_backward(expect.data(), aux.data() + std::size_t(i) * g.ldc,
                                     plain.data() + std::size_t(i) * g.ldc, c.N);
                    bad += std::memcmp(expect.data(), times.data() + std::size_t(i) * g.ldc, 4 * std::size_t(c.N)) != 0;
                }
                CHECK(bad == 0);
            }
        }
    }
}

TEST_CASE("fast exp and tanh stay within their stated error bounds", "[kernels]") {
    // fast_math.hpp: exp relative error <= 4e-7 on [-87, 88]; tanh absolute error <= 6e-7.
    const int n = 200003;
    std::vector<float> x(n), y(n);
    for (auto* t : tables()) {
        CAPTURE(t->name);
        for (int i = 0; i < n; ++i) x[i] = -87.0f + 175.0f * float(i) / float(n - 1);
        t->vexp(y.data(), x.data(), n);
        double worst = 0.0;
        for (int i = 0; i < n; ++i) {
            double truth = std::exp(double(x[i]));
            worst = std::max(worst, std::fabs(y[i] - truth) / truth);
        }
        CHECK(worst <= 4e-7);
        for (int i = 0; i < n; ++i) x[i] = -12.0f + 24.0f * float(i) / float(n - 1);
        t->vtanh(y.data(), x.data(), n);
        worst = 0.0;
        for (int i = 0; i < n; ++i) worst = std::max(worst, std::fabs(y[i] - std::tanh(double(x[i]))));
        CHECK(worst <= 6e-7);
        if (std::string(t->name) == "reference") continue;  // std::exp overflows, as it should
        // Outside the range: no inf, no NaN, and the right limits.
        const float far[] = {-1000.0f, -100.0f, 100.0f, 1000.0f};
        float out[4];
        t->vexp(out, far, 4);
        CHECK(out[0] >= 0.0f);
        CHECK(out[0] < 1.2e-38f);
        CHECK(std::isfinite(out[3]));
        CHECK(out[3] > 1e38f);
        t->vtanh(out, far, 4);
        CHECK(out[0] == -1.0f);
        CHECK(out[3] == 1.0f);
    }
}

TEST_CASE("layernorm forward and backward match the reference", "[kernels]") {
    // Tolerance: 1e-5 relative to the magnitudes involved (float sums over C elements).
    for (auto* t : tables()) {
        for (int C : kOddSizes) {
            CAPTURE(t->name, C);
            const int rows = 3;
            auto x = random_vector(std::size_t(rows) * C, 21, -2.0f, 3.0f);
            auto w = random_vector(C, 22);
            auto b = random_vector(C, 23);
            std::vector<float> out(x.size()), mean(rows), rstd(rows);
            std::vector<float> out_r(x.size()), mean_r(rows), rstd_r(rows);
            t->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                                 rows, C, 1e-5f);
            pg::kernels::reference::layernorm_forward(out_r.data(), mean_r.data(), rstd_r.data(),
                                                      x.data(), w.data(), b.data(), rows, C, 1e-5f);
            for (int r = 0; r < rows; ++r) {
                CHECK(mean[r] == Approx(mean_r[r]).margin(1e-6).epsilon(1e-5));
                CHECK(rstd[r] == Approx(rstd_r[r]).epsilon(1e-4));
            }
            for (std::size_t i = 0; i < out.size(); ++i)
                CHECK(out[i] == Approx(out_r[i]).margin(1e-4).epsilon(1e-4));

            auto dout = random_vector(x.size(), 24);
            auto dx = random_vector(x.size(), 25), dw = random_vector(C, 26), db = random_vector(C, 27);
            auto dx_r = dx, dw_r = dw, db_r = db;
            t->layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                                  mean_r.data(), rstd_r.data(), rows, C);
            pg::kernels::reference::layernorm_backward(dx_r.data(), dw_r.data(), db_r.data(),
                                                       dout.data(), x.data(), w.data(),
                                                       mean_r.data(), rstd_r.data(), rows, C);
            for (std::size_t i = 0; i < dx.size(); ++i)
                CHECK(dx[i] == Approx(dx_r[i]).margin(1e-4).epsilon(1e-4));
            for (int i = 0; i < C; ++i) {
                CHECK(dw[i] == Approx(dw_r[i]).margin(1e-5).epsilon(1e-5));
                CHECK(db[i] == Approx(db_r[i]).margin(1e-6).epsilon(1e-6));
            }
        }
    }
}

TEST_CASE("gelu forward and backward match the reference", "[kernels]") {
    // GELU is x sigmoid(2u) with a fast sigmoid of absolute error <= 2e-7 (fast_math.hpp), so
    // gelu within 1e-6 * (1 + |x|), its gradient within 4e-6 * (1 + x^2) per unit of dout.
    for (auto* t : tables()) {
        for (int n : kOddSizes) {
            CAPTURE(t->name, n);
            auto x = random_vector(n, 31, -6.0f, 6.0f);
            std::vector<float> out(n), out_r(n);
            t->gelu_forward(out.data(), x.data(), n);
            pg::kernels::reference::gelu_forward(out_r.data(), x.data(), n);
            for (int i = 0; i < n; ++i)
                CHECK(std::fabs(out[i] - out_r[i]) <= 1e-6f * (1.0f + std::fabs(x[i])));
            auto dout = random_vector(n, 32);
            auto dx = random_vector(n, 33);
            auto dx_r = dx;
            t->gelu_backward(dx.data(), x.data(), dout.data(), n);
            pg::kernels::reference::gelu_backward(dx_r.data(), x.data(), dout.data(), n);
            for (int i = 0; i < n; ++i)
                CHECK(std::fabs(dx[i] - dx_r[i]) <= 4e-6f * (1.0f + x[i] * x[i]));
        }
    }
}

TEST_CASE("softmax and softmax_cross_entropy match the reference", "[kernels]") {
    // Fast exp (4e-7 relative) and float sums: loss within 2e-6 + 1e-6 |loss|, probabilities
    // and gradients within 1e-6 absolute (per unit of dscale).
    for (auto* t : tables()) {
        for (int V : kOddSizes) {
            CAPTURE(t->name, V);
            auto logits = random_vector(V, 41, -8.0f, 8.0f);
            const int target = V / 2;
            const float dscale = 0.25f;
            std::vector<float> d(V), d_r(V);
            float loss = t->softmax_cross_entropy(logits.data(), V, target, d.data(), dscale);
            float loss_r = pg::kernels::reference::softmax_cross_entropy(logits.data(), V, target,
                                                                         d_r.data(), dscale);
            CHECK(std::fabs(loss - loss_r) <= 2e-6f + 1e-6f * std::fabs(loss_r));
            for (int i = 0; i < V; ++i) CHECK(std::fabs(d[i] - d_r[i]) <= 1e-6f * dscale);
            // Without dlogits only the loss is computed.
            CHECK(t->softmax_cross_entropy(logits.data(), V, target, nullptr, dscale) == loss);
            // dlogits may be the logits themselves (the engine's head does it in place).
            std::vector<float> in_place = logits, in_place_r = logits;
            CHECK(t->softmax_cross_entropy(in_place.data(), V, target, in_place.data(), dscale) == loss);
            CHECK(std::memcmp(in_place.data(), d.data(), 4 * std::size_t(V)) == 0);
            CHECK(pg::kernels::reference::softmax_cross_entropy(in_place_r.data(), V, target, in_place_r.data(),
                                                                dscale) == loss_r);
            CHECK(std::memcmp(in_place_r.data(), d_r.data(), 4 * std::size_t(V)) == 0);

            std::vector<float> p(V), p_r(V);
            t->softmax(p.data(), logits.data(), V);
            pg::kernels::reference::softmax(p_r.data(), logits.data(), V);
            for (int i = 0; i < V; ++i) CHECK(std::fabs(p[i] - p_r[i]) <= 1e-6f);
            std::vector<float> inplace = logits;  // out may alias x
            t->softmax(inplace.data(), inplace.data(), V);
            CHECK(std::memcmp(inplace.data(), p.data(), 4 * std::size_t(V)) == 0);
        }
    }
}

TEST_CASE("row_max and row_exp_shift (causal softmax pieces) match the reference", "[kernels]") {
    // Fast exp: each value within 4e-7 relative (1e-6 allowed); the sum within 1e-6 relative
    // (float accumulation in another order than the reference's double). Entries past n are
    // hidden: a huge or NaN value there must change nothing, and comes back as exactly 0.
    for (auto* t : tables()) {
        for (int width : kOddSizes) {
            for (int n : {1, (width + 1) / 2, width}) {
                CAPTURE(t->name, width, n);
                auto x = random_vector(width, 43, -6.0f, 6.0f);
                x[std::size_t(n - 1) / 2] = 7.5f;  // the visible maximum
                for (int i = n; i < width; ++i)
                    x[i] = (i % 2) ? 1e30f : std::numeric_limits<float>::quiet_NaN();
                CHECK(t->row_max(x.data(), n, width) == 7.5f);
                const float shift = 7.5f;
                std::vector<float> e = x, e_r = x;
                const float sum = t->row_exp_shift(e.data(), n, width, shift);
                const float sum_r = pg::kernels::reference::row_exp_shift(e_r.data(), n, width, shift);
                double direct = 0.0;
                for (int i = 0; i < n; ++i) {
                    const double truth = std::exp(double(x[i]) - shift);
                    CHECK(std::fabs(e[i] - truth) <= 1e-6 * truth);
                    CHECK(std::fabs(e_r[i] - truth) <= 1e-6 * truth);
                    direct += e[i];
                }
                for (int i = n; i < width; ++i) CHECK(e[i] == 0.0f);
                CHECK(std::fabs(sum - sum_r) <= 1e-6f * sum_r);
                CHECK(std::fabs(double(sum) - direct) <= 1e-6 * direct);
            }
        }
    }
}

TEST_CASE("transpose copies every element exactly on every table", "[kernels]") {
    for (auto* t : tables()) {
        for (int rows : {1, 7, 16, 33, 128}) {
            for (int cols : {1, 5, 32}) {
                CAPTURE(t->name, rows, cols);
                const int64_t lds = 3 * cols + 2, ldd = rows + 3;
                auto src = random_vector(std::size_t(rows * lds), 47);
                std::vector<float> dst(std::size_t(cols * ldd), -7.0f);
                t->transpose(dst.data(), ldd, src.data(), lds, rows, cols);
                int bad = 0;
                for (int i = 0; i < rows; ++i)
                    for (int j = 0; j < cols; ++j) bad += dst[j * ldd + i] != src[i * lds + j];
                for (int j = 0; j < cols; ++j)  // padding of each dst row untouched
                    for (int64_t i = rows; i < ldd; ++i) bad += dst[j * ldd + i] != -7.0f;
                CHECK(bad == 0);
            }
        }
    }
}

TEST_CASE("axpy, dot, sum_squares and adamw match the reference", "[kernels]") {
    for (auto* t : tables()) {
        for (int n : kOddSizes) {
            CAPTURE(t->name, n);
            auto x = random_vector(n, 51), y = random_vector(n, 52);
            // axpy: one fused or unfused multiply-add per element, 1e-6 relative.
            auto y1 = y, y_r = y;
            t->axpy(y1.data(), 0.37f, x.data(), n);
            pg::kernels::reference::axpy(y_r.data(), 0.37f, x.data(), n);
            for (int i = 0; i < n; ++i) CHECK(y1[i] == Approx(y_r[i]).margin(1e-7).epsilon(1e-6));
            // dot: float sums in another order, within 1e-6 * n * sum |a b|.
            double mag = 0.0;
            for (int i = 0; i < n; ++i) mag += std::fabs(double(x[i]) * y[i]);
            CHECK(std::fabs(t->dot(x.data(), y.data(), n) -
                            pg::kernels::reference::dot(x.data(), y.data(), n)) <= 1e-6 * n * mag);
            // sum_squares accumulates in double: 1e-12 relative.
            CHECK(t->sum_squares(x.data(), n) ==
                  Approx(pg::kernels::reference::sum_squares(x.data(), n)).epsilon(1e-12));
            // adamw: same formula, float rounding in another order, 1e-5 relative.
            auto p = random_vector(n, 53), g = random_vector(n, 54);
            auto m = random_vector(n, 55), v = random_vector(n, 56, 0.0f, 0.01f);
            auto p_r = p, m_r = m, v_r = v;
            t->adamw(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
                     0.19f, 0.0975f);
            pg::kernels::reference::adamw(p_r.data(), g.data(), m_r.data(), v_r.data(), n, 1e-3f,
                                          0.9f, 0.95f, 1e-8f, 0.1f, 0.19f, 0.0975f);
            for (int i = 0; i < n; ++i) {
                CHECK(m[i] == Approx(m_r[i]).margin(1e-7).epsilon(1e-6));
                CHECK(v[i] == Approx(v_r[i]).margin(1e-9).epsilon(1e-6));
                CHECK(p[i] == Approx(p_r[i]).margin(1e-7).epsilon(1e-5));
            }
        }
    }
}
