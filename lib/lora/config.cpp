#include "lora/config.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/struct_fields.hpp"

namespace pg::lora {

namespace {

[[noreturn]] void bad(const std::string& what) {
    throw Error(PG_ERR_INVALID_ARGUMENT, "lora config: " + what);
}

void int_range(const char* field, long long v, long long lo, long long hi) {
    if (v < lo || v > hi)
        bad(std::string(field) + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) +
            ", " + std::to_string(hi) + "]");
}

}  // namespace

namespace {

struct TargetInfo {
    const char* name;
    const char* module;
    LinearKind kind;
    int slice;
};
constexpr TargetInfo kTargets[kNumTargets] = {
    {"attn.c_attn", "attn.c_attn", LinearKind::attn_qkv, 0},
    {"attn.c_proj", "attn.c_proj", LinearKind::attn_proj, 0},
    {"mlp.c_fc", "mlp.c_fc", LinearKind::mlp_fc, 0},
    {"mlp.c_proj", "mlp.c_proj", LinearKind::mlp_proj, 0},
    {"q_proj", "self_attn.q_proj", LinearKind::attn_qkv, 0},
    {"k_proj", "self_attn.k_proj", LinearKind::attn_qkv, 1},
    {"v_proj", "self_attn.v_proj", LinearKind::attn_qkv, 2},
    {"o_proj", "self_attn.o_proj", LinearKind::attn_proj, 0},
    {"gate_proj", "mlp.gate_proj", LinearKind::mlp_fc, 0},
    {"up_proj", "mlp.up_proj", LinearKind::mlp_fc, 1},
    {"down_proj", "mlp.down_proj", LinearKind::mlp_proj, 0},
};

const TargetInfo& info(Target t) { return kTargets[static_cast<int>(t)]; }

}  // namespace

const char* target_name(Target t) { return info(t).name; }
const char* target_module(Target t) { return info(t).module; }
LinearKind target_kind(Target t) { return info(t).kind; }
int target_slice(Target t) { return info(t).slice; }

uint32_t family_targets(const ModelConfig& base) {
    return base.is_gpt2() ? uint32_t(PG_LORA_ALL_LINEARS) : uint32_t(PG_LORA_LLAMA_ALL_LINEARS);
}

uint32_t default_targets(const ModelConfig& base) {
    return base.is_gpt2() ? uint32_t(PG_LORA_ATTN_C_ATTN) : uint32_t(PG_LORA_Q_PROJ | PG_LORA_V_PROJ);
}

std::string family_target_names(const ModelConfig& base) {
    std::string s;
    for (int t = 0; t < kNumTargets; ++t)
        if (family_targets(base) & target_bit(Target(t))) s += (s.empty() ? "" : ", ") + std::string(kTargets[t].name);
    return s;
}

int64_t target_in(Target t, const ModelConfig& base) {
    switch (target_kind(t)) {
        case LinearKind::attn_proj: return base.q_width();
        case LinearKind::mlp_proj: return base.mlp_width();
        default: return base.n_embd;
    }
}

int64_t target_out(Target t, const ModelConfig& base) {
    switch (t) {
        case Target::attn_c_attn: return int64_t(base.q_width()) + 2 * int64_t(base.kv_width());
        case Target::mlp_c_fc: return base.mlp_width();
        case Target::q_proj: return base.q_width();
        case Target::k_proj:
        case Target::v_proj: return base.kv_width();
        case Target::gate_proj:
        case Target::up_proj: return base.mlp_width();
        default: return base.n_embd;
    }
}

int64_t linear_rows(LinearKind kind, const ModelConfig& base) {
    switch (kind) {
        case LinearKind::attn_qkv: return int64_t(base.q_width()) + 2 * int64_t(base.kv_width());
        case LinearKind::mlp_fc: return (base.mlp == MlpKind::swiglu ? 2 : 1) * int64_t(base.mlp_width());
        default: return base.n_embd;
    }
}

int64_t target_row_offset(Target t, const ModelConfig& base) {
    switch (t) {
        case Target::k_proj: return base.q_width();
        case Target::v_proj: return int64_t(base.q_width()) + base.kv_width();
        case Target::up_proj: return base.mlp_width();
        default: return 0;
    }
}

float LoraConfig::scale() const {
    const double r = rank;
    return static_cast<float>(use_rslora ? alpha / std::sqrt(r) : alpha / r);
}

