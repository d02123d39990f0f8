// llm.c and Hugging Face safetensors: exact round trips, the layout other tools expect
// (checked value by value), the JSON reader, and malformed files with their exact statuses.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "core/bytes.hpp"
#include "core/json.hpp"
#include "io/llmc.hpp"
#include "io/safetensors.hpp"
#include "phonegpt/phonegpt.h"
#include "test_checkpoint_support.hpp"
#include "session_calls.hpp"

using namespace ckpt_test;

namespace {

pg_model* capi_model(const char* preset, uint64_t seed, bool with_tokenizer) {
    pg_model_config cfg;
    REQUIRE(pg_model_config_preset(preset, &cfg) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&cfg, seed, &m) == PG_OK);
    if (with_tokenizer) {
        pg_tokenizer* tok = nullptr;
        REQUIRE(pg_tokenizer_create_char(kShakespeareChars, std::strlen(kShakespeareChars), &tok) == PG_OK);
        REQUIRE(pg_model_set_tokenizer(m, tok) == PG_OK);
        pg_tokenizer_free(tok);
    }
    return m;
}

bool same_params(const pg_model* a, const pg_model* b) {
    const float *pa, *pb;
    int64_t na, nb;
    REQUIRE(pg_model_params(a, &pa, &na) == PG_OK);
    REQUIRE(pg_model_params(b, &pb, &nb) == PG_OK);
    return na == nb && std::memcmp(pa, pb, std::size_t(na) * 4) == 0;
}

bool same_c_config(const pg_model* a, const pg_model* b) {
    pg_model_config ca, cb;
    pg_model_config_default(&ca);
    pg_model_config_default(&cb);
    REQUIRE(pg_model_get_config(a, &ca) == PG_OK);
    REQUIRE(pg_model_get_config(b, &cb) == PG_OK);
    return std::memcmp(&ca, &cb, sizeof ca) == 0;
}

// The evaluation loss of a fixed batch (2 x 16 tokens), as the engine computes it.
float eval_loss(const pg_model* m) {
    std::vector<int32_t> tokens(2 * 16), targets(2 * 16);
    for (int i = 0; i < 32; ++i) {
        tokens[std::size_t(i)] = (i * 7 + 3) % 65;
        targets[std::size_t(i)] = (i * 11 + 5) % 65;
    }
    float loss = -1.0f;
    REQUIRE(pg_test::forward(m, tokens.data(), 2, 16, targets.data(), nullptr, &loss, 1) == PG_OK);
    return loss;
}

bool same_loss(const pg_model* a, const pg_model* b) {
    const float la = eval_loss(a), lb = eval_loss(b);
    return std::memcmp(&la, &lb, 4) == 0;
}

pg_provenance_kind provenance_kind(const pg_model* m) {
    pg_provenance_kind kind = PG_PROVENANCE_TRAINED;
    REQUIRE(pg_model_provenance(m, &kind, nullptr, nullptr, nullptr, nullptr) == PG_OK);
    return kind;
}

// m saved natively equals m exported to `format`, imported again and saved natively, byte for
// byte (geometry, tokenizer, weights, provenance).
bool same_native_file_after_round_trip(const pg_model* m, pg_interop_format format, const std::string& tag) {
    ::mkdir(scratch_path(tag).c_str(), 0777);
    const std::string exported = scratch_path(tag + "/model.safetensors");
    const std::string n1 = scratch_path(tag + "_1.pgck"), n2 = scratch_path(tag + "_2.pgck");
    REQUIRE(pg_model_export(m, format, exported.c_str()) == PG_OK);
    pg_model* again = nullptr;
    REQUIRE(pg_model_import(format, exported.c_str(), &again) == PG_OK);
    REQUIRE(pg_model_save(m, n1.c_str(), nullptr) == PG_OK);
    REQUIRE(pg_model_save(again, n2.c_str(), nullptr) == PG_OK);
    pg_model_free(again);
    return read_bytes(n1) == read_bytes(n2);
}

pg::io::JsonValue parse(const std::string& s) { return pg::io::parse_json(s.data(), s.size(), "test"); }

pg_status parse_status(const std::string& s) {
    try {
        parse(s);
        return PG_OK;
    } catch (const pg::Error& e) {
        return e.status();
    }
}

}  // namespace

