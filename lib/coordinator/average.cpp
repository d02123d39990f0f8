// Adapter averaging. Per adapted linear: the exact weighted mean update M = sum_i w_i s_i B_i A_i
// is formed once as one product of the stacked factors ([out, R] x [R, in], R = sum of ranks),
// then each method builds its factors and is measured against M.
#include "coordinator/average.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace pg::lora {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapConst = Eigen::Map<const RowMat>;
using MapMut = Eigen::Map<RowMat>;

std::string which(std::size_t i) { return "adapter " + std::to_string(i); }

// The best rank-k approximation of M [out, in] (Eckart-Young) as an orthonormal basis Q [in, k]
// of its top right singular vectors: M ~ M Q Q^T. From the eigen-decomposition of the smaller
// Gram matrix in double, whose rounding (~1e-16 of sigma_1^2) stays far below the fp32 inputs'
// own; compiling Eigen's SVD solvers cost several times more (half a minute per build). With
// out < in the Gram matrix is M M^T, its top eigenvectors U_k, and M^T U_k = V_k S_k spans the
// same space: a Householder QR gives it an orthonormal basis, also where some sigma_j are zero.
struct Truncation {
    Eigen::MatrixXd basis;  // Q [in, k], columns by decreasing singular value
    double total2 = 0.0;    // sum of sigma_j^2 = ||M||_F^2
    double dropped2 = 0.0;  // sum of the sigma_j^2 not kept = ||M - M Q Q^T||_F^2
};

Truncation truncate_by_gram(const Eigen::MatrixXd& m, int rank) {
    const bool right = m.cols() <= m.rows();
    const Eigen::MatrixXd gram = right ? Eigen::MatrixXd(m.transpose() * m) : Eigen::MatrixXd(m * m.transpose());
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram);  // eigenvalues ascending
    require(eig.info() == Eigen::Success, PG_ERR_INTERNAL, "average: svd: the eigen-decomposition did not converge");
    const Eigen::Index n = gram.rows(), keep = std::min<Eigen::Index>(rank, n);
    Truncation t;
    for (Eigen::Index j = 0; j < n; ++j) {
        const double sigma2 = std::max(eig.eigenvalues()[j], 0.0);  // rounding can leave -tiny
        t.total2 += sigma2;
        if (j < n - keep) t.dropped2 += sigma2;
    }
    const Eigen::MatrixXd top = eig.eigenvectors().rightCols(keep).rowwise().reverse();
    if (right) {
        t.basis = top;
    } else {
        const Eigen::HouseholderQR<Eigen::MatrixXd> qr(m.transpose() * top);
        t.basis = qr.householderQ() * Eigen::MatrixXd::Identity(m.cols(), keep);
    }
    return t;
}

std::string layers_text(const LoraConfig& c) {
    if (c.layers.empty()) return "all layers";
    std::string s = "layers";
    for (int32_t l : c.layers) s += " " + std::to_string(l);
    return s;
}

void check_compatible(const std::vector<const Adapter*>& in, AverageMethod method) {
    const Adapter& first = *in[0];
    for (std::size_t i = 1; i < in.size(); ++i) {
        const Adapter& a = *in[i];
        require(a.base().fingerprint() == first.base().fingerprint(), PG_ERR_GEOMETRY,
                "average: " + which(i) + " was made for another base (" + a.base().describe() + ") than adapter 0 (" +
                    first.base().describe() + "): base fingerprints differ");
        require(a.config().target_modules == first.config().target_modules, PG_ERR_GEOMETRY,
                "average: " + which(i) + " targets modules " + std::to_string(a.config().target_modules) +
                    ", adapter 0 targets " + std::to_string(first.config().target_modules));
        require(a.config().layers == first.config().layers, PG_ERR_GEOMETRY,
                "average: " + which(i) + " adapts " + layers_text(a.config()) + ", adapter 0 adapts " +
                    layers_text(first.config()));
        if (method == AverageMethod::kFedAvgFactors || method == AverageMethod::kFrozenA) {
            require(a.config().rank == first.config().rank, PG_ERR_GEOMETRY,
                    std::string("average: ") + average_method_name(method) + " needs one rank: " + which(i) +
                        " has rank " + std::to_string(a.config().rank) + ", adapter 0 rank " +
                        std::to_string(first.config().rank) + " (cat and svd average different ranks)");
            require(a.scale() == first.scale(), PG_ERR_GEOMETRY,
                    std::string("average: ") + average_method_name(method) + " needs one scale: " + which(i) +
                        " has scale " + std::to_string(a.scale()) + ", adapter 0 " + std::to_string(first.scale()));
        }
        if (method == AverageMethod::kFrozenA) {
            for (std::size_t k = 0; k < first.linears().size(); ++k) {
                const AdaptedLinear& m = first.linears()[k];
                const std::size_t n = std::size_t(first.config().rank * m.in);
                require(std::equal(first.a(m), first.a(m) + n, a.a(a.linears()[k])), PG_ERR_GEOMETRY,
                        "average: frozen_a needs one shared A: " + which(i) + "'s A of layer " +
                            std::to_string(m.layer) + " " + target_name(m.target) +
                            " differs from adapter 0's (train every client with freeze_a and the same init_seed)");
            }
        }
    }
    if (method == AverageMethod::kFrozenA)
        require(first.config().freeze_a, PG_ERR_GEOMETRY,
                "average: frozen_a needs adapters trained with freeze_a (adapter 0 trained its A)");
}

