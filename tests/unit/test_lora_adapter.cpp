// The in-memory LoRA adapter: configuration (defaults, validation, callers with an older
// struct), the tensor table read from the configuration and the base's geometry, PEFT's
// initialisation, and the check that an adapter belongs to a base.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "lora/adapter.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "tokenizer/char_tokenizer.hpp"

namespace {

pg::ModelConfig tiny_config() { return pg::model_preset("tiny"); }  // 2 layers, width 16

pg::Model tiny_model(uint64_t seed) {
    pg::Model m(tiny_config());
    pg::init_gpt2_params(m.config(), m.params(), seed);
    return m;
}

bool message_has(const std::string& needle) {
    return std::string(pg_last_error()).find(needle) != std::string::npos;
}

// The tiny preset through the C API, freed at scope exit.
struct TinyBase {
    pg_model* model = nullptr;
    TinyBase() {
        pg_model_config mc;
        REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
        REQUIRE(pg_model_create(&mc, 3, &model) == PG_OK);
    }
    ~TinyBase() { pg_model_free(model); }
};

}  // namespace

TEST_CASE("lora config: defaults are PEFT's", "[lora]") {
    pg_lora_config c;
    pg_lora_config_default(&c);
    CHECK(c.struct_size == sizeof(pg_lora_config));
    CHECK(c.rank == 8);
    CHECK(c.alpha == 8.0f);
    CHECK(c.use_rslora == 0);
    CHECK(c.dropout == 0.0f);
    CHECK(c.target_modules == 0);  // the base family's PEFT default
    CHECK(c.layers == nullptr);
    CHECK(c.n_layers == 0);
    CHECK(c.init_seed == 1337);
    CHECK(c.freeze_a == 0);
    CHECK(pg_lora_config_validate(&c) == PG_OK);
}

TEST_CASE("lora config: scale is alpha/r, or alpha/sqrt(r) with rsLoRA", "[lora]") {
    pg::lora::LoraConfig cfg;
    cfg.rank = 4;
    cfg.alpha = 8.0f;
    CHECK(cfg.scale() == 2.0f);
    cfg.use_rslora = true;
    CHECK(cfg.scale() == 4.0f);
    cfg.rank = 8;
    CHECK(cfg.scale() == static_cast<float>(8.0 / std::sqrt(8.0)));
}

TEST_CASE("lora config: every bad field is refused and named", "[lora]") {
    struct Case {
        const char* field;
        void (*spoil)(pg_lora_config&);
    };
    static const int32_t dup[] = {1, 1};
    static const int32_t neg[] = {-1};
    const Case cases[] = {
        {"rank", [](pg_lora_config& c) { c.rank = 0; }},
        {"rank", [](pg_lora_config& c) { c.rank = PG_LORA_MAX_RANK + 1; }},
        {"alpha", [](pg_lora_config& c) { c.alpha = 0.0f; }},
        {"alpha", [](pg_lora_config& c) { c.alpha = NAN; }},
        {"dropout", [](pg_lora_config& c) { c.dropout = 1.0f; }},
        {"dropout", [](pg_lora_config& c) { c.dropout = -0.1f; }},
        {"use_rslora", [](pg_lora_config& c) { c.use_rslora = 2; }},
        {"freeze_a", [](pg_lora_config& c) { c.freeze_a = -1; }},
        {"target_modules", [](pg_lora_config& c) { c.target_modules = 2048; }},
        {"target_modules", [](pg_lora_config& c) { c.target_modules = 0x80000001u; }},
        {"layers", [](pg_lora_config& c) { c.layers = nullptr; c.n_layers = 2; }},
        {"layers", [](pg_lora_config& c) { c.layers = dup; c.n_layers = 2; }},
        {"layers", [](pg_lora_config& c) { c.layers = neg; c.n_layers = 1; }},
        {"n_layers", [](pg_lora_config& c) { c.layers = neg; c.n_layers = -1; }},
        {"struct_size", [](pg_lora_config& c) { c.struct_size = 0; }},
    };
    for (const Case& k : cases) {
        pg_lora_config c;
        pg_lora_config_default(&c);
        k.spoil(c);
        INFO(k.field << ": " << pg_last_error());
        CHECK(pg_lora_config_validate(&c) == PG_ERR_INVALID_ARGUMENT);
        CHECK(message_has(k.field));
        CHECK(message_has("pg_lora_config_validate"));
    }
}

