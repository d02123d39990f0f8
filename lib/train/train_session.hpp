// A training run that an operating system may stop at any moment (pg_train_session): it steps a
// trainer until a step budget, a time budget or a cancel, checkpoints every N steps or seconds
// and when it stops, and follows the device's conditions (battery, charging, thermal status)
// through a policy: throttled threads and spacing between steps, or a pause.
//
// What is trained and how it is checkpointed is the SessionTarget's business (the C boundary
// wraps a full-training Trainer or a LoRA trainer); a checkpoint holds everything the run
// changes, so a process killed at any moment resumes from the last one and, with the same data
// and thread count, repeats the uninterrupted run bit for bit.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/cpu_topology.hpp"
#include "train/step_driver.hpp"

namespace pg {

// What a session trains: one optimizer step, the thread count, and an atomic checkpoint of the
// whole run (trained tensors, optimizer moments, sampler and dropout state, schedule position).
class SessionTarget {
public:
    virtual ~SessionTarget() = default;
    virtual StepResult step() = 0;
    virtual int64_t step_count() const = 0;
    virtual int threads() const = 0;
    virtual void set_threads(int n_threads) = 0;
    // The cores the step's threads are pinned to (empty: not pinned; PG_PIN_THREADS).
    virtual std::vector<CpuCore> pinned_cores() const = 0;
    virtual void save_checkpoint() = 0;
};

// Android's PowerManager thermal levels (THERMAL_STATUS_NONE .. THERMAL_STATUS_SHUTDOWN).
constexpr int kThermalLevels = 7;

struct DeviceConditions {
    int battery_percent = -1;  // -1: unknown (never below a floor)
    bool charging = true;
    int thermal = 0;           // 0..6
};

// Which conditions pause training, throttle it, or space its steps.
struct SessionPolicy {
    int throttle_thermal = PG_THERMAL_MODERATE;  // at and above: throttle_threads, throttle_sleep_ms
    int throttle_threads = 1;
    int throttle_sleep_ms = 500;
    int pause_thermal = PG_THERMAL_SEVERE;  // at and above: no step
    int battery_floor_percent = 20;         // below it and not charging: no step
    bool pause_unless_charging = false;
};

struct SessionLimits {
    int64_t max_steps = 0;           // stop when step_count reaches it (> 0)
    int64_t time_budget_ms = 0;      // per run(); 0: none
    int64_t checkpoint_every_steps = 0;  // 0: off
    int64_t checkpoint_every_ms = 0;     // 0: off
    int64_t throughput_window_ms = 300000;
};

enum class StopReason : int { none = 0, steps = 1, time = 2, cancelled = 3 };

struct SessionReport {
    StopReason stop = StopReason::none;
    int64_t step = 0;            // the target's step count
    int64_t steps_run = 0;       // by the last (or current) run()
    float last_loss = 0.0f;
    int64_t checkpoints = 0;     // written by this session
    int64_t checkpoint_step = -1;  // the step of the last checkpoint written (-1: none yet)
    double tokens_per_second = 0;  // over the throughput window, pauses and spacing included
    int32_t threads = 0;
    bool paused = false;         // conditions hold training now
    int64_t paused_ms = 0;       // spent paused by the last (or current) run()
};

// Tokens per second of one core class (the capacity of the slowest core the threads were
// pinned to; -1: not pinned), while stepping.
struct CoreClassRate {
    int capacity = -1;
    double tokens_per_second = 0;
};

class TrainSession {
public:
    TrainSession(std::unique_ptr<SessionTarget> target, const SessionLimits& limits, const SessionPolicy& policy);

    // Steps until the step budget, the time budget or cancel(); checkpoints as configured and
    // at the end (when a step ran since the last one). One run at a time. A failing step
    // (pg::Error) is rethrown after the checkpoint of the state before it.
    SessionReport run();
    // From any thread: the running (or next) run() stops after its current step. Cleared when
    // run() returns.
    void cancel();
    // From any thread; wakes a paused run.
    void set_conditions(const DeviceConditions& c);
    // From any thread.
    SessionReport report() const;
    std::vector<CoreClassRate> core_class_rates() const;
    SessionTarget& target() { return *target_; }

private:
    using Clock = std::chrono::steady_clock;
    struct StepSample {
        Clock::time_point start, end;
        int64_t tokens;
        int core_class;
    };
    // What the conditions ask for now: 0 threads = paused.
    struct Demand {
        int threads;
        int sleep_ms;
    };
    Demand demand_locked() const;
    void record_locked(const StepSample& s);
    void checkpoint(Clock::time_point now);
    static int core_class_of(const std::vector<CpuCore>& pinned);

    std::unique_ptr<SessionTarget> target_;
    SessionLimits limits_;
    SessionPolicy policy_;
    const int base_threads_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<bool> cancel_{false};
    DeviceConditions conditions_;
    SessionReport report_;
    std::deque<StepSample> window_;
    Clock::time_point last_checkpoint_time_;
};

}  // namespace pg