LoraConfig lora_config_from_c(const pg_lora_config& caller) {
    static const LoraConfig defaults;
    const pg_lora_config c = read_c_struct(caller, lora_config_to_c(defaults), "lora config");
    // Flags are read as integers: a C caller can put any value into them.
    int_range("use_rslora", c.use_rslora, 0, 1);
    int_range("freeze_a", c.freeze_a, 0, 1);
    int_range("n_layers", c.n_layers, 0, kMaxLayers);
    LoraConfig cfg;
    cfg.rank = c.rank;
    cfg.alpha = c.alpha;
    cfg.use_rslora = c.use_rslora != 0;
    cfg.dropout = c.dropout;
    cfg.target_modules = c.target_modules;
    if (c.n_layers > 0) {
        if (!c.layers) bad("layers is NULL but n_layers = " + std::to_string(c.n_layers));
        cfg.layers.assign(c.layers, c.layers + c.n_layers);
        std::sort(cfg.layers.begin(), cfg.layers.end());
    }
    cfg.init_seed = c.init_seed;
    cfg.freeze_a = c.freeze_a != 0;
    validate_lora_config(cfg);
    return cfg;
}

pg_lora_config lora_config_to_c(const LoraConfig& cfg) {
    pg_lora_config out = blank_c_struct<pg_lora_config>();
    out.rank = cfg.rank;
    out.alpha = cfg.alpha;
    out.use_rslora = cfg.use_rslora ? 1 : 0;
    out.dropout = cfg.dropout;
    out.target_modules = cfg.target_modules;
    out.layers = cfg.layers.empty() ? nullptr : cfg.layers.data();
    out.n_layers = static_cast<int32_t>(cfg.layers.size());
    out.init_seed = cfg.init_seed;
    out.freeze_a = cfg.freeze_a ? 1 : 0;
    return out;
}

void validate_lora_config(const LoraConfig& cfg) {
    int_range("rank", cfg.rank, 1, PG_LORA_MAX_RANK);
    if (!(std::isfinite(cfg.alpha) && cfg.alpha > 0.0f))
        bad("alpha = " + message_number(cfg.alpha) + " must be finite and > 0");
    if (!(std::isfinite(cfg.dropout) && cfg.dropout >= 0.0f && cfg.dropout < 1.0f))
        bad("dropout = " + message_number(cfg.dropout) + " is outside [0, 1)");
    if ((cfg.target_modules & ~uint32_t(PG_LORA_ALL_LINEARS | PG_LORA_LLAMA_ALL_LINEARS)) != 0)
        bad("target_modules = " + std::to_string(cfg.target_modules) +
            " must be an OR of pg_lora_target bits (1..1024), or 0 for the base family's default");
    if (cfg.layers.size() > static_cast<std::size_t>(kMaxLayers))
        bad("n_layers = " + std::to_string(cfg.layers.size()) + " is above " +
            std::to_string(kMaxLayers));
    for (std::size_t i = 0; i < cfg.layers.size(); ++i) {
        if (cfg.layers[i] < 0 || cfg.layers[i] >= kMaxLayers)
            bad("layers[] holds " + std::to_string(cfg.layers[i]) + ", outside [0, " +
                std::to_string(kMaxLayers) + ")");
        if (i > 0 && cfg.layers[i] <= cfg.layers[i - 1])
            bad("layers[] holds " + std::to_string(cfg.layers[i]) +
                (cfg.layers[i] == cfg.layers[i - 1] ? " twice" : " out of order"));
    }
}

uint32_t resolved_targets(const LoraConfig& cfg, const ModelConfig& base) {
    return cfg.target_modules != 0 ? cfg.target_modules : default_targets(base);
}

void check_lora_config_against(const LoraConfig& cfg, const ModelConfig& base) {
    for (int32_t l : cfg.layers)
        require(l < base.n_layer, PG_ERR_GEOMETRY,
                "lora config: layer " + std::to_string(l) + " is outside the base's n_layer = " +
                    std::to_string(base.n_layer));
    const uint32_t targets = resolved_targets(cfg, base);
    for (int t = 0; t < kNumTargets; ++t) {
        const Target target = static_cast<Target>(t);
        if (!(targets & target_bit(target))) continue;
        require((family_targets(base) & target_bit(target)) != 0, PG_ERR_INVALID_ARGUMENT,
                std::string("lora config: target ") + target_name(target) + " is not a module of this base (" +
                    (base.is_gpt2() ? "GPT-2's block" : "the Llama family's block") + "); its modules are " +
                    family_target_names(base));
        const int64_t in = target_in(target, base), out = target_out(target, base);
        require(cfg.rank <= std::min(in, out), PG_ERR_GEOMETRY,
                "lora config: rank = " + std::to_string(cfg.rank) + " is above " + target_name(target) +
                    "'s smaller side (in " + std::to_string(in) + ", out " + std::to_string(out) +
                    " for the base's n_embd = " + std::to_string(base.n_embd) + ")");
    }
}

std::vector<int32_t> adapted_layers(const LoraConfig& cfg, int n_layer) {
    if (!cfg.layers.empty()) return cfg.layers;
    std::vector<int32_t> all(static_cast<std::size_t>(n_layer));
    for (int l = 0; l < n_layer; ++l) all[l] = l;
    return all;
}

}  // namespace pg::lora
