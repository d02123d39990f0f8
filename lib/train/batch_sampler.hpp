// The training batch sampler: B windows of T+1 consecutive tokens at uniformly random offsets;
// a window's first T tokens are the inputs and its last T the targets (shifted by one).
// Its only state is the Rng, which checkpoints store so a resumed run draws the same batches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/rng.hpp"

namespace pg {

class BatchSampler {
public:
    explicit BatchSampler(uint64_t seed) : rng_(seed) {}

    // data has n >= T+1 tokens; inputs and targets get [B, T]. Offsets are drawn in batch
    // order from [0, n - T - 1], each with one Rng::below call.
    void sample(const int32_t* data, std::size_t n, int B, int T, int32_t* inputs, int32_t* targets);

    void get_state(uint64_t out[4]) const { rng_.get_state(out); }
    void set_state(const uint64_t in[4]) { rng_.set_state(in); }

private:
    Rng rng_;
};

}  // namespace pg
