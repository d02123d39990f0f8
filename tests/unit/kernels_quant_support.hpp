// Shared by the quantized-weight tests and benchmarks: random matrices, a quantized copy, and
// the comparisons.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant_blocks.hpp"

namespace quant_test {

inline std::vector<float> normals(std::size_t n, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

// A [rows, cols] matrix quantized with quantize_rows.
struct Quantized {
    pg::kernels::QuantFormat format;
    int64_t rows, cols;
    std::vector<unsigned char> bytes;
    Quantized(pg::kernels::QuantFormat f, const std::vector<float>& x, int64_t r, int64_t c)
        : format(f), rows(r), cols(c), bytes(pg::kernels::quant_matrix_bytes(f, r, c)) {
        pg::kernels::quantize_rows(f, x.data(), r, c, c, bytes.data(), "test weight");
    }
    const void* data() const { return bytes.data(); }
    std::vector<float> dequantized() const {
        std::vector<float> out(std::size_t(rows * cols));
        pg::kernels::dequantize(format, bytes.data(), 0, rows * cols, out.data());
        return out;
    }
};

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline double relative_rms(const std::vector<float>& got, const std::vector<float>& exact) {
    double err = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        err += (double(got[i]) - exact[i]) * (double(got[i]) - exact[i]);
        norm += double(exact[i]) * exact[i];
    }
    return std::sqrt(err / norm);
}

}  // namespace quant_test
