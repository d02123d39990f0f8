// The causal-attention tile kernels (kernels::attn_scores, attn_accumulate) of every kernel table
// this CPU runs, and the scalar reference, against a double-precision truth: partial row tiles,
// partial last vectors, odd depths, and causal offsets from rows that see nothing to tiles that
// see everything. Operands are allocated to their exact size (nothing may be read past them), and
// the padding of each output row must stay untouched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/kernel_table.hpp"
#include "kernel_tables_under_test.hpp"
#include "kernels/reference/reference_kernels.hpp"

using pg::kernels::KernelTable;

namespace {

std::vector<float> random_vector(std::size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Every table under test, the reference table last: each is checked against the truth.
std::vector<const KernelTable*> tables() { return pg::test::kernel_tables_under_test(); }

const float kSentinel = 12345.0f;
const int kDiags[] = {-3, 0, 5, 1000};

// A float sum of K products against the exact one: within about K rounding errors of the sum of
// the products' magnitudes.
bool close(double got, double truth, double magnitude, int K) {
    return std::fabs(got - truth) <= 1.2e-7 * double(K + 2) * magnitude + 1e-30;
}

// Elementwise within rel of the reference tensor's largest magnitude.
int count_far(const std::vector<float>& got, const std::vector<float>& want, double rel) {
    double scale = 1e-30;
    for (float w : want) scale = std::max(scale, double(std::fabs(w)));
    int far = 0;
    for (size_t i = 0; i < got.size(); ++i) far += std::fabs(double(got[i]) - want[i]) > rel * scale;
    return far;
}

}  // namespace

TEST_CASE("attn_scores computes every visible score and writes nothing outside S", "[kernels][attention]") {
    for (const KernelTable* t : tables()) {
        for (int M : {1, 5, 13, 64})
            for (int N : {1, 7, 33, 77, 128})
                for (int K : {1, 4, 32, 33})
                    for (int diag : kDiags) {
                        CAPTURE(t->name, M, N, K, diag);
                        const int64_t lda = K + 3, ldb = N + 2, lds = N + 4;
                        const auto A = random_vector(size_t((M - 1) * lda + K), uint32_t(M * 7 + K));
                        const auto Bt = random_vector(size_t((K - 1) * ldb + N), uint32_t(N * 5 + K));
                        std::vector<float> S(size_t(M * lds), kSentinel);
                        const float alpha = 0.37f;
                        t->attn_scores(S.data(), lds, A.data(), lda, Bt.data(), ldb, M, N, K, alpha, diag);
                        int wrong = 0, touched = 0;
                        for (int i = 0; i < M; ++i) {
                            for (int j = 0; j < N && j <= i + diag; ++j) {
                                double truth = 0.0, magnitude = 0.0;
                                for (int k = 0; k < K; ++k) {
                                    const double p = double(A[size_t(i * lda + k)]) * Bt[size_t(k * ldb + j)];
                                    truth += p;
                                    magnitude += std::fabs(p);
                                }
                                wrong += !close(S[size_t(i * lds + j)], alpha * truth, alpha * magnitude, K);
                            }
                            for (int64_t j = N; j < lds; ++j) touched += S[size_t(i * lds + j)] != kSentinel;
                        }
                        CHECK(wrong == 0);
                        CHECK(touched == 0);
                    }
    }
}

TEST_CASE("attn_accumulate adds op(A) B to C, plain and transposed, skipping only zeros",
          "[kernels][attention]") {
    for (const KernelTable* t : tables()) {
        for (bool trans : {false, true})
            for (int M : {1, 5, 13, 64})
                for (int N : {1, 4, 7, 32, 33})
                    for (int K : {1, 13, 64, 77})
                        for (int diag : kDiags) {
                            CAPTURE(t->name, trans, M, N, K, diag);
                            // op(A)[i, k], 0 where the mask hides it (plain: rows are queries, k
                            // keys; transposed: rows are keys, k queries).
                            const int64_t lda = trans ? M + 1 : K + 1, ldb = N + 3, ldc = N + 2;
                            std::vector<float> A = random_vector(
                                size_t(trans ? (K - 1) * lda + M : (M - 1) * lda + K), uint32_t(M * 11 + K));
                            auto at = [&](int i, int k) -> float& {
                                return A[size_t(trans ? k * lda + i : i * lda + k)];
                            };
                            for (int i = 0; i < M; ++i)
                                for (int k = 0; k < K; ++k)
                                    if (trans ? i > k + diag : k > i + diag) at(i, k) = 0.0f;
                            const auto Bm = random_vector(size_t((K - 1) * ldb + N), uint32_t(N * 13 + K));
                            std::vector<float> C0 = random_vector(size_t(M * ldc), uint32_t(M + N));
                            for (int i = 0; i < M; ++i)
                                for (int64_t j = N; j < ldc; ++j) C0[size_t(i * ldc + j)] = kSentinel;
                            std::vector<float> C = C0;
                            t->attn_accumulate(C.data(), ldc, A.data(), lda, trans, Bm.data(), ldb, M, N, K, diag);
                            int wrong = 0, touched = 0;
                            for (int i = 0; i < M; ++i) {
                                for (int j = 0; j < N; ++j) {
                                    double truth = C0[size_t(i * ldc + j)], magnitude = std::fabs(truth);
                                    for (int k = 0; k < K; ++k) {
                                        const double p = double(at(i, k)) * Bm[size_t(k * ldb + j)];
                                        truth += p;
                                        magnitude += std::fabs(p);
                                    }
                                    wrong += !close(C[size_t(i * ldc + j)], truth, magnitude, K);
                                }
                                for (int64_t j = N; j < ldc; ++j) touched += C[size_t(i * ldc + j)] != kSentinel;
                            }
                            CHECK(wrong == 0);
                            CHECK(touched == 0);
                        }
    }
}

TEST_CASE("the attention kernels of every table agree with the scalar reference", "[kernels][attention]") {
    // The engine's shapes: head size 32, query blocks of 64 against 64 and 128 keys (diag 64), and
    // an odd last block of 13 rows against 77 keys.
    struct Shape {
        int M, N, K, diag;
    };
    for (const KernelTable* t : tables()) {
        for (Shape s : {Shape{64, 64, 32, 0}, Shape{64, 128, 32, 64}, Shape{13, 77, 32, 64}}) {
            CAPTURE(t->name, s.M, s.N, s.K, s.diag);
            const auto Q = random_vector(size_t(s.M * s.K), 3), Kt = random_vector(size_t(s.K * s.N), 4);
            std::vector<float> S(size_t(s.M * s.N), 0.0f), S_ref = S;
            t->attn_scores(S.data(), s.N, Q.data(), s.K, Kt.data(), s.N, s.M, s.N, s.K, 0.25f, s.diag);
            pg::kernels::reference::attn_scores(S_ref.data(), s.N, Q.data(), s.K, Kt.data(), s.N, s.M, s.N, s.K,
                                                0.25f, s.diag);
            // P V with P hidden past the diagonal, as the forward pass has it.
            for (int i = 0; i < s.M; ++i)
                for (int j = i + s.diag + 1; j < s.N; ++j) S[size_t(i * s.N + j)] = S_ref[size_t(i * s.N + j)] = 0.0f;
            CHECK(count_far(S, S_ref, 1e-5) == 0);
            const auto V = random_vector(size_t(s.N * s.K), 5);
            std::vector<float> Y(size_t(s.M * s.K), 0.0f), Y_ref = Y;
            t->attn_accumulate(Y.data(), s.K, S.data(), s.N, false, V.data(), s.K, s.M, s.K, s.N, s.diag);
            pg::kernels::reference::attn_accumulate(Y_ref.data(), s.K, S.data(), s.N, false, V.data(), s.K, s.M,
                                                    s.K, s.N, s.diag);
            CHECK(count_far(Y, Y_ref, 1e-5) == 0);
            // P^T dY (the transposed accumulation), into the keys' rows.
            const auto dY = random_vector(size_t(s.M * s.K), 6);
            std::vector<float> dV(size_t(s.N * s.K), 0.0f), dV_ref = dV;
            t->attn_accumulate(dV.data(), s.K, S.data(), s.N, true, dY.data(), s.K, s.N, s.K, s.M, s.diag);
            pg::kernels::reference::attn_accumulate(dV_ref.data(), s.K, S.data(), s.N, true, dY.data(), s.K, s.N,
                                                    s.K, s.M, s.diag);
            CHECK(count_far(dV, dV_ref, 1e-5) == 0);
        }
    }
}
