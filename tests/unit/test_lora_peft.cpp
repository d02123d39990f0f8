// PEFT interop both ways: an exported pair imports as the same adapter; a pair as PEFT itself
// writes it (no phonegpt metadata, F32 / F16 / BF16) imports with the geometry read from the
// files; target_modules as PEFT matches it; and a matrix of broken or unsupported pairs, each
// with its exact status and a message naming both sides.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <sys/stat.h>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "kernels/half_float.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "lora/peft.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "test_support.hpp"
#include "tokenizer/char_tokenizer.hpp"

namespace {

pg::Model base_model(int n_layer = 2, int n_embd = 16, uint64_t seed = 1234) {
    pg::ModelConfig c;
    c.n_layer = n_layer;
    c.n_head = 2;
    c.n_embd = n_embd;
    c.n_ctx = 16;
    c.vocab_size = 11;
    c.padded_vocab_size = 12;
    pg::Model m(c);
    pg::init_gpt2_params(m.config(), m.params(), seed);
    m.set_tokenizer(pg::CharTokenizer::from_text("abcdefghijk"));
    return m;
}

// An adapter with non-zero B (so a transposed or misplaced factor shows).
pg::lora::Adapter trained_adapter(const pg::Model& base, uint32_t targets, std::vector<int32_t> layers = {}) {
    pg::lora::LoraConfig cfg;
    cfg.rank = 2;
    cfg.alpha = 16.0f;
    cfg.use_rslora = true;
    cfg.dropout = 0.1f;
    cfg.target_modules = targets;
    cfg.layers = std::move(layers);
    pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    pg::Rng rng(3);
    for (const auto& m : a.linears())
        for (int64_t i = 0; i < m.out * cfg.rank; ++i) a.b(m)[i] = float(0.02 * rng.normal());
    return a;
}

// One tensor of a hand-made safetensors file.
struct RawTensor {
    std::string dtype = "F32";
    std::vector<uint64_t> shape;
    std::vector<uint8_t> bytes;
};
using RawFile = std::map<std::string, RawTensor>;

// The tensors as PEFT's save_pretrained writes them: PEFT's names, metadata {"format": "pt"}.
RawFile peft_tensors(const pg::lora::Adapter& a, const std::string& dtype = "F32") {
    RawFile out;
    for (const auto& t : a.tensors()) {
        RawTensor r;
        r.dtype = dtype;
        r.shape = {uint64_t(t.shape[0]), uint64_t(t.shape[1])};
        const float* src = a.params() + t.offset;
        for (int64_t i = 0; i < t.numel; ++i) {
            uint32_t bits;
            std::memcpy(&bits, &src[i], 4);
            if (dtype == "F32") {
                for (int k = 0; k < 4; ++k) r.bytes.push_back(uint8_t(bits >> (8 * k)));
            } else if (dtype == "F16") {  // the nearest fp16 (exact for the values these tests give it)
                const uint16_t h = pg::kernels::float_to_fp16(src[i]);
                r.bytes.push_back(uint8_t(h));
                r.bytes.push_back(uint8_t(h >> 8));
            } else if (dtype == "F64") {
                const double d = src[i];
                uint64_t wide;
                std::memcpy(&wide, &d, 8);
                for (int k = 0; k < 8; ++k) r.bytes.push_back(uint8_t(wide >> (8 * k)));
            } else {  // BF16: the top half (exact for the values these tests give it)
                r.bytes.push_back(uint8_t(bits >> 16));
                r.bytes.push_back(uint8_t(bits >> 24));
            }
        }
        out[pg::lora::peft_tensor_name(t)] = r;
    }
    return out;
}

std::vector<uint8_t> safetensors_bytes(const RawFile& tensors) {
    std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
    uint64_t at = 0;
    for (const auto& [name, t] : tensors) {
        std::string shape;
        for (uint64_t d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
        json += "," + pg::io::json_quote(name) + ":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape +
                "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + t.bytes.size()) + "]}";
        at += t.bytes.size();
    }
    json += "}";
    std::vector<uint8_t> out(8);
    const uint64_t n = json.size();
    std::memcpy(out.data(), &n, 8);
    out.insert(out.end(), json.begin(), json.end());
    for (const auto& [name, t] : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    return out;
}

pg::lora::Adapter import(const std::string& config, const std::vector<uint8_t>& tensors, const pg::Model& base) {
    pg::io::MemorySource src(tensors.data(), tensors.size(), "adapter_model.safetensors");
    return pg::lora::import_peft_from(config, "adapter_config.json", src, base);
}

// `config` with the value of "key" replaced by `value` (JSON text), or the key added.
std::string with_key(std::string config, const std::string& key, const std::string& value) {
    const std::string quoted = "\"" + key + "\": ";
    const auto at = config.find(quoted);
    if (at == std::string::npos) return "{\"" + key + "\": " + value + "," + config.substr(1);
    auto end = config.find(",\n", at);
    if (end == std::string::npos) end = config.find("\n}", at);
    return config.replace(at + quoted.size(), end - at - quoted.size(), value);
}

uint64_t header_len_of(const std::vector<uint8_t>& safetensors) {
    uint64_t n = 0;
    std::memcpy(&n, safetensors.data(), 8);
    return n;
}

bool same_factors(const pg::lora::Adapter& a, const pg::lora::Adapter& b) {
    return a.num_params() == b.num_params() &&
           std::memcmp(a.params(), b.params(), std::size_t(a.num_params()) * 4) == 0;
}

}  // namespace

