// The median of a benchmark's timings, shared by the benchmarks that report one.
#pragma once

#include <algorithm>
#include <vector>

// The median (of an even count, the mean of the middle two); 0 for none.
inline double median_of(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