TEST_CASE("JSON reader: strict syntax, UTF-8, exact integers, no duplicate keys", "[io][interop][json]") {
    auto v = parse(" {\"a\": [1, 2, 18446744073709551615], \"b\": \"x\\u00e9\\ud83d\\ude00\\n\", \"c\": null, "
                   "\"d\": true, \"e\": -1.5e-3} ");
    CHECK(v.find("a")->as_array("a")[2].as_u64("a2") == UINT64_MAX);
    CHECK(v.find("b")->as_string("b") == "x\xc3\xa9\xf0\x9f\x98\x80\n");
    CHECK(v.find("c")->is_null());
    CHECK(v.find("d")->as_bool("d"));
    CHECK(v.find("e")->as_double("e") == -1.5e-3);
    CHECK(v.find("zz") == nullptr);
    for (const char* bad : {"", "{", "{\"a\":1,}", "{\"a\":1}x", "[1 2]", "{\"a\":1,\"a\":2}", "\"\x01\"",
                            "\"\\x\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\\ud800\"", "01", "1.", "-", "tru", "{1:2}"})
        CHECK(parse_status(bad) == PG_ERR_FORMAT);
    CHECK(parse_status(std::string(200, '[') + std::string(200, ']')) == PG_ERR_FORMAT);  // depth cap
    // A repeated key is named, at the byte of its second occurrence, in a nested object too.
    CHECK_THROWS_WITH(parse("{\"b\":1,\"a\":2,\"b\":3}"), Catch::Contains("at byte 13: duplicate key \"b\""));
    CHECK_THROWS_WITH(parse("{\"o\":{\"x\":[],\"x\":{}},\"p\":0}"), Catch::Contains("at byte 13: duplicate key \"x\""));
    CHECK(parse("{\"x\":{\"x\":1},\"y\":{\"x\":2}}").find("y")->find("x")->as_u64("x") == 2);
    CHECK_THROWS_AS(parse("18446744073709551616").as_u64("big"), pg::Error);
    CHECK_THROWS_AS(parse("-1").as_u64("neg"), pg::Error);
    CHECK_THROWS_AS(parse("1.5").as_u64("frac"), pg::Error);
    CHECK(pg::io::json_float(1e-5f) == "1e-05");
    CHECK(std::strtof(pg::io::json_float(0.1f).c_str(), nullptr) == 0.1f);
    CHECK(pg::io::json_quote("a\"b\\c\n\x01") == "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST_CASE("llm.c export: the 256-int header and llm.c's parameter order, bit-exact round trip", "[io][interop][llmc]") {
    pg_model* model = capi_model("tiny", 21, false);
    const std::string path = scratch_path("tiny.llmc.bin");
    REQUIRE(pg_model_export(model, PG_FORMAT_LLMC, path.c_str()) == PG_OK);
    const std::vector<uint8_t> bytes = read_bytes(path);
    int32_t h[256];
    std::memcpy(h, bytes.data(), sizeof h);
    CHECK(h[0] == 20240326);
    CHECK(h[1] == 3);
    CHECK(h[2] == 16);  // max_seq_len
    CHECK(h[3] == 65);  // vocab_size
    CHECK(h[4] == 2);   // num_layers
    CHECK(h[5] == 2);   // num_heads
    CHECK(h[6] == 16);  // channels
    CHECK(h[7] == 68);  // padded_vocab_size
    for (int i = 8; i < 256; ++i) REQUIRE(h[i] == 0);
    const float* p;
    int64_t n;
    REQUIRE(pg_model_params(model, &p, &n) == PG_OK);
    REQUIRE(bytes.size() == 1024 + std::size_t(n) * 4);
    CHECK(std::memcmp(bytes.data() + 1024, p, std::size_t(n) * 4) == 0);

    pg_model* back = nullptr;
    REQUIRE(pg_model_import(PG_FORMAT_LLMC, path.c_str(), &back) == PG_OK);
    CHECK(same_params(model, back));
    CHECK(same_c_config(model, back));
    CHECK(same_loss(model, back));
    // native -> llm.c -> native: the re-imported model's native file is byte-identical to that
    // of a second round trip, and differs from the original's only in the provenance, which an
    // llm.c file cannot carry (created: initialised; imported: unknown).
    CHECK(provenance_kind(model) == PG_PROVENANCE_INITIALISED);
    CHECK(provenance_kind(back) == PG_PROVENANCE_UNKNOWN);
    CHECK(same_native_file_after_round_trip(back, PG_FORMAT_LLMC, "llmc_rt"));
    pg_model_free(back);
    pg_model_free(model);
}

TEST_CASE("native save and load: the reloaded model's evaluation loss is bit-identical", "[io][interop][checkpoint]") {
    pg_model* model = capi_model("tiny", 8, true);
    const std::string path = scratch_path("loss.pgck");
    for (int level : {0, 3}) {
        pg_save_options opt;
        pg_save_options_default(&opt);
        opt.compression_level = level;
        REQUIRE(pg_model_save(model, path.c_str(), &opt) == PG_OK);
        pg_model* back = nullptr;
        REQUIRE(pg_model_load(path.c_str(), &back) == PG_OK);
        CHECK(same_params(model, back));
        CHECK(same_loss(model, back));
        CHECK(eval_loss(back) > 3.0f);  // an untrained 65-way model scores about ln 65 = 4.17
        pg_model_free(back);
    }
    pg_model_free(model);
}

TEST_CASE("llm.c import: any padded vocabulary, bf16 files, and exact errors", "[io][interop][llmc]") {
    // GPT-2's real shape pads 50257 to 50304; here 65 padded to 128, written by hand.
    pg::ModelConfig cfg = pg::model_preset("tiny");
    cfg.padded_vocab_size = 128;
    auto model = make_model(cfg, 5, false);
    pg::io::VectorSink sink;
    pg::io::write_llmc(*model, sink);
    const std::string path = scratch_path("pad128.llmc.bin");
    write_bytes(path, sink.bytes);
    pg_model* back = nullptr;
    REQUIRE(pg_model_import(PG_FORMAT_LLMC, path.c_str(), &back) == PG_OK);
    pg_model_config c;
    pg_model_config_default(&c);
    REQUIRE(pg_model_get_config(back, &c) == PG_OK);
    CHECK(c.padded_vocab_size == 128);
    CHECK(c.vocab_size == 65);
    const float* p;
    int64_t n;
    REQUIRE(pg_model_params(back, &p, &n) == PG_OK);
    REQUIRE(n == model->num_params());
    CHECK(std::memcmp(p, model->params(), std::size_t(n) * 4) == 0);
    pg_model_free(back);

    // bf16 (version 5): the top halves of the fp32 weights, widened back exactly.
    std::vector<uint8_t> bf16(sink.bytes.begin(), sink.bytes.begin() + 1024);
    int32_t five = 5;
    std::memcpy(bf16.data() + 4, &five, 4);
    for (int64_t i = 0; i < model->num_params(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &model->params()[i], 4);
        bf16.push_back(uint8_t(bits >> 16));
        bf16.push_back(uint8_t(bits >> 24));
    }
    write_bytes(path, bf16);
    REQUIRE(pg_model_import(PG_FORMAT_LLMC, path.c_str(), &back) == PG_OK);
    REQUIRE(pg_model_params(back, &p, &n) == PG_OK);
    for (int64_t i = 0; i < n; ++i) {
        uint32_t want, got;
        std::memcpy(&want, &model->params()[i], 4);
        std::memcpy(&got, &p[i], 4);
        REQUIRE(got == (want & 0xFFFF0000u));
    }
    pg_model_free(back);

    struct Bad {
        const char* name;
        pg_status status;
        std::function<void(std::vector<uint8_t>&)> edit;
        const char* message;
    };
    const std::vector<Bad> bad = {
        {"empty file", PG_ERR_FORMAT, [](auto& b) { b.clear(); }, "shorter than"},
        {"header cut", PG_ERR_FORMAT, [](auto& b) { b.resize(1000); }, "shorter than"},
        {"bad magic", PG_ERR_FORMAT, [](auto& b) { b[0] ^= 1; }, "bad magic"},
        {"version 4", PG_ERR_VERSION, [](auto& b) { b[4] = 4; }, "version 4"},
        {"zero layers", PG_ERR_GEOMETRY, [](auto& b) { std::memset(&b[16], 0, 4); }, "n_layer"},
        {"heads do not divide width", PG_ERR_GEOMETRY, [](auto& b) { b[20] = 3; }, "n_head"},
        {"padded below vocab", PG_ERR_GEOMETRY, [](auto& b) { b[28] = 64; b[29] = 0; }, "padded_vocab_size"},
        {"huge geometry", PG_ERR_GEOMETRY, [](auto& b) { std::memset(&b[24], 0x7f, 4); }, "n_embd"},
        {"truncated weights", PG_ERR_FORMAT, [](auto& b) { b.pop_back(); }, "truncated"},
        {"trailing bytes", PG_ERR_FORMAT, [](auto& b) { b.push_back(0); }, "trailing"},
        {"native checkpoint given", PG_ERR_FORMAT, [&](auto& b) { b = encode(*model, nullptr, 0); }, "pg_model_load"},
    };
    for (const Bad& t : bad) {
        INFO(t.name);
        std::vector<uint8_t> b = sink.bytes;
        t.edit(b);
        write_bytes(path, b);
        pg_model* out = nullptr;
        CHECK(pg_model_import(PG_FORMAT_LLMC, path.c_str(), &out) == t.status);
        CHECK_THAT(pg_last_error(), Catch::Contains(t.message));
        CHECK(out == nullptr);
    }
    // llm.c has no layernorm_eps: exporting another value would silently change the model.
    pg::ModelConfig eps = pg::model_preset("tiny");
    eps.layernorm_eps = 1e-6f;
    pg::io::VectorSink ignored;
    CHECK_THROWS_WITH(pg::io::write_llmc(pg::Model(eps), ignored), Catch::Contains("layernorm_eps"));
}

TEST_CASE("safetensors export: Hugging Face GPT-2 names, Conv1D transposed, padding dropped", "[io][interop][safetensors]") {
    pg_model* model = capi_model("tiny", 33, true);
    const std::string path = scratch_path("st/model.safetensors");
    ::mkdir(scratch_path("st").c_str(), 0777);
    REQUIRE(pg_model_export(model, PG_FORMAT_SAFETENSORS, path.c_str()) == PG_OK);

    pg::io::FileSource src(path);
    const pg::io::SafetensorsHeader h = pg::io::read_safetensors_header(src);
    CHECK(h.data_start % 8 == 0);
    REQUIRE(h.metadata_value("format"));
    CHECK(*h.metadata_value("format") == "pt");
    CHECK(h.find("lm_head.weight") == nullptr);  // tied head
    CHECK(h.tensors.size() == 2 + 12 * 2 + 2);
    auto tensor_values = [&](const std::string& name, std::vector<uint64_t> shape) {
        const pg::io::SafetensorsTensor* t = h.find(name);
        REQUIRE(t != nullptr);
        CHECK(t->dtype == "F32");
        CHECK(t->shape == shape);
        std::vector<float> v((t->end - t->begin) / 4);
        src.read_at(h.data_start + t->begin, v.data(), v.size() * 4, "test");
        return v;
    };
    const float* p;
    int64_t n;
    REQUIRE(pg_model_params(model, &p, &n) == PG_OK);
    auto ours = [&](const char* name) {
        int32_t idx;
        REQUIRE(pg_model_find_tensor(model, name, &idx) == PG_OK);
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_model_tensor_info(model, idx, &info) == PG_OK);
        return info;
    };
    const auto wte = tensor_values("transformer.wte.weight", {65, 16});  // 68 rows -> 65
    CHECK(std::memcmp(wte.data(), ours("wte").data, wte.size() * 4) == 0);
    const auto wpe = tensor_values("transformer.wpe.weight", {16, 16});
    CHECK(std::memcmp(wpe.data(), ours("wpe").data, wpe.size() * 4) == 0);
    // Conv1D: Hugging Face stores [in, out]; ours is [out, in].
    const auto fc = tensor_values("transformer.h.1.mlp.c_fc.weight", {16, 64});
    const pg_tensor_info fc_ours = ours("h.1.mlp.c_fc.weight");  // [64, 16]
    for (int o = 0; o < 64; ++o)
        for (int i = 0; i < 16; ++i) REQUIRE(fc[std::size_t(i) * 64 + o] == fc_ours.data[o * 16 + i]);
    tensor_values("transformer.h.0.attn.c_attn.weight", {16, 48});
    tensor_values("transformer.h.0.attn.c_proj.weight", {16, 16});
    tensor_values("transformer.h.0.mlp.c_proj.weight", {64, 16});
    tensor_values("transformer.h.0.attn.c_attn.bias", {48});
    tensor_values("transformer.ln_f.weight", {16});

    const std::vector<uint8_t> cfg_bytes = read_bytes(scratch_path("st/config.json"));
    const pg::io::JsonValue cfg = pg::io::parse_json(reinterpret_cast<const char*>(cfg_bytes.data()), cfg_bytes.size(), "config");
    CHECK(cfg.find("activation_function")->as_string("") == "gelu_new");
    CHECK(cfg.find("model_type")->as_string("") == "gpt2");
    CHECK(cfg.find("n_positions")->as_u64("") == 16);
    CHECK(cfg.find("n_ctx")->as_u64("") == 16);
    CHECK(cfg.find("n_embd")->as_u64("") == 16);
    CHECK(cfg.find("n_layer")->as_u64("") == 2);
    CHECK(cfg.find("n_head")->as_u64("") == 2);
    CHECK(cfg.find("vocab_size")->as_u64("") == 65);
    CHECK(float(cfg.find("layer_norm_epsilon")->as_double("")) == 1e-5f);
    CHECK(cfg.find("tie_word_embeddings")->as_bool(""));

    // native -> safetensors -> native: weights, geometry and tokenizer come back exactly.
    pg_model* back = nullptr;
    REQUIRE(pg_model_import(PG_FORMAT_SAFETENSORS, path.c_str(), &back) == PG_OK);
    CHECK(same_params(model, back));
    CHECK(same_c_config(model, back));
    CHECK(same_loss(model, back));
    // Its native file (tokenizer section included) is that of a second round trip; only the
    // provenance differs from the original's (an import's is unknown).
    CHECK(provenance_kind(back) == PG_PROVENANCE_UNKNOWN);
    CHECK(same_native_file_after_round_trip(back, PG_FORMAT_SAFETENSORS, "st_rt"));
    pg_model_free(back);
    pg_model_free(model);
}

