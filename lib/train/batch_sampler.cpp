#include "train/batch_sampler.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

namespace pg {

void BatchSampler::sample(const int32_t* data, std::size_t n, int B, int T, int32_t* inputs,
                          int32_t* targets) {
    require(B >= 1 && T >= 1 && n >= std::size_t(T) + 1, PG_ERR_INVALID_ARGUMENT,
            "batch sampler: " + std::to_string(n) + " tokens cannot give windows of " +
                std::to_string(T + 1));
    const uint64_t n_offsets = uint64_t(n) - uint64_t(T);  // offsets 0 .. n-T-1
    for (int b = 0; b < B; ++b) {
        const int32_t* window = data + rng_.below(n_offsets);
        std::memcpy(inputs + std::size_t(b) * T, window, sizeof(int32_t) * std::size_t(T));
        std::memcpy(targets + std::size_t(b) * T, window + 1, sizeof(int32_t) * std::size_t(T));
    }
}

}  // namespace pg
