// The one mechanism for size-prefixed structs (core/struct_fields.hpp over core/c_struct_fields.def).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "core/struct_fields.hpp"
#include "phonegpt/phonegpt.h"

TEST_CASE("read_c_struct takes the fields the caller's struct_size covers completely", "[core][struct]") {
    pg_sample_config defaults;
    pg_sample_config_default(&defaults);
    pg_sample_config caller = defaults;
    caller.temperature = 0.5f;
    caller.top_k = 7;
    caller.top_p = 0.25f;
    // Ends one byte into top_p: temperature and top_k are the caller's, top_p is not.
    caller.struct_size = uint32_t(offsetof(pg_sample_config, top_p) + 1);
    const pg_sample_config got = pg::read_c_struct(caller, defaults, "test");
    CHECK(got.struct_size == sizeof got);
    CHECK(got.temperature == 0.5f);
    CHECK(got.top_k == 7);
    CHECK(got.top_p == defaults.top_p);
    CHECK(got.max_tokens == defaults.max_tokens);
    // A newer caller's larger struct: every known field is read, nothing past sizeof.
    caller.struct_size = sizeof caller + 64;
    CHECK(pg::read_c_struct(caller, defaults, "test").top_p == 0.25f);
}

TEST_CASE("read_c_struct refuses an unset struct_size, naming the struct and the initialiser", "[core][struct]") {
    pg_eval_config defaults;
    pg_eval_config_default(&defaults);
    for (uint32_t bad : {0u, 4u, 7u, pg::kMaxStructSize + 1}) {
        pg_eval_config c = defaults;
        c.struct_size = bad;
        try {
            pg::read_c_struct(c, defaults, "pg_test");
            FAIL("accepted struct_size " << bad);
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_INVALID_ARGUMENT);
            CHECK_THAT(e.what(), Catch::Contains("pg_test: pg_eval_config.struct_size = " +
                                                                      std::to_string(bad)));
            CHECK_THAT(e.what(), Catch::Contains("pg_eval_config_default()"));
        }
    }
    pg_eval_config c = defaults;
    c.struct_size = offsetof(pg_eval_config, window) + sizeof(int32_t);  // just the first field
    c.window = 3;
    c.stride = 2;
    const pg_eval_config got = pg::read_c_struct(c, defaults, "pg_test");
    CHECK(got.window == 3);
    CHECK(got.stride == defaults.stride);
}

TEST_CASE("write_c_struct writes whole fields up to the caller's struct_size and nothing past it", "[core][struct]") {
    pg_step_result full = pg::blank_c_struct<pg_step_result>();
    full.step = 12;
    full.loss = 1.5f;
    full.lr = 0.25f;
    full.grad_norm = 2.0f;
    full.tokens = 99;
    struct {
        pg_step_result r;
        unsigned char guard[16];
    } out;
    std::memset(&out, 0x5A, sizeof out);
    out.r.struct_size = uint32_t(offsetof(pg_step_result, lr) + 2);  // part of lr
    pg::write_c_struct(full, &out.r, "test");
    CHECK(out.r.struct_size == uint32_t(offsetof(pg_step_result, lr) + 2));
    CHECK(out.r.step == 12);
    CHECK(out.r.loss == 1.5f);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&out);
    for (std::size_t i = offsetof(pg_step_result, lr); i < sizeof out; ++i) CHECK(int(bytes[i]) == 0x5A);
    pg_step_result unset;
    unset.struct_size = 0;
    CHECK_THROWS_AS(pg::write_c_struct(full, &unset, "test"), pg::Error);
}

TEST_CASE("the field list covers every byte of each listed struct", "[core][struct]") {
    // The layout check is a static_assert; here the list's own view of one struct.
    std::size_t n = 0;
    for (const pg::FieldInfo& f : pg::CStruct<pg_train_config>::fields) {
        ++n;
        CHECK(f.offset + f.size <= sizeof(pg_train_config));
    }
    CHECK(n == 23);
    CHECK(std::string(pg::CStruct<pg_train_config>::fields[17].name) == "recompute_activations");
    CHECK(std::string(pg::CStruct<pg_train_config>::fields[20].name) == "muon_lr_scale");
    CHECK(std::string(pg::CStruct<pg_train_config>::fields[21].name) == "dropout_ramp_steps");
    CHECK(std::string(pg::CStruct<pg_train_config>::fields[22].name) == "arithmetic");
    CHECK(pg::CStruct<pg_tensor_info>::fields[2].scalars == PG_MAX_DIMS);
}
