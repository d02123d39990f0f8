// The trainer's building blocks that do not need the model pass: the learning-rate schedule,
// the training configuration conversion, the batch sampler, and the optimizer (weight-decay
// pieces, gradient norm, clipping arithmetic, AdamW).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "kernels/dispatch.hpp"
#include "model/config.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "train/batch_sampler.hpp"
#include "train/optimizer.hpp"
#include "train/schedule.hpp"
#include "train/train_config.hpp"

namespace {
pg::TrainConfig schedule_config(pg_lr_schedule kind) {
    pg::TrainConfig c;
    c.schedule = kind;
    c.lr_max = 1e-3f;
    c.lr_min = 1e-4f;
    c.warmup_steps = 10;
    c.total_steps = 110;
    return c;
}
}  // namespace

TEST_CASE("cosine schedule: linear warm-up, cosine to lr_min, lr_min after", "[train][schedule]") {
    pg::TrainConfig c = schedule_config(PG_LR_COSINE);
    CHECK(pg::learning_rate(c, 0) == Approx(1e-4).epsilon(1e-6));   // lr_max * 1/10
    CHECK(pg::learning_rate(c, 4) == Approx(5e-4).epsilon(1e-6));   // lr_max * 5/10
    CHECK(pg::learning_rate(c, 9) == Approx(1e-3).epsilon(1e-6));   // end of warm-up
    CHECK(pg::learning_rate(c, 10) == Approx(1e-3).epsilon(1e-6));  // progress 0
    // progress 0.5: halfway between lr_max and lr_min.
    CHECK(pg::learning_rate(c, 60) == Approx(5.5e-4).epsilon(1e-6));
    // progress 0.25: lr_min + (lr_max - lr_min) * (1 + cos(pi/4)) / 2.
    CHECK(pg::learning_rate(c, 35) == Approx(1e-4 + 9e-4 * (1 + std::sqrt(0.5)) / 2).epsilon(1e-6));
    CHECK(pg::learning_rate(c, 110) == Approx(1e-4).epsilon(1e-6));
    CHECK(pg::learning_rate(c, 100000) == Approx(1e-4).epsilon(1e-6));
    // Monotone non-increasing after warm-up.
    for (int64_t s = 10; s < 120; ++s) CHECK(pg::learning_rate(c, s + 1) <= pg::learning_rate(c, s));
}

TEST_CASE("linear and constant schedules", "[train][schedule]") {
    pg::TrainConfig lin = schedule_config(PG_LR_LINEAR);
    CHECK(pg::learning_rate(lin, 9) == Approx(1e-3).epsilon(1e-6));
    CHECK(pg::learning_rate(lin, 60) == Approx(5.5e-4).epsilon(1e-6));
    CHECK(pg::learning_rate(lin, 85) == Approx(1e-3 - 0.75 * 9e-4).epsilon(1e-6));
    CHECK(pg::learning_rate(lin, 200) == Approx(1e-4).epsilon(1e-6));
    pg::TrainConfig con = schedule_config(PG_LR_CONSTANT);
    CHECK(pg::learning_rate(con, 0) == Approx(1e-4).epsilon(1e-6));
    CHECK(pg::learning_rate(con, 10) == Approx(1e-3).epsilon(1e-6));
    CHECK(pg::learning_rate(con, 1000) == Approx(1e-3).epsilon(1e-6));
    // No warm-up: lr_max at step 0.
    pg::TrainConfig now = schedule_config(PG_LR_COSINE);
    now.warmup_steps = 0;
    CHECK(pg::learning_rate(now, 0) == Approx(1e-3).epsilon(1e-6));
}

TEST_CASE("dropout ramp: 0 at the first step, linear to the rate, the rate from the ramp's end", "[train][schedule]") {
    pg::TrainConfig c;
    c.dropout = 0.1f;
    CHECK(pg::dropout_rate(c, 0) == 0.1f);  // no ramp: the rate from the first step
    CHECK(pg::dropout_rate(c, 5000) == 0.1f);
    c.dropout_ramp_steps = 3000;
    CHECK(pg::dropout_rate(c, 0) == 0.0f);
    CHECK(pg::dropout_rate(c, 1500) == float(0.1 * 0.5));
    CHECK(pg::dropout_rate(c, 2999) == float(double(0.1f) * 2999.0 / 3000.0));
    CHECK(pg::dropout_rate(c, 3000) == 0.1f);
    CHECK(pg::dropout_rate(c, 100000) == 0.1f);
    for (int64_t s = 0; s < 3100; ++s) CHECK(pg::dropout_rate(c, s + 1) >= pg::dropout_rate(c, s));
    c.dropout = 0.0f;  // a ramp to 0 is no dropout at all
    CHECK(pg::dropout_rate(c, 10) == 0.0f);
}

