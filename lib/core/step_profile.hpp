// Where a training step's time and memory traffic go, phase by phase (bench_engine --profile;
// docs/performance.md). Off unless someone attaches one: the engine and the thread pool test a
// null pointer and do nothing else.
//
// Phases are named by the code that runs them (string literals, e.g. "backward fc dW"); a phase
// holds
//   - the calling thread's wall time in it, exclusive of nested phases;
//   - its parallel regions (ThreadPool reports each one, RegionObserver): their count, their wall
//     time seen by the caller, and per thread the CPU time it spent inside the region's body
//     (CLOCK_THREAD_CPUTIME_ID, so time a loaded machine takes the core away is not counted
//     as work). The critical path of a region is its busiest thread; a phase's imbalance is
//     the sum of those maxima over the sum of the per-thread means (1 = perfectly balanced);
//   - the bytes its operations read and write, estimated from the shapes by the code that
//     calls the kernels (each array counted once per pass over it that the split makes,
//     so a product whose threads all read the same array counts it once per thread), and of
//     those the bytes a thread reads that another thread wrote in an earlier region (they come
//     from another core's cache or from memory, never from the reader's own cache).
// Wall times are only meaningful on a quiet machine; the CPU times and byte counts are not
// affected by other load (beyond cache effects).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pg {

// What a ThreadPool tells an observer after each parallel region (thread_pool.hpp).
class RegionObserver {
public:
    virtual ~RegionObserver() = default;
    // busy_ns[t]: thread t's CPU time inside the region's body; wall_ns and caller_cpu_ns: the
    // calling thread's wall and CPU time from the start of the region until every thread was
    // done (its CPU time includes spinning while it waited).
    virtual void region(const int64_t* busy_ns, int n_threads, int64_t wall_ns, int64_t caller_cpu_ns) = 0;
};

class StepProfile final : public RegionObserver {
public:
    struct Phase {
        std::string name;
        int64_t wall_ns = 0;         // the caller's wall time in the phase (nested phases excluded)
        int64_t region_wall_ns = 0;  // of which inside parallel regions
        int64_t cpu_ns = 0;          // the caller's CPU time in the phase (nested phases excluded)
        int64_t region_cpu_ns = 0;   // of which inside parallel regions
        // The caller's CPU time outside regions: work on one thread (with one thread, all of it,
        // since kernels then run without a region).
        int64_t serial_cpu_ns() const { return cpu_ns - region_cpu_ns; }
        int64_t regions = 0;
        int64_t critical_ns = 0;     // sum over regions of the busiest thread's CPU time
        int64_t busy_ns = 0;         // sum over regions and threads of CPU time
        std::vector<int64_t> thread_busy_ns;  // per thread
        int64_t bytes_read = 0, bytes_written = 0, bytes_cross = 0;
    };

    explicit StepProfile(int n_threads);

    // Enters phase `name` (a string literal: phases are found by pointer first) until the
    // scope ends; a null profile makes it a no-op.
    class Scope {
    public:
        Scope(StepProfile* p, const char* name) : p_(p) {
            if (p_) p_->push(name);
        }
        ~Scope() {
            if (p_) p_->pop();
        }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        StepProfile* p_;
    };

    // Adds estimated traffic to the current phase (bytes read, written, and of the read bytes
    // those another thread wrote).
    void add_bytes(int64_t read, int64_t written, int64_t cross = 0);

    void region(const int64_t* busy_ns, int n_threads, int64_t wall_ns, int64_t caller_cpu_ns) override;

    // CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in ns.
    static int64_t thread_cpu_ns();

    // Phases in the order they were first entered. Times accumulate over every step run since
    // construction or reset().
    const std::vector<Phase>& phases() const { return phases_; }
    int n_threads() const { return n_threads_; }
    void reset();

private:
    using Clock = std::chrono::steady_clock;
    void push(const char* name);
    void pop();
    int find(const char* name);
    void charge();

    int n_threads_;
    std::vector<Phase> phases_;
    std::vector<const char*> keys_;  // phases_[i] was entered as keys_[i]
    std::vector<int> stack_;         // enclosing phases of the current one
    int current_ = -1;               // -1: outside every phase
    Clock::time_point since_;
    int64_t since_cpu_ = 0;
};

}  // namespace pg
