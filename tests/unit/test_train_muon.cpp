// Muon (pg_train_config.optimizer = PG_OPTIMIZER_MUON): the Newton-Schulz iteration against a
// scalar double-precision reference, the update rule, which tensors it owns, and training with
// it (checkpoint resume is in test_checkpoint_resume.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/kernel_table.hpp"
#include "model/config.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "train/muon.hpp"
#include "train/optimizer.hpp"
#include "train/step_driver.hpp"
#include "train/trainer.hpp"

namespace {

using Matrix = std::vector<double>;  // row-major

// C[r x c] = A[r x k] B[k x c], plain loops in double.
Matrix matmul(const Matrix& a, const Matrix& b, int r, int k, int c) {
    Matrix out(std::size_t(r) * c, 0.0);
    for (int i = 0; i < r; ++i)
        for (int p = 0; p < k; ++p)
            for (int j = 0; j < c; ++j) out[std::size_t(i) * c + j] += a[std::size_t(i) * k + p] * b[std::size_t(p) * c + j];
    return out;
}

Matrix transposed(const Matrix& a, int r, int c) {
    Matrix out(a.size());
    for (int i = 0; i < r; ++i)
        for (int j = 0; j < c; ++j) out[std::size_t(j) * r + i] = a[std::size_t(i) * c + j];
    return out;
}

// The iteration as written in phonegpt.h, with nothing shared with the library: normalise,
// work on the wide side, five times X <- a X + (b A + c A^2) X with A = X X^T.
Matrix reference_ns5(const std::vector<float>& g, int rows, int cols) {
    const bool tall = rows > cols;
    const int m = std::min(rows, cols), n = std::max(rows, cols);
    Matrix x(g.begin(), g.end());
    if (tall) x = transposed(x, rows, cols);
    double sum = 0.0;
    for (double v : x) sum += v * v;
    for (double& v : x) v /= std::sqrt(sum) + 1e-7;
    for (int it = 0; it < 5; ++it) {
        const Matrix a = matmul(x, transposed(x, m, n), m, n, m);
        const Matrix a2 = matmul(a, a, m, m, m);
        Matrix poly(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) poly[i] = -4.7750 * a[i] + 2.0315 * a2[i];
        const Matrix px = matmul(poly, x, m, m, n);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = 3.4445 * x[i] + px[i];
    }
    return tall ? transposed(x, m, n) : x;
}

std::vector<float> pseudo_random(std::size_t n, uint32_t seed) {
    std::vector<float> v(n);
    uint32_t s = seed;
    for (float& x : v) {
        s = s * 1664525u + 1013904223u;
        x = float(int32_t(s >> 8) - (1 << 23)) / float(1 << 23);  // [-1, 1)
    }
    return v;
}

}  // namespace

TEST_CASE("Newton-Schulz: matches the scalar double-precision reference, tall, wide and square",
          "[train][muon]") {
    struct Shape {
        int rows, cols;
    };
    for (Shape s : {Shape{48, 16}, Shape{16, 40}, Shape{24, 24}, Shape{384, 128}}) {
        INFO(s.rows << " x " << s.cols);
        const std::vector<float> g = pseudo_random(std::size_t(s.rows) * s.cols, uint32_t(s.rows * 131 + s.cols));
        std::vector<float> out(g.size());
        pg::MuonScratch scratch;
        pg::newton_schulz5(g.data(), s.rows, s.cols, out.data(), scratch);
        const Matrix want = reference_ns5(g, s.rows, s.cols);
        double worst = 0.0;
        for (std::size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(double(out[i]) - want[i]));
        CHECK(worst < 2e-5);
    }
}

