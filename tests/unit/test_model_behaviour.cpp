// Properties of the model as a whole: causality (through the C API and the reference), the
// loss of an untrained model, determinism per thread count, and pg_session_forward's argument
// checks.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"
#include "reference_model.hpp"
#include "session_calls.hpp"

namespace {

pg_model* make_model(const char* preset, uint64_t seed) {
    pg_model_config c;
    REQUIRE(pg_model_config_preset(preset, &c) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&c, seed, &m) == PG_OK);
    return m;
}

std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
    pg::Rng rng(seed);
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = int32_t(rng.below(uint64_t(vocab)));
    return t;
}

// Larger weights than GPT-2's initialisation, so attention is far from uniform and a leak from
// the future would move the logits visibly.
void scramble_weights(pg_model* m, uint64_t seed) {
    const float* data = nullptr;
    int64_t n = 0;
    REQUIRE(pg_model_params(m, &data, &n) == PG_OK);
    int32_t index = 0;
    REQUIRE(pg_model_find_tensor(m, "wte", &index) == PG_OK);
    float* base = nullptr;
    REQUIRE(pg_model_tensor_data_mutable(m, index, &base) == PG_OK);  // wte is first: the whole allocation
    pg::Rng rng(seed);
    for (int64_t i = 0; i < n; ++i) base[i] = float(0.3 * rng.normal());
}

}  // namespace

TEST_CASE("causality through pg_session_forward: the future never changes the past", "[model][behaviour]") {
    pg_model* m = make_model("tiny", 1);
    scramble_weights(m, 2);
    const int B = 2, T = 16, V = 65;
    std::vector<int32_t> tokens = random_tokens(B * T, V, 3);
    std::vector<float> before(size_t(B * T * V)), after(size_t(B * T * V));
    REQUIRE(pg_test::forward(m, tokens.data(), B, T, nullptr, before.data(), nullptr, 2) == PG_OK);
    for (int t : {0, 5, 14}) {
        std::vector<int32_t> changed = tokens;
        for (int b = 0; b < B; ++b)
            for (int s = t + 1; s < T; ++s) changed[size_t(b * T + s)] = (changed[size_t(b * T + s)] + 7) % V;
        REQUIRE(pg_test::forward(m, changed.data(), B, T, nullptr, after.data(), nullptr, 2) == PG_OK);
        for (int b = 0; b < B; ++b) {
            const size_t row = size_t(b * T) * V;
            // Positions <= t: bit for bit the same.
            CHECK(std::memcmp(before.data() + row, after.data() + row, sizeof(float) * size_t((t + 1) * V)) == 0);
            // Positions > t do change (so the comparison above can fail).
            CHECK(std::memcmp(before.data() + row + size_t(t + 1) * V, after.data() + row + size_t(t + 1) * V,
                              sizeof(float) * size_t((T - t - 1) * V)) != 0);
        }
    }
    pg_model_free(m);
}

TEST_CASE("causality in the reference model", "[model][behaviour]") {
    pg::ModelConfig cfg = pg::model_preset("tiny");
    const pg::ParamLayout layout(cfg);
    std::vector<double> params(size_t(layout.total));
    pg::Rng rng(4);
    for (auto& p : params) p = 0.3 * rng.normal();
    const int T = 10, V = cfg.vocab_size;
    std::vector<int32_t> tokens = random_tokens(T, V, 5);
    pg::ReferenceGpt<double> model(cfg, 1, T);
    std::vector<double> before(size_t(T * V)), after(size_t(T * V));
    model.forward(params.data(), tokens.data(), nullptr, nullptr, before.data(), pg::Dropout{});
    const int t = 4;
    for (int s = t + 1; s < T; ++s) tokens[size_t(s)] = (tokens[size_t(s)] + 1) % V;
    model.forward(params.data(), tokens.data(), nullptr, nullptr, after.data(), pg::Dropout{});
    for (int i = 0; i < (t + 1) * V; ++i) CHECK(before[size_t(i)] == after[size_t(i)]);
    bool later_changed = false;
    for (int i = (t + 1) * V; i < T * V; ++i) later_changed |= before[size_t(i)] != after[size_t(i)];
    CHECK(later_changed);
}

TEST_CASE("an untrained PhoneGPT predicts uniformly: loss ~ ln(65)", "[model][behaviour]") {
    pg_model* m = make_model("phonegpt", 20261105);
    const int B = 4, T = 128;
    std::vector<int32_t> tokens = random_tokens(B * T, 65, 6), targets = random_tokens(B * T, 65, 7);
    float loss = 0.0f;
    REQUIRE(pg_test::forward(m, tokens.data(), B, T, targets.data(), nullptr, &loss, 0) == PG_OK);
    CHECK(std::fabs(loss - std::log(65.0f)) < 0.1f);
    pg_model_free(m);
}

