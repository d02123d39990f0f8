// Helpers of the LoRA tests (test_lora_merge.cpp, test_lora_llama.cpp): an adapter whose B is
// drawn like A, so that it changes the model visibly, and reproducible token sequences.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.hpp"
#include "lora/adapter.hpp"

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

}  // namespace lora_test