namespace {

// The iteration computed with full products (X X^T and A^2 as whole m x m GEMMs, what
// newton_schulz5 computed before it used their symmetry), on the active kernel table.
std::vector<float> full_product_ns5(const std::vector<float>& g, int rows, int cols) {
    namespace k = pg::kernels;
    const bool tall = rows > cols;
    const int m = std::min(rows, cols), n = std::max(rows, cols);
    std::vector<float> x(g.size()), y(g.size()), gram(std::size_t(m) * m), poly(gram.size());
    if (tall) k::transpose(x.data(), rows, g.data(), cols, rows, cols);
    else x = g;
    const float inv = float(1.0 / (std::sqrt(k::sum_squares(x.data(), int64_t(x.size()))) + 1e-7));
    for (float& v : x) v *= inv;
    for (int it = 0; it < pg::kMuonNsSteps; ++it) {
        k::sgemm(k::gemm_args(false, true, m, m, n, x.data(), n, x.data(), n, gram.data(), m));
        k::sgemm(k::gemm_args(false, false, m, m, m, gram.data(), m, gram.data(), m, poly.data(), m));
        for (std::size_t i = 0; i < poly.size(); ++i) poly[i] = pg::kMuonNsB * gram[i] + pg::kMuonNsC * poly[i];
        y = x;
        k::sgemm(k::gemm_args(false, false, m, n, m, poly.data(), m, x.data(), n, y.data(), n, 1.0f, pg::kMuonNsA));
        std::swap(x, y);
    }
    if (!tall) return x;
    std::vector<float> out(g.size());
    k::transpose(out.data(), cols, x.data(), rows, cols, rows);
    return out;
}

}  // namespace

TEST_CASE("Newton-Schulz: computing half of the symmetric products gives the full products' bits",
          "[train][muon]") {
    // 128 x 384 .. 512 x 128 are the PhoneGPT shape's matrices (panels of 32 rows); 96 x 96 has
    // three panels; 48 x 80 and 16 x 40 run the full products. The scalar reference table takes
    // the shapes up to 128 x 128 (four panels): its loops do not depend on the width, and the
    // wide shapes through it cost a minute under qemu-aarch64.
    struct Shape {
        int rows, cols;
    };
    const std::vector<Shape> all = {Shape{128, 384}, Shape{128, 128}, Shape{128, 512}, Shape{512, 128},
                                    Shape{96, 96},   Shape{64, 200},  Shape{48, 80},   Shape{16, 40}};
    for (const bool reference : {false, true}) {
        const char* previous = pg::kernels::force_reference(reference);
        for (Shape s : all) {
            if (reference && s.rows * s.cols > 128 * 200) continue;
            INFO(pg::kernels::active_arch_name() << ": " << s.rows << " x " << s.cols);
            const std::vector<float> g = pseudo_random(std::size_t(s.rows) * s.cols, uint32_t(s.rows * 7 + s.cols));
            std::vector<float> out(g.size());
            pg::MuonScratch scratch;
            pg::newton_schulz5(g.data(), s.rows, s.cols, out.data(), scratch);
            const std::vector<float> want = full_product_ns5(g, s.rows, s.cols);
            CHECK(std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) == 0);
        }
        pg::kernels::force_reference(std::string(previous) == "reference");
    }
}

