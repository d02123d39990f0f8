#include "train/train_session.hpp"

#include <algorithm>
#include <map>
#include <thread>

#include "core/error.hpp"

namespace pg {

TrainSession::TrainSession(std::unique_ptr<SessionTarget> target, const SessionLimits& limits,
                           const SessionPolicy& policy)
    : target_(std::move(target)), limits_(limits), policy_(policy), base_threads_(target_->threads()) {
    report_.step = target_->step_count();
    report_.threads = base_threads_;
    last_checkpoint_time_ = Clock::now();
}

void TrainSession::cancel() {
    cancel_.store(true);
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
}

void TrainSession::set_conditions(const DeviceConditions& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    conditions_ = c;
    wake_.notify_all();
}

SessionReport TrainSession::report() const {
    std::lock_guard<std::mutex> lock(mutex_);
    SessionReport r = report_;
    if (!window_.empty()) {
        // Sustained rate: the window's tokens over the wall time since its first step began.
        const auto now = Clock::now();
        const auto from = std::max(window_.front().start, now - std::chrono::milliseconds(limits_.throughput_window_ms));
        int64_t tokens = 0;
        for (const StepSample& s : window_) tokens += s.tokens;
        const double seconds = std::chrono::duration<double>(now - from).count();
        r.tokens_per_second = seconds > 0 ? double(tokens) / seconds : 0.0;
    }
    return r;
}

std::vector<CoreClassRate> TrainSession::core_class_rates() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<int, std::pair<int64_t, double>> by_class;  // tokens, seconds stepping
    for (const StepSample& s : window_) {
        auto& c = by_class[s.core_class];
        c.first += s.tokens;
        c.second += std::chrono::duration<double>(s.end - s.start).count();
    }
    std::vector<CoreClassRate> out;
    for (auto it = by_class.rbegin(); it != by_class.rend(); ++it)  // fastest class first
        out.push_back({it->first, it->second.second > 0 ? double(it->second.first) / it->second.second : 0.0});
    return out;
}

int TrainSession::core_class_of(const std::vector<CpuCore>& pinned) {
    if (pinned.empty()) return -1;
    int slowest = pinned.front().capacity;
    for (const CpuCore& c : pinned) slowest = std::min(slowest, c.capacity);
    return slowest;
}

TrainSession::Demand TrainSession::demand_locked() const {
    const DeviceConditions& c = conditions_;
    const bool low_battery = !c.charging && c.battery_percent >= 0 && c.battery_percent < policy_.battery_floor_percent;
    if (c.thermal >= policy_.pause_thermal || low_battery || (policy_.pause_unless_charging && !c.charging))
        return {0, 0};
    if (c.thermal >= policy_.throttle_thermal)
        return {std::min(base_threads_, policy_.throttle_threads), policy_.throttle_sleep_ms};
    return {base_threads_, 0};
}

void TrainSession::record_locked(const StepSample& s) {
    window_.push_back(s);
    const auto horizon = s.end - std::chrono::milliseconds(limits_.throughput_window_ms);
    while (!window_.empty() && window_.front().end < horizon) window_.pop_front();
}

void TrainSession::checkpoint(Clock::time_point now) {
    target_->save_checkpoint();
    last_checkpoint_time_ = now;
    std::lock_guard<std::mutex> lock(mutex_);
    ++report_.checkpoints;
    report_.checkpoint_step = target_->step_count();
}

SessionReport TrainSession::run() {
    const auto start = Clock::now();
    const bool timed = limits_.time_budget_ms > 0;
    const auto deadline = start + std::chrono::milliseconds(std::max<int64_t>(limits_.time_budget_ms, 0));
    int64_t last_saved_step = target_->step_count();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        report_.steps_run = 0;
        report_.paused_ms = 0;
        report_.stop = StopReason::none;
    }
    StopReason stop = StopReason::none;
    auto finish = [&](StopReason why) {
        if (target_->step_count() != last_saved_step) checkpoint(Clock::now());
        cancel_.store(false);
        std::lock_guard<std::mutex> lock(mutex_);
        report_.stop = why;
        report_.paused = false;
        return why;
    };
    try {
        while (stop == StopReason::none) {
            if (target_->step_count() >= limits_.max_steps) { stop = StopReason::steps; break; }
            if (cancel_.load()) { stop = StopReason::cancelled; break; }
            if (timed && Clock::now() >= deadline) { stop = StopReason::time; break; }
            Demand d;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                d = demand_locked();
                report_.paused = d.threads == 0;
                if (d.threads == 0) {
                    // Paused: wait for better conditions, a cancel or the deadline.
                    const auto t0 = Clock::now();
                    auto woken = [&] { return cancel_.load() || demand_locked().threads != 0; };
                    if (timed) wake_.wait_until(lock, deadline, woken);
                    else wake_.wait(lock, woken);
                    report_.paused_ms += std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
                    continue;
                }
            }
            if (d.threads != target_->threads()) target_->set_threads(d.threads);
            const auto t0 = Clock::now();
            const StepResult r = target_->step();
            const auto t1 = Clock::now();
            {
                std::lock_guard<std::mutex> lock(mutex_);
                record_locked({t0, t1, r.tokens, core_class_of(target_->pinned_cores())});
                report_.step = r.step;
                report_.steps_run += 1;
                report_.last_loss = r.loss;
                report_.threads = target_->threads();
            }
            const bool by_steps = limits_.checkpoint_every_steps > 0 && r.step % limits_.checkpoint_every_steps == 0;
            const bool by_time = limits_.checkpoint_every_ms > 0 &&
                                 t1 - last_checkpoint_time_ >= std::chrono::milliseconds(limits_.checkpoint_every_ms);
            if ((by_steps || by_time) && r.step < limits_.max_steps) {
                checkpoint(t1);
                last_saved_step = r.step;
            }
            if (d.sleep_ms > 0) {  // spacing: a hot phone cools between steps
                std::unique_lock<std::mutex> lock(mutex_);
                auto until = Clock::now() + std::chrono::milliseconds(d.sleep_ms);
                if (timed) until = std::min(until, deadline);
                wake_.wait_until(lock, until, [&] { return cancel_.load(); });
            }
        }
    } catch (...) {
        finish(StopReason::none);
        throw;
    }
    finish(stop);
    return report();
}

}  // namespace pg