std::vector<double> normalised(const std::vector<double>& weights, std::size_t n) {
    if (weights.empty()) return std::vector<double>(n, 1.0 / double(n));
    require(weights.size() == n, PG_ERR_INVALID_ARGUMENT,
            "average: " + std::to_string(weights.size()) + " weights for " + std::to_string(n) + " adapters");
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        require(std::isfinite(weights[i]) && weights[i] >= 0.0, PG_ERR_INVALID_ARGUMENT,
                "average: weight " + std::to_string(i) + " is " + std::to_string(weights[i]) +
                    " (finite and >= 0 needed)");
        sum += weights[i];
    }
    require(sum > 0.0 && std::isfinite(sum), PG_ERR_INVALID_ARGUMENT, "average: the weights sum to 0");
    std::vector<double> w(weights);
    for (double& x : w) x /= sum;
    return w;
}

// The exact weighted mean update of linear k: sum_i w_i s_i B_i A_i, [out, in].
RowMat exact_mean(const std::vector<const Adapter*>& in, const std::vector<double>& w, std::size_t k) {
    const AdaptedLinear& m0 = in[0]->linears()[k];
    int64_t total_rank = 0;
    for (const Adapter* a : in) total_rank += a->config().rank;
    RowMat b_cat(m0.out, total_rank), a_cat(total_rank, m0.in);
    int64_t at = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const Adapter& a = *in[i];
        const AdaptedLinear& m = a.linears()[k];
        const int r = a.config().rank;
        b_cat.middleCols(at, r) = MapConst(a.b(m), m.out, r) * float(w[i] * double(a.scale()));
        a_cat.middleRows(at, r) = MapConst(a.a(m), r, m.in);
        at += r;
    }
    return b_cat * a_cat;
}

// Per coordinate of the inputs' dense updates of linear k: the trimmed mean (dropping `trim`
// values at each end) or the median, [out, in].
RowMat coordinatewise(const std::vector<const Adapter*>& in, std::size_t k, AverageMethod method, double trim_fraction) {
    const AdaptedLinear& m0 = in[0]->linears()[k];
    const std::size_t n = in.size(), cells = std::size_t(m0.out * m0.in);
    std::vector<std::vector<float>> dense;
    for (const Adapter* a : in) dense.push_back(dense_update(*a, a->linears()[k]));
    const std::size_t trim = std::size_t(trim_fraction * double(n));
    RowMat out(m0.out, m0.in);
    float* o = out.data();
    std::vector<float> v(n);
    for (std::size_t c = 0; c < cells; ++c) {
        for (std::size_t i = 0; i < n; ++i) v[i] = dense[i][c];
        std::sort(v.begin(), v.end());
        if (method == AverageMethod::kMedian) {
            o[c] = n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
        } else {
            double sum = 0.0;
            for (std::size_t i = trim; i < n - trim; ++i) sum += v[i];
            o[c] = float(sum / double(n - 2 * trim));
        }
    }
    return out;
}

