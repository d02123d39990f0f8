#include "kernels/arm_cores.hpp"

#include <cstdio>
#include <cstdlib>

#include "core/cpu_topology.hpp"

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace pg::kernels {

const std::vector<ArmCore>& arm_cores() {
    static const std::vector<ArmCore> cores = {
#define PG_ARM_CORE(name, implementer, part, mca_model, variant) \
    {name, implementer, part, mca_model, variant},
#include "kernels/arm_cores.def"
#undef PG_ARM_CORE
    };
    return cores;
}

const ArmCore* arm_core_for_midr(uint64_t midr) {
    const unsigned implementer = unsigned(midr >> 24) & 0xff, part = unsigned(midr >> 4) & 0xfff;
    for (const ArmCore& c : arm_cores())
        if (c.implementer == implementer && c.part == part) return &c;
    return nullptr;
}

const char* lane_variant_for_midr(uint64_t midr) {
    const ArmCore* core = arm_core_for_midr(midr);
    return core ? core->lane_variant : "arm64+neon+fmla-lane";
}

uint64_t dispatch_midr() {
    if (const char* forced = std::getenv("PG_CPU_MIDR"); forced && *forced)
        return std::strtoull(forced, nullptr, 16);
    for (const CpuCore& c : fastest_cores(read_cpu_cores(sysfs_cpu_root())))
        if (c.midr != 0) return c.midr;
#if defined(__aarch64__)
    if (getauxval(AT_HWCAP) & HWCAP_CPUID) {
        uint64_t midr = 0;
        __asm__ volatile("mrs %0, MIDR_EL1" : "=r"(midr));
        return midr;
    }
#endif
    return 0;
}

std::string describe_midr(uint64_t midr) {
    if (midr == 0) return "MIDR unknown";
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%08llx", static_cast<unsigned long long>(midr));
    const ArmCore* core = arm_core_for_midr(midr);
    return std::string(core ? core->name : "unknown core") + " (MIDR " + hex + ")";
}

}  // namespace pg::kernels
