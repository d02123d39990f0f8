#include "lora/privacy.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace pg::lora {

namespace {

// Calls f(value, start_value) on every released parameter (A too unless it is frozen).
template <class F>
void for_each_released(Adapter& adapter, const Adapter& start, F&& f) {
    const int r = adapter.config().rank;
    for (std::size_t k = 0; k < adapter.linears().size(); ++k) {
        const AdaptedLinear& m = adapter.linears()[k];
        const AdaptedLinear& m0 = start.linears()[k];
        if (!adapter.config().freeze_a)
            for (int64_t j = 0; j < r * m.in; ++j) f(adapter.a(m)[j], start.a(m0)[j]);
        for (int64_t j = 0; j < m.out * r; ++j) f(adapter.b(m)[j], start.b(m0)[j]);
    }
}

}  // namespace

PrivacyReport privatize_update(Adapter& adapter, const Adapter& start, const PrivacyOptions& o) {
    require(std::isfinite(o.clip_norm) && o.clip_norm > 0.0, PG_ERR_INVALID_ARGUMENT,
            "privacy: clip_norm " + std::to_string(o.clip_norm) + " is not a finite value > 0");
    require(std::isfinite(o.noise_multiplier) && o.noise_multiplier >= 0.0, PG_ERR_INVALID_ARGUMENT,
            "privacy: noise_multiplier " + std::to_string(o.noise_multiplier) + " is not a finite value >= 0");
    const LoraConfig &c = adapter.config(), &c0 = start.config();
    require(start.base().fingerprint() == adapter.base().fingerprint(), PG_ERR_GEOMETRY,
            "privacy: the start adapter was made for another base (" + start.base().describe() + ") than the adapter (" +
                adapter.base().describe() + ")");
    require(c.rank == c0.rank && c.target_modules == c0.target_modules && c.layers == c0.layers &&
                c.freeze_a == c0.freeze_a && adapter.scale() == start.scale(),
            PG_ERR_GEOMETRY,
            "privacy: the start adapter's configuration (rank " + std::to_string(c0.rank) + ", targets " +
                std::to_string(c0.target_modules) + ") is not the adapter's (rank " + std::to_string(c.rank) +
                ", targets " + std::to_string(c.target_modules) + ", or other layers, scale or freeze_a)");
    PrivacyReport rep;
    double sum2 = 0.0;
    for_each_released(adapter, start, [&](float& v, float v0) { sum2 += (double(v) - v0) * (double(v) - v0); });
    rep.delta_norm = std::sqrt(sum2);
    rep.clipped = rep.delta_norm > o.clip_norm;
    const double keep = rep.clipped ? o.clip_norm / rep.delta_norm : 1.0;
    rep.noise_stddev = o.noise_multiplier * o.clip_norm;
    Rng rng(o.seed);
    for_each_released(adapter, start, [&](float& v, float v0) {
        v = float(double(v0) + (double(v) - v0) * keep + rep.noise_stddev * rng.normal());
        ++rep.noised;
    });
    return rep;
}

double gaussian_rdp(double sigma, double alpha, int64_t rounds) {
    require(sigma > 0.0 && alpha > 1.0 && rounds >= 0, PG_ERR_INVALID_ARGUMENT,
            "privacy: the Gaussian RDP needs sigma > 0, alpha > 1 and rounds >= 0");
    return double(rounds) * alpha / (2.0 * sigma * sigma);
}

PrivacyBudget dp_epsilon(double sigma, int64_t rounds, double delta) {
    require(std::isfinite(sigma) && sigma > 0.0, PG_ERR_INVALID_ARGUMENT,
            "privacy: noise_multiplier " + std::to_string(sigma) + " is not a finite value > 0");
    require(rounds >= 0, PG_ERR_INVALID_ARGUMENT, "privacy: rounds " + std::to_string(rounds) + " is negative");
    require(delta > 0.0 && delta < 1.0, PG_ERR_INVALID_ARGUMENT,
            "privacy: delta " + std::to_string(delta) + " is outside (0, 1)");
    PrivacyBudget b;
    if (rounds == 0) return b;  // nothing released
    // eps(alpha) = rho alpha + L / (alpha - 1), rho = T / (2 sigma^2), L = log(1/delta): its
    // minimum over alpha > 1 is at alpha - 1 = sqrt(L / rho), where eps = rho + 2 sqrt(rho L).
    const double rho = double(rounds) / (2.0 * sigma * sigma), L = std::log(1.0 / delta);
    b.order = 1.0 + std::sqrt(L / rho);
    b.epsilon = gaussian_rdp(sigma, b.order, rounds) + L / (b.order - 1.0);
    return b;
}

}  // namespace pg::lora
