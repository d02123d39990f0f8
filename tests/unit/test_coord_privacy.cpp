// Client-side differential privacy (lib/lora/privacy): the round's update is clipped to C and
// gets N(0, (sigma C)^2) per trained parameter, reproducibly by seed; the accountant's Renyi DP
// is checked against the Renyi divergence of two Gaussians integrated numerically, and its
// (epsilon, delta) against a brute-force search over orders and a value worked by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "lora/adapter.hpp"
#include "lora/privacy.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"

using namespace pg::lora;

namespace {

pg::Model tiny_base() {
    pg::Model m(pg::model_preset("tiny"));
    pg::init_gpt2_params(m.config(), m.params(), 3);
    return m;
}

// A round's start (fresh) and the phone's result: every trained parameter moved by N(0, step^2).
struct Round {
    Adapter start, trained;
};
Round make_round(const pg::Model& base, bool freeze_a, double step) {
    LoraConfig cfg;
    cfg.rank = 4;
    cfg.freeze_a = freeze_a;
    Round r{Adapter::create(base, cfg), Adapter::create(base, cfg)};
    pg::Rng rng(11);
    for (const AdaptedLinear& m : r.trained.linears()) {
        if (!freeze_a)
            for (int64_t j = 0; j < cfg.rank * m.in; ++j) r.trained.a(m)[j] += float(step * rng.normal());
        for (int64_t j = 0; j < m.out * cfg.rank; ++j) r.trained.b(m)[j] += float(step * rng.normal());
    }
    return r;
}

// The released parameters' differences a - b, as PrivacyReport counts them.
std::vector<double> delta(const Adapter& a, const Adapter& b, bool with_a) {
    std::vector<double> d;
    for (std::size_t k = 0; k < a.linears().size(); ++k) {
        const AdaptedLinear &m = a.linears()[k], &n = b.linears()[k];
        if (with_a)
            for (int64_t j = 0; j < a.config().rank * m.in; ++j) d.push_back(double(a.a(m)[j]) - b.a(n)[j]);
        for (int64_t j = 0; j < m.out * a.config().rank; ++j) d.push_back(double(a.b(m)[j]) - b.b(n)[j]);
    }
    return d;
}

double norm(const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
}

}  // namespace

TEST_CASE("privacy: the update is clipped to C and gets noise of std sigma C, by seed", "[coord][privacy]") {
    const pg::Model base = tiny_base();
    Round r = make_round(base, false, 0.05);
    const double before = norm(delta(r.trained, r.start, true));
    REQUIRE(before > 1.0);

    Adapter clipped = r.trained;  // no noise: exactly the clipped update
    const PrivacyReport c = privatize_update(clipped, r.start, {0.5, 0.0, 1});
    CHECK(c.clipped);
    CHECK(c.delta_norm == Approx(before).epsilon(1e-9));
    const std::vector<double> dc = delta(clipped, r.start, true);
    CHECK(norm(dc) == Approx(0.5).epsilon(1e-5));
    const std::vector<double> d0 = delta(r.trained, r.start, true);
    for (std::size_t i = 0; i < d0.size(); i += 97) CHECK(dc[i] == Approx(d0[i] * 0.5 / before).margin(1e-6));
    CHECK(std::size_t(c.noised) == dc.size());

    Adapter noisy = r.trained, again = r.trained, other = r.trained;
    const PrivacyReport n = privatize_update(noisy, r.start, {0.5, 1.2, 42});
    CHECK(n.noise_stddev == Approx(0.6));
    const std::vector<double> noise = [&] {
        std::vector<double> a = delta(noisy, r.start, true), out;
        for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a[i] - dc[i]);
        return out;
    }();
    const double sd = norm(noise) / std::sqrt(double(noise.size()));
    INFO(noise.size() << " parameters, measured noise std " << sd);
    CHECK(std::fabs(sd - 0.6) < 0.06 * 0.6);
    privatize_update(again, r.start, {0.5, 1.2, 42});
    privatize_update(other, r.start, {0.5, 1.2, 43});
    CHECK(delta(again, noisy, true) == std::vector<double>(noise.size(), 0.0));
    CHECK(norm(delta(other, noisy, true)) > 1.0);

    // A small update is not scaled up.
    Round small = make_round(base, false, 1e-4);
    const PrivacyReport s = privatize_update(small.trained, small.start, {10.0, 0.0, 1});
    CHECK_FALSE(s.clipped);
}

