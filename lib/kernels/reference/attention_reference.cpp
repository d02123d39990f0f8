// The scalar attention-tile kernels (kernels/dispatch.hpp: attn_scores, attn_accumulate): the
// visible scores, and the full product for the accumulation (the hidden entries of op(A) are 0,
// so skipping them, as the SIMD tables do, changes nothing), as plain loops like the reference
// sgemm (compiled with -ffp-contract=off as reference_kernels.cpp is: kernels.cmake).
#include <algorithm>

#include "kernels/reference/reference_kernels.hpp"

namespace pg::kernels::reference {

void attn_scores(float* S, int64_t lds, const float* A, int64_t lda, const float* Bt, int64_t ldb,
                 int M, int N, int K, float alpha, int diag) {
    for (int i = 0; i < M; ++i) {
        const int visible = int(std::min<int64_t>(N, int64_t(i) + diag + 1));
        for (int j = 0; j < visible; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += A[i * lda + k] * Bt[k * ldb + j];
            S[i * lds + j] = alpha * acc;
        }
    }
}

void attn_accumulate(float* C, int64_t ldc, const float* A, int64_t lda, bool trans_a, const float* B,
                     int64_t ldb, int M, int N, int K, int diag) {
    (void)diag;  // only says where op(A) is 0
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) {
                const float a = trans_a ? A[k * lda + i] : A[i * lda + k];
                acc += a * B[k * ldb + j];
            }
            C[i * ldc + j] += acc;
        }
}

}  // namespace pg::kernels::reference