// Copies of the inputs whose whole update (every linear) is scaled down to the options' norm
// bound; the bound used and how many were scaled go to the report.
std::vector<Adapter> clipped_copies(const std::vector<const Adapter*>& in, const AverageOptions& o, AverageReport* report) {
    std::vector<double> norms;
    for (const Adapter* a : in) {
        double sum2 = 0.0;
        for (double x : update_norms(*a)) sum2 += x * x;
        norms.push_back(std::sqrt(sum2));
    }
    double bound = o.clip_norm;
    if (o.clip == ClipMode::kMedian) bound = median_of(norms);
    std::vector<Adapter> out;
    int clipped = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        out.push_back(*in[i]);
        if (norms[i] <= bound || norms[i] == 0.0) continue;
        const float f = float(bound / norms[i]);
        for (const AdaptedLinear& m : out.back().linears()) {
            float* b = out.back().b(m);
            for (int64_t j = 0; j < m.out * out.back().config().rank; ++j) b[j] *= f;
        }
        ++clipped;
    }
    if (report) report->clipped = clipped, report->clip_bound = bound;
    return out;
}

bool is_robust(AverageMethod m) { return m == AverageMethod::kTrimmedMean || m == AverageMethod::kMedian; }

LoraConfig result_config(const Adapter& first, int rank, AverageMethod method) {
    LoraConfig cfg = first.config();
    cfg.rank = rank;
    cfg.freeze_a = method == AverageMethod::kFrozenA;
    return cfg;
}

}  // namespace

const char* average_method_name(AverageMethod m) {
    switch (m) {
        case AverageMethod::kFedAvgFactors: return "fedavg_factors";
        case AverageMethod::kConcat: return "cat";
        case AverageMethod::kSvd: return "svd";
        case AverageMethod::kFrozenA: return "frozen_a";
        case AverageMethod::kTrimmedMean: return "trimmed_mean";
        case AverageMethod::kMedian: return "median";
    }
    return "unknown";
}

std::vector<double> update_norms(const Adapter& adapter) {
    const int r = adapter.config().rank;
    std::vector<double> out;
    for (const AdaptedLinear& m : adapter.linears()) {
        // ||B A||_F^2 = trace((B^T B)(A A^T)), both r x r.
        const Eigen::MatrixXd b = MapConst(adapter.b(m), m.out, r).cast<double>();
        const Eigen::MatrixXd a = MapConst(adapter.a(m), r, m.in).cast<double>();
        const double sq = ((b.transpose() * b).cwiseProduct(a * a.transpose())).sum();
        out.push_back(double(adapter.scale()) * std::sqrt(std::max(sq, 0.0)));
    }
    return out;
}