namespace {

// A safetensors file from a JSON header text and a data size (data bytes are a pattern).
std::vector<uint8_t> st_file(const std::string& header, std::size_t data_bytes) {
    pg::io::ByteWriter w;
    w.put<uint64_t>(header.size());
    w.put_bytes(header.data(), header.size());
    for (std::size_t i = 0; i < data_bytes; ++i) w.put<uint8_t>(uint8_t(i));
    return w.bytes();
}

pg_status st_header_status(const std::vector<uint8_t>& bytes, std::string* message) {
    try {
        pg::io::MemorySource src(bytes.data(), bytes.size());
        pg::io::read_safetensors_header(src);
        return PG_OK;
    } catch (const pg::Error& e) {
        *message = e.what();
        return e.status();
    }
}

}  // namespace

TEST_CASE("safetensors reader: the contract, case by case", "[io][interop][safetensors]") {
    const std::string ok = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                           R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]}})";
    std::string msg;
    REQUIRE(st_header_status(st_file(ok, 22), &msg) == PG_OK);
    // Offsets may be listed in any order; zero-element tensors are fine.
    REQUIRE(st_header_status(st_file(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},)"
                                     R"("z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                                     R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6), &msg) == PG_OK);
    struct Bad {
        const char* name;
        std::vector<uint8_t> bytes;
        const char* message;
    };
    std::vector<uint8_t> huge_len = st_file(ok, 22);
    uint64_t big = uint64_t(1) << 40;
    std::memcpy(huge_len.data(), &big, 8);
    std::vector<uint8_t> past_end = st_file(ok, 22);
    uint64_t past = ok.size() + 23;
    std::memcpy(past_end.data(), &past, 8);
    const std::vector<Bad> bad = {
        {"shorter than 8 bytes", {1, 2, 3}, "too short"},
        {"header length beyond the cap", huge_len, "exceeds the cap"},
        {"header past the end", past_end, "runs past the end"},
        {"not an object", st_file("[1,2]", 0), "does not start with '{'"},
        {"invalid JSON", st_file("{\"a\":", 0), "invalid JSON"},
        {"duplicate tensor", st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "duplicate key"},
        {"unknown dtype", st_file(R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", 4), "unknown dtype"},
        {"unknown field", st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4), "unknown field"},
        {"missing data_offsets", st_file(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "needs dtype"},
        {"negative dimension", st_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "non-negative"},
        {"shape overflow", st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4), "overflows"},
        {"size is not shape x dtype", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4), "needs 8"},
        {"offsets reversed", st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4), "end before"},
        {"overlapping tensors", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "overlapping"},
        {"gap between tensors", st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12), "gap"},
        {"tensor out of range", st_file(ok, 21), "truncated"},
        {"trailing bytes", st_file(ok, 23), "trailing"},
        {"metadata not strings", st_file(R"({"__metadata__":{"a":1}})", 0), "must be a string"},
    };
    for (const Bad& t : bad) {
        INFO(t.name);
        msg.clear();
        CHECK(st_header_status(t.bytes, &msg) == PG_ERR_FORMAT);
        CHECK_THAT(msg, Catch::Contains(t.message));
    }
}

