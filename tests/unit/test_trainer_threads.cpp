// pg_trainer_n_threads / pg_trainer_set_threads: a run continued on another thread count (the
// phonegpt CLI's `train --resume --threads N --allow-thread-change`). The same count changes
// nothing at all; another count continues the run with results equal up to float rounding; the
// new count is what the next save records; bad arguments change nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"

namespace {

struct Run {
    pg_model* model = nullptr;
    pg_trainer* trainer = nullptr;
    explicit Run(int32_t n_threads) {
        pg_model_config mc;
        REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
        REQUIRE(pg_model_create(&mc, 7, &model) == PG_OK);
        pg_train_config tc;
        pg_train_config_default(&tc);
        tc.batch_size = 4;
        tc.seq_len = 16;
        tc.n_threads = n_threads;
        tc.warmup_steps = 2;
        tc.total_steps = 6;
        REQUIRE(pg_trainer_create(model, &tc, &trainer) == PG_OK);
        std::vector<int32_t> tokens(600);
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7 + i / 5) % 65);
        REQUIRE(pg_trainer_set_data(trainer, tokens.data(), tokens.size()) == PG_OK);
    }
    ~Run() {
        pg_trainer_free(trainer);
        pg_model_free(model);
    }
    std::vector<float> steps(int n) {
        std::vector<float> losses;
        for (int i = 0; i < n; ++i) {
            pg_step_result r = {sizeof r};
            REQUIRE(pg_trainer_step(trainer, &r) == PG_OK);
            losses.push_back(r.loss);
        }
        return losses;
    }
    int32_t threads() const {
        int32_t n = -1;
        REQUIRE(pg_trainer_n_threads(trainer, &n) == PG_OK);
        return n;
    }
    int32_t configured_threads() const {
        pg_train_config tc;
        pg_train_config_default(&tc);
        REQUIRE(pg_trainer_get_config(trainer, &tc) == PG_OK);
        return tc.n_threads;
    }
    std::vector<float> weights() const {
        const float* p = nullptr;
        int64_t n = 0;
        REQUIRE(pg_model_params(model, &p, &n) == PG_OK);
        return std::vector<float>(p, p + n);
    }
};

}  // namespace

TEST_CASE("pg_trainer_n_threads reports the resolved count; bad arguments change nothing", "[train][capi][threads]") {
    Run run(2);
    CHECK(run.threads() == 2);
    int32_t n = 0;
    CHECK(pg_trainer_n_threads(nullptr, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("pg_trainer_n_threads") != std::string::npos);
    CHECK(pg_trainer_n_threads(run.trainer, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_trainer_set_threads(nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_trainer_set_threads(run.trainer, 1025) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("n_threads") != std::string::npos);
    CHECK(run.threads() == 2);
    CHECK(run.configured_threads() == 2);
    // <= 0 is all cores, as in pg_train_config.
    REQUIRE(pg_trainer_set_threads(run.trainer, 0) == PG_OK);
    CHECK(run.threads() >= 1);
    CHECK(run.configured_threads() == 0);
}

TEST_CASE("pg_trainer_set_threads: the same count is bit-identical, another equal up to rounding",
          "[train][capi][threads]") {
    Run straight(2);
    const std::vector<float> want = straight.steps(4);

    Run same(2);
    std::vector<float> got = same.steps(2);
    REQUIRE(pg_trainer_set_threads(same.trainer, 2) == PG_OK);
    for (float l : same.steps(2)) got.push_back(l);
    CHECK(got == want);
    CHECK(same.weights() == straight.weights());

    Run changed(2);
    got = changed.steps(2);
    REQUIRE(pg_trainer_set_threads(changed.trainer, 1) == PG_OK);
    CHECK(changed.threads() == 1);
    CHECK(changed.configured_threads() == 1);
    for (float l : changed.steps(2)) got.push_back(l);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-4f * std::fabs(want[i]));
}

TEST_CASE("pg_trainer_set_threads: the next save records the new count", "[train][capi][threads][checkpoint]") {
    Run run(2);
    run.steps(1);
    REQUIRE(pg_trainer_set_threads(run.trainer, 1) == PG_OK);
    const std::string path = "trainer_threads_test.bin";
    pg_save_options so;
    pg_save_options_default(&so);
    REQUIRE(pg_trainer_save(run.trainer, path.c_str(), &so) == PG_OK);
    pg_model* m = nullptr;
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_resume(path.c_str(), &m, &t) == PG_OK);
    int32_t n = 0;
    REQUIRE(pg_trainer_n_threads(t, &n) == PG_OK);
    CHECK(n == 1);
    pg_trainer_free(t);
    pg_model_free(m);
    std::remove(path.c_str());
}
