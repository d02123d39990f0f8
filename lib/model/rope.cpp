#include "model/rope.hpp"

#include <cmath>

namespace pg {

std::vector<double> rope_inverse_frequencies(const ModelConfig& cfg) {
    const int d = cfg.head_dim(), half = d / 2;
    std::vector<double> inv(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) inv[i] = 1.0 / std::pow(double(cfg.rope_theta), 2.0 * i / d);
    if (cfg.rope_scaling_factor == 0.0f) return inv;
    // Llama 3: wavelengths longer than original / low_freq_factor are stretched by the factor,
    // shorter than original / high_freq_factor kept, and those between interpolated smoothly.
    const double pi = std::acos(-1.0), factor = cfg.rope_scaling_factor;
    const double low = cfg.rope_low_freq_factor, high = cfg.rope_high_freq_factor;
    const double original = cfg.rope_original_max_positions;
    for (double& f : inv) {
        const double wavelength = 2.0 * pi / f;
        if (wavelength > original / low) {
            f /= factor;
        } else if (wavelength >= original / high) {
            const double smooth = (original / wavelength - low) / (high - low);
            f = (1.0 - smooth) * f / factor + smooth * f;
        }
    }
    return inv;
}

void rope_angles(const ModelConfig& cfg, int first, int n, float* cos, float* sin) {
    const std::vector<double> inv = rope_inverse_frequencies(cfg);
    const std::size_t half = inv.size();
    for (int p = 0; p < n; ++p)
        for (std::size_t i = 0; i < half; ++i) {
            const double angle = double(first + p) * inv[i];
            cos[std::size_t(p) * half + i] = float(std::cos(angle));
            sin[std::size_t(p) * half + i] = float(std::sin(angle));
        }
}

}  // namespace pg
