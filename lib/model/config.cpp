#include "model/config.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/struct_fields.hpp"

namespace pg {

bool ModelConfig::is_gpt2() const {
    return norm == NormKind::layernorm && !qk_norm && positions == PositionKind::learned &&
           kv_heads() == n_head && head_dim() * n_head == n_embd && qkv_bias && linear_bias &&
           mlp == MlpKind::gelu && mlp_width() == 4 * n_embd && tied_head;
}

ModelConfig model_config_from_c(const pg_model_config& caller) {
    const pg_model_config c = read_c_struct(caller, model_config_to_c(ModelConfig{}), "model config");
    ModelConfig m;
    m.n_layer = c.n_layer;
    m.n_head = c.n_head;
    m.n_embd = c.n_embd;
    m.n_ctx = c.n_ctx;
    m.vocab_size = c.vocab_size;
    m.padded_vocab_size = c.padded_vocab_size;
    m.layernorm_eps = c.layernorm_eps;
    // Enumerations and flags arrive as the caller's integers: checked before they are converted.
    auto choice = [](const char* field, int v, int last) {
        require(v >= 0 && v <= last, PG_ERR_INVALID_ARGUMENT, [&] {
            return std::string("model config: ") + field + " = " + std::to_string(v) + " is not one of 0.." +
                   std::to_string(last);
        });
        return v;
    };
    m.norm = NormKind(choice("norm", int(c.norm), 1));
    m.qk_norm = choice("qk_norm", c.qk_norm, 1) != 0;
    m.positions = PositionKind(choice("positions", int(c.positions), 1));
    m.rope_theta = c.rope_theta;
    m.rope_scaling_factor = c.rope_scaling_factor;
    m.rope_low_freq_factor = c.rope_low_freq_factor;
    m.rope_high_freq_factor = c.rope_high_freq_factor;
    m.rope_original_max_positions = c.rope_original_max_positions;
    m.n_kv_head = c.n_kv_head;
    m.head_size = c.head_dim;
    m.qkv_bias = choice("qkv_bias", c.qkv_bias, 1) != 0;
    m.linear_bias = choice("linear_bias", c.linear_bias, 1) != 0;
    m.mlp = MlpKind(choice("mlp", int(c.mlp), 1));
    m.mlp_hidden = c.mlp_hidden;
    m.tied_head = choice("tied_head", c.tied_head, 1) != 0;
    if (m.padded_vocab_size == 0 && m.vocab_size > 0 && m.vocab_size <= kMaxVocab)
        m.padded_vocab_size = (m.vocab_size + 3) / 4 * 4;
    validate_model_config(m);
    return m;
}

pg_model_config model_config_to_c(const ModelConfig& m) {
    pg_model_config out = blank_c_struct<pg_model_config>();
    out.n_layer = m.n_layer;
    out.n_head = m.n_head;
    out.n_embd = m.n_embd;
    out.n_ctx = m.n_ctx;
    out.vocab_size = m.vocab_size;
    out.padded_vocab_size = m.padded_vocab_size;
    out.layernorm_eps = m.layernorm_eps;
    out.norm = pg_norm_kind(m.norm);
    out.qk_norm = m.qk_norm ? 1 : 0;
    out.positions = pg_position_kind(m.positions);
    out.rope_theta = m.rope_theta;
    out.rope_scaling_factor = m.rope_scaling_factor;
    out.rope_low_freq_factor = m.rope_low_freq_factor;
    out.rope_high_freq_factor = m.rope_high_freq_factor;
    out.rope_original_max_positions = m.rope_original_max_positions;
    out.n_kv_head = m.n_kv_head;
    out.head_dim = m.head_size;
    out.qkv_bias = m.qkv_bias ? 1 : 0;
    out.linear_bias = m.linear_bias ? 1 : 0;
    out.mlp = pg_mlp_kind(m.mlp);
    out.mlp_hidden = m.mlp_hidden;
    out.tied_head = m.tied_head ? 1 : 0;
    return out;
}

void validate_model_config(const ModelConfig& m) {
    auto fail = [](const std::string& what) { throw Error(PG_ERR_INVALID_ARGUMENT, "model config: " + what); };
    auto range = [](const char* field, long long v, long long lo, long long hi) {
        require(v >= lo && v <= hi, PG_ERR_INVALID_ARGUMENT, [&] {
            return std::string("model config: ") + field + " = " + std::to_string(v) + " is outside [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]";
        });
    };
    range("n_layer", m.n_layer, 1, kMaxLayers);
    range("n_head", m.n_head, 1, kMaxEmbd);
    range("n_embd", m.n_embd, 1, kMaxEmbd);
    range("n_ctx", m.n_ctx, 1, kMaxCtx);
    range("vocab_size", m.vocab_size, 2, kMaxVocab);
    range("padded_vocab_size", m.padded_vocab_size, m.vocab_size, kMaxVocab);
    range("n_kv_head", m.n_kv_head, 0, m.n_head);
    range("head_dim", m.head_size, 0, kMaxEmbd);
    range("mlp_hidden", m.mlp_hidden, 0, kMaxMlpHidden);
    if (m.head_size == 0 && m.n_embd % m.n_head != 0)
        fail("n_embd = " + std::to_string(m.n_embd) + " is not a multiple of n_head = " + std::to_string(m.n_head) +
             " (or set head_dim)");
    if (int64_t(m.n_head) * m.head_dim() > kMaxEmbd)
        fail("n_head * head_dim = " + std::to_string(int64_t(m.n_head) * m.head_dim()) + " is more than " +
             std::to_string(kMaxEmbd));
    if (m.n_head % m.kv_heads() != 0)
        fail("n_kv_head = " + std::to_string(m.n_kv_head) + " does not divide n_head = " + std::to_string(m.n_head));
    require(m.layernorm_eps > 0.0f && m.layernorm_eps < 1.0f, PG_ERR_INVALID_ARGUMENT,
            "model config: layernorm_eps must be in (0, 1)");
    if (m.qk_norm && m.norm != NormKind::rmsnorm) fail("qk_norm needs norm = PG_NORM_RMSNORM");
    if (!(std::isfinite(m.rope_theta) && m.rope_theta > 1.0f)) fail("rope_theta must be finite and > 1");
    if (m.positions == PositionKind::rotary && m.head_dim() % 2 != 0)
        fail("rotary positions need an even head_dim, not " + std::to_string(m.head_dim()));
    if (m.rope_scaling_factor != 0.0f) {
        if (m.positions != PositionKind::rotary) fail("rope_scaling_factor is set but positions are learned");
        if (!(std::isfinite(m.rope_scaling_factor) && m.rope_scaling_factor >= 1.0f))
            fail("rope_scaling_factor must be 0 (none) or finite and >= 1");
        if (!(std::isfinite(m.rope_low_freq_factor) && m.rope_low_freq_factor > 0.0f))
            fail("rope_low_freq_factor must be finite and > 0");
        if (!(std::isfinite(m.rope_high_freq_factor) && m.rope_high_freq_factor > m.rope_low_freq_factor))
            fail("rope_high_freq_factor must be finite and > rope_low_freq_factor");
        range("rope_original_max_positions", m.rope_original_max_positions, 1, kMaxCtx);
    }
    require(count_params(m) <= kMaxParams, PG_ERR_INVALID_ARGUMENT, [&] {
        return "model config: " + std::to_string(count_params(m)) + " parameters is more than the " +
               std::to_string(kMaxParams) + " this library supports";
    });
}

void require_engine_supports(const ModelConfig& m) {
    validate_model_config(m);
    if (m.is_gpt2()) return;
    // Outside GPT-2's block the engine runs the Llama family's: RMSNorm, rotary positions and
    // SwiGLU together (grouped-query attention, head_dim, biases, q/k norms and the head are free).
    const char* field = m.norm != NormKind::rmsnorm           ? "norm = PG_NORM_LAYERNORM"
                        : m.positions != PositionKind::rotary ? "positions = PG_POSITIONS_LEARNED"
                        : m.mlp != MlpKind::swiglu            ? "mlp = PG_MLP_GELU"
                                                              : nullptr;
    if (!field) return;
    throw Error(PG_ERR_UNSUPPORTED, std::string("model config: ") + field +
                                        " in a block that is not GPT-2's: the engine runs GPT-2's block or the Llama "
                                        "family's (norm = PG_NORM_RMSNORM, positions = PG_POSITIONS_ROTARY, "
                                        "mlp = PG_MLP_SWIGLU), not a mix of the two");
}

int64_t count_params(const ModelConfig& m) {
    const int64_t C = m.n_embd, L = m.n_layer, Q = m.q_width(), KV = m.kv_width(), H = m.mlp_width();
    const int64_t norm = m.norm == NormKind::layernorm ? 2 * C : C;
    int64_t per_layer = 2 * norm;
    per_layer += C * (Q + 2 * KV) + (m.qkv_bias ? Q + 2 * KV : 0);  // q, k, v (GPT-2: c_attn)
    per_layer += Q * C + (m.linear_bias ? C : 0);                     // o (c_proj)
    if (m.qk_norm) per_layer += 2 * m.head_dim();
    const int64_t mlp_in = m.mlp == MlpKind::swiglu ? 2 * H : H;    // gate and up, or c_fc
    per_layer += C * mlp_in + H * C + (m.linear_bias ? mlp_in + C : 0);
    const int64_t embeddings = int64_t(m.padded_vocab_size) * C;
    return embeddings + (m.positions == PositionKind::learned ? int64_t(m.n_ctx) * C : 0) + L * per_layer + norm +
           (m.tied_head ? 0 : embeddings);
}

namespace {

// The Llama family's common block: RMSNorm, rotary positions, SwiGLU, no biases, tied head.
ModelConfig llama_block(int n_layer, int n_embd, int n_head, int n_kv_head, int mlp_hidden, int vocab, int n_ctx,
                        float rope_theta, float eps) {
    ModelConfig m;
    m.n_layer = n_layer;
    m.n_embd = n_embd;
    m.n_head = n_head;
    m.n_kv_head = n_kv_head;
    m.mlp_hidden = mlp_hidden;
    m.vocab_size = m.padded_vocab_size = vocab;
    m.n_ctx = n_ctx;
    m.rope_theta = rope_theta;
    m.layernorm_eps = eps;
    m.norm = NormKind::rmsnorm;
    m.positions = PositionKind::rotary;
    m.mlp = MlpKind::swiglu;
    m.qkv_bias = false;
    m.linear_bias = false;
    return m;
}

void llama3_scaling(ModelConfig& m, float factor, int original_max_positions) {
    m.rope_scaling_factor = factor;
    m.rope_low_freq_factor = 1.0f;
    m.rope_high_freq_factor = 4.0f;
    m.rope_original_max_positions = original_max_positions;
}

// Small shapes of each family for tests: vocabulary and context of "tiny".
ModelConfig tiny_family(const char* family) {
    const bool qwen3 = std::strcmp(family, "qwen3") == 0;
    ModelConfig m = llama_block(2, 32, 4, 2, 48, 65, 16, 10000.0f, 1e-5f);
    m.padded_vocab_size = 68;
    if (std::strcmp(family, "llama") == 0) {
        llama3_scaling(m, 4.0f, 8);  // an original context short enough that every band shows
    } else if (std::strcmp(family, "qwen2") == 0) {
        m.n_kv_head = 1;  // multi-query
        m.mlp_hidden = 64;
        m.qkv_bias = true;
        m.rope_theta = 1e6f;
        m.layernorm_eps = 1e-6f;
    } else if (qwen3) {
        m.head_size = 16;  // n_head * head_dim = 64, twice the width, as in Qwen3-0.6B
        m.qk_norm = true;
        m.tied_head = false;
        m.rope_theta = 1e6f;
        m.layernorm_eps = 1e-6f;
    }
    return m;
}

}  // namespace

ModelConfig model_preset(const char* name) {
    require(name != nullptr, PG_ERR_INVALID_ARGUMENT, "preset name is NULL");
    ModelConfig m;  // the defaults are the PhoneGPT preset
    const std::string n = name;
    if (n == "phonegpt") return m;
    if (n == "tiny") {
        m.n_layer = 2;
        m.n_head = 2;
        m.n_embd = 16;
        m.n_ctx = 16;
        return m;
    }
    // The published config.json of each model (Hugging Face): hidden_size, num_attention_heads,
    // num_key_value_heads, intermediate_size, vocab_size, max_position_embeddings, rope_theta,
    // rms_norm_eps; all tie their embeddings.
    if (n == "smollm2-135m") return llama_block(30, 576, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f);
    if (n == "smollm2-360m") return llama_block(32, 960, 15, 5, 2560, 49152, 8192, 100000.0f, 1e-5f);
    if (n == "qwen2.5-0.5b") {
        m = llama_block(24, 896, 14, 2, 4864, 151936, 32768, 1e6f, 1e-6f);
        m.qkv_bias = true;
        return m;
    }
    if (n == "qwen3-0.6b") {
        m = llama_block(28, 1024, 16, 8, 3072, 151936, 40960, 1e6f, 1e-6f);
        m.head_size = 128;
        m.qk_norm = true;
        return m;
    }
    if (n == "llama3.2-1b") {
        m = llama_block(16, 2048, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f);
        llama3_scaling(m, 32.0f, 8192);
        return m;
    }
    if (n == "tiny-llama") return tiny_family("llama");
    if (n == "tiny-qwen2") return tiny_family("qwen2");
    if (n == "tiny-qwen3") return tiny_family("qwen3");
    throw Error(PG_ERR_INVALID_ARGUMENT,
                "unknown model preset \"" + n +
                    "\" (known: phonegpt, tiny, smollm2-135m, smollm2-360m, qwen2.5-0.5b, qwen3-0.6b, "
                    "llama3.2-1b, tiny-llama, tiny-qwen2, tiny-qwen3)");
}

}  // namespace pg
