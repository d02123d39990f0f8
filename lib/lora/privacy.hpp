// Client-side differential privacy for a LoRA update (the phone's side of DP-FedAvg, McMahan et
// al. 2018): before signing, the adapter's change during the round, delta = (A - A0, B - B0)
// against the round's starting adapter (A0, B0) as one vector, is clipped to an L2 norm C and
// every coordinate gets Gaussian noise N(0, (sigma C)^2); the adapter becomes start + noisy delta.
// With freeze_a the A factors are the round's shared A and stay exactly so (only B is released).
//
// Accounting (dp_epsilon): each round the phone took part in is one Gaussian mechanism of L2
// sensitivity C (add/remove of the phone's contribution: its clipped delta against none) and
// noise sigma C, whose Renyi DP of order alpha is alpha / (2 sigma^2) (Mironov 2017, Prop. 7);
// T rounds compose to T alpha / (2 sigma^2), and (eps, delta) follows from Mironov's conversion
// eps = RDP(alpha) + log(1/delta) / (alpha - 1), minimised over alpha > 1 in closed form. No
// amplification by subsampling is claimed: the coordinator sees which phone uploaded, so a
// phone's release is not hidden in a random sample. (Replace-one adjacency doubles the
// sensitivity: account with sigma / 2.)
#pragma once

#include <cstdint>

#include "lora/adapter.hpp"

namespace pg::lora {

struct PrivacyOptions {
    double clip_norm = 1.0;         // C > 0
    double noise_multiplier = 1.0;  // sigma >= 0 (0: clipping only, no privacy)
    uint64_t seed = 0;              // the noise's draw
};

struct PrivacyReport {
    double delta_norm = 0.0;    // ||delta|| before clipping
    bool clipped = false;       // delta_norm > C
    double noise_stddev = 0.0;  // sigma C per coordinate
    int64_t noised = 0;         // how many parameters got noise
};

// `start` is the adapter the round began from: same configuration and base as `adapter`.
PrivacyReport privatize_update(Adapter& adapter, const Adapter& start, const PrivacyOptions& options);

// The Renyi DP of order alpha > 1 of `rounds` compositions of the Gaussian mechanism with
// noise multiplier sigma: rounds alpha / (2 sigma^2).
double gaussian_rdp(double sigma, double alpha, int64_t rounds);

struct PrivacyBudget {
    double epsilon = 0.0;
    double order = 0.0;  // the alpha that gave it
};
// (eps, delta)-DP after `rounds` rounds at noise multiplier sigma > 0, delta in (0, 1).
PrivacyBudget dp_epsilon(double sigma, int64_t rounds, double delta);

}  // namespace pg::lora
