// The fp32 engine against the float reference model: losses, logits and every gradient, with 1
// and 2 threads, dropout off and on, with and without activation recomputation, on a short
// geometry and on one long enough to span several attention tiles.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <vector>

#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "model/config.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "reference_model.hpp"
#include "model_test_params.hpp"
#include "session_calls.hpp"

namespace {

struct Geometry {
    pg::ModelConfig cfg;
    int B, T;
};

// layers, heads, width, context, vocabulary (padded), batch B and sequence length T.
Geometry geometry(int layers, int heads, int embd, int ctx, int vocab, int padded_vocab, int B, int T) {
    Geometry g;
    g.cfg.n_layer = layers;
    g.cfg.n_head = heads;
    g.cfg.n_embd = embd;
    g.cfg.n_ctx = ctx;
    g.cfg.vocab_size = vocab;
    g.cfg.padded_vocab_size = padded_vocab;
    g.B = B;
    g.T = T;
    return g;
}

Geometry short_geometry() { return geometry(2, 2, 16, 16, 11, 12, 3, 13); }

// T = 150: three query blocks (the last partial), and the last block's keys span two key tiles
// (so the online softmax rescales).
Geometry long_geometry() { return geometry(2, 2, 8, 160, 13, 16, 2, 150); }

// B * T = 600 rows: the output projection and cross-entropy run in two chunks (512 + 88).
Geometry many_rows_geometry() { return geometry(1, 2, 8, 32, 11, 12, 20, 30); }

// B * T = 896 rows at width 96: every linear layer's weight gradient is big enough to be split
// over the tokens across threads (kernels::gemm_worth_splitting), with per-thread partials and
// their reduction; 3 threads split the rows unevenly (299 + 299 + 298).
Geometry token_split_geometry() { return geometry(1, 2, 96, 64, 11, 12, 14, 64); }

// PhoneGPT's head size 32 (whole vectors on every table) at an odd T = 77 > 64: two query
// blocks, the second one 13 rows (partial register tiles of the attention kernels), and key
// tiles of 64 and 77 columns (a partial last vector).
Geometry head32_geometry() { return geometry(1, 2, 64, 80, 11, 12, 2, 77); }

struct Batch {
    std::vector<int32_t> inputs, targets;
};

Batch random_batch(const Geometry& g, uint64_t seed) {
    pg::Rng rng(seed);
    Batch b;
    const int n = g.B * g.T;
    for (int i = 0; i < n; ++i) {
        b.inputs.push_back(int32_t(rng.below(uint64_t(g.cfg.vocab_size))));
        b.targets.push_back(i % 7 == 3 ? -1 : int32_t(rng.below(uint64_t(g.cfg.vocab_size))));
    }
    return b;
}

double max_abs(const float* x, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, double(std::fabs(x[i])));
    return m;
}

// Every element within rel * (largest magnitude of the expected tensor): elementwise relative
// error is meaningless for entries that are nearly zero by cancellation.
void check_close(const float* got, const float* want, int64_t n, double rel, const char* what) {
    const double scale = std::max(max_abs(want, n), 1e-30);
    int64_t bad = 0;
    double worst = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double err = std::fabs(double(got[i]) - double(want[i])) / scale;
        worst = std::max(worst, err);
        if (err > rel) ++bad;
    }
    INFO(what << ": worst error relative to the tensor's largest entry = " << worst);
    CHECK(bad == 0);
}


// compare_with_reference's inputs: random parameters and a batch, from fixed seeds.
const float kGradScale = 0.25f;
std::vector<float> compared_params(const Geometry& g) { return pg_test::random_model_params<float>(g.cfg, 3, 0.3); }
Batch compared_batch(const Geometry& g) { return random_batch(g, 9); }

// What the float reference computes from those inputs.
struct ReferenceResult {
    pg::LossSum sum;
    std::vector<float> losses, logits, grads;
};