TEST_CASE("safetensors GPT-2 import: config.json must agree, other exports are understood", "[io][interop][safetensors]") {
    auto model = make_model(pg::model_preset("tiny"), 44, false);
    pg::io::VectorSink sink;
    pg::io::write_hf_gpt2_safetensors(*model, sink);
    const std::string config = pg::io::hf_gpt2_config_json(model->config());
    auto import_status = [&](const std::vector<uint8_t>& bytes, const std::string& cfg, std::string* message) {
        try {
            pg::io::MemorySource src(bytes.data(), bytes.size());
            pg::io::HfGpt2Import plan = pg::io::read_hf_gpt2_header(src, cfg);
            pg::Model m(plan.config);
            pg::io::read_hf_gpt2_data(src, plan, m);
            if (!same_model(m, *model)) return PG_ERR_INTERNAL;
            return PG_OK;
        } catch (const pg::Error& e) {
            *message = e.what();
            return e.status();
        }
    };
    std::string msg;
    REQUIRE(import_status(sink.bytes, config, &msg) == PG_OK);

    // Older exports (openai-community/gpt2): no "transformer." prefix, causal-mask buffers, and a
    // tied lm_head that equals wte.
    pg::io::MemorySource src(sink.bytes.data(), sink.bytes.size());
    const pg::io::SafetensorsHeader h = pg::io::read_safetensors_header(src);
    std::string json = "{";
    std::vector<uint8_t> data;
    auto add = [&](const std::string& name, const std::string& dtype, const std::string& shape, const uint8_t* p, std::size_t n) {
        json += (json.size() > 1 ? "," : "") + pg::io::json_quote(name) + ":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
                ",\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + n) + "]}";
        data.insert(data.end(), p, p + n);
    };
    const uint8_t* base = sink.bytes.data() + h.data_start;
    for (const auto& t : h.tensors) {
        std::string shape = "[";
        for (std::size_t d = 0; d < t.shape.size(); ++d) shape += (d ? "," : "") + std::to_string(t.shape[d]);
        add(t.name.substr(std::strlen("transformer.")), "F32", shape + "]", base + t.begin, t.end - t.begin);
    }
    std::vector<uint8_t> mask(16 * 16 * 4, 0);
    add("h.0.attn.bias", "F32", "[1,1,16,16]", mask.data(), mask.size());
    add("h.1.attn.masked_bias", "F32", "[1]", mask.data(), 4);
    const pg::io::SafetensorsTensor* wte = h.find("transformer.wte.weight");
    add("lm_head.weight", "F32", "[65,16]", base + wte->begin, wte->end - wte->begin);
    json += "}";
    std::vector<uint8_t> old_style = st_file(json, 0);
    old_style.insert(old_style.end(), data.begin(), data.end());
    REQUIRE(import_status(old_style, config, &msg) == PG_OK);

    auto replace = [](std::string s, const std::string& from, const std::string& to) {
        const std::size_t at = s.find(from);
        REQUIRE(at != std::string::npos);
        return s.replace(at, from.size(), to);
    };
    struct Bad {
        const char* name;
        std::string config;
        pg_status status;
        const char* message;
    };
    const std::vector<Bad> bad = {
        {"config is not JSON", "{", PG_ERR_FORMAT, "invalid JSON"},
        {"n_head missing", replace(config, "\"n_head\"", "\"n_headz\""), PG_ERR_FORMAT, "missing \"n_head\""},
        {"n_head does not divide n_embd", replace(config, "\"n_head\": 2", "\"n_head\": 3"), PG_ERR_GEOMETRY, "n_head"},
        {"n_layer contradicts the tensors", replace(config, "\"n_layer\": 2", "\"n_layer\": 3"), PG_ERR_GEOMETRY, "h.2.ln_1.weight"},
        {"n_embd contradicts the tensors", replace(config, "\"n_embd\": 16", "\"n_embd\": 32"), PG_ERR_GEOMETRY, "has shape"},
        {"vocab contradicts wte", replace(config, "\"vocab_size\": 65", "\"vocab_size\": 66"), PG_ERR_GEOMETRY, "wte"},
        {"other activation", replace(config, "gelu_new", "relu"), PG_ERR_UNSUPPORTED, "relu"},
        {"other model type", replace(config, "\"gpt2\"", "\"llama\""), PG_ERR_UNSUPPORTED, "llama"},
        {"untied head", replace(config, "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false"), PG_ERR_UNSUPPORTED, "untied"},
    };
    for (const Bad& t : bad) {
        INFO(t.name);
        msg.clear();
        CHECK(import_status(sink.bytes, t.config, &msg) == t.status);
        CHECK_THAT(msg, Catch::Contains(t.message));
    }
    // padded_vocab_size in the metadata may not make the importer allocate beyond the file size.
    const std::string header(sink.bytes.begin() + 8, sink.bytes.begin() + long(h.data_start));
    const std::string huge = replace(header, "\"phonegpt.padded_vocab_size\":\"68\"",
                                     "\"phonegpt.padded_vocab_size\":\"4000000\"");
    std::vector<uint8_t> huge_file = st_file(huge, 0);
    huge_file.insert(huge_file.end(), sink.bytes.begin() + long(h.data_start), sink.bytes.end());
    msg.clear();
    CHECK(import_status(huge_file, config, &msg) == PG_ERR_GEOMETRY);
    CHECK_THAT(msg, Catch::Contains("more than the file's size"));
    // A tensor of another dtype, an unknown tensor, and a missing config.json through the C API.
    const std::string dir = scratch_path("st2");
    ::mkdir(dir.c_str(), 0777);
    const std::string path = dir + "/model.safetensors";
    write_bytes(path, sink.bytes);
    ::unlink((dir + "/config.json").c_str());
    pg_model* out = nullptr;
    CHECK(pg_model_import(PG_FORMAT_SAFETENSORS, path.c_str(), &out) == PG_ERR_IO);
    CHECK_THAT(pg_last_error(), Catch::Contains("config.json"));
    const std::string f16 = replace(std::string(sink.bytes.begin() + 8, sink.bytes.begin() + long(h.data_start)),
                                    "\"transformer.ln_f.bias\":{\"dtype\":\"F32\",\"shape\":[16]",
                                    "\"transformer.ln_f.bias\":{\"dtype\":\"F16\",\"shape\":[32]");
    std::vector<uint8_t> f16_file = st_file(f16, 0);
    f16_file.insert(f16_file.end(), sink.bytes.begin() + long(h.data_start), sink.bytes.end());
    msg.clear();
    CHECK(import_status(f16_file, config, &msg) == PG_ERR_UNSUPPORTED);
    CHECK_THAT(msg, Catch::Contains("F16"));
    // Formats the library does not know (0 and 4 are still valid values of the C++ enum type;
    // a C caller may pass any int, which the library reads as an int).
    for (int code : {0, 4}) {
        CHECK(pg_model_import(pg_interop_format(code), path.c_str(), &out) == PG_ERR_INVALID_ARGUMENT);
        CHECK_THAT(pg_last_error(), Catch::Contains("unknown format " + std::to_string(code)));
        pg_model* m = capi_model("tiny", 1, false);
        CHECK(pg_model_export(m, pg_interop_format(code), path.c_str()) == PG_ERR_INVALID_ARGUMENT);
        pg_model_free(m);
    }
    CHECK(pg_model_export(nullptr, PG_FORMAT_LLMC, path.c_str()) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_import(PG_FORMAT_LLMC, nullptr, &out) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_import(PG_FORMAT_LLMC, path.c_str(), nullptr) == PG_ERR_INVALID_ARGUMENT);
}