TEST_CASE("privacy: with freeze_a only B is released; A stays the round's shared A", "[coord][privacy]") {
    const pg::Model base = tiny_base();
    Round r = make_round(base, true, 0.05);
    const PrivacyReport rep = privatize_update(r.trained, r.start, {0.5, 1.0, 5});
    int64_t b_params = 0;
    for (const AdaptedLinear& m : r.trained.linears()) {
        b_params += m.out * r.trained.config().rank;
        for (int64_t j = 0; j < r.trained.config().rank * m.in; ++j) REQUIRE(r.trained.a(m)[j] == r.start.a(m)[j]);
    }
    CHECK(rep.noised == b_params);
}

TEST_CASE("privacy: a start of another configuration and bad options are refused by name", "[coord][privacy]") {
    const pg::Model base = tiny_base();
    Round r = make_round(base, false, 0.05);
    LoraConfig cfg;
    cfg.rank = 2;
    const Adapter other = Adapter::create(base, cfg);
    const Adapter keep = r.trained;
    CHECK_THROWS_WITH(privatize_update(r.trained, other, {}), Catch::Contains("start adapter's configuration"));
    CHECK_THROWS_WITH(privatize_update(r.trained, r.start, {0.0, 1.0, 0}), Catch::Contains("clip_norm"));
    CHECK_THROWS_WITH(privatize_update(r.trained, r.start, {1.0, -1.0, 0}), Catch::Contains("noise_multiplier"));
    CHECK(delta(r.trained, keep, true) == std::vector<double>(delta(keep, keep, true).size(), 0.0));
}

TEST_CASE("privacy accountant: the Gaussian RDP against numerical integration, epsilon against a search",
          "[coord][privacy]") {
    // D_alpha(N(1, s^2) || N(0, s^2)) = 1/(alpha-1) log int p^alpha q^(1-alpha), integrated here.
    auto renyi = [](double sigma, double alpha) {
        const double lo = -40.0 * sigma, hi = 40.0 * sigma, h = (hi - lo) / 200000.0;
        double sum = 0.0;
        for (int i = 0; i <= 200000; ++i) {
            const double x = lo + h * i;
            const double lp = -(x - 1) * (x - 1) / (2 * sigma * sigma), lq = -x * x / (2 * sigma * sigma);
            const double f = std::exp(alpha * lp + (1 - alpha) * lq) / (sigma * std::sqrt(2 * M_PI));
            sum += (i == 0 || i == 200000) ? f / 2 : f;
        }
        return std::log(sum * h) / (alpha - 1);
    };
    for (double sigma : {0.8, 1.5, 4.0})
        for (double alpha : {1.5, 2.0, 3.0, 8.5}) {
            INFO("sigma " << sigma << ", alpha " << alpha);
            CHECK(gaussian_rdp(sigma, alpha, 1) == Approx(renyi(sigma, alpha)).epsilon(1e-6));
            CHECK(gaussian_rdp(sigma, alpha, 7) == Approx(7 * renyi(sigma, alpha)).epsilon(1e-6));
        }
    // sigma 1, one round, delta 1e-5: rho = 0.5, eps = rho + 2 sqrt(rho ln(1e5)) = 5.2985...
    CHECK(dp_epsilon(1.0, 1, 1e-5).epsilon == Approx(0.5 + 2 * std::sqrt(0.5 * std::log(1e5))).epsilon(1e-12));
    CHECK(dp_epsilon(1.0, 1, 1e-5).epsilon == Approx(5.2985).margin(1e-4));
    for (double sigma : {0.7, 2.0, 10.0})
        for (int64_t rounds : {1, 5, 100})
            for (double delta : {1e-3, 1e-6}) {
                double best = HUGE_VAL;
                for (double alpha = 1.001; alpha < 2000.0; alpha *= 1.0005)
                    best = std::min(best, gaussian_rdp(sigma, alpha, rounds) + std::log(1 / delta) / (alpha - 1));
                const PrivacyBudget b = dp_epsilon(sigma, rounds, delta);
                INFO("sigma " << sigma << ", rounds " << rounds << ", delta " << delta);
                CHECK(b.epsilon <= best + 1e-9);
                CHECK(b.epsilon == Approx(best).epsilon(1e-5));
            }
    CHECK(dp_epsilon(2.0, 10, 1e-5).epsilon > dp_epsilon(2.0, 5, 1e-5).epsilon);
    CHECK(dp_epsilon(4.0, 10, 1e-5).epsilon < dp_epsilon(2.0, 10, 1e-5).epsilon);
    CHECK(dp_epsilon(2.0, 0, 1e-5).epsilon == 0.0);
    CHECK_THROWS_WITH(dp_epsilon(0.0, 1, 1e-5), Catch::Contains("noise_multiplier"));
    CHECK_THROWS_WITH(dp_epsilon(1.0, 1, 1.0), Catch::Contains("delta"));
    CHECK_THROWS_WITH(dp_epsilon(1.0, -1, 1e-5), Catch::Contains("rounds"));
}

