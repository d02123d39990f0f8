#include "core/thread_pool.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>

#include "core/error.hpp"


#if defined(__linux__)
#include <sched.h>
#endif

namespace pg {

int ThreadPool::hardware_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

int ThreadPool::max_threads() { return std::min(kMaxThreads, 4 * hardware_threads()); }

int ThreadPool::resolve(int n_threads) {
    return n_threads <= 0 ? hardware_threads() : std::min(n_threads, max_threads());
}

std::vector<CpuCore> ThreadPool::pin_from_environment(int n_threads, std::string* why) {
    std::string reason;
    std::vector<CpuCore> cores;
    const char* want = std::getenv("PG_PIN_THREADS");
    if (!want) {
        reason = "PG_PIN_THREADS unset";
    } else if (!*want || !std::strcmp(want, "off")) {
        reason = std::string("PG_PIN_THREADS=") + want;
    } else if (std::strcmp(want, "big") != 0) {
        reason = std::string("PG_PIN_THREADS=") + want + " is not big or off";
    } else {
#if defined(__linux__)
        const std::vector<CpuCore> all = read_cpu_cores(sysfs_cpu_root());
        cores = cores_to_pin(all, resolve(n_threads));
        if (cores.empty())
            reason = all.empty() ? "no cpu<N> in " + sysfs_cpu_root()
                                 : "no faster cores to choose: capacities unknown or equal, or "
                                   "the threads need every core";
#else
        reason = "thread pinning is Linux only";
#endif
    }
    if (why) *why = reason;
    return cores;
}

ThreadPool::ThreadPool(int n_threads) : ThreadPool(n_threads, [n_threads] {
    PinChoice pin;
    pin.cores = pin_from_environment(resolve(n_threads), &pin.why);
    return pin;
}()) {}

ThreadPool::ThreadPool(int n_threads, std::vector<CpuCore> pin_to)
    : ThreadPool(n_threads, PinChoice{std::move(pin_to), "no cores given"}) {}

ThreadPool::ThreadPool(int n_threads, PinChoice pin)
    : n_threads_(resolve(n_threads)),
      pin_to_(std::move(pin.cores)),
      // Oversubscribed, by the machine or by the cores pinned to: a spinning thread would
      // take the core from one with work.
      spin_(n_threads_ <= hardware_threads() &&
            (pin_to_.empty() || n_threads_ <= static_cast<int>(pin_to_.size()))),
      pin_why_(std::move(pin.why)),
      errors_(n_threads_),
      busy_(size_t(n_threads_)) {
    workers_.reserve(size_t(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) {
        try {
            workers_.emplace_back([this, i] { worker_loop(i); });
        } catch (const std::system_error& e) {
            // The started workers wait on start_cv_: they must be gone before the members are.
            stop_workers();
            throw Error(PG_ERR_OUT_OF_MEMORY, "thread pool: could not start thread " + std::to_string(i + 1) +
                                                  " of " + std::to_string(n_threads_) + " (" + e.what() +
                                                  "); ask for fewer threads or raise the process limits");
        } catch (...) {  // std::bad_alloc for the thread's state
            stop_workers();
            throw;
        }
    }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    start_cv_.notify_all();
    for (auto& w : workers_) w.join();
}

namespace {

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

}  // namespace

template <class Done>
bool ThreadPool::spin_until(Done done) const {
    if (!spin_) return done();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int i = 1;; ++i) {
        if (done()) return true;
        cpu_pause();
        if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return done();
    }
}

void ThreadPool::pin_this_thread() {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const CpuCore& c : pin_to_)
        if (c.index >= 0 && c.index < CPU_SETSIZE) CPU_SET(c.index, &set);
    // The caller's thread is pinned on its first region, not on every one: a thread-local copy
    // of the set it was given last makes the later regions a comparison, not a system call.
    thread_local cpu_set_t applied;
    thread_local bool has_applied = false;
    if (has_applied && CPU_EQUAL(&applied, &set)) return;
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        int expected = 0;
        pin_errno_.compare_exchange_strong(expected, errno);
        return;
    }
    applied = set;
    has_applied = true;
#endif
}

std::string ThreadPool::pinning() const {
    if (const int e = pin_errno_.load())
        return "not pinned to " + describe_cores(pin_to_) + ": sched_setaffinity: " +
               std::strerror(e);
    if (pin_to_.empty()) return "not pinned (" + pin_why_ + ")";
    return "pinned to " + describe_cores(pin_to_);
}

void ThreadPool::worker_loop(int index) {
    if (!pin_to_.empty()) pin_this_thread();
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(int)>* job;
        spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
        {
            std::unique_lock<std::mutex> lock(mutex_);
            start_cv_.wait(lock, [&] { return stopping_ || generation_.load() != seen; });
            if (stopping_) return;
            seen = generation_.load();
            job = job_;
        }
        try {
            (*job)(index);
        } catch (...) {
            errors_[index] = std::current_exception();
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (pending_.fetch_sub(1) == 1) done_cv_.notify_one();
        }
    }
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
    RegionObserver* const observer = observer_;
    if (!observer) return run_region(fn);
    // Every thread times its own share of the region.
    const auto start = std::chrono::steady_clock::now();
    const int64_t start_cpu = StepProfile::thread_cpu_ns();
    run_region([&](int t) {
        const int64_t t0 = StepProfile::thread_cpu_ns();
        try {
            fn(t);
        } catch (...) {
            busy_[size_t(t)].ns = StepProfile::thread_cpu_ns() - t0;
            throw;
        }
        busy_[size_t(t)].ns = StepProfile::thread_cpu_ns() - t0;
    });
    std::vector<int64_t> busy(static_cast<size_t>(n_threads_));
    for (int t = 0; t < n_threads_; ++t) busy[size_t(t)] = busy_[size_t(t)].ns;
    observer->region(busy.data(), n_threads_,
                     std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
                         .count(),
                     StepProfile::thread_cpu_ns() - start_cpu);
}

void ThreadPool::run_region(const std::function<void(int)>& fn) {
    for (auto& e : errors_) e = nullptr;
    if (n_threads_ > 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &fn;
        pending_.store(n_threads_ - 1);
        generation_.fetch_add(1, std::memory_order_release);
    }
    start_cv_.notify_all();
    if (!pin_to_.empty()) pin_this_thread();
    try {
        fn(0);
    } catch (...) {
        errors_[0] = std::current_exception();
    }
    if (n_threads_ > 1) {
        spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
        std::unique_lock<std::mutex> lock(mutex_);
        done_cv_.wait(lock, [&] { return pending_.load() == 0; });
        job_ = nullptr;
    }
    for (auto& e : errors_)
        if (e) std::rethrow_exception(e);
}

void ThreadPool::chunk(int64_t n, int n_threads, int t, int64_t* begin, int64_t* end) {
    int64_t base = n / n_threads, extra = n % n_threads;
    *begin = t * base + (t < extra ? t : extra);
    *end = *begin + base + (t < extra ? 1 : 0);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    run_on_all([&](int t) {
        int64_t b, e;
        chunk(n, n_threads_, t, &b, &e);
        if (b < e) fn(t, b, e);
    });
}

}  // namespace pg