double median_of(std::vector<double> v) {
    require(!v.empty(), PG_ERR_INVALID_ARGUMENT, "median of nothing");
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<float> dense_update(const Adapter& adapter, const AdaptedLinear& m) {
    const int r = adapter.config().rank;
    std::vector<float> out(std::size_t(m.out * m.in));
    MapMut(out.data(), m.out, m.in) = (MapConst(adapter.b(m), m.out, r) * MapConst(adapter.a(m), r, m.in)) * adapter.scale();
    return out;
}

Adapter average_adapters(const std::vector<const Adapter*>& inputs, const std::vector<double>& weights,
                         const AverageOptions& options, AverageReport* report) {
    require(!inputs.empty(), PG_ERR_INVALID_ARGUMENT, "average: no adapters");
    for (std::size_t i = 0; i < inputs.size(); ++i)
        require(inputs[i] != nullptr, PG_ERR_INVALID_ARGUMENT, "average: " + which(i) + " is NULL");
    const AverageMethod method = options.method;
    check_compatible(inputs, method);
    require(!is_robust(method) || weights.empty(), PG_ERR_INVALID_ARGUMENT,
            std::string("average: ") + average_method_name(method) + " gives every adapter one vote: pass no weights");
    require(options.trim_fraction >= 0.0 && options.trim_fraction < 0.5, PG_ERR_INVALID_ARGUMENT,
            "average: trim_fraction " + std::to_string(options.trim_fraction) + " is outside [0, 0.5)");
    require(options.clip != ClipMode::kBound || (std::isfinite(options.clip_norm) && options.clip_norm > 0.0),
            PG_ERR_INVALID_ARGUMENT,
            "average: clip_norm " + std::to_string(options.clip_norm) + " is not a finite bound > 0");
    const std::vector<double> w = normalised(weights, inputs.size());
    std::vector<Adapter> clipped;
    std::vector<const Adapter*> in = inputs;
    if (options.clip != ClipMode::kNone) {
        clipped = clipped_copies(inputs, options, report);
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = &clipped[i];
    } else if (report) {
        report->clipped = 0, report->clip_bound = 0.0;
    }
    const Adapter& first = *in[0];

    int rank = first.config().rank;
    int max_rank = 0, sum_rank = 0;
    for (const Adapter* a : in) max_rank = std::max(max_rank, a->config().rank), sum_rank += a->config().rank;
    if (method == AverageMethod::kConcat) rank = sum_rank;
    if (method == AverageMethod::kSvd || is_robust(method)) {
        rank = options.svd_rank > 0 ? options.svd_rank : max_rank;
        require(options.svd_rank >= 0, PG_ERR_INVALID_ARGUMENT,
                "average: svd_rank " + std::to_string(options.svd_rank) + " is negative");
    }
    // The Adapter constructor checks the result's rank against the base (<= min(in, out)).
    Adapter out(result_config(first, rank, method), first.base());
    const float s_out = out.scale();

    double err2 = 0.0, ref2 = 0.0, dropped2 = 0.0, total2 = 0.0;
    for (std::size_t k = 0; k < first.linears().size(); ++k) {
        const AdaptedLinear& mo = out.linears()[k];
        const RowMat mean = is_robust(method) ? coordinatewise(in, k, method, options.trim_fraction) : exact_mean(in, w, k);
        MapMut a_out(out.a(mo), rank, mo.in), b_out(out.b(mo), mo.out, rank);
        switch (method) {
            case AverageMethod::kFedAvgFactors:
            case AverageMethod::kFrozenA: {
                a_out.setZero(), b_out.setZero();
                for (std::size_t i = 0; i < in.size(); ++i) {
                    const Adapter& a = *in[i];
                    const AdaptedLinear& m = a.linears()[k];
                    // Same scale for every input (checked), so s_i / s_out = 1.
                    a_out += MapConst(a.a(m), rank, m.in) * float(w[i]);
                    b_out += MapConst(a.b(m), m.out, rank) * float(w[i]);
                }
                if (method == AverageMethod::kFrozenA) a_out = MapConst(first.a(first.linears()[k]), rank, mo.in);
                break;
            }
            case AverageMethod::kConcat: {
                int64_t at = 0;
                for (std::size_t i = 0; i < in.size(); ++i) {
                    const Adapter& a = *in[i];
                    const AdaptedLinear& m = a.linears()[k];
                    const int r = a.config().rank;
                    a_out.middleRows(at, r) = MapConst(a.a(m), r, m.in);
                    b_out.middleCols(at, r) = MapConst(a.b(m), m.out, r) * float(w[i] * double(a.scale()) / double(s_out));
                    at += r;
                }
                break;
            }
            case AverageMethod::kSvd:
            case AverageMethod::kTrimmedMean:
            case AverageMethod::kMedian: {
                // A = V_k^T and B s = M V_k = U_k S_k.
                const Eigen::MatrixXd md = mean.cast<double>();
                const Truncation t = truncate_by_gram(md, rank);
                const Eigen::Index keep = t.basis.cols();
                total2 += t.total2, dropped2 += t.dropped2;
                a_out.setZero(), b_out.setZero();
                a_out.topRows(keep) = t.basis.transpose().cast<float>();
                b_out.leftCols(keep) = (md * t.basis / double(s_out)).cast<float>();
                break;
            }
        }
        const RowMat got = (b_out * a_out) * s_out;
        err2 += double((got - mean).squaredNorm());
        ref2 += double(mean.squaredNorm());
    }
    TrainingRecord& rec = out.record();
    for (const Adapter* a : in) rec.tokens += a->record().tokens;
    if (report) {
        report->rank = rank;
        report->relative_error = ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
        report->svd_residual = total2 > 0.0 ? std::sqrt(dropped2 / total2) : 0.0;
    }
    return out;
}

}  // namespace pg::lora