TEST_CASE("lora peft: an exported pair imports as the same adapter", "[lora][peft]") {
    pg::Model base = base_model();
    pg::lora::Adapter a = trained_adapter(base, PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_PROJ, {1});
    a.record().steps = 1;
    a.record().tokens = 32;
    a.record().losses = {2.0f};
    a.record().learning_rates = {1e-3f};
    const std::string folder = pg_test::tmp_dir() + "/peft_roundtrip";
    ::mkdir(folder.c_str(), 0755);
    pg::lora::export_peft(a, folder);
    const pg::lora::Adapter back = pg::lora::import_peft(folder, base);
    CHECK(pg::lora::same_adapter(a, back));  // seed, record and base identity come back too

    // Through the C API, and against another base of the same geometry: refused, naming both.
    pg_model* other = nullptr;
    pg_model_config mc;
    pg_model_config_default(&mc);
    mc.n_layer = 2, mc.n_head = 2, mc.n_embd = 16, mc.n_ctx = 16, mc.vocab_size = 11, mc.padded_vocab_size = 12;
    REQUIRE(pg_model_create(&mc, 99, &other) == PG_OK);
    pg_lora_adapter* handle = nullptr;
    CHECK(pg_lora_import_peft(folder.c_str(), other, &handle) == PG_ERR_GEOMETRY);
    CHECK(handle == nullptr);
    CHECK_THAT(pg_last_error(), Catch::Contains("pg_lora_import_peft") && Catch::Contains("tokenizer differs"));
    CHECK(pg_lora_import_peft((folder + "/missing").c_str(), other, &handle) == PG_ERR_IO);
    CHECK(pg_lora_import_peft(nullptr, other, &handle) == PG_ERR_INVALID_ARGUMENT);
    pg_model_free(other);
    std::remove((folder + "/adapter_model.safetensors").c_str());
    std::remove((folder + "/adapter_config.json").c_str());
}

