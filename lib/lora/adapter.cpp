#include "lora/adapter.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/checksum.hpp"
#include "core/hex.hpp"

namespace pg::lora {

namespace {

const char* tokenizer_kind_name(pg_tokenizer_kind k) {
    return k == PG_TOKENIZER_CHAR ? "char" : k == 2 ? "bpe" : "unknown";
}

}  // namespace

std::vector<ArchitectureField> architecture_fields(const ModelConfig& m) {
    if (m.is_gpt2()) return {};
    const pg_model_config c = model_config_to_c(m);
    return {{"norm", double(c.norm), false},
            {"qk_norm", double(c.qk_norm), false},
            {"positions", double(c.positions), false},
            {"rope_theta", double(c.rope_theta), true},
            {"rope_scaling_factor", double(c.rope_scaling_factor), true},
            {"rope_low_freq_factor", double(c.rope_low_freq_factor), true},
            {"rope_high_freq_factor", double(c.rope_high_freq_factor), true},
            {"rope_original_max_positions", double(c.rope_original_max_positions), false},
            {"n_kv_head", double(c.n_kv_head), false},
            {"head_dim", double(c.head_dim), false},
            {"qkv_bias", double(c.qkv_bias), false},
            {"linear_bias", double(c.linear_bias), false},
            {"mlp", double(c.mlp), false},
            {"mlp_hidden", double(c.mlp_hidden), false},
            {"tied_head", double(c.tied_head), false}};
}

uint64_t BaseIdentity::fingerprint() const {
    io::Xxh64 h;
    // The geometry's fields one by one as int64 (no struct padding in the hash).
    const int64_t fields[] = {config.n_layer, config.n_head,    config.n_embd,
                              config.n_ctx,   config.vocab_size, config.padded_vocab_size};
    h.update(fields, sizeof fields);
    h.update(&config.layernorm_eps, sizeof config.layernorm_eps);
    for (const ArchitectureField& field : architecture_fields(config)) h.update(&field.value, sizeof field.value);
    h.update(&weights_hash, sizeof weights_hash);
    const uint64_t tok[] = {has_tokenizer ? 1u : 0u, tokenizer_hash,
                            static_cast<uint64_t>(tokenizer_kind),
                            static_cast<uint64_t>(tokenizer_vocab)};
    h.update(tok, sizeof tok);
    return h.digest();
}

std::string BaseIdentity::describe() const {
    const ModelConfig& c = config;
    std::string s = std::to_string(c.n_layer) + " layers, " + std::to_string(c.n_head) +
                    " heads, width " + std::to_string(c.n_embd) + ", context " +
                    std::to_string(c.n_ctx) + ", vocab " + std::to_string(c.vocab_size) + " (" +
                    std::to_string(c.padded_vocab_size) + " rows), ";
    s += has_tokenizer ? std::string(tokenizer_kind_name(tokenizer_kind)) + " tokenizer"
                       : std::string("no tokenizer");
    return s + ", weights " + io::hex64(weights_hash);
}

BaseIdentity identify_base(const Model& base) {
    BaseIdentity id;
    id.config = base.config();
    id.weights_hash = base.fp32_weights_hash();  // a 16-bit base: of the fp32 weights it came from
    id.provenance = base.provenance();
    if (const Tokenizer* tok = base.tokenizer()) {
        const std::vector<uint8_t> bytes = tok->serialize();
        id.has_tokenizer = true;
        id.tokenizer_hash = io::xxh64(bytes.data(), bytes.size());
        id.tokenizer_kind = tok->kind();
        id.tokenizer_vocab = tok->vocab_size();
    }
    return id;
}

Adapter::Adapter(const LoraConfig& cfg, const BaseIdentity& base) : config_(cfg), base_(base) {
    validate_lora_config(config_);
    validate_model_config(base_.config);
    check_lora_config_against(config_, base_.config);
    const int L = base_.config.n_layer;
    const int64_t r = config_.rank;
    by_layer_target_.assign(static_cast<std::size_t>(L) * kNumTargets, -1);
    config_.target_modules = resolved_targets(config_, base_.config);
    int64_t offset = 0;
    for (int32_t layer : adapted_layers(config_, L)) {
        for (int t = 0; t < kNumTargets; ++t) {
            const Target target = static_cast<Target>(t);
            if (!config_.targets(target)) continue;
            AdaptedLinear m;
            m.layer = layer;
            m.target = target;
            m.kind = target_kind(target);
            m.in = target_in(target, base_.config);
            m.out = target_out(target, base_.config);
            m.row_offset = target_row_offset(target, base_.config);
            m.a_offset = offset;
            m.b_offset = offset + r * m.in;
            offset = m.b_offset + m.out * r;
            const int index = static_cast<int>(linears_.size());
            by_layer_target_[static_cast<std::size_t>(layer) * kNumTargets + t] = index;
            const std::string stem = (base_.config.is_gpt2() ? "h." : "model.layers.") + std::to_string(layer) + "." +
                                     target_module(target);
            tensors_.push_back({stem + ".lora_A.weight", {r, m.in}, r * m.in, m.a_offset, index, true});
            tensors_.push_back({stem + ".lora_B.weight", {m.out, r}, m.out * r, m.b_offset, index, false});
            linears_.push_back(m);
        }
    }
    params_.resize(static_cast<std::size_t>(offset));
}

Adapter Adapter::create(const Model& base, const LoraConfig& cfg) {
    Adapter adapter(cfg, identify_base(base));
    adapter.init_peft();
    return adapter;
}

void Adapter::init_peft() {
    Rng rng(config_.init_seed);
    const int64_t r = config_.rank;
    for (const AdaptedLinear& m : linears_) {
        // kaiming_uniform_(a = sqrt(5)) on a [r, in] tensor: gain = sqrt(2 / (1 + 5)), bound =
        // gain * sqrt(3 / fan_in) = 1 / sqrt(in).
        const double bound = 1.0 / std::sqrt(static_cast<double>(m.in));
        float* A = a(m);
        for (int64_t i = 0; i < r * m.in; ++i)
            A[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
        float* B = b(m);
        for (int64_t i = 0; i < m.out * r; ++i) B[i] = 0.0f;
    }
}

const AdaptedLinear* Adapter::find(int layer, Target target) const {
    if (layer < 0 || layer >= base_.config.n_layer) return nullptr;
    const int index = by_layer_target_[static_cast<std::size_t>(layer) * kNumTargets + static_cast<int>(target)];
    return index < 0 ? nullptr : &linears_[static_cast<std::size_t>(index)];
}

Adapter::Span Adapter::on_linear(int layer, LinearKind kind) const {
    Span span;
    for (int t = 0; t < kNumTargets; ++t) {
        if (target_kind(Target(t)) != kind) continue;
        const AdaptedLinear* m = find(layer, Target(t));
        if (!m) continue;
        if (!span.first) span.first = m;
        ++span.count;
    }
    return span;
}

int Adapter::find_tensor(const std::string& name) const {
    for (std::size_t i = 0; i < tensors_.size(); ++i)
        if (tensors_[i].name == name) return static_cast<int>(i);
    return -1;
}

void check_adapter_matches_base(const Adapter& adapter, const Model& base) {
    check_base_identity(adapter.base(), identify_base(base), true);
}

void check_base_identity(const BaseIdentity& want, const BaseIdentity& have, bool compare_weights) {
    const ModelConfig &a = want.config, &b = have.config;
    auto field = [&](const char* name, long long expected, long long found) {
        require(expected == found, PG_ERR_GEOMETRY,
                std::string("adapter does not fit the base: the adapter was made for ") + name +
                    " = " + std::to_string(expected) + ", the base has " + name + " = " +
                    std::to_string(found));
    };
    field("n_layer", a.n_layer, b.n_layer);
    field("n_head", a.n_head, b.n_head);
    field("n_embd", a.n_embd, b.n_embd);
    field("n_ctx", a.n_ctx, b.n_ctx);
    field("vocab_size", a.vocab_size, b.vocab_size);
    field("padded_vocab_size", a.padded_vocab_size, b.padded_vocab_size);
    const auto arch_a = architecture_fields(a), arch_b = architecture_fields(b);
    require(arch_a.empty() == arch_b.empty(), PG_ERR_GEOMETRY,
            std::string("adapter does not fit the base: the adapter was made for ") +
                (arch_a.empty() ? "GPT-2's block" : "a Llama-family block") + ", the base has " +
                (arch_b.empty() ? "GPT-2's block" : "a Llama-family block"));
    for (std::size_t i = 0; i < arch_a.size(); ++i)
        require(arch_a[i].value == arch_b[i].value, PG_ERR_GEOMETRY,
                std::string("adapter does not fit the base: the adapter was made for ") + arch_a[i].name + " = " +
                    message_number(arch_a[i].value) + ", the base has " + arch_b[i].name + " = " +
                    message_number(arch_b[i].value));
    require(a.layernorm_eps == b.layernorm_eps, PG_ERR_GEOMETRY,
            "adapter does not fit the base: layernorm_eps differs (adapter's base " +
                std::to_string(a.layernorm_eps) + ", base " + std::to_string(b.layernorm_eps) + ")");
    const bool same_tokenizer = want.has_tokenizer == have.has_tokenizer &&
                                (!want.has_tokenizer || (want.tokenizer_hash == have.tokenizer_hash &&
                                                         want.tokenizer_kind == have.tokenizer_kind &&
                                                         want.tokenizer_vocab == have.tokenizer_vocab));
    require(same_tokenizer, PG_ERR_GEOMETRY,
            "adapter does not fit the base: its tokenizer differs (adapter's base: " +
                want.describe() + " tokenizer " + io::hex64(want.tokenizer_hash) + "; base: " +
                have.describe() + " tokenizer " + io::hex64(have.tokenizer_hash) + ")");
    require(!compare_weights || want.weights_hash == have.weights_hash, PG_ERR_GEOMETRY,
            "adapter does not fit the base: the base's weights differ from the ones the adapter "
            "was made for (weights " + io::hex64(want.weights_hash) + " expected, " +
                io::hex64(have.weights_hash) + " found)");
}

LowRankFactors low_rank_factors(const Adapter& adapter, const AdaptedLinear& m) {
    LowRankFactors f;
    f.A = adapter.a(m);
    f.B = adapter.b(m);
    f.rank = adapter.config().rank;
    f.in = static_cast<int>(m.in);
    f.out = static_cast<int>(m.out);
    f.scale = adapter.scale();
    f.ld_out = static_cast<int>(linear_rows(m.kind, adapter.base().config));
    return f;
}

void check_base_trained(const Model& base, bool allow, const std::string& what) {
    if (allow || !base.provenance().never_trained()) return;
    throw Error(PG_ERR_STATE, what + ": the base model was " + base.provenance().describe() +
                                  ": its weights are random, and an adapter over them learns noise while its loss "
                                  "still goes down. Use a trained base (a checkpoint saved after training, or an "
                                  "imported one), or allow it explicitly for this base "
                                  "(pg_model_allow_untrained_base)");
}

}  // namespace pg::lora
