// The trainer on the tiny preset: it learns (overfits a fixed batch), it is reproducible bit for
// bit, resuming from state() equals the uninterrupted run, accumulation equals one big batch,
// weight decay and clipping do what they say.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "train/step_driver.hpp"
#include "train/trainer.hpp"

namespace {

std::unique_ptr<pg::Model> tiny_model(uint64_t seed = 42) {
    auto m = std::make_unique<pg::Model>(pg::model_preset("tiny"));
    pg::init_gpt2_params(m->config(), m->params(), seed);
    return m;
}

// Text-like training tokens: a short repeated phrase with random substitutions, so there is
// something to learn and something random.
std::vector<int32_t> training_tokens(size_t n, uint64_t seed = 3) {
    pg::Rng rng(seed);
    const int32_t phrase[] = {20, 7, 4, 1, 16, 14, 17, 11, 3, 1, 8, 18, 1, 0, 11, 11, 1, 20, 7, 4};
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i)
        t[i] = rng.below(10) == 0 ? int32_t(rng.below(65)) : phrase[i % (sizeof phrase / sizeof *phrase)];
    return t;
}

pg::TrainConfig small_config() {
    pg::TrainConfig c;
    c.batch_size = 4;
    c.seq_len = 16;
    c.lr_max = 3e-3f;
    c.lr_min = 3e-4f;
    c.warmup_steps = 3;
    c.total_steps = 20;
    c.n_threads = 2;
    c.seed = 77;
    return c;
}