TEST_CASE("lora peft: a pair as PEFT writes it imports with the geometry read from the files", "[lora][peft]") {
    const pg::Model base = base_model(3);
    for (const char* dtype : {"F32", "BF16", "F16", "F64"}) {
        INFO(dtype);
        pg::lora::Adapter a = trained_adapter(base, PG_LORA_ATTN_C_PROJ | PG_LORA_MLP_C_FC, {0, 2});
        if (std::string(dtype) == "BF16")  // values a BF16 file holds exactly
            for (int64_t i = 0; i < a.num_params(); ++i) {
                uint32_t bits;
                std::memcpy(&bits, &a.params()[i], 4);
                bits &= 0xffff0000u;
                std::memcpy(&a.params()[i], &bits, 4);
            }
        if (std::string(dtype) == "F16")  // values an F16 file holds exactly (the scalar definition)
            for (int64_t i = 0; i < a.num_params(); ++i)
                a.params()[i] = pg::kernels::fp16_to_float(pg::kernels::float_to_fp16(a.params()[i]));
        const std::string config = pg::lora::peft_adapter_config_json(a.config(), a.base().config);
        const pg::lora::Adapter b = import(config, safetensors_bytes(peft_tensors(a, dtype)), base);
        CHECK(same_factors(a, b));
        CHECK(b.config().rank == 2);
        CHECK(b.config().alpha == 16.0f);
        CHECK(b.config().use_rslora);
        CHECK(b.config().dropout == 0.1f);
        CHECK(b.config().target_modules == (PG_LORA_ATTN_C_PROJ | PG_LORA_MLP_C_FC));
        CHECK(b.config().layers == std::vector<int32_t>{0, 2});
        CHECK(b.config().init_seed == 0);  // PEFT does not record it
        CHECK(b.record().steps == 0);
        CHECK(b.base().fingerprint() == pg::lora::identify_base(base).fingerprint());
        CHECK(b.scale() == a.scale());
    }
}

TEST_CASE("lora peft: target_modules and layers_to_transform as PEFT matches them", "[lora][peft]") {
    const pg::Model base = base_model();
    struct Case {
        const char* targets;  // JSON
        const char* layers;   // JSON
        uint32_t bits;
        std::vector<int32_t> adapted;
    };
    const Case cases[] = {
        {"[\"c_attn\"]", "null", PG_LORA_ATTN_C_ATTN, {}},
        {"[\"c_proj\"]", "null", PG_LORA_ATTN_C_PROJ | PG_LORA_MLP_C_PROJ, {}},  // both c_proj end in ".c_proj"
        {"[\"attn.c_proj\", \"c_fc\"]", "1", PG_LORA_ATTN_C_PROJ | PG_LORA_MLP_C_FC, {1}},
        {"\"all-linear\"", "[0]", PG_LORA_ALL_LINEARS, {0}},
        {"\"transformer\\\\.h\\\\.\\\\d+\\\\.attn\\\\.c_attn\"", "null", PG_LORA_ATTN_C_ATTN, {}},
        {"\"transformer\\\\.h\\\\.1\\\\.mlp\\\\..*\"", "null", PG_LORA_MLP_C_FC | PG_LORA_MLP_C_PROJ, {1}},
    };
    for (const Case& c : cases) {
        INFO(c.targets << " layers " << c.layers);
        const pg::lora::Adapter a = trained_adapter(base, c.bits, c.adapted);
        std::string config = pg::lora::peft_adapter_config_json(a.config(), a.base().config);
        config = with_key(with_key(config, "target_modules", c.targets), "layers_to_transform", c.layers);
        const pg::lora::Adapter b = import(config, safetensors_bytes(peft_tensors(a)), base);
        CHECK(b.config().target_modules == c.bits);
        CHECK(b.config().layers == c.adapted);
        CHECK(same_factors(a, b));
    }
}

