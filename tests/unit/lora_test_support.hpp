// Helpers of the LoRA tests (test_lora_merge.cpp, test_lora_llama.cpp): an adapter whose B is
// drawn like A, so that it changes the model visibly, and reproducible token sequences.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "lora/adapter.hpp"
#include "model/engine.hpp"
#include "model/model.hpp"

namespace lora_test {

// B drawn from N(0, std) so the adapter changes the model visibly.
inline void randomise_b(pg::lora::Adapter& a, uint64_t seed, double std) {
    pg::Rng rng(seed);
    for (const auto& m : a.linears()) {
        float* B = a.b(m);
        for (int64_t i = 0; i < m.out * a.config().rank; ++i) B[i] = float(std * rng.normal());
    }
}

// n tokens drawn uniformly from [0, vocab).
inline std::vector<int32_t> tokens(int n, uint64_t seed, int vocab) {
    pg::Rng rng(seed);
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = int32_t(rng.below(uint64_t(vocab)));
    return t;
}

// Logits [B, T, V] of `params` with an optional hook.
inline std::vector<float> logits_of(const pg::Model& model, const float* params, pg::LinearHook* hook,
                                    const std::vector<int32_t>& in, int B, int T, int threads = 2) {
    pg::ThreadPool pool(threads);
    pg::Engine engine(model.config(), B, T);
    engine.set_linear_hook(hook);
    std::vector<float> logits(static_cast<size_t>(B) * T * model.config().vocab_size);
    engine.forward(params, in.data(), nullptr, B, T, nullptr, logits.data(), pool);
    return logits;
}

inline double max_abs(const std::vector<float>& v) {
    double m = 0;
    for (float x : v) m = std::max(m, double(std::fabs(x)));
    return m;
}

inline double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

// `samples` elements of each adapter tensor `keep(tensor)` selects: the analytic gradient `g`
// against fp32 central differences (h = 1e-2) of `loss()`.
template <class Loss, class Keep>
void check_finite_differences(pg::lora::Adapter& a, const std::vector<float>& g, Loss loss, int samples, Keep keep) {
    pg::Rng pick(3);
    for (const auto& t : a.tensors()) {
        if (!keep(t)) continue;
        for (int n = 0; n < samples; ++n) {
            const int64_t i = t.offset + int64_t(pick.below(uint64_t(t.numel)));
            const float keep_value = a.params()[i], h = 1e-2f;
            a.params()[i] = keep_value + h;
            const double up = loss();
            a.params()[i] = keep_value - h;
            const double down = loss();
            a.params()[i] = keep_value;
            const double fd = (up - down) / (2.0 * h);
            INFO(t.name << "[" << i - t.offset << "]: analytic " << g[size_t(i)] << ", finite difference " << fd);
            CHECK(g[size_t(i)] == Approx(fd).margin(2e-3).epsilon(2e-2));
        }
    }
}

}  // namespace lora_test
