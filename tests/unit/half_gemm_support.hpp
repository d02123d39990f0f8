// What the reduced-precision GEMM tests share (test_kernels_fp16.cpp, test_kernels_bf16.cpp):
// the relative RMS error of a C against a reference C, and bitwise equality of two results.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/dispatch.hpp"

namespace half_gemm_test {

// sqrt(sum (x - ref)^2 / sum ref^2) over the M x N elements of g's C (ldc apart).
inline double relative_rms(const std::vector<float>& x, const std::vector<float>& ref, const pg::kernels::GemmArgs& g) {
    double num = 0.0, den = 0.0;
    for (int i = 0; i < g.M; ++i)
        for (int j = 0; j < g.N; ++j) {
            const double r = ref[std::size_t(i) * g.ldc + j], d = x[std::size_t(i) * g.ldc + j] - r;
            num += d * d;
            den += r * r;
        }
    return std::sqrt(num / den);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace half_gemm_test
