// The architecture fields of pg_model_config (the Llama family next to GPT-2): presets with the
// published models' parameter counts, validation that names the field, old callers' structs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include "phonegpt/phonegpt.h"
#include "model/config.hpp"
#include "model/rope.hpp"

namespace {

pg_model_config preset(const char* name) {
    pg_model_config c;
    pg_model_config_default(&c);
    REQUIRE(pg_model_config_preset(name, &c) == PG_OK);
    return c;
}

int64_t num_params(const char* name) {
    const pg_model_config c = preset(name);
    return pg_model_config_num_params(&c);
}

}  // namespace

TEST_CASE("presets of the published Llama-family models have their exact parameter counts", "[model][families]") {
    // The counts Hugging Face reports for each checkpoint (sum of its tensors' sizes).
    CHECK(num_params("smollm2-135m") == 134515008);
    CHECK(num_params("smollm2-360m") == 361821120);
    CHECK(num_params("qwen2.5-0.5b") == 494032768);
    CHECK(num_params("qwen3-0.6b") == 596049920);
    CHECK(num_params("llama3.2-1b") == 1235814400);

    const pg_model_config q3 = preset("qwen3-0.6b");
    CHECK(q3.head_dim == 128);  // 16 heads of 128 in width 1,024
    CHECK(q3.n_head * q3.head_dim == 2 * q3.n_embd);
    CHECK(q3.qk_norm == 1);
    CHECK(q3.n_kv_head == 8);
    const pg_model_config l = preset("llama3.2-1b");
    CHECK(l.rope_scaling_factor == 32.0f);
    CHECK(l.rope_original_max_positions == 8192);
    CHECK(l.rope_theta == 500000.0f);
    CHECK(l.n_ctx == 131072);
    const pg_model_config q2 = preset("qwen2.5-0.5b");
    CHECK(q2.qkv_bias == 1);
    CHECK(q2.linear_bias == 0);
    CHECK(q2.mlp == PG_MLP_SWIGLU);
    CHECK(q2.norm == PG_NORM_RMSNORM);
    CHECK(q2.positions == PG_POSITIONS_ROTARY);
}

TEST_CASE("the small test shapes of each family count their tensors", "[model][families]") {
    // tiny-llama: C 32, 4 heads of 8, 2 KV heads, SwiGLU 48, no biases, tied.
    const int64_t C = 32, V = 68;
    const int64_t llama_layer = 2 * C + C * 32 + 2 * C * 16 + 32 * C + 3 * C * 48;
    CHECK(num_params("tiny-llama") == V * C + 2 * llama_layer + C);
    // tiny-qwen2: one KV head (multi-query), q/k/v biases, SwiGLU 64.
    const int64_t qwen2_layer = 2 * C + C * 32 + 32 + 2 * (C * 8 + 8) + 32 * C + 3 * C * 64;
    CHECK(num_params("tiny-qwen2") == V * C + 2 * qwen2_layer + C);
    // tiny-qwen3: 4 heads of 16 (q width 64 in width 32), q/k norms, separate head.
    const int64_t qwen3_layer = 2 * C + C * 64 + 2 * C * 32 + 64 * C + 2 * 16 + 3 * C * 48;
    CHECK(num_params("tiny-qwen3") == 2 * V * C + 2 * qwen3_layer + C);
}

TEST_CASE("GPT-2 stays the default and older callers' structs read as GPT-2", "[model][families]") {
    pg_model_config c;
    pg_model_config_default(&c);
    CHECK(c.norm == PG_NORM_LAYERNORM);
    CHECK(c.positions == PG_POSITIONS_LEARNED);
    CHECK(c.mlp == PG_MLP_GELU);
    CHECK(c.qkv_bias == 1);
    CHECK(c.linear_bias == 1);
    CHECK(c.tied_head == 1);
    CHECK(c.n_kv_head == 0);
    CHECK(c.head_dim == 0);
    CHECK(c.mlp_hidden == 0);
    CHECK(c.qk_norm == 0);
    CHECK(pg::model_config_from_c(c).is_gpt2());

    // A caller compiled before the architecture fields: its struct ends at layernorm_eps, and
    // whatever follows in memory is not read.
    pg_model_config old;
    std::memset(&old, 0x5A, sizeof old);
    pg_model_config_default(&old);
    old.struct_size = uint32_t(offsetof(pg_model_config, layernorm_eps) + sizeof(float));
    std::memset(reinterpret_cast<char*>(&old) + old.struct_size, 0x5A, sizeof old - old.struct_size);
    CHECK(pg_model_config_validate(&old) == PG_OK);
    CHECK(pg_model_config_num_params(&old) == 1214976);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&old, 1, &m) == PG_OK);
    pg_model_config back;
    pg_model_config_default(&back);
    back.norm = PG_NORM_RMSNORM;
    REQUIRE(pg_model_get_config(m, &back) == PG_OK);
    CHECK(back.norm == PG_NORM_LAYERNORM);
    CHECK(back.tied_head == 1);
    pg_model_free(m);
}