std::vector<float> params_of(const pg::Model& m) {
    return std::vector<float>(m.params(), m.params() + m.num_params());
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("trainer overfits one fixed batch to near-zero loss", "[train][trainer]") {
    auto model = tiny_model();
    pg::TrainConfig c;
    c.batch_size = 2;
    c.seq_len = 16;
    c.schedule = PG_LR_CONSTANT;
    c.lr_max = 1e-2f;
    c.lr_min = 0.0f;
    c.warmup_steps = 10;
    c.weight_decay = 0.0f;
    c.n_threads = 2;
    pg::Trainer trainer(*model, c);
    auto tokens = training_tokens(200, 11);
    std::vector<int32_t> in(tokens.begin(), tokens.begin() + 32), tgt(tokens.begin() + 1, tokens.begin() + 33);
    float first = 0, last = 0;
    for (int s = 0; s < 300; ++s) {
        pg::StepResult r = trainer.step_batch(in.data(), tgt.data(), 2, 16);
        if (s == 0) first = r.loss;
        last = r.loss;
        REQUIRE(std::isfinite(r.loss));
        CHECK(r.step == s + 1);
        CHECK(r.tokens == 32);
    }
    CHECK(first > 3.5f);  // about ln(65) = 4.17 at initialisation
    CHECK(last < 0.05f);
    CHECK(trainer.step_count() == 300);
}

TEST_CASE("same seed and threads give a bit-identical run (dropout and accumulation on)", "[train][trainer]") {
    auto data = training_tokens(2000);
    pg::TrainConfig c = small_config();
    c.dropout = 0.1f;
    c.grad_accum_steps = 2;
    std::vector<float> losses[2], norms[2];
    std::vector<float> final_params[2];
    for (int run = 0; run < 2; ++run) {
        auto model = tiny_model();
        pg::Trainer trainer(*model, c);
        trainer.set_data(data.data(), data.size());
        for (int s = 0; s < 6; ++s) {
            pg::StepResult r = trainer.step();
            losses[run].push_back(r.loss);
            norms[run].push_back(r.grad_norm);
            CHECK(r.tokens == 4 * 16 * 2);
            CHECK(r.lr == trainer.lr_at(s));
        }
        final_params[run] = params_of(*model);
    }
    CHECK(same_bits(losses[0], losses[1]));
    CHECK(same_bits(norms[0], norms[1]));
    CHECK(same_bits(final_params[0], final_params[1]));
    // Training moved the weights and a different seed gives a different run.
    auto fresh = tiny_model();
    CHECK_FALSE(same_bits(final_params[0], params_of(*fresh)));
    c.seed = 78;
    pg::Trainer other(*fresh, c);
    other.set_data(data.data(), data.size());
    CHECK(other.step().loss != losses[0][0]);
}

TEST_CASE("a dropout ramp: no dropout at the first step, the ramp's rate after it", "[train][trainer]") {
    auto data = training_tokens(2000);
    // The first two steps' losses of a run with this dropout and ramp.
    auto first_losses = [&](float dropout, int ramp) {
        pg::TrainConfig c = small_config();
        c.dropout = dropout;
        c.dropout_ramp_steps = ramp;
        auto model = tiny_model();
        pg::Trainer trainer(*model, c);
        trainer.set_data(data.data(), data.size());
        std::vector<float> losses;
        for (int s = 0; s < 2; ++s) losses.push_back(trainer.step().loss);
        return losses;
    };
    const std::vector<float> none = first_losses(0.0f, 0), full = first_losses(0.2f, 0), ramp = first_losses(0.2f, 4);
    CHECK(std::memcmp(&ramp[0], &none[0], 4) == 0);  // step 0: rate 0.2 x 0 / 4
    CHECK(ramp[0] != full[0]);
    CHECK(ramp[1] != none[1]);  // step 1: rate 0.05, so not the dropout-free step
}

TEST_CASE("resuming from state() continues bit for bit", "[train][trainer]") {
    auto data = training_tokens(3000);
    pg::TrainConfig c = small_config();
    c.dropout = 0.1f;
    c.grad_accum_steps = 2;
    // Uninterrupted: 8 steps.
    auto straight = tiny_model();
    std::vector<float> straight_losses;
    {
        pg::Trainer t(*straight, c);
        t.set_data(data.data(), data.size());
        for (int s = 0; s < 8; ++s) straight_losses.push_back(t.step().loss);
    }
    // Interrupted after 3: the state and weights go to a new model and trainer.
    auto first = tiny_model();
    std::vector<float> resumed_losses;
    pg::TrainerState saved;
    {
        pg::Trainer t(*first, c);
        t.set_data(data.data(), data.size());
        for (int s = 0; s < 3; ++s) resumed_losses.push_back(t.step().loss);
        saved = t.state();
    }
    CHECK(saved.step == 3);
    CHECK(saved.micro_batches == 6);
    CHECK(saved.config.seq_len == 16);
    auto second = std::make_unique<pg::Model>(first->config());
    std::memcpy(second->params(), first->params(), sizeof(float) * size_t(first->num_params()));
    pg::Trainer t(*second, saved);
    CHECK(t.step_count() == 3);
    CHECK_THROWS_AS(t.step(), pg::Error);  // data is not part of the state
    t.set_data(data.data(), data.size());
    for (int s = 3; s < 8; ++s) resumed_losses.push_back(t.step().loss);
    CHECK(same_bits(straight_losses, resumed_losses));
    CHECK(same_bits(params_of(*straight), params_of(*second)));
}

TEST_CASE("trainer state is validated against the model", "[train][trainer]") {
    auto model = tiny_model();
    pg::TrainerState s = pg::Trainer(*model, small_config()).state();
    CHECK(s.adam_m.size() == size_t(model->num_params()));
    pg::TrainerState short_m = s;
    short_m.adam_m.pop_back();
    try {
        pg::Trainer bad(*model, short_m);
        FAIL("accepted moments of the wrong size");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_GEOMETRY);
    }
    pg::TrainerState nan_v = s;
    nan_v.adam_v[5] = NAN;
    CHECK_THROWS_AS(pg::Trainer(*model, nan_v), pg::Error);
    pg::TrainerState long_seq = s;
    long_seq.config.seq_len = model->config().n_ctx + 1;
    CHECK_THROWS_AS(pg::Trainer(*model, long_seq), pg::Error);
}

TEST_CASE("2 micro-batches of B/2 equal one step of B (dropout off)", "[train][trainer]") {
    auto data = training_tokens(2000);
    pg::TrainConfig big = small_config();
    big.batch_size = 4;
    big.grad_accum_steps = 1;
    pg::TrainConfig halves = big;
    halves.batch_size = 2;
    halves.grad_accum_steps = 2;
    auto m1 = tiny_model(), m2 = tiny_model();
    pg::Trainer t1(*m1, big), t2(*m2, halves);
    t1.set_data(data.data(), data.size());
    t2.set_data(data.data(), data.size());
    for (int s = 0; s < 3; ++s) {
        // The sampler draws offsets in batch order, so both see the same 4 windows.
        pg::StepResult r1 = t1.step(), r2 = t2.step();
        CHECK(r1.tokens == r2.tokens);
        CHECK(r2.loss == Approx(r1.loss).epsilon(1e-5));
        CHECK(r2.grad_norm == Approx(r1.grad_norm).epsilon(1e-4));
    }
    const auto p1 = params_of(*m1), p2 = params_of(*m2);
    double max_diff = 0;
    for (size_t i = 0; i < p1.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(p1[i] - p2[i])));
    CHECK(max_diff < 1e-5);
}