TEST_CASE("train config: C round trip, defaults for fields the caller's struct lacks", "[train][config]") {
    pg_train_config c = pg::train_config_to_c(pg::TrainConfig{});
    CHECK(c.struct_size == sizeof c);
    CHECK(c.batch_size == 32);
    CHECK(c.schedule == PG_LR_COSINE);
    CHECK(c.beta2 == 0.95f);
    CHECK(c.grad_clip == 1.0f);
    CHECK(c.optimizer == PG_OPTIMIZER_ADAMW);
    CHECK(c.muon_momentum == 0.95f);
    CHECK(c.muon_lr_scale == 1.0f);
    CHECK(c.dropout_ramp_steps == 0);
    c.batch_size = 7;
    c.dropout_ramp_steps = 3000;
    c.optimizer = PG_OPTIMIZER_MUON;
    c.muon_lr_scale = 2.0f;
    c.lr_max = 3e-3f;
    c.seed = 99;
    c.n_threads = 2;
    pg::TrainConfig t = pg::train_config_from_c(c);
    CHECK(t.batch_size == 7);
    CHECK(t.lr_max == 3e-3f);
    CHECK(t.seed == 99);
    CHECK(t.n_threads == 2);
    CHECK(t.optimizer == PG_OPTIMIZER_MUON);
    CHECK(t.muon_lr_scale == 2.0f);
    CHECK(t.dropout_ramp_steps == 3000);
    pg_train_config back = pg::train_config_to_c(t);
    CHECK(std::memcmp(&back, &c, sizeof c) == 0);

    // An older caller's struct that ends after lr_min: the rest are defaults.
    c.struct_size = uint32_t(offsetof(pg_train_config, lr_min) + sizeof(float));
    c.seed = 5;
    CHECK(pg::train_config_from_c(c).seed == pg::TrainConfig{}.seed);
}

TEST_CASE("train config: every bad field is rejected with its name", "[train][config]") {
    struct Case {
        const char* field;
        void (*spoil)(pg_train_config&);
    };
    const Case cases[] = {
        {"batch_size", [](pg_train_config& c) { c.batch_size = 0; }},
        {"seq_len", [](pg_train_config& c) { c.seq_len = -1; }},
        {"grad_accum_steps", [](pg_train_config& c) { c.grad_accum_steps = 0; }},
        {"schedule", [](pg_train_config& c) { c.schedule = static_cast<pg_lr_schedule>(7); }},
        {"lr_max", [](pg_train_config& c) { c.lr_max = -1e-3f; }},
        {"lr_max", [](pg_train_config& c) { c.lr_max = NAN; }},
        {"lr_min", [](pg_train_config& c) { c.lr_min = -1.0f; }},
        {"lr_min", [](pg_train_config& c) { c.lr_min = 1.0f; }},  // above lr_max
        {"warmup_steps", [](pg_train_config& c) { c.warmup_steps = -1; }},
        {"total_steps", [](pg_train_config& c) { c.total_steps = 0; }},
        {"beta1", [](pg_train_config& c) { c.beta1 = 1.0f; }},
        {"beta2", [](pg_train_config& c) { c.beta2 = -0.1f; }},
        {"eps", [](pg_train_config& c) { c.eps = 0.0f; }},
        {"weight_decay", [](pg_train_config& c) { c.weight_decay = -0.1f; }},
        {"decay_embeddings", [](pg_train_config& c) { c.decay_embeddings = 2; }},
        {"grad_clip", [](pg_train_config& c) { c.grad_clip = INFINITY; }},
        {"dropout", [](pg_train_config& c) { c.dropout = 1.0f; }},
        {"n_threads", [](pg_train_config& c) { c.n_threads = 100000; }},
        {"optimizer", [](pg_train_config& c) { c.optimizer = static_cast<pg_optimizer>(2); }},
        {"muon_momentum", [](pg_train_config& c) { c.muon_momentum = 1.0f; }},
        {"muon_momentum", [](pg_train_config& c) { c.muon_momentum = NAN; }},
        {"muon_lr_scale", [](pg_train_config& c) { c.muon_lr_scale = 0.0f; }},
        {"muon_lr_scale", [](pg_train_config& c) { c.muon_lr_scale = 2e3f; }},
        {"dropout_ramp_steps", [](pg_train_config& c) { c.dropout_ramp_steps = -1; }},
        {"dropout_ramp_steps", [](pg_train_config& c) { c.dropout_ramp_steps = (1 << 30) + 1; }},
    };
    for (const Case& k : cases) {
        pg_train_config c = pg::train_config_to_c(pg::TrainConfig{});
        k.spoil(c);
        try {
            pg::train_config_from_c(c);
            FAIL("accepted a bad " << k.field);
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_INVALID_ARGUMENT);
            CHECK(std::string(e.what()).find(k.field) != std::string::npos);
        }
    }
}

