#include "model/params.hpp"

#include <cmath>

#include "core/rng.hpp"

namespace pg {

ParamLayout::ParamLayout(const ModelConfig& cfg) {
    const int64_t C = cfg.n_embd, L = cfg.n_layer;
    size = {int64_t(cfg.padded_vocab_size) * C, int64_t(cfg.n_ctx) * C, L * C, L * C,
            L * 3 * C * C, L * 3 * C, L * C * C, L * C, L * C, L * C, L * 4 * C * C, L * 4 * C,
            L * C * 4 * C, L * C, C, C};
    total = 0;
    for (int k = 0; k < kNumParamKinds; ++k) {
        offset[k] = total;
        total += size[k];
    }
}

std::vector<TensorEntry> build_tensor_table(const ModelConfig& cfg) {
    const ParamLayout layout(cfg);
    const int64_t C = cfg.n_embd;
    std::vector<TensorEntry> table;
    auto add = [&](std::string name, ParamKind kind, int layer, std::initializer_list<int64_t> shape,
                   bool linear) {
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
        e.offset = layout.offset[kind] + (layer < 0 ? 0 : layer * e.numel);
        e.is_linear_weight = linear;
        table.push_back(std::move(e));
    };
    add("wte", kWte, -1, {cfg.padded_vocab_size, C}, false);
    add("wpe", kWpe, -1, {cfg.n_ctx, C}, false);
    for (int l = 0; l < cfg.n_layer; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        add(h + "ln_1.weight", kLn1w, l, {C}, false);
        add(h + "ln_1.bias", kLn1b, l, {C}, false);
        add(h + "attn.c_attn.weight", kQkvw, l, {3 * C, C}, true);
        add(h + "attn.c_attn.bias", kQkvb, l, {3 * C}, false);
        add(h + "attn.c_proj.weight", kAttprojw, l, {C, C}, true);
        add(h + "attn.c_proj.bias", kAttprojb, l, {C}, false);
        add(h + "ln_2.weight", kLn2w, l, {C}, false);
        add(h + "ln_2.bias", kLn2b, l, {C}, false);
        add(h + "mlp.c_fc.weight", kFcw, l, {4 * C, C}, true);
        add(h + "mlp.c_fc.bias", kFcb, l, {4 * C}, false);
        add(h + "mlp.c_proj.weight", kFcprojw, l, {C, 4 * C}, true);
        add(h + "mlp.c_proj.bias", kFcprojb, l, {C}, false);
    }
    add("ln_f.weight", kLnfw, -1, {C}, false);
    add("ln_f.bias", kLnfb, -1, {C}, false);
    return table;
}

void init_gpt2_params(const ModelConfig& cfg, float* params, uint64_t seed) {
    const ParamLayout layout(cfg);
    const double std_base = 0.02;
    const double std_residual = 0.02 / std::sqrt(2.0 * cfg.n_layer);
    Rng rng(seed);
    // One sequential stream in memory order, so the weights depend on the seed alone.
    for (int k = 0; k < kNumParamKinds; ++k) {
        float* p = params + layout.offset[k];
        const int64_t n = layout.size[k];
        switch (k) {
            case kLn1w: case kLn2w: case kLnfw:
                for (int64_t i = 0; i < n; ++i) p[i] = 1.0f;
                break;
            case kQkvb: case kAttprojb: case kFcb: case kFcprojb: case kLn1b: case kLn2b: case kLnfb:
                for (int64_t i = 0; i < n; ++i) p[i] = 0.0f;
                break;
            case kWte: {
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