TEST_CASE("weight decay touches exactly the intended tensors", "[train][trainer][adamw]") {
    auto tokens = training_tokens(100);
    std::vector<int32_t> in(tokens.begin(), tokens.begin() + 32), tgt(tokens.begin() + 1, tokens.begin() + 33);
    for (bool decay_embeddings : {false, true}) {
        pg::TrainConfig c = small_config();
        c.weight_decay = 0.0f;
        auto plain = tiny_model();
        pg::Trainer(*plain, c).step_batch(in.data(), tgt.data(), 2, 16);
        c.weight_decay = 0.5f;
        c.decay_embeddings = decay_embeddings;
        auto decayed = tiny_model();
        pg::Trainer(*decayed, c).step_batch(in.data(), tgt.data(), 2, 16);
        for (const auto& e : decayed->tensors()) {
            const bool embedding = e.kind == pg::kWte || e.kind == pg::kWpe;
            const bool want = e.is_linear_weight || (decay_embeddings && embedding);
            bool differs = false;
            for (int64_t i = 0; i < e.numel; ++i)
                differs |= plain->params()[e.offset + i] != decayed->params()[e.offset + i];
            INFO(e.name);
            // Biases start at 0, where decay has nothing to shrink; every other tensor is
            // non-zero, so a decayed tensor must differ and an undecayed one must not.
            if (e.name.find("bias") == std::string::npos) CHECK(differs == want);
            else CHECK_FALSE(differs);
        }
    }
}

TEST_CASE("clipping scales the gradients to grad_clip and reports the norm before", "[train][trainer][clip]") {
    auto tokens = training_tokens(100);
    std::vector<int32_t> in(tokens.begin(), tokens.begin() + 32), tgt(tokens.begin() + 1, tokens.begin() + 33);
    auto model = tiny_model();
    pg::TrainConfig c = small_config();
    c.grad_clip = 0.01f;
    pg::Trainer t(*model, c);
    t.compute_gradients(in.data(), tgt.data(), 2, 16);
    double before = 0;
    for (int64_t i = 0; i < model->num_params(); ++i) before += double(t.grads()[i]) * t.grads()[i];
    before = std::sqrt(before);
    REQUIRE(before > 0.01);
    pg::StepResult r = t.step_batch(in.data(), tgt.data(), 2, 16);
    CHECK(r.grad_norm == Approx(before).epsilon(1e-5));
    double after = 0;
    for (int64_t i = 0; i < model->num_params(); ++i) after += double(t.grads()[i]) * t.grads()[i];
    CHECK(std::sqrt(after) == Approx(0.01).epsilon(1e-5));
    // With clipping off the gradients stay as computed.
    c.grad_clip = 0.0f;
    auto m2 = tiny_model();
    pg::Trainer t2(*m2, c);
    pg::StepResult r2 = t2.step_batch(in.data(), tgt.data(), 2, 16);
    double kept = 0;
    for (int64_t i = 0; i < m2->num_params(); ++i) kept += double(t2.grads()[i]) * t2.grads()[i];
    CHECK(std::sqrt(kept) == Approx(r2.grad_norm).epsilon(1e-5));
}

TEST_CASE("compute_gradients is the gradient of the mean over scored positions", "[train][trainer]") {
    auto tokens = training_tokens(100);
    std::vector<int32_t> in(tokens.begin(), tokens.begin() + 32), tgt(tokens.begin() + 1, tokens.begin() + 33);
    auto model = tiny_model();
    pg::Trainer t(*model, small_config());
    const float full = t.compute_gradients(in.data(), tgt.data(), 2, 16);
    std::vector<float> g_full(t.grads(), t.grads() + model->num_params());
    // Unscoring half the targets of a batch made of two copies of one sequence gives the
    // same mean and gradient as that sequence alone.
    std::vector<int32_t> in2(in.begin(), in.begin() + 16), tgt2(tgt.begin(), tgt.begin() + 16);
    std::vector<int32_t> in_dup = in2, tgt_dup = tgt2;
    in_dup.insert(in_dup.end(), in2.begin(), in2.end());
    tgt_dup.insert(tgt_dup.end(), 16, -1);
    const float single = t.compute_gradients(in2.data(), tgt2.data(), 1, 16);
    std::vector<float> g_single(t.grads(), t.grads() + model->num_params());
    const float dup = t.compute_gradients(in_dup.data(), tgt_dup.data(), 2, 16);
    CHECK(dup == Approx(single).epsilon(1e-6));
    for (int64_t i = 0; i < model->num_params(); ++i)
        REQUIRE(t.grads()[i] == Approx(g_single[size_t(i)]).margin(1e-7));
    CHECK(full != single);
    // No update happened.
    auto fresh = tiny_model();
    CHECK(same_bits(params_of(*model), params_of(*fresh)));
    CHECK(t.step_count() == 0);
}