TEST_CASE("batch sampler: windows of T+1 tokens, targets shifted by one, resumable", "[train][sampler]") {
    std::vector<int32_t> data(1000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = int32_t(i);  // token = its position
    const int B = 8, T = 16;
    pg::BatchSampler s(1234);
    std::vector<int32_t> in(B * T), tgt(B * T);
    std::vector<int32_t> first_offsets;
    for (int round = 0; round < 50; ++round) {
        s.sample(data.data(), data.size(), B, T, in.data(), tgt.data());
        for (int b = 0; b < B; ++b) {
            int32_t start = in[b * T];
            REQUIRE(start >= 0);
            REQUIRE(start + T + 1 <= int32_t(data.size()));
            for (int t = 0; t < T; ++t) {
                REQUIRE(in[b * T + t] == start + t);
                REQUIRE(tgt[b * T + t] == start + t + 1);
            }
            if (round == 0) first_offsets.push_back(start);
        }
    }
    // Same seed, same offsets; a state copy continues the same sequence.
    pg::BatchSampler again(1234);
    again.sample(data.data(), data.size(), B, T, in.data(), tgt.data());
    for (int b = 0; b < B; ++b) CHECK(in[b * T] == first_offsets[b]);
    uint64_t st[4];
    again.get_state(st);
    pg::BatchSampler copy(0);
    copy.set_state(st);
    std::vector<int32_t> in2(B * T), tgt2(B * T);
    again.sample(data.data(), data.size(), B, T, in.data(), tgt.data());
    copy.sample(data.data(), data.size(), B, T, in2.data(), tgt2.data());
    CHECK(in == in2);
    CHECK(tgt == tgt2);
    // A different seed gives different offsets.
    pg::BatchSampler other(1235);
    other.sample(data.data(), data.size(), B, T, in.data(), tgt.data());
    bool differs = false;
    for (int b = 0; b < B; ++b) differs |= in[b * T] != first_offsets[b];
    CHECK(differs);
}

TEST_CASE("batch sampler reaches both ends of the data", "[train][sampler]") {
    // 20 tokens, T = 16: offsets 0..3 only; all four must appear.
    std::vector<int32_t> data(20);
    for (size_t i = 0; i < data.size(); ++i) data[i] = int32_t(i);
    pg::BatchSampler s(7);
    std::vector<int32_t> in(16), tgt(16);
    bool seen[4] = {false, false, false, false};
    for (int i = 0; i < 200; ++i) {
        s.sample(data.data(), data.size(), 1, 16, in.data(), tgt.data());
        REQUIRE(in[0] >= 0);
        REQUIRE(in[0] <= 3);
        seen[in[0]] = true;
    }
    for (bool b : seen) CHECK(b);
    CHECK_THROWS_AS(s.sample(data.data(), 16, 1, 16, in.data(), tgt.data()), pg::Error);
}

TEST_CASE("weight decay pieces cover the parameters and decay only linear weights", "[train][adamw]") {
    pg::ModelConfig cfg = pg::model_preset("tiny");
    auto tensors = pg::build_tensor_table(cfg);
    const int64_t total = pg::count_params(cfg);
    for (bool decay_embeddings : {false, true}) {
        auto pieces = pg::optimizer_pieces(tensors, total, decay_embeddings);
        std::vector<int> decayed(size_t(total), -1);
        int64_t pos = 0;
        for (const auto& p : pieces) {
            REQUIRE(p.offset == pos);
            REQUIRE(p.count > 0);
            REQUIRE(p.offset / pg::kOptimizerBlock == (p.offset + p.count - 1) / pg::kOptimizerBlock);
            for (int64_t i = 0; i < p.count; ++i) decayed[size_t(p.offset + i)] = p.decay;
            pos += p.count;
        }
        REQUIRE(pos == total);
        for (const auto& e : tensors) {
            const bool embedding = e.kind == pg::kWte || e.kind == pg::kWpe;
            const bool want = e.is_linear_weight || (decay_embeddings && embedding);
            for (int64_t i = 0; i < e.numel; ++i) REQUIRE(decayed[size_t(e.offset + i)] == int(want));
        }
    }
}

TEST_CASE("the linear weights are exactly the four matrices of each block", "[train][adamw]") {
    auto tensors = pg::build_tensor_table(pg::model_preset("tiny"));
    int linear = 0;
    for (const auto& e : tensors) {
        auto ends = [&](const std::string& suffix) {
            return e.name.size() >= suffix.size() &&
                   e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) == 0;
        };
        bool want = ends("attn.c_attn.weight") || ends("attn.c_proj.weight") ||
                    ends("mlp.c_fc.weight") || ends("mlp.c_proj.weight");
        CHECK(e.is_linear_weight == want);
        linear += want;
    }
    CHECK(linear == 4 * 2);
}

