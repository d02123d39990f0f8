// What the tests of the 16-bit arithmetic storages (test_model_fp16_arithmetic.cpp,
// test_model_bf16_arithmetic.cpp) share: the PhoneGPT-shape model at GPT-2's initialisation, a
// token pattern, its logits, one LoRA gradient pass over a frozen base, and the relative RMS
// error they are compared by.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/thread_pool.hpp"
#include "lora/adapter.hpp"
#include "lora/lora_hook.hpp"
#include "model/engine.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"

namespace half_arithmetic_test {

constexpr int kBatch = 2, kLen = 48;

inline std::vector<int32_t> pattern(int n, int vocab, uint32_t salt) {
    std::vector<int32_t> t(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) t[std::size_t(i)] = int32_t((uint32_t(i) * 2654435761u + salt * 97u) % uint32_t(vocab));
    return t;
}

// The PhoneGPT shape (4 layers, width 128, 65 tokens) at GPT-2's initialisation.
inline pg::Model phonegpt_base(uint64_t seed) {
    pg::Model m(pg::model_preset("phonegpt"));
    pg::init_gpt2_params(m.config(), m.params(), seed);
    return m;
}

// The logits [kBatch, kLen, V] of one batch.
inline std::vector<float> logits(const pg::Model& m) {
    const int V = m.config().vocab_size;
    pg::Engine engine(m.config(), kBatch, kLen);
    pg::ThreadPool pool(2);
    const std::vector<int32_t> in = pattern(kBatch * kLen, V, 1);
    std::vector<float> out(std::size_t(kBatch) * kLen * V);
    engine.forward(m.weights(), in.data(), nullptr, kBatch, kLen, nullptr, out.data(), pool);
    return out;
}

inline double relative_rms(const std::vector<float>& x, const std::vector<float>& ref) {
    REQUIRE(x.size() == ref.size());
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        num += (double(x[i]) - ref[i]) * (double(x[i]) - ref[i]);
        den += double(ref[i]) * ref[i];
    }
    return std::sqrt(num / den);
}

// A rank-4 adapter of every linear of `base`, with B set (so every gradient is nonzero).
inline pg::lora::Adapter adapter_with_b(const pg::Model& base) {
    pg::lora::LoraConfig lc;
    lc.rank = 4;
    lc.alpha = 8.0f;
    lc.target_modules = PG_LORA_ALL_LINEARS;
    pg::lora::Adapter adapter(lc, pg::lora::identify_base(base));
    for (const auto& lin : adapter.linears()) {
        float* Bm = adapter.b(lin);
        for (int64_t i = 0; i < lin.out * lc.rank; ++i) Bm[i] = 0.05f * std::sin(0.37f * float(i) + float(lin.layer));
    }
    return adapter;
}

// dA and dB of `adapter` from one frozen-base training pass over `base` (no dropout); the mean
// loss into *loss if given.
inline std::vector<float> lora_gradients(const pg::Model& base, const pg::lora::Adapter& adapter,
                                         float* loss = nullptr) {
    std::vector<float> grads(std::size_t(adapter.num_params()), 0.0f);
    pg::lora::LoraHook hook(adapter, grads.data());
    pg::Engine engine(base.config(), kBatch, kLen);
    engine.set_linear_hook(&hook);
    pg::ThreadPool pool(2);
    const int V = base.config().vocab_size;
    const std::vector<int32_t> in = pattern(kBatch * kLen, V, 1), target = pattern(kBatch * kLen, V, 2);
    const pg::LossSum s = engine.forward_backward(base.weights(), nullptr, in.data(), target.data(), kBatch, kLen,
                                                  1.0f / (kBatch * kLen), pg::Dropout{}, pool);
    if (loss) *loss = float(s.mean());
    return grads;
}

}  // namespace half_arithmetic_test
