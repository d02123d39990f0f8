// Averaging many adapters of one base into one (the coordinator's FedAvg step), by a method
// the caller names, because the obvious one is not exact: for updates dW_i = s_i B_i A_i with
// weights w_i (normalised to sum 1), the mean update is sum_i w_i s_i B_i A_i, and
//   - kFedAvgFactors averages A and B separately: s (sum w_i B_i)(sum w_i A_i), which is NOT the
//     mean update (the report gives its relative error against it);
//   - kConcat stacks the factors (PEFT's "cat"): A = [A_1; ...; A_n], B = [w_1 s_1/s B_1, ...],
//     exact, rank = sum of the ranks;
//   - kSvd forms the exact mean update and keeps its best rank-k approximation (Eigen's SVD):
//     B = U_k S_k / s, A = V_k^T; the report gives the relative Frobenius residual;
//   - kFrozenA (FFA-LoRA): every input has the same frozen A, so averaging B is exact.
//   - kTrimmedMean / kMedian (robust): per coordinate of the dense updates, the mean of what is
//     left after dropping the trim_fraction largest and smallest values, or the median; then
//     re-compressed as kSvd. Each adapter is one vote (no weights), so a few poisoned uploads
//     cannot pull the result further than the honest values around them.
// Before any method, each adapter's whole update (all linears) can be clipped to a norm bound:
// the median of the inputs' norms, or a given bound, so no upload weighs more than a typical one.
// The result is a complete adapter: configuration, base identity and a training record
// (tokens = the inputs' total; no steps of its own).
#pragma once

#include <vector>

#include "lora/adapter.hpp"

namespace pg::lora {

enum class AverageMethod { kFedAvgFactors = 0, kConcat = 1, kSvd = 2, kFrozenA = 3, kTrimmedMean = 4, kMedian = 5 };
enum class ClipMode { kNone = 0, kMedian = 1, kBound = 2 };

// "fedavg_factors", "cat", "svd", "frozen_a", "trimmed_mean", "median"
const char* average_method_name(AverageMethod m);

struct AverageOptions {
    AverageMethod method = AverageMethod::kFedAvgFactors;
    int svd_rank = 0;  // kSvd, kTrimmedMean, kMedian: the result's rank; 0 = the largest input rank
    ClipMode clip = ClipMode::kNone;
    double clip_norm = 0.0;        // kBound: the bound on an update's Frobenius norm (> 0)
    double trim_fraction = 0.25;   // kTrimmedMean: dropped at each end, in [0, 0.5)
};

struct AverageReport {
    int rank = 0;                    // of the result
    // ||s B A - mean update||_F / ||mean update||_F over every adapted linear (measured in
    // fp32 for every method: ~1e-7 for the exact ones).
    double relative_error = 0.0;
    // kSvd: the truncation's relative residual sqrt(sum of dropped sigma^2 / sum of sigma^2)
    // over every adapted linear (computed in double); 0 for the other methods.
    double svd_residual = 0.0;
    int clipped = 0;          // how many updates the clipping scaled down
    double clip_bound = 0.0;  // the norm bound applied (0 without clipping)
};

// `weights` empty = equal weights; otherwise one finite, non-negative weight per adapter with a
// positive sum (e.g. example counts). Inputs must share the base (fingerprint), the targets
// and layers; kFedAvgFactors also the rank and scale, kFrozenA the rank, scale and A factors.
// A mismatch is PG_ERR_GEOMETRY naming the adapter and both sides.
Adapter average_adapters(const std::vector<const Adapter*>& adapters, const std::vector<double>& weights,
                         const AverageOptions& options, AverageReport* report);

// The dense update s B A [out, in] of one adapted linear (row-major), for checks and tests.
std::vector<float> dense_update(const Adapter& adapter, const AdaptedLinear& linear);

// ||s B A||_F of every adapted linear, in the adapter's order (from the r x r Gram matrices of
// the factors, in double: no dense product).
std::vector<double> update_norms(const Adapter& adapter);

// The median of `v` (the mean of the two middle values for an even count); v not empty.
double median_of(std::vector<double> v);

}  // namespace pg::lora
