// Hugging Face config.json of the Llama family: the published files of SmolLM2, Qwen2.5, Qwen3
// and Llama 3.2 read to the presets' geometry, round trips through the writer, and refusal by
// key of everything the engine does not compute.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.hpp"
#include "io/hf_config.hpp"
#include "model/config.hpp"

namespace {

// The config.json files as published on the Hugging Face hub (keys the reader ignores included).
const char* kSmolLM2_135M = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 576,
  "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "is_llama_config": true,
  "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 9,
  "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_interleaved": false, "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true, "vocab_size": 49152})";

const char* kQwen25_05B = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true, "use_mrope": false,
  "use_sliding_window": false, "vocab_size": 151936})";

const char* kQwen3_06B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

const char* kLlama32_1B = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})";

void require_same_geometry(const pg::ModelConfig& a, const pg::ModelConfig& b) {
    CHECK(a.n_layer == b.n_layer);
    CHECK(a.n_head == b.n_head);
    CHECK(a.n_embd == b.n_embd);
    CHECK(a.n_ctx == b.n_ctx);
    CHECK(a.vocab_size == b.vocab_size);
    CHECK(a.padded_vocab_size == b.padded_vocab_size);
    CHECK(a.layernorm_eps == b.layernorm_eps);
    CHECK(a.norm == b.norm);
    CHECK(a.qk_norm == b.qk_norm);
    CHECK(a.positions == b.positions);
    CHECK(a.rope_theta == b.rope_theta);
    CHECK(a.rope_scaling_factor == b.rope_scaling_factor);
    if (a.rope_scaling_factor > 0) {
        CHECK(a.rope_low_freq_factor == b.rope_low_freq_factor);
        CHECK(a.rope_high_freq_factor == b.rope_high_freq_factor);
        CHECK(a.rope_original_max_positions == b.rope_original_max_positions);
    }
    CHECK(a.kv_heads() == b.kv_heads());
    CHECK(a.head_dim() == b.head_dim());
    CHECK(a.qkv_bias == b.qkv_bias);
    CHECK(a.linear_bias == b.linear_bias);
    CHECK(a.mlp == b.mlp);
    CHECK(a.mlp_width() == b.mlp_width());
    CHECK(a.tied_head == b.tied_head);
    CHECK(pg::count_params(a) == pg::count_params(b));
}

pg_status status_of_reading(const std::string& json, std::string* message = nullptr) {
    try {
        pg::io::hf_decoder_config_from_json(json, "config.json");
        return PG_OK;
    } catch (const pg::Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
}

// The SmolLM2 file with one key replaced (or added when absent).
std::string smollm2_with(const std::string& key, const std::string& value) {
    std::string s = kSmolLM2_135M;
    const std::string quoted = "\"" + key + "\": ";
    const std::size_t at = s.find(quoted);
    if (at == std::string::npos) return s.substr(0, s.size() - 1) + ", " + quoted + value + "}";
    const std::size_t begin = at + quoted.size();
    std::size_t end = begin;
    int depth = 0;
    while (end < s.size() && !(depth == 0 && (s[end] == ',' || s[end] == '}'))) {
        if (s[end] == '{' || s[end] == '[') ++depth;
        if (s[end] == '}' || s[end] == ']') --depth;
        ++end;
    }
    return s.substr(0, begin) + value + s.substr(end);
}

}  // namespace

TEST_CASE("the published config.json of each Llama-family model reads to its preset", "[io][hf]") {
    const struct {
        const char* json;
        const char* preset;
    } cases[] = {{kSmolLM2_135M, "smollm2-135m"},
                 {kQwen25_05B, "qwen2.5-0.5b"},
                 {kQwen3_06B, "qwen3-0.6b"},
                 {kLlama32_1B, "llama3.2-1b"}};
    for (const auto& c : cases) {
        INFO(c.preset);
        const pg::ModelConfig read = pg::io::hf_decoder_config_from_json(c.json, "config.json");
        require_same_geometry(read, pg::model_preset(c.preset));
    }
    CHECK(pg::count_params(pg::io::hf_decoder_config_from_json(kSmolLM2_135M, "config.json")) == 134515008);
    CHECK(pg::io::hf_model_type(kQwen3_06B, "config.json") == "qwen3");
    CHECK(pg::io::hf_model_type("{\"n_layer\": 2}", "config.json").empty());
}

TEST_CASE("config.json written for each family reads back to the same geometry", "[io][hf]") {
    for (const char* name : {"smollm2-135m", "qwen2.5-0.5b", "qwen3-0.6b", "llama3.2-1b", "tiny-llama", "tiny-qwen2",
                             "tiny-qwen3"}) {
        INFO(name);
        pg::ModelConfig m = pg::model_preset(name);
        m.padded_vocab_size = m.vocab_size;  // Hugging Face files carry no padding rows
        const std::string json = pg::io::hf_decoder_config_json(m);
        require_same_geometry(pg::io::hf_decoder_config_from_json(json, "written config.json"), m);
    }
    CHECK(pg::io::hf_family_of(pg::model_preset("qwen3-0.6b")) == pg::io::HfFamily::qwen3);
    CHECK(pg::io::hf_family_of(pg::model_preset("qwen2.5-0.5b")) == pg::io::HfFamily::qwen2);
    CHECK(pg::io::hf_family_of(pg::model_preset("llama3.2-1b")) == pg::io::HfFamily::llama);
}