TEST_CASE("every kernel table computes X X^T and A A symmetric bit for bit, a row panel as the full product",
          "[train][muon]") {
    // What newton_schulz5's half products rest on: element (i, j) and (j, i) get the same
    // products in the same order, and a panel's elements are computed as in the whole product.
    const int m = 128, n = 320, r0 = 32;
    const std::vector<float> x = pseudo_random(std::size_t(m) * n, 77);
    for (const pg::kernels::KernelTable* table : pg::kernels::available_tables()) {
        INFO(table->name);
        std::vector<float> gram(std::size_t(m) * m), sq(gram.size());
        table->sgemm(pg::kernels::gemm_args(false, true, m, m, n, x.data(), n, x.data(), n, gram.data(), m));
        table->sgemm(pg::kernels::gemm_args(false, false, m, m, m, gram.data(), m, gram.data(), m, sq.data(), m));
        int asymmetric = 0;
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < i; ++j) {
                asymmetric += std::memcmp(&gram[std::size_t(i) * m + j], &gram[std::size_t(j) * m + i], 4) != 0;
                asymmetric += std::memcmp(&sq[std::size_t(i) * m + j], &sq[std::size_t(j) * m + i], 4) != 0;
            }
        CHECK(asymmetric == 0);
        // Rows [r0, m) from column r0 on, as newton_schulz5's second panel computes them.
        std::vector<float> panel_gram(std::size_t(m) * m, -1.0f), panel_sq(panel_gram);
        table->sgemm(pg::kernels::gemm_args(false, true, m - r0, m - r0, n, x.data() + std::size_t(r0) * n, n,
                                            x.data() + std::size_t(r0) * n, n, panel_gram.data() + r0 * m + r0, m));
        table->sgemm(pg::kernels::gemm_args(false, false, m - r0, m - r0, m, gram.data() + r0 * m, m, gram.data() + r0,
                                            m, panel_sq.data() + r0 * m + r0, m));
        int differ = 0;
        for (int i = r0; i < m; ++i)
            for (int j = r0; j < m; ++j) {
                differ += std::memcmp(&gram[std::size_t(i) * m + j], &panel_gram[std::size_t(i) * m + j], 4) != 0;
                differ += std::memcmp(&sq[std::size_t(i) * m + j], &panel_sq[std::size_t(i) * m + j], 4) != 0;
            }
        CHECK(differ == 0);
    }
}

TEST_CASE("Newton-Schulz: singular values go to about 1 whatever their size", "[train][muon]") {
    // A 3 x 5 matrix with orthogonal rows of lengths 4, 2, 1 (singular values 4, 2, 1): the
    // iteration acts on each singular value alone, so row i comes out with length p(s_i / |G|)
    // where p is the quintic applied five times, and the direction of every row is kept.
    std::vector<float> g(15, 0.0f);
    g[0 * 5 + 0] = 4.0f;
    g[1 * 5 + 2] = 2.0f;
    g[2 * 5 + 4] = 1.0f;
    std::vector<float> out(15);
    pg::MuonScratch scratch;
    pg::newton_schulz5(g.data(), 3, 5, out.data(), scratch);
    const double norm = std::sqrt(16.0 + 4.0 + 1.0);
    const int col[3] = {0, 2, 4};
    const double sigma[3] = {4.0, 2.0, 1.0};
    for (int i = 0; i < 3; ++i) {
        double x = sigma[i] / (norm + 1e-7);
        for (int it = 0; it < 5; ++it) x = 3.4445 * x - 4.7750 * x * x * x + 2.0315 * x * x * x * x * x;
        CHECK(out[std::size_t(i) * 5 + col[i]] == Approx(x).epsilon(1e-5));
        CHECK(x > 0.6);
        CHECK(x < 1.25);
        for (int j = 0; j < 5; ++j)
            if (j != col[i]) CHECK(out[std::size_t(i) * 5 + j] == 0.0f);
    }
}

