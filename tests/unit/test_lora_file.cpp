// Adapter files: round trip, self-description (the "expected 64 tensors, found 80" bug: the
// geometry is read from the file, and a base of other geometry is refused naming both sides),
// the committed v1.0 fixture, a corruption matrix with exact statuses, and every truncation and
// single-byte flip giving a clean error or the identical adapter.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/checksum.hpp"
#include "core/file_io.hpp"
#include "io/safetensors.hpp"
#include "lora/adapter.hpp"
#include "core/json.hpp"
#include "lora/adapter_file.hpp"
#include "lora/peft.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "test_support.hpp"
#include "tokenizer/char_tokenizer.hpp"

namespace {

pg::ModelConfig small_config(int n_layer = 2) {
    pg::ModelConfig c;
    c.n_layer = n_layer;
    c.n_head = 2;
    c.n_embd = 16;
    c.n_ctx = 16;
    c.vocab_size = 11;
    c.padded_vocab_size = 12;
    return c;
}

pg::Model base_model(int n_layer = 2) {
    pg::Model m(small_config(n_layer));
    pg::init_gpt2_params(m.config(), m.params(), 1234);
    m.set_tokenizer(pg::CharTokenizer::from_text("abcdefghijk"));
    return m;
}

// The adapter of the v1.0 fixture (and of most tests): c_attn and mlp.c_proj of both layers,
// rank 2, alpha 4, init seed 77, B ~ 0.01 N(0, 1) from seed 5, a three-step record.
// Its base was trained for 40 steps (2560 tokens) from seed 1234, which files since 1.2 record;
// older fixtures load with the base's provenance unknown (`provenance` = false).
pg::Provenance fixture_provenance() {
    pg::Provenance p = pg::Provenance::initialised_from(1234);
    for (int i = 0; i < 40; ++i) p.record_step(64);
    return p;
}

pg::lora::Adapter fixture_adapter(bool provenance = true) {
    pg::Model base = base_model();
    if (provenance) base.set_provenance(fixture_provenance());
    pg::lora::LoraConfig cfg;
    cfg.rank = 2;
    cfg.alpha = 4.0f;
    cfg.dropout = 0.05f;
    cfg.target_modules = PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_PROJ;
    cfg.init_seed = 77;
    pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    pg::Rng rng(5);
    for (const auto& m : a.linears())
        for (int64_t i = 0; i < m.out * cfg.rank; ++i) a.b(m)[i] = float(0.01 * rng.normal());
    a.record().steps = 3;
    a.record().tokens = 96;
    a.record().seed = 42;
    a.record().losses = {2.5f, 2.25f, 2.0f};
    a.record().learning_rates = {1e-3f, 1e-3f, 5e-4f};
    return a;
}

// The trainer state of the training-checkpoint fixtures: made up (no training run, so the
// fixture's values do not depend on the machine's kernels), but valid.
pg::TrainerState fixture_state(const pg::lora::Adapter& a) {
    pg::TrainerState s;
    s.config.batch_size = 2;
    s.config.seq_len = 8;
    s.config.seed = 42;
    s.config.n_threads = 1;
    s.step = 3;
    pg::Rng rng(9);
    for (int64_t i = 0; i < a.num_params(); ++i) {
        s.adam_m.push_back(float(1e-3 * rng.normal()));
        s.adam_v.push_back(float(1e-6 * rng.uniform()));
    }
    s.sampler_rng[0] = 1;
    s.sampler_rng[1] = 2;
    s.sampler_rng[2] = 3;
    s.sampler_rng[3] = 4;
    s.micro_batches = 3;
    return s;
}

std::vector<uint8_t> encode_training(const pg::lora::Adapter& a, const pg::TrainerState& s) {
    pg::io::VectorSink sink;
    pg::lora::write_adapter_training(a, s, sink);
    return sink.bytes;
}

// The fixture adapter with a diverged record (format 1.2's non-finite values): a NaN loss, an
// infinite loss and an infinite learning rate.
pg::lora::Adapter nonfinite_fixture_adapter(bool provenance = true) {
    pg::lora::Adapter a = fixture_adapter(provenance);
    a.record().losses = {2.5f, std::nanf(""), -INFINITY};
    a.record().learning_rates = {1e-3f, 1e-3f, INFINITY};
    return a;
}

std::vector<uint8_t> encode(const pg::lora::Adapter& a) {
    pg::io::VectorSink sink;
    pg::lora::write_adapter(a, sink);
    return sink.bytes;
}

pg::lora::Adapter decode(const std::vector<uint8_t>& bytes) {
    pg::io::MemorySource src(bytes.data(), bytes.size(), "adapter.safetensors");
    return pg::lora::read_adapter(src);
}

// The status decode() ends with (PG_OK when it loads).
pg_status status_of(const std::vector<uint8_t>& bytes, std::string* message = nullptr) {
    try {
        decode(bytes);
        return PG_OK;
    } catch (const pg::Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The bytes with the JSON header text edited (the header length adjusted, data kept).
std::vector<uint8_t> edit_header(const std::vector<uint8_t>& bytes, const std::string& from, const std::string& to) {
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    std::string json(bytes.begin() + 8, bytes.begin() + 8 + long(n));
    const auto at = json.find(from);
    REQUIRE(at != std::string::npos);
    json.replace(at, from.size(), to);
    std::vector<uint8_t> out(8);
    const uint64_t m = json.size();
    std::memcpy(out.data(), &m, 8);
    out.insert(out.end(), json.begin(), json.end());
    out.insert(out.end(), bytes.begin() + 8 + long(n), bytes.end());
    return out;
}

// edit_header, then phonegpt.metadata_xxh64 recomputed as docs/formats.md §5 defines it (what a
// client that writes the metadata itself does), so the edit reaches the reader's later checks.
std::vector<uint8_t> edit_and_reseal(const std::vector<uint8_t>& bytes, const std::string& from, const std::string& to) {
    const std::vector<uint8_t> edited = edit_header(bytes, from, to);
    uint64_t n = 0;
    std::memcpy(&n, edited.data(), 8);
    const pg::io::JsonValue header = pg::io::parse_json(reinterpret_cast<const char*>(edited.data()) + 8, n, "header");
    const pg::io::JsonValue& meta = *header.find("__metadata__");
    pg::io::Xxh64 h;
    for (const char* key : {"phonegpt.adapter_format", "phonegpt.lora_config", "phonegpt.base", "phonegpt.training",
                            "phonegpt.checksums"}) {
        const std::string& v = meta.find(key)->as_string(key);
        h.update(key, std::strlen(key) + 1);
        h.update(v.data(), v.size());
        h.update("", 1);
    }
    char sum[17];
    std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(h.digest()));
    const std::string old_sum = meta.find("phonegpt.metadata_xxh64")->as_string("sum");
    return edit_header(edited, "\"" + old_sum + "\"", "\"" + std::string(sum) + "\"");
}

}  // namespace

TEST_CASE("lora file: a non-finite training record reads back (since 1.2); 1.0 cannot carry it",
          "[lora][lora_file]") {
    const pg::lora::Adapter a = nonfinite_fixture_adapter();
    const std::vector<uint8_t> bytes = encode(a);
    const std::string text(bytes.begin(), bytes.end());
    CHECK(text.find("\"phonegpt.adapter_format\":\"1.3\"") != std::string::npos);
    CHECK(text.find("\\\"losses\\\":[2.5,\\\"nan\\\",\\\"-inf\\\"]") != std::string::npos);
    CHECK(text.find("\\\"learning_rates\\\":[0.0010000000474974513,0.0010000000474974513,\\\"inf\\\"]") !=
          std::string::npos);
    const pg::lora::Adapter b = decode(bytes);
    CHECK(b.record().losses[0] == 2.5f);
    CHECK(std::isnan(b.record().losses[1]));
    CHECK(b.record().losses[2] == -INFINITY);
    CHECK(b.record().learning_rates[2] == INFINITY);
    CHECK(pg::lora::same_adapter(a, b));
    // Saving reads the file back and compares: a NaN equals a NaN there.
    const std::string path = pg_test::tmp_dir() + "/lora_adapter_nonfinite.safetensors";
    pg::lora::save_adapter(a, path);
    CHECK(pg::lora::same_adapter(a, pg::lora::load_adapter(path)));
    std::remove(path.c_str());
    // Since 1.3 every file is 1.3 (the base's provenance is always there).
    const std::vector<uint8_t> finite = encode(fixture_adapter());
    CHECK(std::string(finite.begin(), finite.end()).find("\"phonegpt.adapter_format\":\"1.3\"") != std::string::npos);

    // Sealed correctly but labelled 1.0: the value needs 1.2. Another string is never a number.
    std::string message;
    CHECK(status_of(edit_and_reseal(bytes, "\"1.3\"", "\"1.0\""), &message) == PG_ERR_FORMAT);
    CHECK_THAT(message, Catch::Contains("losses holds \"nan\": a non-finite value, which format 1.2 introduced"));
    CHECK(status_of(edit_and_reseal(bytes, "\\\"nan\\\"", "\\\"NaN\\\""), &message) == PG_ERR_FORMAT);
    CHECK_THAT(message, Catch::Contains("holds the string \"NaN\", not a number"));
    // The reseal itself is right: an unedited reseal loads.
    CHECK(status_of(edit_and_reseal(bytes, "\"1.3\"", "\"1.3\"")) == PG_OK);
}

TEST_CASE("lora file: round trip, PEFT names, read back on save", "[lora][lora_file]") {
    const pg::lora::Adapter a = fixture_adapter();
    const std::vector<uint8_t> bytes = encode(a);
    const pg::lora::Adapter b = decode(bytes);
    CHECK(pg::lora::same_adapter(a, b));
    CHECK(b.record().losses == std::vector<float>{2.5f, 2.25f, 2.0f});
    CHECK(b.config().dropout == 0.05f);
    CHECK(b.base().describe() == a.base().describe());
    // The base's own description travels with it (format 1.2).
    CHECK(b.base().provenance.kind == pg::Provenance::Kind::trained);
    CHECK(b.base().provenance.steps == 40);
    CHECK(b.base().provenance.tokens == 2560);
    CHECK(b.base().provenance.init_seed == 1234);
    CHECK(std::string(bytes.begin(), bytes.begin() + 4096).find("trained for 40 steps (2560 tokens) from seed 1234") !=
          std::string::npos);
    // A plain safetensors file with PEFT's names and shapes.
    pg::io::MemorySource src(bytes.data(), bytes.size());
    const pg::io::SafetensorsHeader h = pg::io::read_safetensors_header(src);
    const auto* t = h.find("base_model.model.transformer.h.1.mlp.c_proj.lora_A.weight");
    REQUIRE(t != nullptr);
    CHECK(t->shape == std::vector<uint64_t>{2, 64});
    CHECK(h.find("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight")->shape == std::vector<uint64_t>{48, 2});
    CHECK(h.data_start % 8 == 0);

    const std::string path = pg_test::tmp_dir() + "/lora_adapter_roundtrip.safetensors";
    pg::lora::save_adapter(a, path);
    CHECK(pg::lora::same_adapter(a, pg::lora::load_adapter(path)));
    std::remove(path.c_str());
}

TEST_CASE("lora file: geometry comes from the file (expected 64 tensors, found 80)", "[lora][lora_file]") {
    // 20 layers x 2 targets x (A, B) = 80 tensors; the field's trainer expected 64 (16 layers).
    const pg::Model base20 = base_model(20);
    pg::lora::LoraConfig cfg;
    cfg.rank = 2;
    cfg.target_modules = PG_LORA_ATTN_C_ATTN | PG_LORA_ATTN_C_PROJ;
    const pg::lora::Adapter a = pg::lora::Adapter::create(base20, cfg);
    const pg::lora::Adapter back = decode(encode(a));
    CHECK(back.tensors().size() == 80);
    CHECK(back.base().config.n_layer == 20);
    CHECK_NOTHROW(pg::lora::check_adapter_matches_base(back, base20));
    const pg::Model base16 = base_model(16);
    try {
        pg::lora::check_adapter_matches_base(back, base16);
        FAIL("an adapter for 20 layers was accepted by a 16-layer base");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_GEOMETRY);
        CHECK(std::string(e.what()).find("made for n_layer = 20, the base has n_layer = 16") != std::string::npos);
    }
    // Through the C API, loading against the wrong base names both sides too.
    const std::string path = pg_test::tmp_dir() + "/lora_adapter80.safetensors";
    pg::lora::save_adapter(a, path);
    pg_model_config mc;
    pg_model_config_default(&mc);
    pg_model* other = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &other) == PG_OK);
    pg_lora_adapter* loaded = nullptr;
    CHECK(pg_lora_adapter_load(path.c_str(), other, &loaded) == PG_ERR_GEOMETRY);
    CHECK(loaded == nullptr);
    CHECK(std::string(pg_last_error()).find("n_layer = 20, the base has n_layer = 6") != std::string::npos);
    REQUIRE(pg_lora_adapter_load(path.c_str(), nullptr, &loaded) == PG_OK);
    int32_t n = 0;
    REQUIRE(pg_lora_adapter_num_tensors(loaded, &n) == PG_OK);
    CHECK(n == 80);
    CHECK(pg_lora_adapter_check_base(loaded, other) == PG_ERR_GEOMETRY);
    pg_lora_adapter_free(loaded);
    pg_model_free(other);
    std::remove(path.c_str());
}