TEST_CASE("AdamW update: weight decay only where intended, bias-corrected first step", "[train][adamw]") {
    pg::ModelConfig cfg = pg::model_preset("tiny");
    auto tensors = pg::build_tensor_table(cfg);
    const int64_t n = pg::count_params(cfg);
    auto pieces = pg::optimizer_pieces(tensors, n, false);
    std::vector<float> p(n, 1.0f), g(n, 0.0f), m(n, 0.0f), v(n, 0.0f);
    pg::ThreadPool pool(2);
    pg::AdamWStep s;
    s.lr = 0.1f;
    s.weight_decay = 0.5f;
    s.t = 1;
    // Zero gradient: only decayed weights move, by lr * wd * p.
    pg::adamw_update(p.data(), g.data(), m.data(), v.data(), pieces, s, pool);
    for (const auto& e : tensors) {
        float want = e.is_linear_weight ? 1.0f - 0.1f * 0.5f : 1.0f;
        for (int64_t i = 0; i < e.numel; ++i) REQUIRE(p[size_t(e.offset + i)] == Approx(want));
    }
    // First step with gradient g: bias-corrected Adam moves each weight by ~lr * sign(g).
    std::fill(p.begin(), p.end(), 0.0f);
    std::fill(m.begin(), m.end(), 0.0f);
    std::fill(v.begin(), v.end(), 0.0f);
    for (int64_t i = 0; i < n; ++i) g[size_t(i)] = (i % 3 == 0) ? -0.25f : 2.0f;
    pg::adamw_update(p.data(), g.data(), m.data(), v.data(), pieces, s, pool);
    for (int64_t i = 0; i < n; ++i) REQUIRE(p[size_t(i)] == Approx(g[size_t(i)] > 0 ? -0.1f : 0.1f).epsilon(1e-5));
}

TEST_CASE("global gradient norm: exact, and the same bits for any thread count", "[train][clip]") {
    const int64_t n = 3 * pg::kOptimizerBlock + 123;
    std::vector<float> g(n);
    double want = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        g[size_t(i)] = float(std::sin(double(i)) * 0.01);
        want += double(g[size_t(i)]) * double(g[size_t(i)]);
    }
    want = std::sqrt(want);
    pg::ThreadPool one(1), two(2), three(3);
    double a = pg::global_grad_norm(g.data(), n, one);
    double b = pg::global_grad_norm(g.data(), n, two);
    double c = pg::global_grad_norm(g.data(), n, three);
    CHECK(a == Approx(want).epsilon(1e-12));
    CHECK(a == b);
    CHECK(a == c);
    // Clipping scales to the bound exactly (up to float rounding).
    pg::scale_gradients(g.data(), n, float(0.5 / a), two);
    CHECK(pg::global_grad_norm(g.data(), n, two) == Approx(0.5).epsilon(1e-6));
}
