#include "core/thread_pool.hpp"

#include <chrono>
#include <exception>

namespace pg {

int ThreadPool::hardware_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads <= 0 ? hardware_threads() : n_threads),
      spin_(n_threads_ <= hardware_threads()),
      errors_(n_threads_) {
    workers_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
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

void ThreadPool::worker_loop(int index) {
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
    for (auto& e : errors_) e = nullptr;
    if (n_threads_ > 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &fn;
        pending_.store(n_threads_ - 1);
        generation_.fetch_add(1, std::memory_order_release);
    }
    start_cv_.notify_all();
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