// The reference's result, computed once per geometry and dropout in a run of the tests and
// shared by every thread count and recomputation setting compared with it: the scalar reference
// costs more than the engine, most of all under qemu.
const ReferenceResult& reference_result(const Geometry& g, const pg::Dropout& dropout) {
    struct Cached {
        Geometry g;
        pg::Dropout dropout;
        ReferenceResult result;
    };
    static std::deque<Cached> cache;  // a deque: the references handed out stay valid
    auto same = [&](const Cached& c) {
        return pg_test::same_config(c.g.cfg, g.cfg) && c.g.B == g.B && c.g.T == g.T && c.dropout.p == dropout.p &&
               c.dropout.seed == dropout.seed && c.dropout.stream == dropout.stream;
    };
    for (const Cached& c : cache)
        if (same(c)) return c.result;
    const std::vector<float> params = compared_params(g);
    const Batch batch = compared_batch(g);
    const int64_t N = int64_t(g.B) * g.T;
    ReferenceResult r;
    r.losses.resize(size_t(N));
    r.logits.resize(size_t(N * g.cfg.vocab_size));
    r.grads.assign(params.size(), 0.0f);
    pg::ReferenceGpt<float> ref(g.cfg, g.B, g.T);
    r.sum = ref.forward(params.data(), batch.inputs.data(), batch.targets.data(), r.losses.data(), r.logits.data(),
                        dropout);
    ref.backward(r.grads.data(), kGradScale);
    cache.push_back({g, dropout, std::move(r)});
    return cache.back().result;
}

void compare_with_reference(const Geometry& g, int threads, const pg::Dropout& dropout, bool recompute) {
    const pg::ParamLayout layout(g.cfg);
    const std::vector<float> params = compared_params(g);
    const Batch batch = compared_batch(g);
    const int64_t N = int64_t(g.B) * g.T;
    const int V = g.cfg.vocab_size;

    REQUIRE(size_t(layout.total) == params.size());
    const ReferenceResult& reference = reference_result(g, dropout);
    const pg::LossSum ref_sum = reference.sum;
    const std::vector<float>& ref_losses = reference.losses;
    const std::vector<float>& ref_logits = reference.logits;
    const std::vector<float>& ref_grads = reference.grads;

    pg::ThreadPool pool(threads);
    pg::EngineOptions options;
    options.recompute = recompute;
    pg::Engine engine(g.cfg, g.B + 1, g.T, options);  // a call may use less than the maximum
    std::vector<float> grads(size_t(layout.total), 0.0f);
    const pg::LossSum sum = engine.forward_backward(params.data(), grads.data(), batch.inputs.data(),
                                                    batch.targets.data(), g.B, g.T, kGradScale, dropout, pool);
    CHECK(sum.count == ref_sum.count);
    CHECK(std::fabs(sum.sum - ref_sum.sum) <= 1e-5 * std::fabs(ref_sum.sum));
    for (int kind = 0; kind < pg::kNumParamKinds; ++kind)
        check_close(grads.data() + layout.offset[kind], ref_grads.data() + layout.offset[kind], layout.size[kind],
                    1e-4, pg_test::param_kind_name(kind));
    // The padding rows of wte get exactly nothing.
    for (int64_t i = int64_t(V) * g.cfg.n_embd; i < layout.size[pg::kWte]; ++i)
        CHECK(grads[size_t(layout.offset[pg::kWte] + i)] == 0.0f);

    if (!dropout_active(dropout)) {
        // Evaluation path: per-position losses and logits.
        std::vector<float> losses(static_cast<size_t>(N), -1.0f), logits(static_cast<size_t>(N * V));
        const pg::LossSum eval = engine.forward(params.data(), batch.inputs.data(), batch.targets.data(), g.B,
                                                g.T, losses.data(), logits.data(), pool);
        CHECK(eval.count == ref_sum.count);
        CHECK(eval.sum == sum.sum);  // same computation as forward_backward's forward half
        check_close(losses.data(), ref_losses.data(), N, 1e-5, "losses");
        check_close(logits.data(), ref_logits.data(), N * V, 1e-5, "logits");
        for (int64_t i = 0; i < N; ++i)
            if (batch.targets[size_t(i)] < 0) CHECK(losses[size_t(i)] == 0.0f);
        // An engine that never ran a backward pass computes the same, bit for bit.
        pg::Engine fresh(g.cfg, g.B, g.T, options);
        std::vector<float> fresh_logits(static_cast<size_t>(N * V));
        const pg::LossSum fresh_sum = fresh.forward(params.data(), batch.inputs.data(), batch.targets.data(), g.B,
                                                    g.T, nullptr, fresh_logits.data(), pool);
        CHECK(fresh_sum.sum == eval.sum);
        CHECK(std::memcmp(fresh_logits.data(), logits.data(), logits.size() * sizeof(float)) == 0);
    }
}