TEST_CASE("pg_session_forward: mean over scored positions, logits and loss agree", "[model][behaviour]") {
    pg_model* m = make_model("tiny", 8);
    scramble_weights(m, 9);
    const int B = 3, T = 12, V = 65;
    std::vector<int32_t> tokens = random_tokens(B * T, V, 10), targets = random_tokens(B * T, V, 11);
    for (int i = 0; i < B * T; i += 5) targets[size_t(i)] = -1;
    std::vector<float> logits(size_t(B * T * V));
    float loss = 0.0f;
    REQUIRE(pg_test::forward(m, tokens.data(), B, T, targets.data(), logits.data(), &loss, 1) == PG_OK);
    double sum = 0.0;
    int count = 0;
    for (int i = 0; i < B * T; ++i) {
        if (targets[size_t(i)] < 0) continue;
        const float* row = logits.data() + size_t(i) * V;
        double mx = row[0], z = 0.0;
        for (int j = 1; j < V; ++j) mx = std::max(mx, double(row[j]));
        for (int j = 0; j < V; ++j) z += std::exp(double(row[j]) - mx);
        sum += std::log(z) + mx - row[targets[size_t(i)]];
        ++count;
    }
    CHECK(loss == Approx(sum / count).epsilon(1e-5));
    // All targets unscored: the mean is undefined.
    std::vector<int32_t> none(size_t(B * T), -1);
    REQUIRE(pg_test::forward(m, tokens.data(), B, T, none.data(), nullptr, &loss, 1) == PG_OK);
    CHECK(std::isnan(loss));
    pg_model_free(m);
}

TEST_CASE("pg_session_forward checks its arguments", "[model][behaviour][capi]") {
    pg_model* m = make_model("tiny", 1);
    const int B = 1, T = 4;
    std::vector<int32_t> tokens = {1, 2, 3, 4}, targets = {2, 3, 4, -1};
    std::vector<float> logits(size_t(T * 65));
    float loss = 0.0f;
    CHECK(pg_test::forward(nullptr, tokens.data(), B, T, nullptr, logits.data(), nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::forward(m, nullptr, B, T, nullptr, logits.data(), nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(pg_last_error(), "tokens") != nullptr);
    CHECK(pg_test::forward(m, tokens.data(), 0, T, nullptr, logits.data(), nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::forward(m, tokens.data(), B, 17, nullptr, logits.data(), nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(pg_last_error(), "n_ctx") != nullptr);
    CHECK(pg_test::forward(m, tokens.data(), B, T, nullptr, nullptr, nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::forward(m, tokens.data(), B, T, targets.data(), logits.data(), nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    tokens[2] = 65;
    CHECK(pg_test::forward(m, tokens.data(), B, T, nullptr, logits.data(), nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(pg_last_error(), "tokens[2]") != nullptr);
    tokens[2] = 3;
    targets[1] = -2;
    CHECK(pg_test::forward(m, tokens.data(), B, T, targets.data(), nullptr, &loss, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(pg_last_error(), "targets[1]") != nullptr);
    targets[1] = 3;
    CHECK(pg_test::forward(m, tokens.data(), B, T, targets.data(), nullptr, &loss, 1) == PG_OK);
    CHECK(std::isfinite(loss));
    pg_model_free(m);
}

namespace {

struct StepResult {
    pg::LossSum loss;
    std::vector<float> grads;
};

StepResult train_step(const pg::ModelConfig& cfg, const std::vector<float>& params, const std::vector<int32_t>& x,
                      const std::vector<int32_t>& y, int B, int T, int threads) {
    pg::ThreadPool pool(threads);
    pg::Engine engine(cfg, B, T);
    StepResult r;
    r.grads.assign(params.size(), 0.0f);
    pg::Dropout d;
    d.p = 0.1f;
    d.seed = 77;
    d.stream = 2;
    r.loss = engine.forward_backward(params.data(), r.grads.data(), x.data(), y.data(), B, T, 1.0f / float(B * T), d,
                                     pool);
    return r;
}

}  // namespace

TEST_CASE("engine results are bit-identical for a thread count, close across counts", "[model][behaviour]") {
    const pg::ModelConfig cfg = pg::model_preset("tiny");
    const pg::ParamLayout layout(cfg);
    std::vector<float> params(size_t(layout.total));
    pg::init_gpt2_params(cfg, params.data(), 12);
    const int B = 4, T = 16;
    const std::vector<int32_t> x = random_tokens(B * T, cfg.vocab_size, 13), y = random_tokens(B * T, cfg.vocab_size, 14);

    const StepResult a = train_step(cfg, params, x, y, B, T, 2);
    const StepResult b = train_step(cfg, params, x, y, B, T, 2);
    CHECK(a.loss.sum == b.loss.sum);
    CHECK(std::memcmp(a.grads.data(), b.grads.data(), a.grads.size() * sizeof(float)) == 0);

    const StepResult one = train_step(cfg, params, x, y, B, T, 1);
    CHECK(one.loss.sum == Approx(a.loss.sum).epsilon(1e-6));
    double scale = 0.0;
    for (float g : one.grads) scale = std::max(scale, double(std::fabs(g)));
    REQUIRE(scale > 0.0);
    for (size_t i = 0; i < one.grads.size(); ++i)
        REQUIRE(std::fabs(one.grads[i] - a.grads[i]) <= 1e-5 * scale);
}