TEST_CASE("lora peft: broken and unsupported pairs, exact statuses naming both sides", "[lora][peft]") {
    const pg::Model base = base_model();
    const pg::lora::Adapter a = trained_adapter(base, PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_PROJ);
    const std::string good_config = pg::lora::peft_adapter_config_json(a.config(), a.base().config);
    const RawFile good = peft_tensors(a);
    REQUIRE_NOTHROW(import(good_config, safetensors_bytes(good), base));
    struct Case {
        const char* what;
        std::string config;
        RawFile tensors;
        pg_status want;
        std::vector<const char*> says;
    };
    std::vector<Case> cases;
    auto config_case = [&](const char* what, const std::string& config, pg_status want, std::vector<const char*> says) {
        cases.push_back({what, config, good, want, says});
    };
    auto tensor_case = [&](const char* what, RawFile tensors, pg_status want, std::vector<const char*> says) {
        cases.push_back({what, good_config, std::move(tensors), want, says});
    };
    const std::string a0 = "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight";
    const std::string b1 = "base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight";
    config_case("not JSON", "{\"r\": 2,", PG_ERR_FORMAT, {"adapter_config.json"});
    config_case("another PEFT method", with_key(good_config, "peft_type", "\"IA3\""), PG_ERR_UNSUPPORTED, {"IA3"});
    config_case("DoRA", with_key(good_config, "use_dora", "true"), PG_ERR_UNSUPPORTED, {"use_dora"});
    config_case("rank_pattern", with_key(good_config, "rank_pattern", "{\"c_attn\": 4}"), PG_ERR_UNSUPPORTED,
                {"rank_pattern"});
    config_case("bias", with_key(good_config, "bias", "\"lora_only\""), PG_ERR_UNSUPPORTED, {"lora_only"});
    config_case("modules_to_save", with_key(good_config, "modules_to_save", "[\"lm_head\"]"), PG_ERR_UNSUPPORTED,
                {"modules_to_save"});
    config_case("layers_pattern", with_key(good_config, "layers_pattern", "\"layers\""), PG_ERR_UNSUPPORTED,
                {"layers_pattern"});
    config_case("no target_modules", with_key(good_config, "target_modules", "null"), PG_ERR_FORMAT,
                {"target_modules is missing"});
    config_case("targets nothing", with_key(good_config, "target_modules", "[\"q_proj\"]"), PG_ERR_FORMAT,
                {"matches none"});
    config_case("config has fewer modules than the tensors",
                with_key(good_config, "target_modules", "[\"c_attn\"]"), PG_ERR_FORMAT,
                {"disagree", "targets h.0.attn.c_attn, h.1.attn.c_attn;", "holds factors for h.0.attn.c_attn, h.0.mlp.c_proj"});
    config_case("config has fewer layers than the tensors", with_key(good_config, "layers_to_transform", "[1]"),
                PG_ERR_FORMAT, {"disagree"});
    config_case("a layer the base lacks", with_key(good_config, "layers_to_transform", "[5]"), PG_ERR_GEOMETRY,
                {"layer 5", "n_layer = 2"});
    config_case("r differs from the tensors' rank", with_key(good_config, "r", "4"), PG_ERR_FORMAT,
                {"rank 2", "r = 4"});
    config_case("r = 0", with_key(good_config, "r", "0"), PG_ERR_FORMAT, {"r = 0"});
    config_case("alpha 0", with_key(good_config, "lora_alpha", "0"), PG_ERR_FORMAT, {"alpha"});
    config_case("dropout 1", with_key(good_config, "lora_dropout", "1.0"), PG_ERR_FORMAT, {"dropout"});
    config_case("unparsable regex", with_key(good_config, "target_modules", "\"(?P<x>c_attn)\""),
                PG_ERR_UNSUPPORTED, {"regular expression"});
    {
        RawFile t = good;
        t.erase(b1);
        tensor_case("lora_B missing", t, PG_ERR_FORMAT, {"h.1.mlp.c_proj has lora_A but no lora_B"});
    }
    {
        RawFile t = good;
        t["base_model.model.transformer.h.0.attn.c_attn.lora_B.bias"] = RawTensor{"F32", {48}, std::vector<uint8_t>(192)};
        tensor_case("a LoRA bias tensor", t, PG_ERR_UNSUPPORTED, {"lora_B.bias", "not a LoRA factor"});
    }
    {
        RawFile t = good;
        t["base_model.model.transformer.wte.lora_embedding_A"] = RawTensor{"F32", {2, 11}, std::vector<uint8_t>(88)};
        tensor_case("an embedding adapter", t, PG_ERR_UNSUPPORTED, {"lora_embedding_A"});
    }
    {
        RawFile t = good;
        t[a0].dtype = "I32";
        tensor_case("integer factor", t, PG_ERR_UNSUPPORTED, {"I32"});
    }
    {
        RawFile t = good;
        RawTensor& r = t[a0];
        const float inf = std::numeric_limits<float>::infinity();
        std::memcpy(r.bytes.data() + 4, &inf, 4);
        tensor_case("non-finite factor", t, PG_ERR_FORMAT, {"not finite", "element 1"});
    }
    {
        RawFile t = peft_tensors(a, "F16");
        const uint16_t inf = 0x7c00;  // fp16 +inf
        std::memcpy(t[a0].bytes.data() + 2 * 3, &inf, 2);
        tensor_case("non-finite F16 factor", t, PG_ERR_FORMAT, {"not finite", "element 3"});
    }
    {
        RawFile t = good;
        t["base_model.model.transformer.h.7.attn.c_attn.lora_A.weight"] = good.at(a0);
        tensor_case("a layer beyond the base", t, PG_ERR_GEOMETRY, {"adapts layer 7", "n_layer = 2"});
    }
    {
        RawFile t = good;
        t.erase("base_model.model.transformer.h.1.mlp.c_proj.lora_A.weight");
        t.erase(b1);
        const std::string config = with_key(
            good_config, "target_modules",
            "\"transformer\\\\.h\\\\.(0\\\\.(attn\\\\.c_attn|mlp\\\\.c_proj)|1\\\\.attn\\\\.c_attn)\"");
        cases.push_back({"modules differ by layer", config, t, PG_ERR_UNSUPPORTED, {"h.1.mlp.c_proj is not adapted"}});
    }
    {  // the factors of a wider base (n_embd 32) on this one (16): shapes name both sides
        const pg::Model wide = base_model(2, 32);
        const pg::lora::Adapter w = trained_adapter(wide, PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_PROJ);
        cases.push_back({"another width", good_config, peft_tensors(w), PG_ERR_GEOMETRY,
                         {"is [2, 32]", "n_embd = 16", "in = 16"}});
    }
    {  // "expected 64 tensors, found 80": a 20-layer adapter on a 16-layer base is named as such
        const pg::Model deep = base_model(20);
        const pg::lora::Adapter d = trained_adapter(deep, PG_LORA_ATTN_C_ATTN | PG_LORA_ATTN_C_PROJ);
        REQUIRE(d.tensors().size() == 80);
        const std::string config = pg::lora::peft_adapter_config_json(d.config(), d.base().config);
        const pg::Model base16 = base_model(16);
        std::string message;
        try {
            import(config, safetensors_bytes(peft_tensors(d)), base16);
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_GEOMETRY);
            message = e.what();
        }
        CHECK_THAT(message, Catch::Contains("adapts layer 16") && Catch::Contains("n_layer = 16"));
        CHECK(import(config, safetensors_bytes(peft_tensors(d)), deep).tensors().size() == 80);
    }
    // Statuses pinned per case and the number of cases pinned, so none is dropped silently.
    REQUIRE(cases.size() == 26);
    for (const Case& c : cases) {
        std::string message;
        pg_status s = PG_OK;
        try {
            import(c.config, safetensors_bytes(c.tensors), base);
        } catch (const pg::Error& e) {
            s = e.status();
            message = e.what();
        }
        INFO(c.what << ": " << pg_status_name(s) << ": " << message);
        CHECK(s == c.want);
        for (const char* says : c.says) CHECK_THAT(message, Catch::Contains(says));
    }
}