TEST_CASE("lora file: every adapter version ever written still loads (fixtures)", "[lora][lora_file][fixtures]") {
    struct Fixture {
        const char* file;
        bool current;  // written by this version: the writer must still produce it byte for byte
        pg::lora::Adapter (*adapter)();
    };
    // 1.0 and 1.2 did not record the base's provenance: their adapters are the fixture's without it.
    const Fixture fixtures[] = {{"lora_adapter_v1.0.safetensors", false, [] { return fixture_adapter(false); }},
                                {"lora_adapter_v1.2.safetensors", false, [] { return nonfinite_fixture_adapter(false); }},
                                {"lora_adapter_v1.3.safetensors", true, [] { return fixture_adapter(true); }},
                                {"lora_adapter_v1.3_nonfinite.safetensors", true, [] { return nonfinite_fixture_adapter(true); }}};
    for (const Fixture& f : fixtures) {
        INFO(f.file);
        const pg::lora::Adapter expected = f.adapter();
        const std::vector<uint8_t> bytes = read_bytes(pg_test::fixtures_dir() + "/" + f.file);
        REQUIRE(!bytes.empty());
        const pg::lora::Adapter a = decode(bytes);
        CHECK(pg::lora::same_adapter(a, expected));
        CHECK(pg::io::xxh64(a.params(), size_t(a.num_params()) * 4) ==
              pg::io::xxh64(expected.params(), size_t(expected.num_params()) * 4));
        if (f.current) CHECK(bytes == encode(expected));
    }
    // Adapter training checkpoints: the adapter and the trainer state both come back.
    const Fixture training[] = {{"lora_training_v1.1.safetensors", false, nullptr}, {"lora_training_v1.3.safetensors", true, nullptr}};
    for (const Fixture& f : training) {
        INFO(f.file);
        const pg::lora::Adapter expected = fixture_adapter(f.current);
        const pg::TrainerState want = fixture_state(expected);
        const std::vector<uint8_t> bytes = read_bytes(pg_test::fixtures_dir() + "/" + f.file);
        REQUIRE(!bytes.empty());
        pg::io::MemorySource src(bytes.data(), bytes.size(), f.file);
        pg::TrainerState state;
        const pg::lora::Adapter a = pg::lora::read_adapter_training(src, state);
        CHECK(pg::lora::same_adapter(a, expected));
        CHECK(state.step == want.step);
        CHECK(state.micro_batches == want.micro_batches);
        CHECK(state.config.seed == want.config.seed);
        CHECK(state.adam_m == want.adam_m);
        CHECK(state.adam_v == want.adam_v);
        CHECK(std::memcmp(state.sampler_rng, want.sampler_rng, sizeof want.sampler_rng) == 0);
        CHECK(pg::lora::same_adapter(decode(bytes), expected));  // loads as a plain adapter too
        if (f.current) CHECK(bytes == encode_training(expected, want));
    }
}

