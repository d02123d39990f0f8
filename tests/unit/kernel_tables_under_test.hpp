// The kernel tables a [kernels] test checks against the scalar reference.
//
// Natively: every table this CPU runs (available_tables(), the reference last), so one native
// run checks the lower tables too. Under emulation (the qemu dispatch tests set
// PG_TEST_TABLES=dispatched) only the table dispatch chose on the emulated CPU, plus the
// reference: those runs exist to show that dispatch picks that table and that it runs on a CPU
// without the higher extensions; the native run already checked the other tables, and running
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
    const pg::kernels::KernelTable* active = &pg::kernels::active_table();
    const pg::kernels::KernelTable* reference = &pg::kernels::reference_table();
    if (active == reference) return {reference};
    return {active, reference};
}

}  // namespace pg::test
