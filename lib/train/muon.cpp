#include "train/muon.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/dispatch.hpp"

namespace pg {

std::vector<MuonMatrix> muon_matrices(const std::vector<TensorEntry>& tensors) {
    std::vector<MuonMatrix> out;
    for (const TensorEntry& e : tensors) {
        if (!e.is_linear_weight) continue;
        out.push_back(MuonMatrix{e.offset, int(e.shape[0]), int(e.shape[1])});
    }
    return out;
}

void MuonScratch::reserve(int rows, int cols) {
    const std::size_t full = std::size_t(rows) * std::size_t(cols);
    const std::size_t small = std::size_t(std::min(rows, cols));
    auto grow = [](AlignedBuffer<float>& b, std::size_t n) {
        if (b.size() < n) b.resize(n);
    };
    grow(x, full);
    grow(y, full);
    grow(mixed, full);
    grow(ortho, full);
    grow(gram, small * small);
    grow(poly, small * small);
}

void newton_schulz5(const float* g, int rows, int cols, float* out, MuonScratch& scratch) {
    scratch.reserve(rows, cols);
    const bool tall = rows > cols;
    const int m = tall ? cols : rows, n = tall ? rows : cols;  // X is m x n, m <= n
    float* x = scratch.x.data();
    float* y = scratch.y.data();
    float* gram = scratch.gram.data();
    float* poly = scratch.poly.data();
    const int64_t count = int64_t(m) * n;
    if (tall)
        kernels::transpose(x, rows, g, cols, rows, cols);
    else
        std::memcpy(x, g, std::size_t(count) * sizeof(float));
    const float inv = float(1.0 / (std::sqrt(kernels::sum_squares(x, count)) + 1e-7));
    for (int64_t i = 0; i < count; ++i) x[i] *= inv;
    for (int it = 0; it < kMuonNsSteps; ++it) {
        kernels::sgemm(kernels::gemm_args(false, true, m, m, n, x, n, x, n, gram, m));      // A = X X^T
        kernels::sgemm(kernels::gemm_args(false, false, m, m, m, gram, m, gram, m, poly, m));  // A^2
        for (int64_t i = 0; i < int64_t(m) * m; ++i) poly[i] = kMuonNsB * gram[i] + kMuonNsC * poly[i];
        std::memcpy(y, x, std::size_t(count) * sizeof(float));
        kernels::sgemm(kernels::gemm_args(false, false, m, n, m, poly, m, x, n, y, n, 1.0f, kMuonNsA));  // aX + BX
        std::swap(x, y);
    }
    if (tall)
        kernels::transpose(out, cols, x, rows, cols, rows);
    else
        std::memcpy(out, x, std::size_t(count) * sizeof(float));
}

void muon_update(float* params, const float* grads, float* momentum, const std::vector<MuonMatrix>& matrices,
                 const MuonStep& s, std::vector<MuonScratch>& scratch, ThreadPool& pool) {
    if (scratch.size() < std::size_t(pool.size())) scratch.resize(std::size_t(pool.size()));
    const float mu = s.momentum, one_minus = 1.0f - s.momentum;
    pool.parallel_for(int64_t(matrices.size()), [&](int thread, int64_t begin, int64_t end) {
        MuonScratch& work = scratch[std::size_t(thread)];
        for (int64_t k = begin; k < end; ++k) {
            const MuonMatrix& mat = matrices[std::size_t(k)];
            work.reserve(mat.rows, mat.cols);
            const int64_t count = int64_t(mat.rows) * mat.cols;
            float* p = params + mat.offset;
            const float* g = grads + mat.offset;
            float* buf = momentum + mat.offset;
            float* mixed = work.mixed.data();
            for (int64_t i = 0; i < count; ++i) {
                buf[i] = mu * buf[i] + one_minus * g[i];
                mixed[i] = one_minus * g[i] + mu * buf[i];
            }
            float* ortho = work.ortho.data();
            newton_schulz5(mixed, mat.rows, mat.cols, ortho, work);
            const float scale = 0.2f * std::sqrt(float(std::max(mat.rows, mat.cols)));
            for (int64_t i = 0; i < count; ++i) p[i] -= s.lr * (scale * ortho[i] + s.weight_decay * p[i]);
        }
    });
}

}  // namespace pg