TEST_CASE("Muon update: momentum, Nesterov mix, scaled orthogonal step and weight decay", "[train][muon]") {
    const int rows = 12, cols = 8;
    std::vector<pg::MuonMatrix> mats = {{4, rows, cols}};  // offset 4: the floats before stay untouched
    const std::size_t n = 4 + std::size_t(rows) * cols + 3;
    std::vector<float> p = pseudo_random(n, 1), g = pseudo_random(n, 2), m = pseudo_random(n, 3);
    const std::vector<float> p0 = p, m0 = m;
    pg::MuonStep s;
    s.lr = 0.01f;
    s.momentum = 0.9f;
    s.weight_decay = 0.1f;
    std::vector<pg::MuonScratch> scratch;
    pg::ThreadPool pool(2);
    pg::muon_update(p.data(), g.data(), m.data(), mats, s, scratch, pool);

    std::vector<float> mixed(std::size_t(rows) * cols);
    for (std::size_t i = 0; i < mixed.size(); ++i) {
        const double buf = 0.9 * m0[4 + i] + 0.1 * g[4 + i];
        CHECK(m[4 + i] == Approx(buf).margin(1e-6));
        mixed[i] = float(0.1 * g[4 + i] + 0.9 * buf);
    }
    const Matrix ortho = reference_ns5(mixed, rows, cols);
    const double scale = 0.2 * std::sqrt(double(rows));
    for (std::size_t i = 0; i < mixed.size(); ++i)
        CHECK(p[4 + i] == Approx(p0[4 + i] - 0.01 * (scale * ortho[i] + 0.1 * p0[4 + i])).margin(1e-6));
    for (std::size_t i : {0, 1, 2, 3, int(n) - 3, int(n) - 2, int(n) - 1}) {
        CHECK(p[i] == p0[i]);
        CHECK(m[i] == m0[i]);
    }
}

TEST_CASE("Muon owns exactly the 2-D linear weights; AdamW keeps every other parameter", "[train][muon]") {
    const pg::ModelConfig cfg = pg::model_preset("tiny");
    const auto tensors = pg::build_tensor_table(cfg);
    const int64_t total = pg::count_params(cfg);
    const auto mats = pg::muon_matrices(tensors);
    const auto pieces = pg::optimizer_pieces(tensors, total, false, /*skip_linear_weights=*/true);
    std::vector<int> owner(std::size_t(total), 0);  // 1 AdamW, 2 Muon
    for (const auto& piece : pieces)
        for (int64_t i = 0; i < piece.count; ++i) owner[std::size_t(piece.offset + i)] += 1;
    for (const auto& mat : mats)
        for (int64_t i = 0; i < int64_t(mat.rows) * mat.cols; ++i) owner[std::size_t(mat.offset + i)] += 2;
    int linear = 0;
    for (const auto& e : tensors) {
        linear += e.is_linear_weight;
        for (int64_t i = 0; i < e.numel; ++i) REQUIRE(owner[std::size_t(e.offset + i)] == (e.is_linear_weight ? 2 : 1));
    }
    CHECK(int(mats.size()) == linear);
    CHECK(mats.front().rows == 3 * cfg.n_embd);  // attn.c_attn.weight is [3C, C]
    CHECK(mats.front().cols == cfg.n_embd);
}

