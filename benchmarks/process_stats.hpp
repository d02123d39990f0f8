// What the benchmarks read of their own process: the clocks they time with and the memory they
// report (Linux: /proc/self), one definition each, shared by every benchmark.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

namespace pg_bench {

// Wall time on the steady clock, in seconds.
inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread: a one-thread figure measured with it is not lowered by other
// processes taking the core away (the build machine is shared), only by what shares its caches.
inline double thread_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// User + system CPU time of the whole process so far (every thread), in seconds.
inline double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 where there is none.
inline long status_kib(const std::string& field) {
    std::ifstream f("/proc/self/status");
    const std::string key = field + ":";
    std::string line;
    while (std::getline(f, line))
        if (line.compare(0, key.size(), key) == 0) return std::atol(line.c_str() + key.size());
    return -1;
}

// Starts the peak resident size (VmHWM) again from the current one (Linux >= 4.0); false where
// that is not possible.
inline bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    return bool(f);
}

}  // namespace pg_bench
