// What Linux tells about each CPU core in sysfs: its MIDR_EL1 (aarch64: which core design it
// is) and its capacity (big.LITTLE: the scheduler's relative speed, 1024 for the fastest).
// Kernel dispatch picks the GEMM variant for the fastest core from it (kernels/arm_cores.hpp);
// on x86 and in containers these files are usually missing and every field reads as unknown.
//
// The root is /sys/devices/system/cpu unless PG_SYSFS_CPU_ROOT names another folder with the
// same layout (cpu<N>/regs/identification/midr_el1, cpu<N>/cpu_capacity): the tests build a
// fake phone there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pg {

struct CpuCore {
    int index = 0;         // N of cpu<N>
    uint64_t midr = 0;     // 0: unknown (no regs/identification/midr_el1)
    int capacity = -1;     // -1: unknown (no cpu_capacity; a kernel without big.LITTLE info)
};

// The sysfs root in use (PG_SYSFS_CPU_ROOT or /sys/devices/system/cpu).
std::string sysfs_cpu_root();

// Every cpu<N> folder under root, by index. Missing or unreadable files leave the defaults.
std::vector<CpuCore> read_cpu_cores(const std::string& root);

// The cores with the highest known capacity, in index order (every core if no capacity is
// known): where a phone's heavy threads belong.
std::vector<CpuCore> fastest_cores(const std::vector<CpuCore>& cores);

}  // namespace pg