TEST_CASE("training with Muon: learns, and keeps its momentum in adam_m (v only for AdamW's tensors)",
          "[train][muon]") {
    const pg::ModelConfig cfg = pg::model_preset("tiny");
    std::vector<int32_t> data(4000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = int32_t((i * i / 5 + i / 2) % cfg.vocab_size);
    auto run = [&](pg_optimizer optimizer, int threads, std::vector<float>& losses) {
        pg::Model model(cfg);
        pg::init_gpt2_params(model.config(), model.params(), 11);
        pg::TrainConfig tc;
        tc.batch_size = 4;
        tc.seq_len = 16;
        tc.lr_max = 2e-2f;
        tc.warmup_steps = 5;
        tc.total_steps = 80;
        tc.optimizer = optimizer;
        tc.n_threads = threads;
        pg::Trainer trainer(model, tc);
        trainer.set_data(data.data(), data.size());
        for (int i = 0; i < 80; ++i) losses.push_back(trainer.step().loss);
        const pg::TrainerState state = trainer.state();
        for (const auto& e : model.tensors()) {
            bool any_v = false, any_m = false;
            for (int64_t i = 0; i < e.numel; ++i) {
                any_v |= state.adam_v[std::size_t(e.offset + i)] != 0.0f;
                any_m |= state.adam_m[std::size_t(e.offset + i)] != 0.0f;
            }
            INFO(e.name);
            CHECK(any_m);
            if (optimizer == PG_OPTIMIZER_MUON) CHECK(any_v == !e.is_linear_weight);
        }
        return std::vector<float>(model.params(), model.params() + model.num_params());
    };
    std::vector<float> muon_losses, adamw_losses;
    const auto muon_params = run(PG_OPTIMIZER_MUON, 1, muon_losses);
    const auto adamw_params = run(PG_OPTIMIZER_ADAMW, 1, adamw_losses);
    CHECK(muon_params != adamw_params);
    // Single-batch losses are noisy: the mean of the last ten steps against the first step.
    auto tail_mean = [](const std::vector<float>& l) {
        double sum = 0.0;
        for (std::size_t i = l.size() - 10; i < l.size(); ++i) sum += l[i];
        return sum / 10.0;
    };
    INFO("muon " << muon_losses.front() << " -> " << tail_mean(muon_losses) << ", adamw " << adamw_losses.front()
                 << " -> " << tail_mean(adamw_losses));
    CHECK(tail_mean(muon_losses) < muon_losses.front() - 0.5);
}

TEST_CASE("Muon update: the same bits for any thread count", "[train][muon]") {
    const pg::ModelConfig cfg = pg::model_preset("tiny");
    const auto mats = pg::muon_matrices(pg::build_tensor_table(cfg));
    const std::size_t n = std::size_t(pg::count_params(cfg));
    const std::vector<float> g = pseudo_random(n, 9);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
        std::vector<float> p = pseudo_random(n, 8), m(n, 0.0f);
        std::vector<pg::MuonScratch> scratch;
        pg::ThreadPool pool(threads);
        pg::MuonStep s;
        s.lr = 1e-2f;
        for (int step = 0; step < 2; ++step) pg::muon_update(p.data(), g.data(), m.data(), mats, s, scratch, pool);
        if (first.empty()) first = p;
        else CHECK(std::memcmp(first.data(), p.data(), n * sizeof(float)) == 0);
    }
}

TEST_CASE("Muon update on the PhoneGPT shape's matrices: the same bits for any thread count", "[train][muon]") {
    // The preset's four block matrices (symmetric half products at m = 128), two layers' worth.
    const std::vector<pg::MuonMatrix> mats = {{0, 384, 128},      {49152, 128, 128},  {65536, 512, 128},
                                              {131072, 128, 512}, {196608, 384, 128}, {245760, 128, 128}};
    const std::size_t n = 262144;
    const std::vector<float> g = pseudo_random(n, 19);
    std::vector<float> first, first_m;
    for (int threads : {1, 2, 3}) {
        std::vector<float> p = pseudo_random(n, 18), m(n, 0.0f);
        std::vector<pg::MuonScratch> scratch;
        pg::ThreadPool pool(threads);
        pg::MuonStep s;
        s.lr = 1e-2f;
        s.weight_decay = 0.1f;
        for (int step = 0; step < 2; ++step) pg::muon_update(p.data(), g.data(), m.data(), mats, s, scratch, pool);
        if (first.empty()) {
            first = p;
            first_m = m;
        } else {
            INFO(threads << " threads");
            CHECK(std::memcmp(first.data(), p.data(), n * sizeof(float)) == 0);
            CHECK(std::memcmp(first_m.data(), m.data(), n * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("Muon is refused for adapter training, and bad Muon settings name their field", "[train][muon]") {
    const pg::ModelConfig cfg = pg::model_preset("tiny");
    pg::Model model(cfg);
    pg::init_gpt2_params(model.config(), model.params(), 3);
    std::vector<float> target(64, 0.0f);
    pg::FrozenBaseTarget ft;
    ft.values = target.data();
    ft.count = int64_t(target.size());
    ft.pieces = {pg::ParamPiece{0, 64, false}};
    pg::TrainConfig tc;
    tc.optimizer = PG_OPTIMIZER_MUON;
    try {
        pg::StepDriver driver(model, tc, ft);
        FAIL("a frozen-base driver accepted Muon");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("optimizer") != std::string::npos);
    }
}
