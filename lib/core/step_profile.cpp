#include "core/step_profile.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>

namespace pg {

StepProfile::StepProfile(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {}

int StepProfile::find(const char* name) {
    for (size_t i = 0; i < keys_.size(); ++i)
        if (keys_[i] == name || std::strcmp(keys_[i], name) == 0) return int(i);
    keys_.push_back(name);
    Phase p;
    p.name = name;
    p.thread_busy_ns.assign(size_t(n_threads_), 0);
    phases_.push_back(std::move(p));
    return int(phases_.size()) - 1;
}

int64_t StepProfile::thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void StepProfile::charge() {
    const Clock::time_point now = Clock::now();
    const int64_t cpu = thread_cpu_ns();
    if (current_ >= 0) {
        Phase& p = phases_[size_t(current_)];
        p.wall_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(now - since_).count();
        p.cpu_ns += cpu - since_cpu_;
    }
    since_ = now;
    since_cpu_ = cpu;
}

void StepProfile::push(const char* name) {
    charge();
    stack_.push_back(current_);
    current_ = find(name);
}

void StepProfile::pop() {
    charge();
    current_ = stack_.empty() ? -1 : stack_.back();
    if (!stack_.empty()) stack_.pop_back();
}

void StepProfile::add_bytes(int64_t read, int64_t written, int64_t cross) {
    if (current_ < 0) current_ = find("(no phase)");
    Phase& p = phases_[size_t(current_)];
    p.bytes_read += read;
    p.bytes_written += written;
    p.bytes_cross += cross;
}

void StepProfile::region(const int64_t* busy_ns, int n_threads, int64_t wall_ns, int64_t caller_cpu_ns) {
    if (current_ < 0) current_ = find("(no phase)");
    Phase& p = phases_[size_t(current_)];
    p.regions += 1;
    p.region_wall_ns += wall_ns;
    p.region_cpu_ns += caller_cpu_ns;
    int64_t most = 0;
    for (int t = 0; t < n_threads && t < n_threads_; ++t) {
        p.thread_busy_ns[size_t(t)] += busy_ns[t];
        p.busy_ns += busy_ns[t];
        most = std::max(most, busy_ns[t]);
    }
    p.critical_ns += most;
}

void StepProfile::reset() {
    phases_.clear();
    keys_.clear();
    stack_.clear();
    current_ = -1;
}

}  // namespace pg