TEST_CASE("lora file: write the fixtures of the current version", "[.write-fixtures]") {
    auto write = [](const std::vector<uint8_t>& bytes, const std::string& name) {
        pg::io::write_file_atomically(pg_test::fixtures_dir() + "/" + name, bytes.data(), bytes.size());
    };
    const pg::lora::Adapter a = fixture_adapter();
    const std::string version = std::to_string(pg::lora::kAdapterFormatMajor) + "." +
                                std::to_string(pg::lora::written_minor(a));
    write(encode(a), "lora_adapter_v" + version + ".safetensors");
    write(encode(nonfinite_fixture_adapter()), "lora_adapter_v" + version + "_nonfinite.safetensors");
    write(encode_training(a, fixture_state(a)), "lora_training_v" + version + ".safetensors");
}

TEST_CASE("lora file: corruption matrix, exact statuses", "[lora][lora_file]") {
    const std::vector<uint8_t> good = encode(fixture_adapter());
    uint64_t n = 0;
    std::memcpy(&n, good.data(), 8);
    struct Case {
        const char* what;
        std::vector<uint8_t> bytes;
        pg_status want;
        const char* says;
    };
    std::vector<Case> cases;
    auto flipped = [&](std::size_t at) {
        auto b = good;
        b[at] ^= 0x01;
        return b;
    };
    auto truncated = [&](std::size_t size) { return std::vector<uint8_t>(good.begin(), good.begin() + long(size)); };
    auto trailing = good;
    trailing.push_back(0);
    cases.push_back({"empty", {}, PG_ERR_FORMAT, "too short"});
    cases.push_back({"header length only", truncated(8), PG_ERR_FORMAT, "runs past the end"});
    cases.push_back({"truncated data", truncated(good.size() - 4), PG_ERR_FORMAT, "truncated"});
    cases.push_back({"trailing byte", trailing, PG_ERR_FORMAT, "trailing bytes"});
    cases.push_back({"tensor data flipped", flipped(good.size() - 1), PG_ERR_CHECKSUM, "checksum mismatch"});
    cases.push_back({"not an adapter", edit_header(good, "phonegpt.adapter_format", "phonegpt.adapter_formal"),
                     PG_ERR_FORMAT, "not a phonegpt adapter file"});
    cases.push_back({"newer major", edit_header(good, "\"1.3\"", "\"2.0\""), PG_ERR_VERSION, "newer than this library"});
    cases.push_back({"major 0", edit_header(good, "\"1.3\"", "\"0.9\""), PG_ERR_FORMAT, "never written"});
    cases.push_back({"bad version text", edit_header(good, "\"1.3\"", "\"1.x\""), PG_ERR_FORMAT, "MAJOR.MINOR"});
    cases.push_back({"metadata edited", edit_header(good, "\\\"rank\\\":2", "\\\"rank\\\":3"), PG_ERR_CHECKSUM,
                     "metadata checksum mismatch"});
    cases.push_back({"tensor renamed", edit_header(good, "h.1.mlp.c_proj.lora_A.weight\":{", "h.1.mlp.c_proj.lora_C.weight\":{"),
                     PG_ERR_FORMAT, "needs tensor"});
    cases.push_back({"tensor dtype", edit_header(good, "\"F32\"", "\"I32\""), PG_ERR_FORMAT, "not F32"});
    cases.push_back({"bad JSON", edit_header(good, "{\"__metadata__\"", "[\"__metadata__\""), PG_ERR_FORMAT, "'{'"});
    cases.push_back({"no metadata checksum", edit_header(good, "phonegpt.metadata_xxh64", "phonegpt.metadata_xxh65"),
                     PG_ERR_FORMAT, "metadata_xxh64"});
    cases.push_back({"base provenance edited", edit_header(good, "\\\"kind\\\":\\\"trained\\\"", "\\\"kind\\\":\\\"unknown\\\""),
                     PG_ERR_CHECKSUM, "metadata checksum mismatch"});
    // Statuses pinned per case and the number of cases pinned, so none is dropped silently.
    REQUIRE(cases.size() == 15);
    for (const Case& c : cases) {
        std::string message;
        const pg_status s = status_of(c.bytes, &message);
        INFO(c.what << ": " << pg_status_name(s) << ": " << message);
        CHECK(s == c.want);
        CHECK(message.find(c.says) != std::string::npos);
    }
}

