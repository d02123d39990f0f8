// The schedules of a run: the learning rate (linear warm-up, then cosine / linear decay to
// lr_min at total_steps, or constant) and the dropout rate (a linear ramp from 0). The exact
// formulas are documented on pg_train_config in include/phonegpt/phonegpt.h; these are their
// one implementation.
#pragma once

#include <cstdint>

#include "train/train_config.hpp"

namespace pg {

// The learning rate of optimizer step `step` (0-based: the first step is step 0). step >= 0.
float learning_rate(const TrainConfig& cfg, int64_t step);

// The dropout probability of optimizer step `step` (0-based). step >= 0.
float dropout_rate(const TrainConfig& cfg, int64_t step);

}  // namespace pg
