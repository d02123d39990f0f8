#include "model/config.hpp"

#include <cstddef>
#include <string>

#include "core/error.hpp"
#include "core/struct_fields.hpp"

namespace pg {

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
    return out;
}

void validate_model_config(const ModelConfig& m) {
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
    require(m.n_embd % m.n_head == 0, PG_ERR_INVALID_ARGUMENT, [&] {
        return "model config: n_embd = " + std::to_string(m.n_embd) + " is not a multiple of n_head = " +
               std::to_string(m.n_head);
    });
    require(m.layernorm_eps > 0.0f && m.layernorm_eps < 1.0f, PG_ERR_INVALID_ARGUMENT,
            "model config: layernorm_eps must be in (0, 1)");
    require(count_params(m) <= kMaxParams, PG_ERR_INVALID_ARGUMENT, [&] {
        return "model config: " + std::to_string(count_params(m)) + " parameters is more than the " +
               std::to_string(kMaxParams) + " this library supports";
    });
}

int64_t count_params(const ModelConfig& m) {
    const int64_t C = m.n_embd, L = m.n_layer;
    int64_t per_layer = 2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C;
    return int64_t(m.padded_vocab_size) * C + int64_t(m.n_ctx) * C + L * per_layer + 2 * C;
}

ModelConfig model_preset(const char* name) {
    require(name != nullptr, PG_ERR_INVALID_ARGUMENT, "preset name is NULL");
    ModelConfig m;  // the defaults are the PhoneGPT preset
    if (std::strcmp(name, "phonegpt") == 0) return m;
    if (std::strcmp(name, "tiny") == 0) {
        m.n_layer = 2;
        m.n_head = 2;
        m.n_embd = 16;
        m.n_ctx = 16;
        return m;
    }
    throw Error(PG_ERR_INVALID_ARGUMENT,
                std::string("unknown model preset \"") + name + "\" (known: phonegpt, tiny)");
}

}  // namespace pg