TEST_CASE("privacy: the C API", "[coord][privacy][c_api]") {
    pg_model_config mc;
    pg_model_config_default(&mc);
    mc.n_layer = 2, mc.n_head = 2, mc.n_embd = 16, mc.n_ctx = 16, mc.vocab_size = 11, mc.padded_vocab_size = 12;
    pg_model* base = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &base) == PG_OK);
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    pg_lora_adapter *start = nullptr, *a = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &lc, &start) == PG_OK);
    REQUIRE(pg_lora_adapter_create(base, &lc, &a) == PG_OK);
    pg_lora_privacy_config pc;
    pg_lora_privacy_config_default(&pc);
    CHECK(pc.clip_norm == 1.0);
    CHECK(pc.noise_multiplier == 1.0);
    pc.noise_multiplier = 0.5;
    pg_lora_privacy_report rep = {sizeof rep};
    CHECK(pg_lora_adapter_privatize(a, start, &pc, &rep) == PG_OK);
    CHECK(rep.noise_stddev == 0.5);
    CHECK(rep.clipped == 0);
    CHECK(rep.noised > 0);
    CHECK(pg_lora_adapter_privatize(a, start, nullptr, nullptr) == PG_OK);
    CHECK(pg_lora_adapter_privatize(nullptr, start, &pc, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_adapter_privatize(a, nullptr, &pc, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("start"));
    CHECK(pg_lora_adapter_privatize(a, a, &pc, &rep) == PG_ERR_INVALID_ARGUMENT);
    pc.clip_norm = -1;
    CHECK(pg_lora_adapter_privatize(a, start, &pc, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("clip_norm"));
    double eps = 0, order = 0;
    CHECK(pg_privacy_epsilon(1.0, 1, 1e-5, &eps, &order) == PG_OK);
    CHECK(eps == Approx(5.2985).margin(1e-4));
    CHECK(order == Approx(1.0 + std::sqrt(2 * std::log(1e5))));
    CHECK(pg_privacy_epsilon(1.0, 1, 1e-5, &eps, nullptr) == PG_OK);
    CHECK(pg_privacy_epsilon(1.0, 1, 1e-5, nullptr, &order) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_privacy_epsilon(NAN, 1, 1e-5, &eps, &order) == PG_ERR_INVALID_ARGUMENT);
    pg_lora_adapter_free(a);
    pg_lora_adapter_free(start);
    pg_model_free(base);
}
