#include <catch2/catch.hpp>

#include <cstring>
#include <set>

#include "phonegpt/phonegpt.h"
#include "model/config.hpp"
#include "model/params.hpp"

TEST_CASE("PhoneGPT preset has exactly 1,214,976 parameters", "[model]") {
    pg_model_config c;
    pg_model_config_default(&c);
    CHECK(c.n_layer == 6);
    CHECK(c.n_head == 4);
    CHECK(c.n_embd == 128);
    CHECK(c.n_ctx == 128);
    CHECK(c.vocab_size == 65);
    CHECK(c.padded_vocab_size == 68);
    CHECK(pg_model_config_num_params(&c) == 1214976);
    // Without the 3 padding rows: 1,214,592.
    CHECK(pg_model_config_num_params(&c) - 3 * 128 == 1214592);
}

TEST_CASE("tensor table covers the parameter allocation exactly once", "[model]") {
    pg::ModelConfig cfg = pg::model_preset("phonegpt");
    auto table = pg::build_tensor_table(cfg);
    pg::ParamLayout layout(cfg);
    CHECK(table.size() == size_t(2 + 12 * cfg.n_layer + 2));
    std::vector<int> covered(size_t(layout.total), 0);
    std::set<std::string> names;
    for (const auto& e : table) {
        CHECK(names.insert(e.name).second);
        for (int64_t i = 0; i < e.numel; ++i) covered[size_t(e.offset + i)]++;
    }
    for (int c : covered) REQUIRE(c == 1);
}

TEST_CASE("invalid geometry is a clear error", "[model]") {
    pg_model_config c;
    pg_model_config_default(&c);
    c.n_head = 3;  // 128 % 3 != 0
    CHECK(pg_model_config_validate(&c) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(pg_last_error(), "n_head") != nullptr);
    pg_model* m = reinterpret_cast<pg_model*>(0x1);
    CHECK(pg_model_create(&c, 1, &m) == PG_ERR_INVALID_ARGUMENT);
    CHECK(m == nullptr);
    pg_model_config_default(&c);
    c.padded_vocab_size = 60;
    CHECK(pg_model_config_validate(&c) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(pg_last_error(), "padded_vocab_size") != nullptr);
    pg_model_config_default(&c);
    c.padded_vocab_size = 0;  // rounds up to a multiple of 4
    CHECK(pg_model_config_validate(&c) == PG_OK);
    c.struct_size = 0;
    CHECK(pg_model_config_validate(&c) == PG_ERR_INVALID_ARGUMENT);
}

TEST_CASE("initialisation is deterministic and GPT-2 shaped", "[model]") {
    pg_model_config c;
    pg_model_config_default(&c);
    pg_model *a = nullptr, *b = nullptr, *d = nullptr;
    REQUIRE(pg_model_create(&c, 42, &a) == PG_OK);
    REQUIRE(pg_model_create(&c, 42, &b) == PG_OK);
    REQUIRE(pg_model_create(&c, 43, &d) == PG_OK);
    const float *pa, *pb, *pd;
    int64_t n;
    REQUIRE(pg_model_params(a, &pa, &n) == PG_OK);
    REQUIRE(pg_model_params(b, &pb, &n) == PG_OK);
    REQUIRE(pg_model_params(d, &pd, &n) == PG_OK);
    CHECK(std::memcmp(pa, pb, size_t(n) * sizeof(float)) == 0);
    CHECK(std::memcmp(pa, pd, size_t(n) * sizeof(float)) != 0);
    int32_t idx;
    pg_tensor_info info;
    info.struct_size = sizeof info;
    REQUIRE(pg_model_find_tensor(a, "wte", &idx) == PG_OK);
    REQUIRE(pg_model_tensor_info(a, idx, &info) == PG_OK);
    // Padding rows 65..67 are zero; the used rows have std close to 0.02.
    double sq = 0;
    for (int64_t i = 0; i < 65 * 128; ++i) sq += double(info.data[i]) * info.data[i];
    CHECK(std::sqrt(sq / (65 * 128)) == Approx(0.02).epsilon(0.05));
    for (int64_t i = 65 * 128; i < 68 * 128; ++i) REQUIRE(info.data[i] == 0.0f);
    REQUIRE(pg_model_find_tensor(a, "h.0.ln_1.weight", &idx) == PG_OK);
    REQUIRE(pg_model_tensor_info(a, idx, &info) == PG_OK);
    for (int i = 0; i < 128; ++i) REQUIRE(info.data[i] == 1.0f);
    CHECK(pg_model_find_tensor(a, "nope", &idx) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_tensor_info(a, 9999, &info) == PG_ERR_INVALID_ARGUMENT);
    pg_model_free(a);
    pg_model_free(b);
    pg_model_free(d);
    pg_model_free(nullptr);
}
