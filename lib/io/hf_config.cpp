// Hugging Face config.json of the Llama family (hf_config.hpp). The defaults for absent keys are
// transformers' (LlamaConfig, Qwen2Config, Qwen3Config); the keys that fix the geometry
// (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, vocab_size) must be
// present, since a default there would silently build a different model.
#include "io/hf_config.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/json.hpp"

namespace pg::io {

const char* hf_architecture_name(HfFamily family) {
    switch (family) {
        case HfFamily::qwen2: return "Qwen2ForCausalLM";
        case HfFamily::qwen3: return "Qwen3ForCausalLM";
        case HfFamily::llama: break;
    }
    return "LlamaForCausalLM";
}

namespace {

const char* model_type_of(HfFamily family) {
    switch (family) {
        case HfFamily::qwen2: return "qwen2";
        case HfFamily::qwen3: return "qwen3";
        case HfFamily::llama: break;
    }
    return "llama";
}

JsonValue parse_object(const std::string& text, const std::string& context) {
    JsonValue cfg = parse_json(text.data(), text.size(), context);
    cfg.as_object(context);
    return cfg;
}

// Typed reads of one config.json, every message naming the key.
class ConfigReader {
public:
    ConfigReader(const JsonValue& cfg, const std::string& context) : cfg_(cfg), ctx_(context) {}

