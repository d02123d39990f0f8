#include "train/schedule.hpp"

#include <cmath>

namespace pg {

float learning_rate(const TrainConfig& cfg, int64_t step) {
    // Computed in double so the value at a given step does not depend on how it is reached.
    const double lr_max = cfg.lr_max, lr_min = cfg.lr_min;
    if (step < cfg.warmup_steps) return float(lr_max * double(step + 1) / double(cfg.warmup_steps));
    if (cfg.schedule == PG_LR_CONSTANT) return float(lr_max);
    if (step >= cfg.total_steps) return float(lr_min);
    // step is in [warmup, total): progress goes 0 -> (almost) 1 over the decay phase.
    const double progress = double(step - cfg.warmup_steps) / double(cfg.total_steps - cfg.warmup_steps);
    if (cfg.schedule == PG_LR_LINEAR) return float(lr_max + (lr_min - lr_max) * progress);
    const double pi = 3.14159265358979323846;
    return float(lr_min + 0.5 * (lr_max - lr_min) * (1.0 + std::cos(pi * progress)));
}

float dropout_rate(const TrainConfig& cfg, int64_t step) {
    if (step >= cfg.dropout_ramp_steps) return cfg.dropout;
    return float(double(cfg.dropout) * double(step) / double(cfg.dropout_ramp_steps));
}

}  // namespace pg
