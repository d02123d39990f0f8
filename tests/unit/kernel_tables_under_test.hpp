// The kernel tables a [kernels] test checks against the scalar reference.
//
// Natively: every table this CPU runs (available_tables(), the reference last), so one native
// run checks the lower tables too. Under emulation (the qemu dispatch tests set
// PG_TEST_TABLES=dispatched) only the table dispatch chose on the emulated CPU: those runs exist
// to show that dispatch picks that table and that it runs on a CPU without the higher
// extensions. The other tables, the scalar reference among them, are the same machine code the
// native run (x86) or the cortex-a53 run of every table (aarch64) already checked, and running
// them again under qemu cost most of CI's kernel time.
#pragma once

#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/kernel_table.hpp"

namespace pg::test {

inline std::vector<const pg::kernels::KernelTable*> kernel_tables_under_test() {
    const char* only = std::getenv("PG_TEST_TABLES");
    if (only == nullptr || std::strcmp(only, "dispatched") != 0) return pg::kernels::available_tables();
    return {&pg::kernels::active_table()};
}

}  // namespace pg::test
