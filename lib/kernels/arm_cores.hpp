// Which AArch64 core this is, from MIDR_EL1, and which lane-FMA GEMM variant it gets
// (the table kernels/arm_cores.def). Plain C++ built on every host, so the mapping is tested
// natively too; dispatch.cpp uses it on aarch64 only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pg::kernels {

struct ArmCore {
    const char* name;          // LLVM's -mcpu spelling: "exynos-m4", "cortex-a76", "oryon-1"
    unsigned implementer;      // MIDR_EL1[31:24]: 0x41 Arm, 0x51 Qualcomm, 0x53 Samsung
    unsigned part;             // MIDR_EL1[15:4]
    const char* mca_model;     // the llvm-mca -mcpu whose scheduling model chose the variant
    const char* lane_variant;  // a table name of kernels/neon/lane_variants.def
};

// Every core of arm_cores.def, in its order.
const std::vector<ArmCore>& arm_cores();

// The core with this MIDR's implementer and part, or nullptr.
const ArmCore* arm_core_for_midr(uint64_t midr);

// The lane-FMA table dispatch offers first for a CPU with this MIDR: the core's variant, or
// "arm64+neon+fmla-lane" (the first of lane_variants.def) for an unknown core.
const char* lane_variant_for_midr(uint64_t midr);

// The MIDR dispatch goes by: PG_CPU_MIDR (hex; tests pretend to be another core with it), else
// the sysfs MIDR of the first of the highest-capacity cores (core/cpu_topology.hpp: a phone's
// big core, not cpu0, which is usually a little one), else on aarch64 the running core's
// MIDR_EL1 (readable from user space where the kernel sets HWCAP_CPUID), else 0 (unknown).
uint64_t dispatch_midr();

// "cortex-a76 (MIDR 0x414fd0b1)", "unknown core (MIDR 0x...)", or "MIDR unknown" for 0.
std::string describe_midr(uint64_t midr);

}  // namespace pg::kernels
