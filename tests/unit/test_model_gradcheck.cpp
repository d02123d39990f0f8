// The reference model's analytic gradient against central finite differences, in double, for
// every element of every parameter tensor of a tiny model, with dropout off and on (a fixed
// seed/stream fixes the mask, so the loss stays a smooth function of the parameters).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "model/params.hpp"
#include "reference_model.hpp"
#include "model_test_params.hpp"

namespace {

pg::ModelConfig tiny_config() {
    pg::ModelConfig c;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_embd = 8;
    c.n_ctx = 6;
    c.vocab_size = 11;
    c.padded_vocab_size = 12;
    return c;
}

// |analytic - numeric| <= kRel * max(|analytic|, |numeric|) + kAbs, for every element.
// With h = 1e-5 the central difference's truncation error is ~h^2 relative and its rounding
// error ~1e-16 * |loss| / h ~ 1e-10 absolute, both far inside these bounds; a wrong backward
// formula is off by O(1) relative.
constexpr double kStep = 1e-5;
constexpr double kRel = 1e-6;
constexpr double kAbs = 1e-8;

void check_gradient(const pg::Dropout& dropout) {
    const pg::ModelConfig cfg = tiny_config();
    const int B = 2, T = 6;
    const pg::ParamLayout layout(cfg);
    std::vector<double> params = pg_test::random_model_params<double>(cfg, 7, 0.4);
    // Tokens cover the vocabulary; one position is unscored (target -1).
    std::vector<int32_t> inputs = {0, 3, 7, 10, 2, 5, 9, 1, 4, 4, 8, 6};
    std::vector<int32_t> targets = {3, 7, 10, 2, -1, 1, 1, 4, 0, 8, 6, 9};
    pg::ReferenceGpt<double> model(cfg, B, T);

    auto loss_at = [&](const std::vector<double>& p) {
        return model.forward(p.data(), inputs.data(), targets.data(), nullptr, nullptr, dropout).sum;
    };
    const pg::LossSum base = model.forward(params.data(), inputs.data(), targets.data(), nullptr, nullptr, dropout);
    REQUIRE(base.count == B * T - 1);
    std::vector<double> grads(size_t(layout.total), 0.0);
    model.backward(grads.data(), 1.0);

    int64_t checked = 0;
    for (int kind = 0; kind < pg::kNumParamKinds; ++kind) {
        int64_t bad = 0;
        double worst = 0.0;
        for (int64_t i = 0; i < layout.size[kind]; ++i) {
            const size_t j = size_t(layout.offset[kind] + i);
            const double saved = params[j];
            params[j] = saved + kStep;
            const double up = loss_at(params);
            params[j] = saved - kStep;
            const double down = loss_at(params);
            params[j] = saved;
            const double numeric = (up - down) / (2 * kStep);
            const double analytic = grads[j];
            const double err = std::fabs(analytic - numeric);
            const double allowed = kRel * std::max(std::fabs(analytic), std::fabs(numeric)) + kAbs;
            if (err > allowed) ++bad;
            worst = std::max(worst, err / allowed);
            ++checked;
        }
        INFO("tensor " << pg_test::param_kind_name(kind) << ": worst error / allowed = " << worst);
        CHECK(bad == 0);
    }
    CHECK(checked == layout.total);

    // The padding row (id 11) is never an input and never predicted: exactly zero gradient.
    const int C = cfg.n_embd;
    for (int r = cfg.vocab_size; r < cfg.padded_vocab_size; ++r)
        for (int c = 0; c < C; ++c) CHECK(grads[size_t(layout.offset[pg::kWte] + r * C + c)] == 0.0);
    // ...while real rows do get one (the check above is not vacuous).
    double real_rows = 0.0;
    for (int c = 0; c < C; ++c) real_rows += std::fabs(grads[size_t(layout.offset[pg::kWte] + c)]);
    CHECK(real_rows > 1e-6);
}

}  // namespace

TEST_CASE("reference gradient matches finite differences, dropout off", "[model][gradcheck]") {
    check_gradient(pg::Dropout{});
}

TEST_CASE("reference gradient matches finite differences, dropout on", "[model][gradcheck]") {
    pg::Dropout d;
    d.p = 0.3f;
    d.seed = 42;
    d.stream = 3;
    check_gradient(d);
}

TEST_CASE("reference backward scales and accumulates", "[model][gradcheck]") {
    const pg::ModelConfig cfg = tiny_config();
    const pg::ParamLayout layout(cfg);
    std::vector<double> params = pg_test::random_model_params<double>(cfg, 11, 0.4);
    std::vector<int32_t> inputs = {1, 2, 3, 4, 5, 6};
    std::vector<int32_t> targets = {2, 3, 4, 5, 6, 7};
    pg::ReferenceGpt<double> model(cfg, 1, 6);
    model.forward(params.data(), inputs.data(), targets.data(), nullptr, nullptr, pg::Dropout{});
    std::vector<double> once(size_t(layout.total), 0.0), twice(size_t(layout.total), 0.0);
    model.backward(once.data(), 1.0);
    model.backward(twice.data(), 0.5);
    model.backward(twice.data(), 1.5);
    for (size_t i = 0; i < once.size(); ++i) CHECK(twice[i] == Approx(2.0 * once[i]).margin(1e-12));
}

TEST_CASE("dropout masks keep about 1 - p of the elements", "[model][dropout]") {
    pg::Dropout d;
    d.p = 0.3f;
    d.seed = 5;
    d.stream = 2;
    int kept = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) kept += pg::dropout_keep(d, pg::kDropAttnProj, 1, uint64_t(i)) ? 1 : 0;
    CHECK(std::fabs(kept / double(n) - 0.7) < 0.01);
    // Different places, layers and streams draw different masks.
    int same_place = 0, same_layer = 0, same_stream = 0;
    pg::Dropout next = d;
    next.stream = 3;
    for (int i = 0; i < 1000; ++i) {
        const bool a = pg::dropout_keep(d, pg::kDropAttnProj, 1, uint64_t(i));
        same_place += a == pg::dropout_keep(d, pg::kDropMlpProj, 1, uint64_t(i));
        same_layer += a == pg::dropout_keep(d, pg::kDropAttnProj, 2, uint64_t(i));
        same_stream += a == pg::dropout_keep(next, pg::kDropAttnProj, 1, uint64_t(i));
    }
    CHECK(same_place < 700);
    CHECK(same_layer < 700);
    CHECK(same_stream < 700);
}
