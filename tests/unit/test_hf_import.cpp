// Hugging Face model folders through the C API (PG_FORMAT_HF_FOLDER): exact round trips for
// every family the engine runs, 16-bit imports straight into a 16-bit base with the fp32
// fingerprint of the same weights, and the options and files that are refused.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "phonegpt/phonegpt.h"
#include "test_support.hpp"
#include "session_calls.hpp"

namespace {

std::string folder_named(const std::string& name) {
    const std::string dir = pg_test::tmp_dir() + "/hf_import_" + name + "-" + std::to_string(getpid());
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "model.safetensors.index.json"})
        ::unlink((dir + "/" + f).c_str());
    ::rmdir(dir.c_str());
    return dir;
}

pg_model* model_of(const char* preset, uint64_t seed) {
    pg_model_config cfg;
    pg_model_config_default(&cfg);
    REQUIRE(pg_model_config_preset(preset, &cfg) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&cfg, seed, &m) == PG_OK);
    return m;
}

pg_model* import_folder(const std::string& dir, int32_t storage = -1) {
    pg_load_options o;
    pg_load_options_default(&o);
    o.weight_storage = storage;
    pg_model* m = nullptr;
    const pg_status s = pg_model_import_with(PG_FORMAT_HF_FOLDER, dir.c_str(), &o, &m);
    INFO(pg_last_error());
    REQUIRE(s == PG_OK);
    return m;
}

// Whether two models hold the same fp32 parameters, bit for bit.
bool same_parameter_bits(const pg_model* x, const pg_model* y) {
    const float *a, *b;
    int64_t na, nb;
    REQUIRE(pg_model_params(x, &a, &na) == PG_OK);
    REQUIRE(pg_model_params(y, &b, &nb) == PG_OK);
    return na == nb && std::memcmp(a, b, std::size_t(na) * 4) == 0;
}

// Logits of a fixed sequence, as a session computes them.
std::vector<float> logits_of(const pg_model* m) {
    pg_model_config cfg;
    pg_model_config_default(&cfg);
    REQUIRE(pg_model_get_config(m, &cfg) == PG_OK);
    const int T = 8;
    std::vector<int32_t> tokens(T);
    for (int i = 0; i < T; ++i) tokens[std::size_t(i)] = (i * 7 + 3) % cfg.vocab_size;
    std::vector<float> logits(std::size_t(T) * std::size_t(cfg.vocab_size));
    float loss = 0.0f;
    REQUIRE(pg_test::forward(m, tokens.data(), 1, T, nullptr, logits.data(), &loss, 1) == PG_OK);
    return logits;
}

}  // namespace

TEST_CASE("a GPT-2 model goes through a Hugging Face folder bit for bit", "[io][hf]") {
    pg_model* m = model_of("tiny", 3);
    const std::string dir = folder_named("gpt2");
    REQUIRE(pg_model_export(m, PG_FORMAT_HF_FOLDER, dir.c_str()) == PG_OK);  // creates the folder
    pg_model* back = import_folder(dir);
    CHECK(same_parameter_bits(m, back));

    // Asked for bf16, the same weights held as a frozen bf16 base with the fp32 fingerprint.
    pg_model* half = import_folder(dir, PG_WEIGHTS_BF16);
    pg_weight_storage storage = PG_WEIGHTS_FP32;
    REQUIRE(pg_model_weight_storage(half, &storage, nullptr) == PG_OK);
    CHECK(storage == PG_WEIGHTS_BF16);
    pg_model_free(half);
    pg_model_free(back);
    pg_model_free(m);
}

TEST_CASE("HF folder imports refuse bad options and missing files by name", "[io][hf]") {
    pg_model* m = nullptr;
    pg_load_options o;
    pg_load_options_default(&o);
    CHECK(o.weight_storage == -1);
    o.map_weights = 1;
    const std::string dir = folder_named("refusals");
    CHECK(pg_model_import_with(PG_FORMAT_HF_FOLDER, dir.c_str(), &o, &m) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("map_weights"));
    o.map_weights = 0;
    o.weight_storage = 99;
    CHECK(pg_model_import_with(PG_FORMAT_HF_FOLDER, dir.c_str(), &o, &m) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("weight_storage"));
    CHECK(pg_model_import(PG_FORMAT_HF_FOLDER, dir.c_str(), &m) == PG_ERR_IO);  // no such folder
    CHECK_THAT(pg_last_error(), Catch::Contains("config.json"));
    CHECK(m == nullptr);

    // A folder with a Mistral config.json: refused naming the key, before any weight is read.
    ::mkdir(dir.c_str(), 0700);
    const std::string mistral = R"({"model_type": "mistral", "hidden_size": 64})";
    pg::io::write_file_atomically(dir + "/config.json", mistral.data(), mistral.size());
    CHECK(pg_model_import(PG_FORMAT_HF_FOLDER, dir.c_str(), &m) == PG_ERR_UNSUPPORTED);
    CHECK_THAT(pg_last_error(), Catch::Contains("model_type \"mistral\""));

    // Exporting onto a file that is not a folder.
    pg_model* tiny = model_of("tiny", 1);
    const std::string file = dir + "/config.json";
    CHECK(pg_model_export(tiny, PG_FORMAT_HF_FOLDER, file.c_str()) == PG_ERR_IO);
    CHECK_THAT(pg_last_error(), Catch::Contains("not a folder"));
    pg_model_free(tiny);
}