TEST_CASE("lora config: a caller with an older, shorter struct gets defaults for the rest", "[lora]") {
    pg_lora_config c;
    pg_lora_config_default(&c);
    c.rank = 4;
    c.alpha = 2.0f;
    c.target_modules = PG_LORA_MLP_C_PROJ;  // beyond the older struct: never read
    c.struct_size = offsetof(pg_lora_config, alpha) + sizeof(float);
    const pg::lora::LoraConfig cfg = pg::lora::lora_config_from_c(c);
    CHECK(cfg.rank == 4);
    CHECK(cfg.alpha == 2.0f);
    CHECK(cfg.target_modules == 0);
    CHECK(cfg.layers.empty());
}

TEST_CASE("lora adapter: the tensor table follows the configuration and the base", "[lora]") {
    const pg::Model base = tiny_model(1);
    pg::lora::LoraConfig cfg;
    cfg.rank = 2;
    cfg.target_modules = PG_LORA_ALL_LINEARS;
    const pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    const int64_t C = 16, r = 2;
    REQUIRE(a.linears().size() == 8);
    REQUIRE(a.tensors().size() == 16);
    const char* names[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    const int64_t in[] = {C, C, C, 4 * C}, out[] = {3 * C, C, 4 * C, C};
    int64_t offset = 0;
    for (int layer = 0; layer < 2; ++layer)
        for (int t = 0; t < 4; ++t) {
            const auto& A = a.tensors()[static_cast<size_t>((layer * 4 + t) * 2)];
            const auto& B = a.tensors()[static_cast<size_t>((layer * 4 + t) * 2 + 1)];
            const std::string stem = "h." + std::to_string(layer) + "." + names[t];
            CHECK(A.name == stem + ".lora_A.weight");
            CHECK(B.name == stem + ".lora_B.weight");
            CHECK(A.shape == std::array<int64_t, 2>{r, in[t]});
            CHECK(B.shape == std::array<int64_t, 2>{out[t], r});
            CHECK(A.offset == offset);
            CHECK(B.offset == offset + r * in[t]);
            offset += r * in[t] + out[t] * r;
            const pg::lora::AdaptedLinear* m = a.find(layer, static_cast<pg::lora::Target>(t));
            REQUIRE(m != nullptr);
            CHECK(m->a_offset == A.offset);
            CHECK(a.find_tensor(B.name) == (layer * 4 + t) * 2 + 1);
        }
    CHECK(a.num_params() == offset);
    CHECK(a.find_tensor("h.2.attn.c_attn.lora_A.weight") == -1);
}

TEST_CASE("lora adapter: layers and targets select what is adapted", "[lora]") {
    const pg::Model base = tiny_model(1);
    pg::lora::LoraConfig cfg;
    cfg.target_modules = PG_LORA_MLP_C_PROJ;
    cfg.layers = {1};
    cfg.rank = 3;
    const pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    REQUIRE(a.tensors().size() == 2);
    CHECK(a.tensors()[0].name == "h.1.mlp.c_proj.lora_A.weight");
    CHECK(a.find(0, pg::lora::Target::mlp_c_proj) == nullptr);
    CHECK(a.find(1, pg::lora::Target::attn_c_attn) == nullptr);
    CHECK(a.find(1, pg::lora::Target::mlp_c_proj) != nullptr);
    CHECK(a.num_params() == 3 * 64 + 16 * 3);
}

TEST_CASE("lora adapter: GPT-2 small with r = 8 on c_attn trains 294,912 parameters", "[lora]") {
    pg::lora::BaseIdentity gpt2;
    gpt2.config = pg::ModelConfig{12, 12, 768, 1024, 50257, 50260, 1e-5f};
    const pg::lora::Adapter a(pg::lora::LoraConfig{}, gpt2);
    CHECK(a.num_params() == 294912);
    CHECK(a.tensors().size() == 24);
}

TEST_CASE("lora adapter: PEFT initialisation, A kaiming-uniform(a = sqrt 5), B zero", "[lora]") {
    const pg::Model base = tiny_model(1);
    pg::lora::LoraConfig cfg;
    cfg.rank = 8;
    cfg.target_modules = PG_LORA_ALL_LINEARS;
    const pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    for (const auto& m : a.linears()) {
        const double bound = 1.0 / std::sqrt(double(m.in));
        const float* A = a.a(m);
        const int64_t n = cfg.rank * m.in;
        double sum = 0, sq = 0, max_abs = 0;
        for (int64_t i = 0; i < n; ++i) {
            sum += A[i];
            sq += double(A[i]) * A[i];
            max_abs = std::max(max_abs, std::fabs(double(A[i])));
        }
        CHECK(max_abs <= bound);
        CHECK(max_abs > 0.8 * bound);  // spread over the whole interval
        const double var = sq / double(n) - (sum / double(n)) * (sum / double(n));
        // U(-b, b) has variance b^2 / 3; 128+ draws estimate it within a third.
        CHECK(var == Approx(bound * bound / 3).epsilon(0.35));
        const float* B = a.b(m);
        for (int64_t i = 0; i < m.out * cfg.rank; ++i) REQUIRE(B[i] == 0.0f);
    }
    // The seed decides the factors, bit for bit.
    const pg::lora::Adapter same = pg::lora::Adapter::create(base, cfg);
    CHECK(std::memcmp(a.params(), same.params(), sizeof(float) * size_t(a.num_params())) == 0);
    cfg.init_seed = 7;
    const pg::lora::Adapter other = pg::lora::Adapter::create(base, cfg);
    CHECK(std::memcmp(a.params(), other.params(), sizeof(float) * size_t(a.num_params())) != 0);
}

TEST_CASE("lora adapter: geometry against the base is checked, naming both sides", "[lora]") {
    TinyBase tiny;
    pg_model* base = tiny.model;
    pg_lora_config c;
    pg_lora_config_default(&c);
    pg_lora_adapter* a = reinterpret_cast<pg_lora_adapter*>(&tiny);  // must be reset to NULL

    const int32_t layers[] = {0, 2};
    c.layers = layers;
    c.n_layers = 2;
    CHECK(pg_lora_adapter_create(base, &c, &a) == PG_ERR_GEOMETRY);
    CHECK(a == nullptr);
    CHECK(message_has("layer 2"));
    CHECK(message_has("n_layer = 2"));

    pg_lora_config_default(&c);
    c.rank = 17;  // c_attn is [48, 16]
    c.target_modules = PG_LORA_ATTN_C_ATTN;
    CHECK(pg_lora_adapter_create(base, &c, &a) == PG_ERR_GEOMETRY);
    CHECK(message_has("rank = 17"));
    CHECK(message_has("in 16, out 48"));
    c.rank = 16;
    REQUIRE(pg_lora_adapter_create(base, &c, &a) == PG_OK);
    pg_lora_adapter_free(a);
}

TEST_CASE("lora adapter: C API round trip and bad arguments", "[lora]") {
    TinyBase tiny;
    pg_model* base = tiny.model;
    pg_lora_config c;
    pg_lora_config_default(&c);
    const int32_t layers[] = {1, 0};
    c.layers = layers;
    c.n_layers = 2;
    c.rank = 4;
    c.alpha = 16.0f;
    c.use_rslora = 1;
    c.dropout = 0.05f;
    c.target_modules = PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_FC;
    c.init_seed = 99;
    c.freeze_a = 1;
    pg_lora_adapter* a = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &c, &a) == PG_OK);

    pg_lora_config got;
    got.struct_size = sizeof got;
    REQUIRE(pg_lora_adapter_get_config(a, &got) == PG_OK);
    CHECK(got.rank == 4);
    CHECK(got.alpha == 16.0f);
    CHECK(got.use_rslora == 1);
    CHECK(got.dropout == 0.05f);
    CHECK(got.target_modules == (PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_FC));
    REQUIRE(got.n_layers == 2);
    CHECK(got.layers[0] == 0);
    CHECK(got.layers[1] == 1);
    CHECK(got.init_seed == 99);
    CHECK(got.freeze_a == 1);
    float scale = 0;
    REQUIRE(pg_lora_adapter_scale(a, &scale) == PG_OK);
    CHECK(scale == 8.0f);

    int32_t n = 0;
    REQUIRE(pg_lora_adapter_num_tensors(a, &n) == PG_OK);
    CHECK(n == 8);
    int64_t np = 0;
    REQUIRE(pg_lora_adapter_num_params(a, &np) == PG_OK);
    CHECK(np == 2 * (4 * 16 + 48 * 4 + 4 * 16 + 64 * 4));
    int32_t idx = -1;
    REQUIRE(pg_lora_adapter_find_tensor(a, "h.1.mlp.c_fc.lora_B.weight", &idx) == PG_OK);
    CHECK(idx == 7);
    pg_tensor_info info;
    info.struct_size = sizeof info;
    REQUIRE(pg_lora_adapter_tensor_info(a, idx, &info) == PG_OK);
    CHECK(std::string(info.name) == "h.1.mlp.c_fc.lora_B.weight");
    CHECK(info.n_dims == 2);
    CHECK(info.shape[0] == 64);
    CHECK(info.shape[1] == 4);
    CHECK(info.numel == 256);
    float* data = nullptr;
    REQUIRE(pg_lora_adapter_tensor_data_mutable(a, idx, &data) == PG_OK);
    CHECK(data == info.data);
    data[0] = 1.5f;
    CHECK(info.data[0] == 1.5f);

    // Bad arguments: a status and a message naming the function, never a crash.
    CHECK(pg_lora_adapter_find_tensor(a, "h.0.wte", &idx) == PG_ERR_INVALID_ARGUMENT);
    CHECK(message_has("pg_lora_adapter_find_tensor"));
    CHECK(std::string(pg_lora_adapter_last_error(a)).find("h.0.wte") != std::string::npos);
    CHECK(pg_lora_adapter_tensor_info(a, 8, &info) == PG_ERR_INVALID_ARGUMENT);
    CHECK(message_has("tensor index 8"));
    CHECK(pg_lora_adapter_tensor_data_mutable(a, -1, &data) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_adapter_create(nullptr, &c, &a) == PG_ERR_INVALID_ARGUMENT);
    CHECK(a == nullptr);
    CHECK(pg_lora_adapter_create(base, nullptr, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_adapter_get_config(nullptr, &got) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_adapter_scale(nullptr, &scale) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_adapter_num_params(nullptr, &np) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_adapter_num_tensors(nullptr, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_lora_adapter_last_error(nullptr)) == "adapter is NULL");
    pg_lora_config_default(nullptr);
    pg_lora_adapter_free(nullptr);
}

