// A small fixed-size thread pool with deterministic static partitioning.
//
// Why not OpenMP: the library is embedded in other people's apps (Android, Python with
// PyTorch beside it), where a global OpenMP runtime with spinning threads fights the host's own
// pools. Each trainer / evaluation owns a pool of exactly the threads it was given.
//
// Determinism: parallel_for(n, fn) splits [0, n) into the same contiguous chunks for the same
// thread count, and reductions are done by the caller in a fixed order over per-chunk partial
// results, never with atomics.
//
// Waiting: a training step is a few hundred short parallel regions back to back, and waking a
// sleeping thread costs 15-25 us on the build machine (a futex wake plus the idle core coming
// back), more than some regions last. So a thread that finishes spins for up to kSpinMicros
// watching for the next region (or, on the caller's side, for the others to finish) before it
// sleeps on a condition variable; an idle pool sleeps, it does not burn a core. A pool with more
// threads than the machine has never spins: there a spinning thread would take the core from
// one with work (measured: 4 threads on 2 cores, 110 ms a step sleeping, 120 ms spinning).
//
// Big cores: with PG_PIN_THREADS=big (Linux; docs/phone.md) a pool pins its threads with
// sched_setaffinity to the highest-capacity cores that hold its thread count (cores_to_pin in
// core/cpu_topology.hpp), so a phone's scheduler cannot leave a share of every region on a
// little core that finishes last. The calling thread runs chunk 0, so it is pinned too, on its
// first region, and keeps that affinity afterwards. Off by default: an app may have its own
// placement policy, and on a machine whose cores are equal nothing is pinned anyway.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_topology.hpp"
#include "core/step_profile.hpp"

namespace pg {

class ThreadPool {
public:
    // n_threads as resolve() reads it. The calling thread is worker 0, so a pool of 1 thread
    // starts no thread at all. A thread that cannot be started (process or memory limits) is
    // PG_ERR_OUT_OF_MEMORY, after the threads already started are stopped and joined.
    explicit ThreadPool(int n_threads);
    // Pins every thread of the pool (the caller's included, see above) to pin_to; empty: no
    // pinning. The one-argument form passes pin_from_environment(its thread count).
    ThreadPool(int n_threads, std::vector<CpuCore> pin_to);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Runs fn(thread_index, begin, end) on every thread, thread t getting the t-th of
    // size() contiguous, near-equal chunks of [0, n) (possibly empty). Blocks until all are
    // done. Exceptions thrown by fn are rethrown here (the first one, by thread index).
    void parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn);

    // Runs fn(thread_index) once on every thread.
    void run_on_all(const std::function<void(int)>& fn);

    // The chunk of [0, n) that thread t of n_threads gets; used by callers that need to know
    // the partition (e.g. to size per-thread partial sums).
    static void chunk(int64_t n, int n_threads, int t, int64_t* begin, int64_t* end);

    static int hardware_threads();
    // The one thread-count rule of every entry point (phonegpt.h, "Thread counts"): <= 0 means
    // hardware_threads(); a larger count than max_threads() runs on max_threads().
    static int resolve(int n_threads);
    // 4 threads per hardware thread, at most kMaxThreads: oversubscription beyond that only
    // costs memory and process ids.
    static int max_threads();
    static constexpr int kMaxThreads = 256;

    // Reports every later region to observer (borrowed; nullptr: none, the default): each
    // thread's CPU time inside the body and the caller's wall time (core/step_profile.hpp).
    // Costs two clock reads per thread and region while set, nothing otherwise.
    void set_observer(RegionObserver* observer) { observer_ = observer; }

    // The cores PG_PIN_THREADS asks for a pool of n_threads: "big" gives cores_to_pin of the
    // sysfs topology (sysfs_cpu_root()); unset, "" or "off" give none. *why (if given) says
    // what was decided and why, e.g. "PG_PIN_THREADS unset" or "all cores have the same
    // capacity"; an unknown value pins nothing and says so there.
    static std::vector<CpuCore> pin_from_environment(int n_threads, std::string* why = nullptr);

    // The cores the pool pins to (empty: not pinned).
    const std::vector<CpuCore>& pinned_cores() const { return pin_to_; }
    // What happened: "pinned to cpu6 (1024) cpu7 (1024)", "not pinned (PG_PIN_THREADS unset)",
    // or the sched_setaffinity error of a thread that could not be pinned.
    std::string pinning() const;

private:
    struct PinChoice {
        std::vector<CpuCore> cores;
        std::string why;
    };
    ThreadPool(int n_threads, PinChoice pin);
    void worker_loop(int index);
    void stop_workers();  // wakes and joins the started workers (destructor, failed start)
    void run_region(const std::function<void(int)>& fn);  // run_on_all without the observer
    void pin_this_thread();  // sched_setaffinity to pin_to_; a failure is kept for pinning()
    // Spins (with a CPU pause) until done() or kSpinMicros pass; returns done(). Returns at
    // once when the pool is oversubscribed (spin_ false).
    template <class Done>
    bool spin_until(Done done) const;
    static constexpr int kSpinMicros = 50;

    int n_threads_;
    std::vector<CpuCore> pin_to_;
    bool spin_;  // n_threads_ <= hardware_threads() and <= the cores pinned to
    std::string pin_why_;               // why not pinned, when pin_to_ is empty
    std::atomic<int> pin_errno_{0};     // first sched_setaffinity failure, 0 if none
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_cv_, done_cv_;
    const std::function<void(int)>* job_ = nullptr;
    // Written under mutex_ (so sleepers never miss a change), read without it while spinning.
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    bool stopping_ = false;
    std::vector<std::exception_ptr> errors_;
    RegionObserver* observer_ = nullptr;
    // Per thread, its CPU time in the current region's body (one cache line each: the threads
    // write them at the same time).
    struct alignas(64) BusyNs {
        int64_t ns = 0;
    };
    std::vector<BusyNs> busy_;
};

}  // namespace pg
