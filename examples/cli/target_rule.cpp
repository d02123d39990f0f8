// The target rule and the best evaluation of a training run (train.hpp).
#include <cinttypes>
#include <cstdio>

#include "train.hpp"

namespace cli {

bool TargetRule::add(int64_t step, double loss, double seconds_since_start) {
    if (!std::isfinite(loss))  // evaluate() never hands one over; a NaN compares false with everything
        throw RuntimeError{"target rule: a non-finite loss is not a score", "PG_ERR_INTERNAL", std::nullopt};
    if (!have_best_ || loss < best_loss_) {
        have_best_ = true;
        best_step_ = step;
        best_loss_ = loss;
    }
    bool first_met = false;
    if (has_target() && !met_ && have_previous_ && previous_loss_ <= target_ && loss <= target_) {
        met_ = first_met = true;
        pair_steps_[0] = previous_step_;
        pair_steps_[1] = step;
        pair_losses_[0] = previous_loss_;
        pair_losses_[1] = loss;
        seconds_to_pair_ = seconds_since_start;
    }
    have_previous_ = true;
    previous_step_ = step;
    previous_loss_ = loss;
    return first_met;
}

std::string TargetRule::progress_line(int64_t step, double loss, double seconds_since_start, bool first_met) const {
    char line[320];
    if (first_met) {
        std::snprintf(line, sizeof line,
                      "TARGET RULE MET at step %" PRId64 ": validation loss %.4f (step %" PRId64 ") and %.4f (step %" PRId64
                      ") <= %g, %s (%.1f s) after the start\n",
                      step, pair_losses_[0], pair_steps_[0], pair_losses_[1], pair_steps_[1], target_,
                      duration(seconds_since_start).c_str(), seconds_since_start);
    } else if (!has_target()) {
        return "";
    } else if (met_) {
        std::snprintf(line, sizeof line, "target %g: met earlier (steps %" PRId64 " and %" PRId64 "); this evaluation %s\n",
                      target_, pair_steps_[0], pair_steps_[1], loss <= target_ ? "<= target" : "> target");
    } else {
        std::snprintf(line, sizeof line, "target %g: not met yet (this evaluation %s; best %.4f at step %" PRId64 ")\n",
                      target_, loss <= target_ ? "<= target, one more needed" : "> target", best_loss_, best_step_);
    }
    return line;
}

std::string TargetRule::summary_line() const {
    if (!has_target()) return "";
    char line[320];
    if (met_)
        std::snprintf(line, sizeof line,
                      "target rule (loss <= %g twice in a row): met at steps %" PRId64 " and %" PRId64
                      " (%.4f, %.4f), %.1f s after the start; best %.4f at step %" PRId64 "\n",
                      target_, pair_steps_[0], pair_steps_[1], pair_losses_[0], pair_losses_[1], seconds_to_pair_,
                      best_loss_, best_step_);
    else if (have_best_)
        std::snprintf(line, sizeof line, "target rule (loss <= %g twice in a row): not met; best %.4f at step %" PRId64 "\n",
                      target_, best_loss_, best_step_);
    else
        std::snprintf(line, sizeof line, "target rule (loss <= %g twice in a row): not met; no evaluation\n", target_);
    return line;
}

Json TargetRule::json() const {
    Json best;
    if (have_best_) best.integer("step", best_step_).num("loss", best_loss_);
    Json j;
    if (has_target()) j.num("target", target_);
    else j.null("target");
    j.boolean("met", met_);
    if (met_) {
        j.integers("first_pair_steps", {pair_steps_[0], pair_steps_[1]})
            .numbers("first_pair_scores", {pair_losses_[0], pair_losses_[1]})
            .num("seconds_to_pair", seconds_to_pair_);
    } else {
        j.null("first_pair_steps").null("first_pair_scores").null("seconds_to_pair");
    }
    return j.object("best", best);
}

}  // namespace cli