TEST_CASE("the loaded storage of pg_model_load_with follows options.weight_storage", "[io][hf]") {
    pg_model* m = model_of("tiny", 5);
    const std::string path = pg_test::tmp_dir() + "/hf_import_native-" + std::to_string(getpid()) + ".bin";
    REQUIRE(pg_model_save(m, path.c_str(), nullptr) == PG_OK);
    pg_load_options o;
    pg_load_options_default(&o);
    o.weight_storage = PG_WEIGHTS_FP16;
    pg_model* half = nullptr;
    REQUIRE(pg_model_load_with(path.c_str(), &o, &half) == PG_OK);
    pg_weight_storage storage = PG_WEIGHTS_FP32;
    REQUIRE(pg_model_weight_storage(half, &storage, nullptr) == PG_OK);
    CHECK(storage == PG_WEIGHTS_FP16);
    CHECK(logits_of(half).size() == logits_of(m).size());
    pg_model_free(half);
    pg_model_free(m);
    ::unlink(path.c_str());
}

TEST_CASE("Llama-family models go through a Hugging Face folder bit for bit", "[io][hf]") {
    for (const char* preset : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
        INFO(preset);
        pg_model* m = model_of(preset, 9);
        const std::string dir = folder_named(preset);
        REQUIRE(pg_model_export(m, PG_FORMAT_HF_FOLDER, dir.c_str()) == PG_OK);
        pg_model* back = import_folder(dir);
        CHECK(same_parameter_bits(m, back));
        // Without a tokenizer.json the vocabulary is the embedding's rows (config.json's vocab_size).
        pg_model_config c;
        pg_model_config_default(&c);
        REQUIRE(pg_model_get_config(back, &c) == PG_OK);
        CHECK(c.vocab_size == c.padded_vocab_size);
        pg_model_free(back);
        pg_model_free(m);
    }
}

TEST_CASE("a folder's tokenizer.json comes with the model, the embedding's further rows padding", "[io][hf]") {
    // A byte-level BPE of 300 tokens and a model whose embedding has 320 rows, as Qwen pads its own.
    std::string text;
    for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog " + std::to_string(i) + "\n";
    const char* texts[] = {text.c_str()};
    const size_t lens[] = {text.size()};
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_bpe_train(texts, lens, 1, 300, nullptr, &tok) == PG_OK);
    int32_t n_tokens = 0;
    REQUIRE(pg_tokenizer_vocab_size(tok, &n_tokens) == PG_OK);
    std::vector<char> json(1 << 20);
    size_t len = 0;
    REQUIRE(pg_tokenizer_write_file(tok, PG_TOKENIZER_FILE_HF_JSON, json.data(), json.size(), &len) == PG_OK);
    pg_tokenizer_free(tok);

    pg_model_config cfg;
    pg_model_config_default(&cfg);
    REQUIRE(pg_model_config_preset("tiny-llama", &cfg) == PG_OK);
    cfg.vocab_size = cfg.padded_vocab_size = 320;
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&cfg, 4, &m) == PG_OK);
    const std::string dir = folder_named("tokenizer");
    REQUIRE(pg_model_export(m, PG_FORMAT_HF_FOLDER, dir.c_str()) == PG_OK);
    pg::io::write_file_atomically(dir + "/tokenizer.json", json.data(), len);
    pg_model* back = import_folder(dir);
    pg_model_config c;
    pg_model_config_default(&c);
    REQUIRE(pg_model_get_config(back, &c) == PG_OK);
    CHECK(c.vocab_size == n_tokens);
    CHECK(c.padded_vocab_size == 320);
    const pg_tokenizer* carried = nullptr;
    REQUIRE(pg_model_get_tokenizer(back, &carried) == PG_OK);
    REQUIRE(carried != nullptr);
    CHECK(same_parameter_bits(m, back));
    // Exported again, config.json keeps the embedding's 320 rows.
    const std::string again = folder_named("tokenizer_again");
    REQUIRE(pg_model_export(back, PG_FORMAT_HF_FOLDER, again.c_str()) == PG_OK);
    const std::vector<uint8_t> config = pg::io::read_small_file(again + "/config.json", 1 << 20);
    CHECK_THAT(std::string(config.begin(), config.end()), Catch::Contains("\"vocab_size\": 320"));
    pg_model_free(back);
    pg_model_free(m);

    // A tokenizer larger than the embedding is refused.
    cfg.vocab_size = cfg.padded_vocab_size = 280;
    REQUIRE(pg_model_create(&cfg, 4, &m) == PG_OK);
    REQUIRE(pg_model_export(m, PG_FORMAT_HF_FOLDER, dir.c_str()) == PG_OK);
    pg_model* refused = nullptr;
    CHECK(pg_model_import(PG_FORMAT_HF_FOLDER, dir.c_str(), &refused) == PG_ERR_GEOMETRY);
    CHECK_THAT(pg_last_error(), Catch::Contains("tokenizer.json"));
    pg_model_free(m);
}