TEST_CASE("every architecture field is validated, naming the field", "[model][families]") {
    struct Case {
        const char* field;
        void (*bad)(pg_model_config&);
    };
    const Case cases[] = {
        {"norm", [](pg_model_config& c) { c.norm = pg_norm_kind(7); }},
        {"qk_norm", [](pg_model_config& c) { c.qk_norm = 2; }},
        {"qk_norm", [](pg_model_config& c) { c.norm = PG_NORM_LAYERNORM; }},  // qk_norm without RMSNorm
        {"positions", [](pg_model_config& c) { c.positions = pg_position_kind(-1); }},
        {"rope_theta", [](pg_model_config& c) { c.rope_theta = 0.0f; }},
        {"rope_theta", [](pg_model_config& c) { c.rope_theta = INFINITY; }},
        {"rope_scaling_factor", [](pg_model_config& c) { c.rope_scaling_factor = 0.5f; }},
        {"rope_scaling_factor", [](pg_model_config& c) {
             c.rope_scaling_factor = 8.0f;
             c.positions = PG_POSITIONS_LEARNED;
         }},
        {"rope_low_freq_factor", [](pg_model_config& c) {
             c.rope_scaling_factor = 8.0f;
             c.rope_low_freq_factor = 0.0f;
         }},
        {"rope_high_freq_factor", [](pg_model_config& c) {
             c.rope_scaling_factor = 8.0f;
             c.rope_high_freq_factor = c.rope_low_freq_factor;
         }},
        {"rope_original_max_positions", [](pg_model_config& c) {
             c.rope_scaling_factor = 8.0f;
             c.rope_original_max_positions = 0;
         }},
        {"n_kv_head", [](pg_model_config& c) { c.n_kv_head = 3; }},   // does not divide 4 heads
        {"n_kv_head", [](pg_model_config& c) { c.n_kv_head = 5; }},   // more than n_head
        {"n_kv_head", [](pg_model_config& c) { c.n_kv_head = -1; }},
        {"head_dim", [](pg_model_config& c) { c.head_dim = -2; }},
        {"head_dim", [](pg_model_config& c) { c.head_dim = 15; }},    // odd with rotary positions
        {"head_dim", [](pg_model_config& c) { c.head_dim = 1 << 15; }},  // n_head * head_dim too wide
        {"qkv_bias", [](pg_model_config& c) { c.qkv_bias = 3; }},
        {"linear_bias", [](pg_model_config& c) { c.linear_bias = -1; }},
        {"mlp", [](pg_model_config& c) { c.mlp = pg_mlp_kind(2); }},
        {"mlp_hidden", [](pg_model_config& c) { c.mlp_hidden = -1; }},
        {"tied_head", [](pg_model_config& c) { c.tied_head = 2; }},
    };
    for (const Case& k : cases) {
        pg_model_config c = preset("tiny-qwen3");
        REQUIRE(pg_model_config_validate(&c) == PG_OK);
        k.bad(c);
        INFO(k.field);
        CHECK(pg_model_config_validate(&c) == PG_ERR_INVALID_ARGUMENT);
        CHECK(std::string(pg_last_error()).find(k.field) != std::string::npos);
        CHECK(pg_model_config_num_params(&c) == 0);
    }
}