TEST_CASE("configurations no Llama-family config.json describes are refused naming why", "[io][hf]") {
    auto refused = [](const pg::ModelConfig& m, const char* why) {
        try {
            pg::io::hf_decoder_config_json(m);
            FAIL("written");
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_UNSUPPORTED);
            CHECK_THAT(e.what(), Catch::Contains(why));
        }
    };
    refused(pg::model_preset("phonegpt"), "LayerNorm");
    refused(pg::model_preset("tiny-llama"), "padded_vocab_size");  // 65 tokens padded to 68
    pg::ModelConfig m = pg::model_preset("smollm2-135m");
    m.linear_bias = true;
    refused(m, "linear_bias without qkv_bias");
    m = pg::model_preset("qwen3-0.6b");
    m.qkv_bias = true;
    refused(m, "qk_norm with biases");
}

TEST_CASE("config.json keys for what the engine does not compute are refused by name", "[io][hf]") {
    const struct {
        std::string json;
        pg_status status;
        const char* names;
    } cases[] = {
        {smollm2_with("model_type", "\"mistral\""), PG_ERR_UNSUPPORTED, "model_type \"mistral\""},
        {smollm2_with("model_type", "\"qwen2_moe\""), PG_ERR_UNSUPPORTED, "qwen2_moe"},
        {smollm2_with("architectures", "[\"LlamaForSequenceClassification\"]"), PG_ERR_UNSUPPORTED, "architectures"},
        {smollm2_with("hidden_act", "\"gelu\""), PG_ERR_UNSUPPORTED, "hidden_act"},
        {smollm2_with("use_sliding_window", "true"), PG_ERR_UNSUPPORTED, "use_sliding_window"},
        {smollm2_with("layer_types", "[\"full_attention\", \"sliding_attention\"]"), PG_ERR_UNSUPPORTED, "layer_types"},
        {smollm2_with("num_local_experts", "8"), PG_ERR_UNSUPPORTED, "num_local_experts"},
        {smollm2_with("quantization_config", "{\"quant_method\": \"gptq\"}"), PG_ERR_UNSUPPORTED, "quantization_config"},
        {smollm2_with("rope_interleaved", "true"), PG_ERR_UNSUPPORTED, "rope_interleaved"},
        {smollm2_with("use_mrope", "true"), PG_ERR_UNSUPPORTED, "use_mrope"},
        {smollm2_with("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 4.0}"), PG_ERR_UNSUPPORTED, "yarn"},
        {smollm2_with("rope_scaling", "{\"type\": \"linear\", \"factor\": 2.0}"), PG_ERR_UNSUPPORTED, "linear"},
        {smollm2_with("rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": 8.0}"), PG_ERR_FORMAT, "low_freq_factor"},
        {smollm2_with("attention_bias", "true"), PG_ERR_UNSUPPORTED, "mlp_bias"},
        {smollm2_with("hidden_size", "\"576\""), PG_ERR_FORMAT, "hidden_size"},
        {smollm2_with("num_attention_heads", "7"), PG_ERR_GEOMETRY, "config.json"},
        {smollm2_with("num_key_value_heads", "2"), PG_ERR_GEOMETRY, "n_kv_head"},
        {smollm2_with("vocab_size", "99999999999"), PG_ERR_GEOMETRY, "vocab_size"},
        {std::string(kSmolLM2_135M).replace(std::string(kSmolLM2_135M).find("\"hidden_size\""), 13, "\"hidden_sizes\""),
         PG_ERR_FORMAT, "missing \"hidden_size\""},
        {"[1, 2]", PG_ERR_FORMAT, "config.json"},
        {"{\"model_type\": \"qwen3\", \"hidden_size\": 64", PG_ERR_FORMAT, "config.json"},
    };
    for (const auto& c : cases) {
        INFO(c.json);
        std::string message;
        CHECK(status_of_reading(c.json, &message) == c.status);
        CHECK_THAT(message, Catch::Contains(c.names));
    }
    // Qwen3 biases o_proj with attention_bias, but never its MLP.
    std::string q3 = kQwen3_06B;
    q3.replace(q3.find("\"attention_bias\": false"), 23, "\"attention_bias\": true");
    std::string message;
    CHECK(status_of_reading(q3, &message) == PG_ERR_UNSUPPORTED);
    CHECK_THAT(message, Catch::Contains("attention_bias"));
}

TEST_CASE("absent optional keys take transformers' defaults", "[io][hf]") {
    const char* minimal = R"({"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})";
    const pg::ModelConfig m = pg::io::hf_decoder_config_from_json(minimal, "config.json");
    CHECK(m.head_dim() == 128);      // Qwen3Config's default
    CHECK(m.kv_heads() == 4);        // num_key_value_heads = num_attention_heads
    CHECK(m.n_ctx == 32768);
    CHECK(m.layernorm_eps == 1e-6f);
    CHECK(m.rope_theta == 10000.0f);
    CHECK_FALSE(m.tied_head);        // tie_word_embeddings defaults to false
    CHECK(m.qk_norm);
    const char* llama = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "rope_scaling": {"rope_type": "default"}})";
    const pg::ModelConfig l = pg::io::hf_decoder_config_from_json(llama, "config.json");
    CHECK(l.head_dim() == 16);       // hidden_size / num_attention_heads
    CHECK(l.n_ctx == 2048);
    CHECK(l.rope_scaling_factor == 0.0f);
}