TEST_CASE("lora file: every truncation and every single-byte flip: a clean error or the identical adapter",
          "[lora][lora_file]") {
    const pg::lora::Adapter a = fixture_adapter();
    const std::vector<uint8_t> good = encode(a);
    int loaded_same = 0, refused = 0;
    for (std::size_t size = 0; size < good.size(); ++size) {
        const std::vector<uint8_t> cut(good.begin(), good.begin() + long(size));
        REQUIRE(status_of(cut) != PG_OK);
    }
    for (std::size_t at = 0; at < good.size(); ++at) {
        auto bytes = good;
        bytes[at] ^= uint8_t(1u << (at % 8));
        try {
            const pg::lora::Adapter b = decode(bytes);
            INFO("flip at byte " << at << " loaded a different adapter");
            REQUIRE(pg::lora::same_adapter(a, b));
            ++loaded_same;
        } catch (const pg::Error& e) {
            INFO("flip at byte " << at << ": " << e.what());
            REQUIRE(e.status() != PG_ERR_INTERNAL);
            REQUIRE(e.status() != PG_OK);
            ++refused;
        }
    }
    // Only the header's padding spaces may flip into other JSON whitespace and still load.
    CHECK(refused > int(good.size()) * 9 / 10);
    CHECK(loaded_same + refused == int(good.size()));
}

