// Activation recomputation is a memory/speed trade only: through the C API, a trainer with it
// takes exactly the same steps as one without.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "phonegpt/phonegpt.h"

namespace {

std::vector<float> run(bool recompute, std::vector<float>* weights) {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* model = nullptr;
    REQUIRE(pg_model_create(&mc, 3, &model) == PG_OK);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 4;
    tc.dropout = 0.1f;
    tc.n_threads = 2;
    tc.recompute_activations = recompute ? 1 : 0;
    pg_trainer* trainer = nullptr;
    REQUIRE(pg_trainer_create(model, &tc, &trainer) == PG_OK);
    std::vector<int32_t> data(500);
    for (size_t i = 0; i < data.size(); ++i) data[i] = int32_t((i * 7 + i / 13) % 65);
    REQUIRE(pg_trainer_set_data(trainer, data.data(), data.size()) == PG_OK);
    std::vector<float> losses;
    for (int i = 0; i < 8; ++i) {
        pg_step_result r;
        std::memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        REQUIRE(pg_trainer_step(trainer, &r) == PG_OK);
        losses.push_back(r.loss);
    }
    pg_train_config back;
    std::memset(&back, 0, sizeof back);
    back.struct_size = sizeof back;
    REQUIRE(pg_trainer_get_config(trainer, &back) == PG_OK);
    CHECK(back.recompute_activations == (recompute ? 1 : 0));
    const float* p = nullptr;
    int64_t n = 0;
    REQUIRE(pg_model_params(model, &p, &n) == PG_OK);
    weights->assign(p, p + n);
    pg_trainer_free(trainer);
    pg_model_free(model);
    return losses;
}

}  // namespace

TEST_CASE("recompute_activations changes memory, not results", "[train]") {
    std::vector<float> w_plain, w_recompute;
    const std::vector<float> plain = run(false, &w_plain);
    const std::vector<float> recompute = run(true, &w_recompute);
    REQUIRE(plain.size() == recompute.size());
    for (size_t i = 0; i < plain.size(); ++i) CHECK(plain[i] == recompute[i]);
    REQUIRE(w_plain.size() == w_recompute.size());
    CHECK(std::memcmp(w_plain.data(), w_recompute.data(), w_plain.size() * sizeof(float)) == 0);

    pg_train_config bad;
    pg_train_config_default(&bad);
    bad.recompute_activations = 2;
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* model = nullptr;
    REQUIRE(pg_model_create(&mc, 3, &model) == PG_OK);
    pg_trainer* trainer = reinterpret_cast<pg_trainer*>(&mc);
    CHECK(pg_trainer_create(model, &bad, &trainer) == PG_ERR_INVALID_ARGUMENT);
    CHECK(trainer == nullptr);
    CHECK(std::strstr(pg_last_error(), "recompute_activations") != nullptr);
    pg_model_free(model);
}
