#include "model/params.hpp"

#include <cmath>

#include "core/rng.hpp"

namespace pg {

ParamLayout::ParamLayout(const ModelConfig& cfg) {
    const int64_t C = cfg.n_embd, L = cfg.n_layer, Vp = cfg.padded_vocab_size;
    const int64_t Q = cfg.q_width(), QKV = Q + 2 * int64_t(cfg.kv_width()), H = cfg.mlp_width();
    const int64_t F = cfg.mlp == MlpKind::swiglu ? 2 * H : H;
    const bool layernorm = cfg.norm == NormKind::layernorm;
    const int64_t norm_bias = layernorm ? C : 0;
    const int64_t linear_bias = cfg.linear_bias ? 1 : 0;
    const int64_t qk_norm = cfg.qk_norm ? L * cfg.head_dim() : 0;
    size = {Vp * C,
            cfg.positions == PositionKind::learned ? int64_t(cfg.n_ctx) * C : 0,
            L * C,
            L * norm_bias,
            L * QKV * C,
            cfg.qkv_bias ? L * QKV : 0,
            L * C * Q,
            L * C * linear_bias,
            L * C,
            L * norm_bias,
            L * F * C,
            L * F * linear_bias,
            L * C * H,
            L * C * linear_bias,
            C,
            norm_bias,
            qk_norm,
            qk_norm,
            cfg.tied_head ? 0 : Vp * C};
    total = 0;
    for (int k = 0; k < kNumParamKinds; ++k) {
        offset[k] = total;
        total += size[k];
    }
}

namespace {

// Appends entries to a table; a stacked tensor's entry is `at` floats into its layer's slice.
struct TableBuilder {
    const ParamLayout& layout;
    std::vector<TensorEntry>& table;
    void add(std::string name, ParamKind kind, int layer, std::initializer_list<int64_t> shape, bool linear,
             int64_t at = 0) {
        TensorEntry e;
        e.name = std::move(name);
        e.kind = kind;
        e.layer = layer;
        e.n_dims = static_cast<int>(shape.size());
        e.numel = 1;
        int d = 0;
        for (int64_t s : shape) {
            e.shape[d++] = s;
            e.numel *= s;
        }
        e.offset = layout.offset[kind] + at;
        e.is_linear_weight = linear;
        table.push_back(std::move(e));
    }
};

void gpt2_table(const ModelConfig& cfg, TableBuilder& t) {
    const int64_t C = cfg.n_embd;
    t.add("wte", kWte, -1, {cfg.padded_vocab_size, C}, false);
    t.add("wpe", kWpe, -1, {cfg.n_ctx, C}, false);
    for (int l = 0; l < cfg.n_layer; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        t.add(h + "ln_1.weight", kLn1w, l, {C}, false, l * C);
        t.add(h + "ln_1.bias", kLn1b, l, {C}, false, l * C);
        t.add(h + "attn.c_attn.weight", kQkvw, l, {3 * C, C}, true, l * 3 * C * C);
        t.add(h + "attn.c_attn.bias", kQkvb, l, {3 * C}, false, l * 3 * C);
        t.add(h + "attn.c_proj.weight", kAttprojw, l, {C, C}, true, l * C * C);
        t.add(h + "attn.c_proj.bias", kAttprojb, l, {C}, false, l * C);
        t.add(h + "ln_2.weight", kLn2w, l, {C}, false, l * C);
        t.add(h + "ln_2.bias", kLn2b, l, {C}, false, l * C);
        t.add(h + "mlp.c_fc.weight", kFcw, l, {4 * C, C}, true, l * 4 * C * C);
        t.add(h + "mlp.c_fc.bias", kFcb, l, {4 * C}, false, l * 4 * C);
        t.add(h + "mlp.c_proj.weight", kFcprojw, l, {C, 4 * C}, true, l * C * 4 * C);
        t.add(h + "mlp.c_proj.bias", kFcprojb, l, {C}, false, l * C);
    }
    t.add("ln_f.weight", kLnfw, -1, {C}, false);
    t.add("ln_f.bias", kLnfb, -1, {C}, false);
}

// Hugging Face transformers' names (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM).
void llama_table(const ModelConfig& cfg, TableBuilder& t) {
    const int64_t C = cfg.n_embd, Q = cfg.q_width(), KV = cfg.kv_width(), QKV = Q + 2 * KV, H = cfg.mlp_width();
    const int64_t hd = cfg.head_dim(), F = 2 * H;
    t.add("model.embed_tokens.weight", kWte, -1, {cfg.padded_vocab_size, C}, false);
    for (int l = 0; l < cfg.n_layer; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        t.add(p + "input_layernorm.weight", kLn1w, l, {C}, false, l * C);
        // q, k, v: rows [0, Q), [Q, Q + KV), [Q + KV, QKV) of the layer's fused matrix
        const int64_t rows[3][2] = {{0, Q}, {Q, KV}, {Q + KV, KV}};
        const char* names[3] = {"q_proj", "k_proj", "v_proj"};
        for (int i = 0; i < 3; ++i) {
            const std::string n = p + "self_attn." + names[i];
            t.add(n + ".weight", kQkvw, l, {rows[i][1], C}, true, (l * QKV + rows[i][0]) * C);
            if (cfg.qkv_bias) t.add(n + ".bias", kQkvb, l, {rows[i][1]}, false, l * QKV + rows[i][0]);
        }
        if (cfg.qk_norm) {
            t.add(p + "self_attn.q_norm.weight", kQNorm, l, {hd}, false, l * hd);
            t.add(p + "self_attn.k_norm.weight", kKNorm, l, {hd}, false, l * hd);
        }
        t.add(p + "self_attn.o_proj.weight", kAttprojw, l, {C, Q}, true, l * C * Q);
        if (cfg.linear_bias) t.add(p + "self_attn.o_proj.bias", kAttprojb, l, {C}, false, l * C);
        t.add(p + "post_attention_layernorm.weight", kLn2w, l, {C}, false, l * C);
        // gate, up: rows [0, H), [H, 2H) of the layer's fused matrix
        t.add(p + "mlp.gate_proj.weight", kFcw, l, {H, C}, true, l * F * C);
        if (cfg.linear_bias) t.add(p + "mlp.gate_proj.bias", kFcb, l, {H}, false, l * F);
        t.add(p + "mlp.up_proj.weight", kFcw, l, {H, C}, true, (l * F + H) * C);
        if (cfg.linear_bias) t.add(p + "mlp.up_proj.bias", kFcb, l, {H}, false, l * F + H);
        t.add(p + "mlp.down_proj.weight", kFcprojw, l, {C, H}, true, l * C * H);
        if (cfg.linear_bias) t.add(p + "mlp.down_proj.bias", kFcprojb, l, {C}, false, l * C);
    }
    t.add("model.norm.weight", kLnfw, -1, {C}, false);
    if (!cfg.tied_head) t.add("lm_head.weight", kLmHead, -1, {cfg.padded_vocab_size, C}, false);
}

}  // namespace

std::vector<TensorEntry> build_tensor_table(const ModelConfig& cfg) {
    const ParamLayout layout(cfg);
    std::vector<TensorEntry> table;
    TableBuilder builder{layout, table};
    if (cfg.is_gpt2())
        gpt2_table(cfg, builder);
    else
        llama_table(cfg, builder);
    return table;
}

void init_gpt2_params(const ModelConfig& cfg, float* params, uint64_t seed) {
    const ParamLayout layout(cfg);
    const bool gpt2 = cfg.is_gpt2();
    const double std_base = 0.02;
    // GPT-2 scales its residual projections down; Hugging Face's Llama family does not.
    const double std_residual = gpt2 ? 0.02 / std::sqrt(2.0 * cfg.n_layer) : std_base;
    Rng rng(seed);
    // One sequential stream in memory order, so the weights depend on the seed alone.
    for (int k = 0; k < kNumParamKinds; ++k) {
        float* p = params + layout.offset[k];
        const int64_t n = layout.size[k];
        switch (k) {
            case kLn1w: case kLn2w: case kLnfw: case kQNorm: case kKNorm:
                for (int64_t i = 0; i < n; ++i) p[i] = 1.0f;
                break;
            case kQkvb: case kAttprojb: case kFcb: case kFcprojb: case kLn1b: case kLn2b: case kLnfb:
                for (int64_t i = 0; i < n; ++i) p[i] = 0.0f;
                break;
            case kWte: case kLmHead: {
                const int64_t used = int64_t(cfg.vocab_size) * cfg.n_embd;  // padding rows stay 0
                for (int64_t i = 0; i < n; ++i) p[i] = i < used ? float(std_base * rng.normal()) : 0.0f;
                break;
            }
            case kAttprojw: case kFcprojw:
                for (int64_t i = 0; i < n; ++i) p[i] = float(std_residual * rng.normal());
                break;
            default:  // wpe, qkvw, fcw
                for (int64_t i = 0; i < n; ++i) p[i] = float(std_base * rng.normal());
                break;
        }
    }
}

}  // namespace pg