TEST_CASE("lora peft: every truncation of the tensors and every byte flip of the config is a clean result",
          "[lora][peft]") {
    const pg::Model base = base_model();
    const pg::lora::Adapter a = trained_adapter(base, PG_LORA_ATTN_C_ATTN);
    const std::string config = pg::lora::peft_adapter_config_json(a.config(), a.base().config);
    const std::vector<uint8_t> tensors = safetensors_bytes(peft_tensors(a));
    for (std::size_t size = 0; size < tensors.size(); size += 7) {
        const std::vector<uint8_t> cut(tensors.begin(), tensors.begin() + long(size));
        try {
            import(config, cut, base);
            FAIL("a truncated file of " << size << " bytes imported");
        } catch (const pg::Error& e) {
            REQUIRE(e.status() != PG_ERR_INTERNAL);
        }
    }
    int imported = 0;
    for (std::size_t at = 0; at < config.size(); ++at) {
        std::string bad = config;
        bad[at] = char(bad[at] ^ 0x04);
        try {
            const pg::lora::Adapter b = import(bad, tensors, base);
            REQUIRE(same_factors(a, b));  // a flip that still reads (whitespace, an unread key) changes nothing read
            ++imported;
        } catch (const pg::Error& e) {
            INFO("flip at " << at << ": " << e.what());
            REQUIRE(e.status() != PG_ERR_INTERNAL);
        }
    }
    CHECK(imported < int(config.size()));
}

