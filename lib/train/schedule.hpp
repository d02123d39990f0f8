// The learning-rate schedule: linear warm-up, then cosine / linear decay to lr_min at
// total_steps (or constant). The exact formula is documented on pg_train_config in
// include/phonegpt/phonegpt.h; this is its one implementation.
#pragma once

#include <cstdint>

#include "train/train_config.hpp"

namespace pg {

// The learning rate of optimizer step `step` (0-based: the first step is step 0). step >= 0.
float learning_rate(const TrainConfig& cfg, int64_t step);

}  // namespace pg
