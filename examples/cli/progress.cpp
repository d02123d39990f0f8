// phonegpt train's progress line (train.hpp).
#include <cinttypes>

#include "train.hpp"

namespace cli {

namespace {
constexpr size_t kRecentSteps = 50;  // the steps averaged in recent_train_loss
}

void ProgressLine::add(const pg_step_result& r, double seconds) {
    step_seconds_ += seconds;
    window_seconds_ += seconds;
    tokens_ += r.tokens;
    ++window_steps_;
    recent_.push_back(r.loss);
    if (recent_.size() > kRecentSteps) recent_.erase(recent_.begin());
    if (r.step % log_interval_ == 0 || r.step == start_step_ + 1 || r.step == steps_) {
        const double per_step = window_seconds_ / double(window_steps_);
        say("step %" PRId64 "/%lld | loss %.4f | lr %.2e | grad norm %.3f | %.1f ms/step | %.0f tok/s | ETA %s\n",
            r.step, steps_, r.loss, r.lr, r.grad_norm, per_step * 1e3, double(tokens_) / step_seconds_,
            duration(per_step * double(steps_ - r.step)).c_str());
        window_seconds_ = 0;
        window_steps_ = 0;
    }
}

double ProgressLine::recent_loss() const {
    double sum = 0;
    for (float l : recent_) sum += l;
    return recent_.empty() ? NAN : sum / double(recent_.size());
}

}  // namespace cli