TEST_CASE("lora peft: export writes adapter_config.json and PEFT-named safetensors", "[lora][lora_file]") {
    const pg::Model base = base_model();
    pg::lora::LoraConfig cfg;
    cfg.rank = 4;
    cfg.alpha = 16.0f;
    cfg.use_rslora = true;
    cfg.layers = {1};
    cfg.target_modules = PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_PROJ;
    const pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    pg_lora_adapter* handle = nullptr;
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* tiny = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &tiny) == PG_OK);
    pg_lora_config c;
    pg_lora_config_default(&c);
    REQUIRE(pg_lora_adapter_create(tiny, &c, &handle) == PG_OK);
    const std::string folder = pg_test::tmp_dir();
    REQUIRE(pg_lora_export_peft(handle, folder.c_str()) == PG_OK);
    CHECK(pg_lora_export_peft(handle, (folder + "/no/such/folder").c_str()) == PG_ERR_IO);
    pg_lora_adapter_free(handle);
    pg_model_free(tiny);

    const std::string json = pg::lora::peft_adapter_config_json(a.config(), a.base().config);
    const pg::io::JsonValue v = pg::io::parse_json(json.data(), json.size(), "adapter_config.json");
    CHECK(v.find("peft_type")->as_string("") == "LORA");
    CHECK(v.find("r")->as_u64("") == 4);
    CHECK(v.find("lora_alpha")->as_double("") == 16.0);
    CHECK(v.find("use_rslora")->as_bool(""));
    CHECK(v.find("fan_in_fan_out")->as_bool(""));
    const auto& targets = v.find("target_modules")->as_array("");
    REQUIRE(targets.size() == 2);
    CHECK(targets[0].as_string("") == "c_attn");
    CHECK(targets[1].as_string("") == "mlp.c_proj");
    CHECK(v.find("layers_to_transform")->as_array("")[0].as_u64("") == 1);
    CHECK(v.find("layers_pattern")->as_string("") == "h");
    const auto file = pg::lora::load_adapter(folder + "/adapter_model.safetensors");
    CHECK(file.config().rank == 8);  // the handle's default configuration was exported
    std::remove((folder + "/adapter_model.safetensors").c_str());
    std::remove((folder + "/adapter_config.json").c_str());
}
