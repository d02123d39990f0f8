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

namespace {

// Rows per panel of the symmetric products below. X X^T and A^2 (A symmetric) are symmetric, and
// their two halves agree bit for bit: element (i, j) is the sum over k of x_ik x_jk (a_ik a_kj),
// element (j, i) the same products (fma(a, b, c) = fma(b, a, c)) in the same order of k, since
// the GEMM computes every element of C by the same sequence of operations wherever its tile
// falls (kernels/dispatch.hpp). So each panel of kSymPanel rows is computed from its diagonal
// block on, and the rest is copied from the transpose: 5/8 of the products at m = 128. The
// panels' widths, m - p kSymPanel, stay multiples of 32, so no table's GEMM takes its
// dot-product path for a tail of N % lanes columns (it does for N % lanes != 0, and such a
// column is not computed like the tile it mirrors); other sizes run the full products.
constexpr int kSymPanel = 32;

bool symmetric_panels(int m) { return m % kSymPanel == 0 && m > kSymPanel; }

// The lower triangle of a[m x m] from its upper one.
void mirror_upper(float* a, int m) {
    for (int i = 1; i < m; ++i)
        for (int j = 0; j < i; ++j) a[int64_t(i) * m + j] = a[int64_t(j) * m + i];
}

// gram[m x m] = X X^T for x[m x n].
void gram_matrix(const float* x, int m, int n, float* gram) {
    if (!symmetric_panels(m)) {
        kernels::sgemm(kernels::gemm_args(false, true, m, m, n, x, n, x, n, gram, m));
        return;
    }
    for (int r = 0; r < m; r += kSymPanel) {
        const float* rows = x + int64_t(r) * n;
        kernels::sgemm(kernels::gemm_args(false, true, kSymPanel, m - r, n, rows, n, rows, n,
                                          gram + int64_t(r) * m + r, m));
    }
    mirror_upper(gram, m);
}

// sq[m x m] = a a for a symmetric a[m x m].
void symmetric_square(const float* a, int m, float* sq) {
    if (!symmetric_panels(m)) {
        kernels::sgemm(kernels::gemm_args(false, false, m, m, m, a, m, a, m, sq, m));
        return;
    }
    for (int r = 0; r < m; r += kSymPanel)
        kernels::sgemm(kernels::gemm_args(false, false, kSymPanel, m - r, m, a + int64_t(r) * m, m, a + r, m,
                                          sq + int64_t(r) * m + r, m));
    mirror_upper(sq, m);
}

// x[m x n] (the wide orientation, normalised in place) <- NS5(x); returns the buffer holding
// the result (x or scratch.y).
float* iterate_ns5(float* x, int m, int n, MuonScratch& scratch) {
    float* y = scratch.y.data();
    float* gram = scratch.gram.data();
    float* poly = scratch.poly.data();
    const int64_t count = int64_t(m) * n;
    const float inv = float(1.0 / (std::sqrt(kernels::sum_squares(x, count)) + 1e-7));
    for (int64_t i = 0; i < count; ++i) x[i] *= inv;
    for (int it = 0; it < kMuonNsSteps; ++it) {
        gram_matrix(x, m, n, gram);        // A = X X^T
        symmetric_square(gram, m, poly);  // A^2
        for (int64_t i = 0; i < int64_t(m) * m; ++i) poly[i] = kMuonNsB * gram[i] + kMuonNsC * poly[i];
        std::memcpy(y, x, std::size_t(count) * sizeof(float));
        kernels::sgemm(kernels::gemm_args(false, false, m, n, m, poly, m, x, n, y, n, 1.0f, kMuonNsA));  // aX + BX
        std::swap(x, y);
    }
    return x;
}

}  // namespace

void newton_schulz5(const float* g, int rows, int cols, float* out, MuonScratch& scratch) {
    scratch.reserve(rows, cols);
    const bool tall = rows > cols;
    const int m = tall ? cols : rows, n = tall ? rows : cols;  // X is m x n, m <= n
    float* x = scratch.x.data();
    const int64_t count = int64_t(m) * n;
    if (tall)
        kernels::transpose(x, rows, g, cols, rows, cols);
    else
        std::memcpy(x, g, std::size_t(count) * sizeof(float));
    x = iterate_ns5(x, m, n, scratch);
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
            // The wide orientation works on the mixed matrix in place (no copy in or out); a
            // tall one is transposed to it and back (newton_schulz5).
            const bool tall = mat.rows > mat.cols;
            float* mixed = tall ? work.mixed.data() : work.x.data();
            for (int64_t i = 0; i < count; ++i) {
                buf[i] = mu * buf[i] + one_minus * g[i];
                mixed[i] = one_minus * g[i] + mu * buf[i];
            }
            const float* ortho = nullptr;
            if (tall) {
                newton_schulz5(mixed, mat.rows, mat.cols, work.ortho.data(), work);
                ortho = work.ortho.data();
            } else {
                ortho = iterate_ns5(mixed, mat.rows, mat.cols, work);
            }
            const float scale = 0.2f * std::sqrt(float(std::max(mat.rows, mat.cols)));
            for (int64_t i = 0; i < count; ++i) p[i] -= s.lr * (scale * ortho[i] + s.weight_decay * p[i]);
        }
    });
}

}  // namespace pg
