// Which GEMM variant an AArch64 core gets: MIDR decoding (kernels/arm_cores.hpp), the sysfs
// topology it is read from (core/cpu_topology.hpp, on a fake phone's sysfs), and the overrides.
// Plain C++, so these run natively on x86 too; test_kernels_arm.cpp checks that dispatch really
// orders the aarch64 tables by it, under qemu.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "core/cpu_topology.hpp"
#include "kernels/arm_cores.hpp"
#include "fake_sysfs.hpp"

namespace {

using pg_test::ScopedEnv;
using pg_test::fake_sysfs;

// The names of lane_variants.def, gathered by the same X-macro the library uses.
const std::set<std::string>& variant_names() {
    static const std::set<std::string> names = {
#define PG_LANE_VARIANT(id, name, MR, NV, KU) name,
#include "kernels/neon/lane_variants.def"
#undef PG_LANE_VARIANT
    };
    return names;
}

uint64_t midr_of(unsigned implementer, unsigned variant, unsigned part, unsigned revision) {
    return (uint64_t(implementer) << 24) | (uint64_t(variant) << 20) | (0xfull << 16) |
           (uint64_t(part) << 4) | revision;
}

}  // namespace

TEST_CASE("every core of arm_cores.def decodes from its MIDR to a built variant", "[kernels]") {
    REQUIRE(!pg::kernels::arm_cores().empty());
    for (const pg::kernels::ArmCore& c : pg::kernels::arm_cores()) {
        CAPTURE(c.name);
        CHECK(variant_names().count(c.lane_variant) == 1);
        // Any variant (r) and revision (p) of the part is the same core design.
        for (unsigned variant : {0u, 1u, 4u})
            for (unsigned revision : {0u, 1u, 15u}) {
                const uint64_t midr = midr_of(c.implementer, variant, c.part, revision);
                const pg::kernels::ArmCore* found = pg::kernels::arm_core_for_midr(midr);
                REQUIRE(found != nullptr);
                CHECK(std::string(found->name) == c.name);
                CHECK(std::string(pg::kernels::lane_variant_for_midr(midr)) == c.lane_variant);
            }
    }
}

TEST_CASE("real MIDR values name their cores; an unknown core gets the default", "[kernels]") {
    // As qemu-aarch64 -cpu cortex-a76 / cortex-a53 report them (mrs MIDR_EL1).
    CHECK(std::string(pg::kernels::arm_core_for_midr(0x414fd0b1)->name) == "cortex-a76");
    CHECK(std::string(pg::kernels::arm_core_for_midr(0x410fd034)->name) == "cortex-a53");
    // The PhoneGPT phone's Exynos 9825: Exynos M4 big cores (r1p0) and Cortex-A55 little ones.
    CHECK(std::string(pg::kernels::arm_core_for_midr(0x531f0030)->name) == "exynos-m4");
    CHECK(std::string(pg::kernels::arm_core_for_midr(0x411fd050)->name) == "cortex-a55");
    CHECK(std::string(pg::kernels::describe_midr(0x414fd0b1)) ==
          "cortex-a76 (MIDR 0x414fd0b1)");
    // qemu -cpu max (implementer 0) and a zero MIDR: no table entry, the first variant.
    CHECK(pg::kernels::arm_core_for_midr(0x000f0510) == nullptr);
    CHECK(std::string(pg::kernels::lane_variant_for_midr(0x000f0510)) == "arm64+neon+fmla-lane");
    CHECK(std::string(pg::kernels::describe_midr(0x000f0510)) ==
          "unknown core (MIDR 0x000f0510)");
    CHECK(std::string(pg::kernels::describe_midr(0)) == "MIDR unknown");
}

TEST_CASE("the sysfs topology of a fake phone: the MIDR of its biggest core wins", "[kernels]") {
    const uint64_t a55 = 0x411fd050, a76 = 0x414fd0b1, x1 = 0x411fd440;
    // 4 little, 2 middle, 2 big cores, little first as on most phones.
    const std::string root = fake_sysfs(
        "sysfs-phone", {{a55, 250}, {a55, 250}, {a55, 250}, {a55, 250}, {a76, 700}, {a76, 700},
                        {x1, 1024}, {x1, 1024}});
    const std::vector<pg::CpuCore> cores = pg::read_cpu_cores(root);
    REQUIRE(cores.size() == 8);
    CHECK(cores[0].midr == a55);
    CHECK(cores[0].capacity == 250);
    CHECK(cores[7].midr == x1);
    const std::vector<pg::CpuCore> big = pg::fastest_cores(cores);
    REQUIRE(big.size() == 2);
    CHECK(big[0].index == 6);
    CHECK(big[1].index == 7);

    {
        ScopedEnv sysfs("PG_SYSFS_CPU_ROOT", root.c_str());
        ScopedEnv midr("PG_CPU_MIDR", nullptr);
        CHECK(pg::sysfs_cpu_root() == root);
        CHECK(pg::kernels::dispatch_midr() == x1);
        // PG_CPU_MIDR overrides whatever the system says.
        ScopedEnv forced("PG_CPU_MIDR", "0x531f0030");
        CHECK(pg::kernels::dispatch_midr() == 0x531f0030);
    }
    // No capacities (an older kernel): every core counts, and the first MIDR found is used.
    const std::string flat = fake_sysfs("sysfs-flat", {{0, -1}, {a76, -1}, {a76, -1}});
    CHECK(pg::fastest_cores(pg::read_cpu_cores(flat)).size() == 3);
    {
        ScopedEnv sysfs("PG_SYSFS_CPU_ROOT", flat.c_str());
        ScopedEnv midr("PG_CPU_MIDR", nullptr);
        CHECK(pg::kernels::dispatch_midr() == a76);
    }
    // A root that does not exist: no cores, nothing thrown.
    CHECK(pg::read_cpu_cores(root + "/missing").empty());
    CHECK(pg::fastest_cores({}).empty());
}