TEST_CASE("lora peft: one flipped bit in any phonegpt metadata key is refused, never read as plain PEFT",
          "[lora][peft]") {
    const pg::Model base = base_model();
    pg::lora::Adapter a = trained_adapter(base, PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_FC);
    a.record().steps = 1, a.record().tokens = 32, a.record().losses = {2.0f}, a.record().learning_rates = {1e-3f};
    const std::string folder = pg_test::tmp_dir() + "/peft_key_flips";
    ::mkdir(folder.c_str(), 0755);
    pg::lora::export_peft(a, folder);
    const std::vector<uint8_t> good = pg::io::read_small_file(folder + "/adapter_model.safetensors", 1 << 20);
    const std::vector<uint8_t> cfg = pg::io::read_small_file(folder + "/adapter_config.json", 1 << 20);
    const std::string config(cfg.begin(), cfg.end());
    REQUIRE(pg::lora::same_adapter(import(config, good, base), a));
    uint64_t header_len = 0;
    std::memcpy(&header_len, good.data(), 8);
    const std::string header(good.begin() + 8, good.begin() + 8 + long(header_len));
    // Every metadata key this library writes: "phonegpt.<name>": at its byte offset in the file.
    std::vector<std::pair<std::size_t, std::string>> keys;
    for (std::size_t at = header.find("\"phonegpt."); at != std::string::npos; at = header.find("\"phonegpt.", at + 1)) {
        const std::size_t end = header.find('"', at + 1);
        if (end + 1 < header.size() && header[end + 1] == ':') keys.push_back({8 + at + 1, header.substr(at + 1, end - at - 1)});
    }
    REQUIRE(keys.size() >= 6);  // adapter_format, lora_config, base, training, checksums, metadata_xxh64
    int flips = 0;
    for (const auto& [offset, key] : keys)
        for (std::size_t i = 0; i < key.size(); ++i)
            for (int bit = 0; bit < 8; ++bit) {
                std::vector<uint8_t> bad = good;
                bad[offset + i] = uint8_t(bad[offset + i] ^ (1u << bit));
                INFO(key << ", byte " << i << ", bit " << bit);
                try {
                    import(config, bad, base);
                    FAIL("imported with a damaged key");
                } catch (const pg::Error& e) {
                    // The look-alike check (format), or the adapter file's own metadata checksum
                    // when the format key itself is intact.
                    REQUIRE((e.status() == PG_ERR_FORMAT || e.status() == PG_ERR_CHECKSUM));
                }
                ++flips;
            }
    CHECK(flips > 8 * 60);
    // A plain PEFT file (PEFT's own config) with a key naming the library in another case: refused,
    // and the message names the key; the same file without it imports.
    const std::string peft_config = pg::lora::peft_adapter_config_json(a.config(), a.base().config);
    const std::vector<uint8_t> plain = safetensors_bytes(peft_tensors(a));
    REQUIRE_NOTHROW(import(peft_config, plain, base));
    uint64_t n = 0;
    std::memcpy(&n, plain.data(), 8);
    std::string h(plain.begin() + 8, plain.begin() + 8 + long(n));
    h.replace(h.find("\"format\":\"pt\""), 13, "\"format\":\"pt\",\"PhoneGPT.note\":\"x\"");
    std::vector<uint8_t> marked(8);
    n = h.size();
    std::memcpy(marked.data(), &n, 8);
    marked.insert(marked.end(), h.begin(), h.end());
    marked.insert(marked.end(), plain.begin() + 8 + long(header_len_of(plain)), plain.end());
    CHECK_THROWS_WITH(import(peft_config, marked, base), Catch::Contains("\"PhoneGPT.note\" looks like libphonegpt's"));
    std::remove((folder + "/adapter_model.safetensors").c_str());
    std::remove((folder + "/adapter_config.json").c_str());
}