pg::Dropout some_dropout() {
    pg::Dropout d;
    d.p = 0.3f;
    d.seed = 1234;
    d.stream = 17;
    return d;
}

}  // namespace

TEST_CASE("engine matches the float reference", "[model][engine]") {
    for (int threads : {1, 2}) {
        for (bool recompute : {false, true}) {
            DYNAMIC_SECTION("threads " << threads << " recompute " << recompute) {
                SECTION("short, dropout off") { compare_with_reference(short_geometry(), threads, pg::Dropout{}, recompute); }
                SECTION("short, dropout on") { compare_with_reference(short_geometry(), threads, some_dropout(), recompute); }
                SECTION("long, dropout off") { compare_with_reference(long_geometry(), threads, pg::Dropout{}, recompute); }
                SECTION("long, dropout on") { compare_with_reference(long_geometry(), threads, some_dropout(), recompute); }
                SECTION("many rows, dropout off") { compare_with_reference(many_rows_geometry(), threads, pg::Dropout{}, recompute); }
                SECTION("many rows, dropout on") { compare_with_reference(many_rows_geometry(), threads, some_dropout(), recompute); }
            }
        }
    }
}

TEST_CASE("weight gradients split over the tokens match the reference, the same bits for a thread count",
          "[model][engine]") {
    const Geometry g = token_split_geometry();
    for (int threads : {1, 2, 3}) {
        DYNAMIC_SECTION("threads " << threads) {
            SECTION("dropout off") { compare_with_reference(g, threads, pg::Dropout{}, false); }
            SECTION("dropout on, recompute") { compare_with_reference(g, threads, some_dropout(), true); }
        }
    }
    // A section of its own: code beside the sections would run again with each of them.
    SECTION("the same bits twice on 3 threads, every weight gradient split") {
        const pg::ParamLayout layout(g.cfg);
        const std::vector<float> params = pg_test::random_model_params<float>(g.cfg, 3, 0.3);
        const Batch batch = random_batch(g, 9);
        pg::ThreadPool pool(3);
        pg::Engine engine(g.cfg, g.B, g.T);
        std::vector<float> first(size_t(layout.total), 0.0f), again(size_t(layout.total), 0.0f);
        engine.forward_backward(params.data(), first.data(), batch.inputs.data(), batch.targets.data(), g.B, g.T,
                                0.5f, pg::Dropout{}, pool);
        engine.forward_backward(params.data(), again.data(), batch.inputs.data(), batch.targets.data(), g.B, g.T,
                                0.5f, pg::Dropout{}, pool);
        CHECK(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)) == 0);
        CHECK(engine.weight_gradient_gemms() == 4 * g.cfg.n_layer + 1);
    }
}