    const JsonValue* find(const char* key) const {
        const JsonValue* v = cfg_.find(key);
        return v && !v->is_null() ? v : nullptr;
    }
    int required_int(const char* key) const {
        const JsonValue* v = find(key);
        require(v != nullptr, PG_ERR_FORMAT, ctx_ + ": missing \"" + key + "\"");
        return to_int(*v, key);
    }
    int int_or(const char* key, int fallback) const {
        const JsonValue* v = find(key);
        return v ? to_int(*v, key) : fallback;
    }
    double number_or(const char* key, double fallback) const {
        const JsonValue* v = find(key);
        return v ? v->as_double(ctx_ + ": " + key) : fallback;
    }
    bool bool_or(const char* key, bool fallback) const {
        const JsonValue* v = find(key);
        return v ? v->as_bool(ctx_ + ": " + key) : fallback;
    }
    std::string string_or(const char* key, const std::string& fallback) const {
        const JsonValue* v = find(key);
        return v ? v->as_string(ctx_ + ": " + key) : fallback;
    }
    [[noreturn]] void unsupported(const std::string& what) const { throw Error(PG_ERR_UNSUPPORTED, ctx_ + ": " + what); }
    const std::string& context() const { return ctx_; }

private:
    int to_int(const JsonValue& v, const char* key) const {
        const uint64_t x = v.as_u64(ctx_ + ": " + key);
        require(x <= uint64_t(INT32_MAX), PG_ERR_GEOMETRY, ctx_ + ": " + key + " = " + std::to_string(x) + " is too large");
        return int(x);
    }
    const JsonValue& cfg_;
    std::string ctx_;
};

HfFamily family_of_type(const std::string& model_type, const ConfigReader& r) {
    if (model_type == "llama") return HfFamily::llama;
    if (model_type == "qwen2") return HfFamily::qwen2;
    if (model_type == "qwen3") return HfFamily::qwen3;
    r.unsupported("model_type \"" + model_type +
                  "\" is not a family this library runs (llama, qwen2, qwen3; gpt2 through the GPT-2 import)");
}

// Everything that would change the computation and that the engine does not implement.
void refuse_what_the_engine_lacks(const ConfigReader& r, HfFamily family) {
    if (const JsonValue* archs = r.find("architectures")) {
        for (const JsonValue& a : archs->as_array(r.context() + ": architectures")) {
            const std::string& name = a.as_string(r.context() + ": architectures");
            if (name != hf_architecture_name(family))
                r.unsupported("architectures names \"" + name + "\"; a model_type \"" + model_type_of(family) +
                              "\" file is read as " + hf_architecture_name(family));
        }
    }
    const std::string act = r.string_or("hidden_act", "silu");
    if (act != "silu") r.unsupported("hidden_act \"" + act + "\" is not implemented (the SwiGLU MLP computes silu)");
    if (r.bool_or("use_sliding_window", false)) r.unsupported("use_sliding_window: sliding-window attention is not implemented");
    if (const JsonValue* types = r.find("layer_types"))
        for (const JsonValue& t : types->as_array(r.context() + ": layer_types"))
            if (t.as_string(r.context() + ": layer_types") != "full_attention")
                r.unsupported("layer_types lists \"" + t.as_string("") + "\": only full attention is implemented");
    for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts"})
        if (r.int_or(key, 0) > 0) r.unsupported(std::string(key) + ": mixtures of experts are not implemented");
    if (r.find("quantization_config"))
        r.unsupported("quantization_config: pre-quantized checkpoints are not read (load the fp32/fp16/bf16 weights "
                      "and choose the storage with pg_model_set_weight_storage)");
    if (r.bool_or("rope_interleaved", false))
        r.unsupported("rope_interleaved: the engine rotates halves (transformers' convention), not interleaved pairs");
    if (r.bool_or("use_mrope", false)) r.unsupported("use_mrope: multimodal rotary positions are not implemented");
}

void read_rope_scaling(const ConfigReader& r, ModelConfig& m) {
    const JsonValue* s = r.find("rope_scaling");
    if (!s) return;
    const std::string ctx = r.context() + ": rope_scaling";
    s->as_object(ctx);
    const JsonValue* type = s->find("rope_type");
    if (!type || type->is_null()) type = s->find("type");  // the older spelling
    const std::string kind = type && !type->is_null() ? type->as_string(ctx + ".rope_type") : "default";
    if (kind == "default") return;
    if (kind != "llama3")
        r.unsupported("rope_scaling.rope_type \"" + kind + "\" is not implemented (default and llama3 are)");
    auto number = [&](const char* key) {
        const JsonValue* v = s->find(key);
        require(v != nullptr && !v->is_null(), PG_ERR_FORMAT, ctx + ": missing \"" + key + "\" (rope_type llama3 needs it)");
        return v->as_double(ctx + "." + key);
    };
    m.rope_scaling_factor = float(number("factor"));
    m.rope_low_freq_factor = float(number("low_freq_factor"));
    m.rope_high_freq_factor = float(number("high_freq_factor"));
    const double original = number("original_max_position_embeddings");
    require(original >= 1 && original <= kMaxCtx && original == std::floor(original), PG_ERR_GEOMETRY,
            ctx + ".original_max_position_embeddings must be a whole number of positions within " + std::to_string(kMaxCtx));
    m.rope_original_max_positions = int(original);
}

}  // namespace

std::string hf_model_type(const std::string& config_json, const std::string& context) {
    const JsonValue cfg = parse_object(config_json, context);
    const JsonValue* t = cfg.find("model_type");
    return t && !t->is_null() ? t->as_string(context + ": model_type") : std::string();
}

ModelConfig hf_decoder_config_from_json(const std::string& config_json, const std::string& context) {
    const JsonValue cfg = parse_object(config_json, context);
    const ConfigReader r(cfg, context);
    const JsonValue* type = r.find("model_type");
    require(type != nullptr, PG_ERR_FORMAT, context + ": missing \"model_type\"");
    const HfFamily family = family_of_type(type->as_string(context + ": model_type"), r);
    refuse_what_the_engine_lacks(r, family);

    ModelConfig m;
    m.norm = NormKind::rmsnorm;
    m.positions = PositionKind::rotary;
    m.mlp = MlpKind::swiglu;
    m.n_embd = r.required_int("hidden_size");
    m.mlp_hidden = r.required_int("intermediate_size");
    m.n_layer = r.required_int("num_hidden_layers");
    m.n_head = r.required_int("num_attention_heads");
    m.vocab_size = m.padded_vocab_size = r.required_int("vocab_size");
    m.n_kv_head = r.int_or("num_key_value_heads", m.n_head);
    // Qwen3Config's head_dim defaults to 128; Llama and Qwen2 derive it from the width.
    const int derived = m.n_head > 0 ? m.n_embd / m.n_head : 0;
    m.head_size = r.int_or("head_dim", family == HfFamily::qwen3 ? 128 : derived);
    m.n_ctx = r.int_or("max_position_embeddings", family == HfFamily::llama ? 2048 : 32768);
    m.layernorm_eps = float(r.number_or("rms_norm_eps", 1e-6));
    m.rope_theta = float(r.number_or("rope_theta", 10000.0));
    read_rope_scaling(r, m);
    m.tied_head = r.bool_or("tie_word_embeddings", false);

    const bool attention_bias = r.bool_or("attention_bias", false);
    switch (family) {
        case HfFamily::qwen2:  // q, k and v always carry biases, o and the MLP never
            m.qkv_bias = true;
            m.linear_bias = false;
            break;
        case HfFamily::qwen3:
            if (attention_bias)
                r.unsupported("attention_bias: Qwen3 then biases o_proj but not its MLP, a combination the engine "
                              "does not compute");
            m.qk_norm = true;
            m.qkv_bias = m.linear_bias = false;
            break;
        case HfFamily::llama:
            if (attention_bias != r.bool_or("mlp_bias", false))
                r.unsupported("attention_bias and mlp_bias differ: the engine biases o_proj and the MLP together");
            m.qkv_bias = m.linear_bias = attention_bias;
            break;
    }
    try {
        validate_model_config(m);
    } catch (const Error& e) {
        throw Error(PG_ERR_GEOMETRY, context + ": " + e.what());
    }
    return m;
}

HfFamily hf_family_of(const ModelConfig& m) {
    auto refuse = [](const std::string& why) {
        throw Error(PG_ERR_UNSUPPORTED, "model config: " + why + ": no Hugging Face Llama-family config.json describes it");
    };
    if (m.norm != NormKind::rmsnorm) refuse("norm is LayerNorm");
    if (m.positions != PositionKind::rotary) refuse("positions are learned");
    if (m.mlp != MlpKind::swiglu) refuse("the MLP is GELU");
    if (m.padded_vocab_size != m.vocab_size) refuse("padded_vocab_size differs from vocab_size");
    if (m.qk_norm) {
        if (m.qkv_bias || m.linear_bias) refuse("qk_norm with biases");
        return HfFamily::qwen3;
    }
    if (m.qkv_bias && !m.linear_bias) return HfFamily::qwen2;
    if (m.qkv_bias != m.linear_bias) refuse("linear_bias without qkv_bias");
    return HfFamily::llama;
}

std::string hf_decoder_config_json(const ModelConfig& m) {
    const HfFamily family = hf_family_of(m);
    JsonObject o;
    o.strings("architectures", {hf_architecture_name(family)})
        .str("model_type", model_type_of(family))
        .integer("hidden_size", m.n_embd)
        .integer("intermediate_size", m.mlp_width())
        .integer("num_hidden_layers", m.n_layer)
        .integer("num_attention_heads", m.n_head)
        .integer("num_key_value_heads", m.kv_heads())
        .integer("head_dim", m.head_dim())
        .str("hidden_act", "silu")
        .integer("max_position_embeddings", m.n_ctx)
        .integer("vocab_size", m.vocab_size)
        .flt("rms_norm_eps", m.layernorm_eps)
        .num("rope_theta", double(m.rope_theta));
    if (m.rope_scaling_factor > 0.0f) {
        JsonObject s;
        s.str("rope_type", "llama3")
            .flt("factor", m.rope_scaling_factor)
            .flt("low_freq_factor", m.rope_low_freq_factor)
            .flt("high_freq_factor", m.rope_high_freq_factor)
            .integer("original_max_position_embeddings", m.rope_original_max_positions);
        o.object("rope_scaling", s);
    } else {
        o.null("rope_scaling");
    }
    o.boolean("tie_word_embeddings", m.tied_head);
    if (family == HfFamily::llama) o.boolean("attention_bias", m.qkv_bias).boolean("mlp_bias", m.linear_bias);
    if (family == HfFamily::qwen3) o.boolean("attention_bias", false);
    if (family != HfFamily::llama) o.boolean("use_sliding_window", false);
    o.num("attention_dropout", 0.0).str("torch_dtype", "float32");
    return o.indented_text() + "\n";
}

}  // namespace pg::io