TEST_CASE("lora peft: Llama-family keys both ways, target_modules matched as PEFT matches them", "[lora][peft]") {
    pg::Model base(pg::model_preset("tiny-qwen3"));
    pg::init_gpt2_params(base.config(), base.params(), 21);
    const uint32_t some = PG_LORA_Q_PROJ | PG_LORA_V_PROJ | PG_LORA_O_PROJ | PG_LORA_UP_PROJ | PG_LORA_DOWN_PROJ;
    pg::lora::Adapter a = trained_adapter(base, some, {1});
    const std::string config = pg::lora::peft_adapter_config_json(a.config(), a.base().config);
    const pg::io::JsonValue v = pg::io::parse_json(config.data(), config.size(), "config");
    std::vector<std::string> names;
    for (const auto& t : v.find("target_modules")->as_array("")) names.push_back(t.as_string(""));
    CHECK(names == std::vector<std::string>{"q_proj", "v_proj", "o_proj", "up_proj", "down_proj"});
    CHECK_FALSE(v.find("fan_in_fan_out")->as_bool(""));  // nn.Linear
    CHECK(v.find("layers_pattern")->as_string("") == "layers");
    CHECK(pg::lora::peft_tensor_name(a.tensors()[0]) == "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight");

    // The exported folder comes back whole; PEFT's own layout (no phonegpt metadata) with the
    // geometry read from the files.
    const std::string folder = pg_test::tmp_dir() + "/peft_llama";
    ::mkdir(folder.c_str(), 0755);
    pg::lora::export_peft(a, folder);
    CHECK(pg::lora::same_adapter(a, pg::lora::import_peft(folder, base)));
    const std::vector<uint8_t> plain = safetensors_bytes(peft_tensors(a));
    const pg::lora::Adapter b = import(config, plain, base);
    CHECK(same_factors(a, b));
    CHECK(b.config().target_modules == some);
    CHECK(b.config().layers == std::vector<int32_t>{1});

    // target_modules as PEFT matches it: names, a regular expression over the module keys.
    CHECK(import(with_key(config, "target_modules", "\"model\\\\.layers\\\\.\\\\d+\\\\.(self_attn\\\\.(q|v|o)_proj|mlp\\\\.(up|down)_proj)\""),
                 plain, base)
              .config()
              .target_modules == some);
    // "all-linear" over a file with only some modules: the two files disagree, by name.
    CHECK_THROWS_WITH(import(with_key(config, "target_modules", "\"all-linear\""), plain, base),
                      Catch::Contains("targets model.layers.1.self_attn.q_proj, model.layers.1.self_attn.k_proj"));
    pg::lora::Adapter all = trained_adapter(base, PG_LORA_LLAMA_ALL_LINEARS);
    const std::string all_config = with_key(
        with_key(pg::lora::peft_adapter_config_json(all.config(), all.base().config), "target_modules", "\"all-linear\""),
        "layers_to_transform", "null");
    CHECK(import(all_config, safetensors_bytes(peft_tensors(all)), base).config().target_modules ==
          PG_LORA_LLAMA_ALL_LINEARS);
    // GPT-2's names match nothing on a Llama base; GPT-2's blocks pattern is refused.
    CHECK_THROWS_WITH(import(with_key(config, "target_modules", "[\"c_attn\"]"), plain, base),
                      Catch::Contains("matches none"));
    CHECK_THROWS_WITH(import(with_key(config, "layers_pattern", "\"h\""), plain, base),
                      Catch::Contains("layers_pattern must be \"layers\""));
    // A GPT-2 key in a Llama file is not a factor of this base, named with the expected form.
    RawFile gpt2_key = peft_tensors(a);
    gpt2_key["base_model.model.transformer.h.1.attn.c_attn.lora_A.weight"] = gpt2_key.begin()->second;
    CHECK_THROWS_WITH(import(config, safetensors_bytes(gpt2_key), base),
                      Catch::Contains("base_model.model.model.layers.{i}.{module}") && Catch::Contains("q_proj"));
    std::remove((folder + "/adapter_model.safetensors").c_str());
    std::remove((folder + "/adapter_config.json").c_str());
}
