// Helpers shared by the model tests: configurations compared field by field, random parameters
// with every path carrying a visible gradient, and printable names of the 16 parameter tensors.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/rng.hpp"
#include "model/params.hpp"

namespace pg_test {

// Every field of two model configurations equal (layernorm_eps bit for bit).
inline bool same_config(const pg::ModelConfig& a, const pg::ModelConfig& b) {
    return a.n_layer == b.n_layer && a.n_head == b.n_head && a.n_embd == b.n_embd && a.n_ctx == b.n_ctx &&
           a.vocab_size == b.vocab_size && a.padded_vocab_size == b.padded_vocab_size &&
           std::memcmp(&a.layernorm_eps, &b.layernorm_eps, sizeof(float)) == 0;
}

// LayerNorm gains 1 + 0.2 N(0,1), everything else `scale` N(0,1), padding rows of wte included
// (they must stay unused). Larger than GPT-2's 0.02 so attention is far from uniform.
template <class Real>
std::vector<Real> random_model_params(const pg::ModelConfig& cfg, uint64_t seed, double scale) {
    const pg::ParamLayout layout(cfg);
    std::vector<Real> p(static_cast<size_t>(layout.total));
    pg::Rng rng(seed);
    for (int kind = 0; kind < pg::kNumParamKinds; ++kind)
        for (int64_t i = 0; i < layout.size[kind]; ++i) {
            const bool gain = kind == pg::kLn1w || kind == pg::kLn2w || kind == pg::kLnfw;
            p[size_t(layout.offset[kind] + i)] = Real(gain ? 1.0 + 0.2 * rng.normal() : scale * rng.normal());
        }
    return p;
}

inline const char* param_kind_name(int kind) {
    static const char* const names[pg::kNumParamKinds] = {
        "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
        "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb", "qnorm", "knorm", "lmhead"};
    return names[kind];
}

}  // namespace pg_test