TEST_CASE("the Llama family runs; a mix of it and GPT-2's block is refused by name", "[model][families]") {
    for (const char* name : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
        pg_model_config c = preset(name);
        pg_model* m = nullptr;
        CHECK(pg_model_create(&c, 1, &m) == PG_OK);
        pg_model_free(m);
    }
    // A mix of GPT-2's block and the Llama family's is named by its first GPT-2 field.
    struct Case {
        const char* field;
        void (*change)(pg_model_config&);
    };
    const Case cases[] = {
        {"norm = PG_NORM_LAYERNORM", [](pg_model_config& c) { c.norm = PG_NORM_LAYERNORM; }},
        {"positions = PG_POSITIONS_LEARNED", [](pg_model_config& c) { c.positions = PG_POSITIONS_LEARNED; }},
        {"mlp = PG_MLP_GELU", [](pg_model_config& c) { c.mlp = PG_MLP_GELU; }},
    };
    for (const Case& k : cases) {
        pg_model_config c = preset("tiny-qwen2");  // (tiny-llama's rope scaling needs rotary positions)
        k.change(c);
        INFO(k.field);
        REQUIRE(pg_model_config_validate(&c) == PG_OK);
        pg_model* m = reinterpret_cast<pg_model*>(0x1);
        CHECK(pg_model_create(&c, 1, &m) == PG_ERR_UNSUPPORTED);
        CHECK(m == nullptr);
        CHECK(std::string(pg_last_error()).find(k.field) != std::string::npos);
    }
    // GPT-2's block with one Llama-family field changed is a mix too: refused naming "norm".
    pg_model_config gpt = preset("tiny");
    gpt.n_kv_head = 1;
    pg_model* none = nullptr;
    CHECK(pg_model_create(&gpt, 1, &none) == PG_ERR_UNSUPPORTED);
    CHECK(std::string(pg_last_error()).find("norm = PG_NORM_LAYERNORM") != std::string::npos);
    // The GPT-2 block written out explicitly is still GPT-2.
    pg_model_config c = preset("tiny");
    c.n_kv_head = c.n_head;
    c.head_dim = c.n_embd / c.n_head;
    c.mlp_hidden = 4 * c.n_embd;
    pg_model* m = nullptr;
    CHECK(pg_model_create(&c, 1, &m) == PG_OK);
    pg_model_free(m);
}

TEST_CASE("rotary frequencies follow theta^(-2i/d) and Llama 3's three bands", "[model][families]") {
    const double pi = std::acos(-1.0);
    pg::ModelConfig q = pg::model_preset("tiny-qwen3");  // head_dim 16, theta 1e6, no scaling
    const auto plain = pg::rope_inverse_frequencies(q);
    REQUIRE(plain.size() == 8);
    for (int i = 0; i < 8; ++i) CHECK(plain[i] == Approx(std::pow(1e6, -2.0 * i / 16)).epsilon(1e-14));

    // tiny-llama: head_dim 8, theta 1e4, factor 4 over 8 original positions, low 1, high 4: the
    // wavelengths 2 pi 10^i are kept below 8 / 4 = 2, stretched above 8 / 1 = 8, and between
    // them (i = 0 only, 6.28) interpolated: smooth = (8 / 6.28 - 1) / 3.
    const pg::ModelConfig l = pg::model_preset("tiny-llama");
    const auto scaled = pg::rope_inverse_frequencies(l);
    REQUIRE(scaled.size() == 4);
    const double smooth = (8.0 / (2 * pi) - 1.0) / 3.0;
    CHECK(scaled[0] == Approx((1 - smooth) * 1.0 / 4 + smooth * 1.0).epsilon(1e-14));
    for (int i = 1; i < 4; ++i) CHECK(scaled[i] == Approx(std::pow(1e4, -2.0 * i / 8) / 4).epsilon(1e-14));

    // Llama 3.2 1B: the highest frequency (wavelength 2 pi < 8192 / 4) is kept, the lowest
    // (wavelength ~ 2 pi 500000 > 8192) divided by 32.
    const pg::ModelConfig big = pg::model_preset("llama3.2-1b");
    const auto f = pg::rope_inverse_frequencies(big);
    REQUIRE(f.size() == 32);
    CHECK(f[0] == 1.0);
    CHECK(f[31] == Approx(std::pow(500000.0, -62.0 / 64) / 32).epsilon(1e-14));
    for (std::size_t i = 1; i < f.size(); ++i) CHECK(f[i] < f[i - 1]);  // still decreasing

    // The angles of positions [5, 8): cos and sin of position * frequency, row by row.
    float c[3 * 4], s[3 * 4];
    pg::rope_angles(l, 5, 3, c, s);
    for (int p = 0; p < 3; ++p)
        for (int i = 0; i < 4; ++i) {
            CHECK(c[p * 4 + i] == float(std::cos((5 + p) * scaled[i])));
            CHECK(s[p * 4 + i] == float(std::sin((5 + p) * scaled[i])));
        }
}
