#include "core/cpu_topology.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>

namespace pg {

namespace {

// The first word of a small sysfs file ("0x00000000414fd0b1", "1024"); empty if unreadable.
// Not read_small_file: sysfs files report a size of 4096 whatever they hold.
std::string first_word(const std::string& path) {
    std::ifstream in(path);
    std::string word;
    if (in) in >> word;
    return word;
}

}  // namespace

std::string sysfs_cpu_root() {
    const char* root = std::getenv("PG_SYSFS_CPU_ROOT");
    return root && *root ? root : "/sys/devices/system/cpu";
}

std::vector<CpuCore> read_cpu_cores(const std::string& root) {
    std::vector<CpuCore> cores;
    DIR* dir = opendir(root.c_str());
    if (!dir) return cores;
    while (const dirent* e = readdir(dir)) {
        const std::string name = e->d_name;
        if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 ||
            name.find_first_not_of("0123456789", 3) != std::string::npos)
            continue;
        CpuCore c;
        c.index = std::atoi(name.c_str() + 3);
        const std::string folder = root + "/" + name;
        const std::string midr = first_word(folder + "/regs/identification/midr_el1");
        if (!midr.empty()) c.midr = std::strtoull(midr.c_str(), nullptr, 16);
        const std::string capacity = first_word(folder + "/cpu_capacity");
        if (!capacity.empty()) c.capacity = std::atoi(capacity.c_str());
        c.online = first_word(folder + "/online") != "0";  // cpu0 often has no online file
        cores.push_back(c);
    }
    closedir(dir);
    std::sort(cores.begin(), cores.end(),
              [](const CpuCore& a, const CpuCore& b) { return a.index < b.index; });
    return cores;
}

std::vector<CpuCore> fastest_cores(const std::vector<CpuCore>& cores) {
    int best = -1;
    for (const CpuCore& c : cores) best = std::max(best, c.capacity);
    std::vector<CpuCore> out;
    for (const CpuCore& c : cores)
        if (c.capacity == best) out.push_back(c);
    return out;
}

std::vector<CpuCore> cores_to_pin(const std::vector<CpuCore>& cores, int n_threads) {
    std::vector<CpuCore> online;
    for (const CpuCore& c : cores)
        if (c.online) online.push_back(c);
    std::vector<CpuCore> chosen;
    int below = INT32_MAX;  // the capacity classes >= below are already chosen
    while (static_cast<int>(chosen.size()) < n_threads) {
        int next = -1;
        for (const CpuCore& c : online)
            if (c.capacity < below) next = std::max(next, c.capacity);
        if (next < 0) break;  // no (further) known capacity
        for (const CpuCore& c : online)
            if (c.capacity == next) chosen.push_back(c);
        below = next;
    }
    if (chosen.empty() || chosen.size() == online.size()) return {};
    std::sort(chosen.begin(), chosen.end(),
              [](const CpuCore& a, const CpuCore& b) { return a.index < b.index; });
    return chosen;
}

std::string describe_cores(const std::vector<CpuCore>& cores) {
    std::string out;
    for (const CpuCore& c : cores) {
        if (!out.empty()) out += ' ';
        out += "cpu" + std::to_string(c.index) + " (" +
               (c.capacity >= 0 ? std::to_string(c.capacity) : std::string("?")) + ")";
    }
    return out;
}

}  // namespace pg
