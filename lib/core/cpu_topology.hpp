// What Linux tells about each CPU core in sysfs: its MIDR_EL1 (aarch64: which core design it
// is) and its capacity (big.LITTLE: the scheduler's relative speed, 1024 for the fastest).
// Kernel dispatch picks the GEMM variant for the fastest core from it (kernels/arm_cores.hpp);
// on x86 and in containers these files are usually missing and every field reads as unknown.
//
// The root is /sys/devices/system/cpu unless PG_SYSFS_CPU_ROOT names another folder with the
// same layout (cpu<N>/regs/identification/midr_el1, cpu<N>/cpu_capacity, cpu<N>/online): the
// tests build a fake phone there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pg {

struct CpuCore {
    int index = 0;         // N of cpu<N>
    uint64_t midr = 0;     // 0: unknown (no regs/identification/midr_el1)
    int capacity = -1;     // -1: unknown (no cpu_capacity; a kernel without big.LITTLE info)
    bool online = true;    // cpu<N>/online reads 0: hot-unplugged (phones park big cores)
};

// The sysfs root in use (PG_SYSFS_CPU_ROOT or /sys/devices/system/cpu).
std::string sysfs_cpu_root();

// Every cpu<N> folder under root, by index. Missing or unreadable files leave the defaults.
std::vector<CpuCore> read_cpu_cores(const std::string& root);

// The cores with the highest known capacity, in index order (every core if no capacity is
// known): where a phone's heavy threads belong.
std::vector<CpuCore> fastest_cores(const std::vector<CpuCore>& cores);

// The online cores a pool of n_threads belongs on: whole capacity classes, fastest first, until
// they hold at least n_threads cores (1 X + 3 A7xx + 4 A5xx with 2 threads: the X and the A7xx;
// a whole class, so the scheduler still picks the least busy of equal cores). Empty, meaning
// "do not pin", when no capacity is known, all cores are equal, or the classes needed are every
// online core: there pinning restricts the scheduler for nothing.
std::vector<CpuCore> cores_to_pin(const std::vector<CpuCore>& cores, int n_threads);

// Each core with its capacity, for logs and phonegpt-bench: "cpu6 (1024) cpu7 (1024)".
std::string describe_cores(const std::vector<CpuCore>& cores);

}  // namespace pg
