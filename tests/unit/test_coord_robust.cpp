// Poisoned uploads (lib/coordinator/average's robust methods and clipping, lib/coordinator/validate's norm
// checks): honest adapters really trained over a small trained base, poisoned copies (B x1000,
// B x3, the reversed update), and how far each aggregation lands from the honest-only average,
// in update space (relative Frobenius distance of delta W) and in held-out loss. The margins
// asserted here are the ones docs/federated.md states.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "eval/evaluate.hpp"
#include "eval/session.hpp"
#include "core/file_io.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "coordinator/average.hpp"
#include "lora/lora_hook.hpp"
#include "lora/lora_trainer.hpp"
#include "coordinator/validate.hpp"
#include "model/params.hpp"
#include "train/trainer.hpp"

using namespace pg::lora;

namespace {

// Text of the base's vocabulary: a period-p pattern with a fraction of random tokens (a
// client's own noise), so every client learns the same thing from different data.
std::vector<int32_t> noisy_pattern(const pg::Model& base, std::size_t n, int period, double noise, uint64_t seed) {
    pg::Rng rng(seed);
    const auto vocab = uint64_t(base.config().vocab_size);
    std::vector<int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i)
        t[i] = rng.uniform() < noise ? int32_t(rng.below(vocab)) : int32_t((i % std::size_t(period)) * 5 % vocab);
    return t;
}

// The coordinator's base: tiny, trained for 40 steps on a period-7 pattern.
const pg::Model& trained_base() {
    static const std::unique_ptr<pg::Model> base = [] {
        auto m = std::make_unique<pg::Model>(pg::model_preset("tiny"));
        pg::init_gpt2_params(m->config(), m->params(), 5);
        m->set_provenance(pg::Provenance::initialised_from(5));
        pg::TrainConfig tc;
        tc.batch_size = 4;
        tc.warmup_steps = 0;
        tc.lr_max = tc.lr_min = 3e-3f;
        pg::Trainer trainer(*m, tc);
        const std::vector<int32_t> data = noisy_pattern(*m, 4096, 7, 0.1, 1);
        trainer.set_data(data.data(), data.size());
        for (int i = 0; i < 40; ++i) trainer.step();
        return m;
    }();
    return *base;
}

// Client `id`'s adapter: the round's fresh adapter trained 12 steps on its own period-11 text.
Adapter honest_client(int id) {
    const pg::Model& base = trained_base();
    LoraConfig cfg;
    cfg.rank = 4;
    cfg.init_seed = 7;  // the round's published adapter: one A init for every client
    Adapter a = Adapter::create(base, cfg);
    pg::TrainConfig tc;
    tc.batch_size = 4;
    tc.warmup_steps = 0;
    tc.lr_max = tc.lr_min = 1e-2f;
    tc.weight_decay = 0.0f;
    tc.seed = uint64_t(100 + id);
    LoraTrainer trainer(base, a, tc);
    const std::vector<int32_t> data = noisy_pattern(base, 2048, 11, 0.15, uint64_t(1000 + id));
    trainer.set_data(data.data(), data.size());
    for (int i = 0; i < 12; ++i) trainer.step();
    return a;
}

const std::vector<Adapter>& clients() {
    static const std::vector<Adapter> all = [] {
        std::vector<Adapter> v;
        for (int i = 0; i < 10; ++i) v.push_back(honest_client(i));
        return v;
    }();
    return all;
}

const std::vector<int32_t>& heldout() {
    static const std::vector<int32_t> t = noisy_pattern(trained_base(), 1024, 11, 0.15, 77);
    return t;
}

double heldout_loss(const Adapter* a) {
    pg::Session session(trained_base(), pg::SessionOptions{});
    std::unique_ptr<LoraHook> hook;
    if (a) {
        hook = std::make_unique<LoraHook>(*a, nullptr);
        session.set_linear_hook(hook.get());
    }
    return pg::evaluate(session, heldout().data(), heldout().size(), pg::EvalOptions{}).mean_loss;
}

enum class Poison { kTimes1000, kTimes3, kReversed };
const char* poison_name(Poison p) {
    return p == Poison::kTimes1000 ? "B x1000" : p == Poison::kTimes3 ? "B x3" : "reversed";
}

Adapter poisoned(const Adapter& honest, Poison p) {
    Adapter a = honest;
    const float f = p == Poison::kTimes1000 ? 1000.0f : p == Poison::kTimes3 ? 3.0f : -1.0f;
    for (const AdaptedLinear& m : a.linears())
        for (int64_t j = 0; j < m.out * a.config().rank; ++j) a.b(m)[j] *= f;
    return a;
}

// ||dW(a) - dW(b)||_F / ||dW(b)||_F over every adapted linear.
double relative_distance(const Adapter& a, const Adapter& b) {
    double d2 = 0.0, r2 = 0.0;
    for (std::size_t k = 0; k < a.linears().size(); ++k) {
        const std::vector<float> x = dense_update(a, a.linears()[k]), y = dense_update(b, b.linears()[k]);
        for (std::size_t i = 0; i < x.size(); ++i) d2 += double(x[i] - y[i]) * (x[i] - y[i]), r2 += double(y[i]) * y[i];
    }
    return std::sqrt(d2 / r2);
}

struct Method {
    const char* name;
    AverageOptions options;
};

std::vector<Method> methods() {
    AverageOptions mean, clipped, trimmed, median;
    mean.method = clipped.method = AverageMethod::kSvd;
    clipped.clip = ClipMode::kMedian;
    trimmed.method = AverageMethod::kTrimmedMean;
    trimmed.trim_fraction = 0.3;
    median.method = AverageMethod::kMedian;
    return {{"mean (svd)", mean}, {"clip to median + mean", clipped}, {"trimmed mean 0.3", trimmed}, {"median", median}};
}

}  // namespace

