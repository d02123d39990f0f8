// What the tests of a frozen base (16-bit, mapped: test_lora_half_base.cpp, test_mapped_base.cpp;
// the adapter and tokens also test_lora_session.cpp) share: the tiny test base with weights 10x GPT-2's initialisation (so that 16-bit rounding shows
// in its outputs), an adapter whose B is set, a token pattern, and a session's outputs.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "lora/config.hpp"
#include "model/config.hpp"
#include "phonegpt/phonegpt.h"

namespace frozen_base_test {

// Every block linear of the base's family: GPT-2's four fused modules or the Llama family's seven.
inline uint32_t all_linears_of(const pg_model_config& base) {
    return pg::lora::family_targets(pg::model_config_from_c(base));
}

constexpr int kVocab = 65, kT = 16, kB = 3;

// weight_scale 1: GPT-2's initialisation itself (for what only needs a well-conditioned base:
// bf16 arithmetic rounds the activations, and the 10x weights amplify that into chaos).
// n_embd 32: rows that quantized blocks of 32 fit (test_quantized_base.cpp).
inline pg_model* tiny_base(uint64_t seed, float weight_scale = 10.0f, int32_t n_embd = 16) {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);  // 2 layers, width 16, context 16
    mc.n_embd = n_embd;
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, seed, &m) == PG_OK);
    REQUIRE(pg_model_allow_untrained_base(m, 1) == PG_OK);
    // Larger weights than GPT-2's initialisation, so the rounding shows in the outputs.
    int32_t n = 0;
    REQUIRE(pg_model_num_tensors(m, &n) == PG_OK);
    for (int32_t i = 0; i < n; ++i) {
        float* w = nullptr;
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_model_tensor_info(m, i, &info) == PG_OK);
        REQUIRE(pg_model_tensor_data_mutable(m, i, &w) == PG_OK);
        for (int64_t k = 0; k < info.numel; ++k) w[k] *= weight_scale;
    }
    return m;
}

// An adapter whose B factors are not zero, so it changes the outputs. `seed` (0: the config's
// default) seeds A's initialisation and shifts B's pattern, so different seeds differ.
inline pg_lora_adapter* adapter_with_b(const pg_model* base, uint32_t targets, uint64_t seed = 0) {
    pg_lora_config c;
    pg_lora_config_default(&c);
    c.rank = 4;
    c.alpha = 8.0f;
    c.target_modules = targets;
    if (seed != 0) c.init_seed = seed;
    pg_lora_adapter* a = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &c, &a) == PG_OK);
    int32_t n = 0;
    REQUIRE(pg_lora_adapter_num_tensors(a, &n) == PG_OK);
    for (int32_t i = 0; i < n; ++i) {
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_lora_adapter_tensor_info(a, i, &info) == PG_OK);
        if (std::string(info.name).find("lora_B") == std::string::npos) continue;
        float* b = nullptr;
        REQUIRE(pg_lora_adapter_tensor_data_mutable(a, i, &b) == PG_OK);
        for (int64_t k = 0; k < info.numel; ++k) b[k] = 0.3f * std::sin(0.7f * float(k) + float(seed) + float(i));
    }
    return a;
}

// pg_model_save with these pg_save_options fields (-1: as the model holds its weights).
inline void save(const pg_model* m, const std::string& path, int32_t storage = -1, int32_t align = 0,
                 int32_t level = 0) {
    pg_save_options so;
    pg_save_options_default(&so);
    so.weight_storage = storage;
    so.align_for_mapping = align;
    so.compression_level = level;
    INFO(pg_model_last_error(m));
    REQUIRE(pg_model_save(m, path.c_str(), &so) == PG_OK);
}

inline std::vector<int32_t> tokens(int n, int shift) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(int32_t((i * 11 + shift) % kVocab));
    return t;
}

// LoRA losses of a few steps on caller-given batches, over `base` with a fresh adapter whose B
// is set (dropout 0.1, 2 threads), then the adapter's factors afterwards.
inline std::vector<float> lora_run(pg_model* base, int steps, pg_arithmetic arithmetic = PG_ARITHMETIC_EXACT,
                                   int recompute = 0) {
    pg_lora_adapter* a = adapter_with_b(base, PG_LORA_ALL_LINEARS);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = kB;
    tc.seq_len = kT;
    tc.lr_max = 1e-2f;
    tc.warmup_steps = 0;
    tc.n_threads = 2;
    tc.dropout = 0.1f;
    tc.arithmetic = arithmetic;
    tc.recompute_activations = recompute;
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(base, a, &tc, &t) == PG_OK);
    std::vector<float> out;
    for (int s = 0; s < steps; ++s) {
        const std::vector<int32_t> in = tokens(kB * kT, s), target = tokens(kB * kT, s + 1);
        pg_step_result r;
        r.struct_size = sizeof r;
        REQUIRE(pg_lora_trainer_step_batch(t, in.data(), target.data(), kB, kT, &r) == PG_OK);
        out.push_back(r.loss);
    }
    int64_t n = 0;
    REQUIRE(pg_lora_adapter_num_params(a, &n) == PG_OK);
    pg_tensor_info info;
    info.struct_size = sizeof info;
    REQUIRE(pg_lora_adapter_tensor_info(a, 0, &info) == PG_OK);
    out.insert(out.end(), info.data, info.data + n);
    pg_lora_trainer_free(t);
    pg_lora_adapter_free(a);
    return out;
}

// Batched logits, then the logits after each of a few tokens appended one at a time (the
// KV-cached one-position path), of a session over `m`, with an adapter made for `m` (the same
// factors for every base) or none.
inline std::vector<float> session_outputs(const pg_model* m, bool with_adapter,
                                          pg_arithmetic arithmetic = PG_ARITHMETIC_EXACT) {
    pg_lora_adapter* adapter = with_adapter ? adapter_with_b(m, PG_LORA_ALL_LINEARS) : nullptr;
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.n_threads = 2;
    sc.arithmetic = arithmetic;
    pg_session* s = nullptr;
    REQUIRE(pg_session_create(m, &sc, &s) == PG_OK);
    if (adapter) REQUIRE(pg_session_attach_adapter(s, adapter) == PG_OK);
    const std::vector<int32_t> in = tokens(kB * kT, 3);
    std::vector<float> out(std::size_t(kB) * kT * kVocab);
    REQUIRE(pg_session_forward(s, in.data(), kB, kT, nullptr, out.data(), nullptr) == PG_OK);
    std::vector<float> step(kVocab);
    for (int i = 0; i < 6; ++i) {
        REQUIRE(pg_session_append(s, in.data() + i, 1) == PG_OK);
        REQUIRE(pg_session_logits(s, step.data(), step.size()) == PG_OK);
        out.insert(out.end(), step.begin(), step.end());
    }
    pg_session_free(s);
    pg_lora_adapter_free(adapter);
    return out;
}

}  // namespace frozen_base_test