TEST_CASE("lora adapter: it fits only the base it was made for", "[lora]") {
    pg::Model base = tiny_model(1);
    base.set_tokenizer(pg::CharTokenizer::from_text("abc"));
    const pg::lora::Adapter a = pg::lora::Adapter::create(base, pg::lora::LoraConfig{});
    CHECK_NOTHROW(pg::lora::check_adapter_matches_base(a, base));
    CHECK(a.base().fingerprint() == pg::lora::identify_base(base).fingerprint());

    auto expect_mismatch = [&](const pg::Model& other, const std::string& needle) {
        try {
            pg::lora::check_adapter_matches_base(a, other);
            FAIL("accepted a base it was not made for");
        } catch (const pg::Error& e) {
            INFO(e.what());
            CHECK(e.status() == PG_ERR_GEOMETRY);
            CHECK(std::string(e.what()).find(needle) != std::string::npos);
        }
        CHECK(a.base().fingerprint() != pg::lora::identify_base(other).fingerprint());
    };
    pg::Model other_weights = tiny_model(2);
    other_weights.set_tokenizer(base.tokenizer()->clone());
    expect_mismatch(other_weights, "weights");

    pg::Model no_tokenizer = tiny_model(1);
    expect_mismatch(no_tokenizer, "tokenizer");

    pg::ModelConfig deeper = tiny_config();
    deeper.n_layer = 3;
    pg::Model three_layers(deeper);
    expect_mismatch(three_layers, "n_layer = 2, the base has n_layer = 3");
}