TEST_CASE("robust averaging: 1 poisoned of 4 and 3 of 10 stay near the honest-only average", "[coord][robust]") {
    const double base_loss = heldout_loss(nullptr);
    for (int n_honest : {3, 7}) {
        const int n_poison = n_honest == 3 ? 1 : 3;
        std::vector<const Adapter*> honest;
        for (int i = 0; i < n_honest; ++i) honest.push_back(&clients()[std::size_t(i)]);
        AverageOptions exact;  // the mean update at full rank (tiny's n_embd): nothing truncated
        exact.method = AverageMethod::kSvd;
        exact.svd_rank = 16;
        const Adapter reference = average_adapters(honest, {}, exact, nullptr);
        const double reference_loss = heldout_loss(&reference);
        REQUIRE(reference_loss < base_loss - 0.2);  // the honest round gains ~0.24 nats
        for (Poison p : {Poison::kTimes1000, Poison::kTimes3, Poison::kReversed}) {
            std::vector<Adapter> bad;
            for (int i = 0; i < n_poison; ++i) bad.push_back(poisoned(clients()[std::size_t(n_honest + i)], p));
            std::vector<const Adapter*> round = honest;
            for (const Adapter& b : bad) round.push_back(&b);
            for (const Method& m : methods()) {
                AverageOptions o = m.options;
                o.svd_rank = 4;
                const Adapter avg = average_adapters(round, {}, o, nullptr);
                const double dist = relative_distance(avg, reference), dloss = heldout_loss(&avg) - reference_loss;
                INFO(n_poison << " of " << round.size() << " " << poison_name(p) << ", " << m.name << ": distance " << dist
                              << ", held-out loss " << dloss << " from the honest average's");
                const bool mean = m.options.method == AverageMethod::kSvd && m.options.clip == ClipMode::kNone;
                const bool clip_only = m.options.method == AverageMethod::kSvd && !mean;
                if (mean) {
                    CHECK(dist > 0.5);  // the plain mean is pulled away by every kind of poison
                } else if (clip_only && p == Poison::kReversed) {
                    CHECK(dist > 0.4);  // clipping bounds a norm, not a direction
                } else if (clip_only) {
                    CHECK(dist < 0.12);
                    CHECK(std::fabs(dloss) < 0.01);
                } else {  // trimmed mean, median
                    CHECK(dist < 0.25);
                    CHECK(dloss < 0.04);
                }
            }
        }
    }
}

TEST_CASE("update norms: honest adapters pass both bounds with margin; B x1000 is refused by each", "[coord][robust]") {
    ValidationPolicy policy;
    policy.signature = SignaturePolicy::kOff;
    Validator v(trained_base(), policy);
    auto validate = [&](const Adapter& a) {
        pg::io::VectorSink sink;
        write_adapter(a, sink);
        return v.validate(sink.bytes.data(), sink.bytes.size(), nullptr);
    };
    std::vector<ValidationReport> reports;
    double worst_update = 0.0;
    for (const Adapter& a : clients()) {
        reports.push_back(validate(a));
        worst_update = std::max(worst_update, reports.back().update_ratio);
    }
    for (Poison p : {Poison::kTimes1000, Poison::kTimes3, Poison::kReversed})
        reports.push_back(validate(poisoned(clients()[0], p)));
    std::vector<ValidationReport*> round;
    for (ValidationReport& r : reports) round.push_back(&r);
    v.compare_round(round);
    double worst_round = 0.0;
    for (std::size_t i = 0; i < 10; ++i) {
        worst_round = std::max(worst_round, reports[i].round_ratio);
        CHECK(reports[i].find("update norm")->outcome == CheckOutcome::kPassed);
        CHECK(reports[i].find("round norm")->outcome == CheckOutcome::kPassed);
    }
    INFO("honest: largest update ratio " << worst_update << ", largest round ratio " << worst_round);
    // Honest adapters: ||s B A|| / ||W|| up to ~2.1, within 1.1x of the round's median (the
    // defaults leave 10x and 2.3x of margin); B x1000 is ~1,800 and ~1,000.
    CHECK(worst_update < policy.max_update_ratio / 5);
    CHECK(worst_round < policy.max_round_ratio / 2);
    const ValidationReport& big = reports[10];
    CHECK_FALSE(big.accepted);
    CHECK(big.find("update norm")->outcome == CheckOutcome::kFailed);
    CHECK_THAT(big.find("update norm")->message, Catch::Contains("the update is too large"));
    CHECK(big.find("round norm")->outcome == CheckOutcome::kFailed);
    // B x3 passes the base-relative bound but not the round's (3x the median); the reversed
    // update has an honest norm: only a held-out split can tell (test_coord_validate.cpp).
    CHECK(reports[11].find("update norm")->outcome == CheckOutcome::kPassed);
    CHECK(reports[11].find("round norm")->outcome == CheckOutcome::kFailed);
    CHECK(reports[12].find("update norm")->outcome == CheckOutcome::kPassed);
    CHECK(reports[12].find("round norm")->outcome == CheckOutcome::kPassed);
    // Fewer than 3 comparable uploads: skipped, with the reason.
    ValidationReport a = validate(clients()[0]), b = validate(clients()[1]);
    v.compare_round({&a, &b});
    CHECK(a.find("round norm")->outcome == CheckOutcome::kSkipped);
    CHECK_THAT(a.find("round norm")->message, Catch::Contains("at least 3"));
}