TEST_CASE("engine attention at head size 32 and an odd T matches the float reference", "[model][engine]") {
    for (int threads : {1, 2}) {
        DYNAMIC_SECTION("threads " << threads) {
            SECTION("dropout off") { compare_with_reference(head32_geometry(), threads, pg::Dropout{}, false); }
            SECTION("dropout on, recompute") { compare_with_reference(head32_geometry(), threads, some_dropout(), true); }
        }
    }
}

TEST_CASE("recomputation changes memory, not results", "[model][engine]") {
    const Geometry g = short_geometry();
    const pg::ParamLayout layout(g.cfg);
    const std::vector<float> params = pg_test::random_model_params<float>(g.cfg, 5, 0.3);
    const Batch batch = random_batch(g, 6);
    pg::ThreadPool pool(2);
    pg::EngineOptions lean;
    lean.recompute = true;
    pg::Engine fast(g.cfg, g.B, g.T), small(g.cfg, g.B, g.T, lean);
    // Before any backward pass both hold only what a forward pass needs.
    const size_t forward_only = fast.activation_bytes();
    CHECK(small.activation_bytes() == forward_only);
    std::vector<float> ga(size_t(layout.total), 0.0f), gb(size_t(layout.total), 0.0f);
    const pg::Dropout d = some_dropout();
    const pg::LossSum a = fast.forward_backward(params.data(), ga.data(), batch.inputs.data(), batch.targets.data(),
                                                g.B, g.T, 1.0f, d, pool);
    const pg::LossSum b = small.forward_backward(params.data(), gb.data(), batch.inputs.data(), batch.targets.data(),
                                                 g.B, g.T, 1.0f, d, pool);
    CHECK(a.sum == b.sum);
    CHECK(std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float)) == 0);
    CHECK(forward_only < small.activation_bytes());
    CHECK(small.activation_bytes() < fast.activation_bytes());
}

TEST_CASE("engine rejects what it cannot compute", "[model][engine]") {
    const Geometry g = short_geometry();
    const std::vector<float> params = pg_test::random_model_params<float>(g.cfg, 5, 0.3);
    std::vector<float> grads(params.size(), 0.0f);
    Batch batch = random_batch(g, 6);
    pg::ThreadPool pool(1);
    pg::Engine engine(g.cfg, g.B, g.T);
    CHECK_THROWS_AS(engine.forward(params.data(), batch.inputs.data(), nullptr, g.B + 1, g.T, nullptr, nullptr, pool),
                    pg::Error);
    CHECK_THROWS_AS(engine.forward(params.data(), batch.inputs.data(), nullptr, g.B, g.T + 1, nullptr, nullptr, pool),
                    pg::Error);
    CHECK_THROWS_AS(pg::Engine(g.cfg, 1, g.cfg.n_ctx + 1), pg::Error);
    pg::Dropout bad;
    bad.p = 1.0f;
    CHECK_THROWS_AS(engine.forward_backward(params.data(), grads.data(), batch.inputs.data(), batch.targets.data(),
                                            g.B, g.T, 1.0f, bad, pool),
                    pg::Error);
    // Ids outside the vocabulary are refused once, at the C boundary (capi/model_args.hpp); the
    // engine assumes them in range.
    pg_model_config c = pg::model_config_to_c(g.cfg);
    pg_model* model = nullptr;
    REQUIRE(pg_model_create(&c, 1, &model) == PG_OK);
    std::vector<float> logits(std::size_t(g.B) * g.T * g.cfg.vocab_size);
    float loss = 0;
    batch.inputs[5] = g.cfg.vocab_size;
    CHECK(pg_test::forward(model, batch.inputs.data(), g.B, g.T, nullptr, logits.data(), nullptr, 1) ==
          PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("tokens[5] = "));
    batch.inputs[5] = 0;
    batch.targets[7] = g.cfg.vocab_size;
    CHECK(pg_test::forward(model, batch.inputs.data(), g.B, g.T, batch.targets.data(), logits.data(), &loss, 1) ==
          PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("targets[7] = "));
    pg_model_free(model);
}
