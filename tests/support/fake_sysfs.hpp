// Test helpers for code that reads the environment and /sys/devices/system/cpu: a scoped
// environment variable, and a fake sysfs cpu tree (PG_SYSFS_CPU_ROOT points the library at it).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace pg_test {

// Sets an environment variable for one scope (nullptr: unsets it), restoring what was there.
struct ScopedEnv {
    std::string name, old;
    bool had;
    ScopedEnv(const char* n, const char* value) : name(n) {
        const char* o = std::getenv(n);
        had = o != nullptr;
        if (had) old = o;
        if (value) setenv(n, value, 1);
        else unsetenv(n);
    }
    ~ScopedEnv() {
        if (had) setenv(name.c_str(), old.c_str(), 1);
        else unsetenv(name.c_str());
    }
};

// One cpu<N> of a fake sysfs tree: MIDR 0 and capacity -1 leave their file out; online false
// writes "0" to cpu<N>/online (a hot-unplugged core).
struct FakeCpu {
    uint64_t midr = 0;
    int capacity = -1;
    bool online = true;
};

// A fake /sys/devices/system/cpu holding cpu0..cpu<n-1> laid out as the kernel does.
inline std::string fake_sysfs(const std::string& name, const std::vector<FakeCpu>& cpus) {
    const std::string root = tmp_dir() + "/" + name + "-" + std::to_string(getpid());
    mkdir(root.c_str(), 0755);
    for (std::size_t i = 0; i < cpus.size(); ++i) {
        const std::string cpu = root + "/cpu" + std::to_string(i);
        mkdir(cpu.c_str(), 0755);
        if (cpus[i].midr) {
            mkdir((cpu + "/regs").c_str(), 0755);
            mkdir((cpu + "/regs/identification").c_str(), 0755);
            char hex[32];
            std::snprintf(hex, sizeof hex, "0x%016llx\n",
                          static_cast<unsigned long long>(cpus[i].midr));
            std::ofstream(cpu + "/regs/identification/midr_el1") << hex;
        }
        if (cpus[i].capacity >= 0) std::ofstream(cpu + "/cpu_capacity") << cpus[i].capacity << "\n";
        std::ofstream(cpu + "/online") << (cpus[i].online ? "1\n" : "0\n");
    }
    mkdir((root + "/cpufreq").c_str(), 0755);  // not a cpu<N> folder: ignored
    return root;
}

}  // namespace pg_test
