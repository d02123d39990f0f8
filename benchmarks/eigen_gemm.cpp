// Eigen's GEMM on the same GemmArgs, as the yardstick bench_kernels compares sgemm against.
// On x86 this TU is compiled for AVX-512 (benchmarks/CMakeLists.txt) and only called when the
// CPU has it; on aarch64 Eigen uses NEON with the baseline flags. Single-threaded (Eigen is
// built without OpenMP here), so it is compared with sgemm on one thread.
#include "eigen_gemm.hpp"

#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>

namespace pg_bench {

void eigen_sgemm(const pg::kernels::GemmArgs& g) {
    using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using Map = Eigen::Map<Mat, 0, Eigen::OuterStride<>>;
    using CMap = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
    CMap A(g.A, g.trans_a ? g.K : g.M, g.trans_a ? g.M : g.K, Eigen::OuterStride<>(g.lda));
    CMap B(g.B, g.trans_b ? g.N : g.K, g.trans_b ? g.K : g.N, Eigen::OuterStride<>(g.ldb));
    Map C(g.C, g.M, g.N, Eigen::OuterStride<>(g.ldc));
    if (g.beta == 0.0f)
        C.setZero();
    else if (g.beta != 1.0f)
        C *= g.beta;
    if (!g.trans_a && !g.trans_b)
        C.noalias() += g.alpha * A * B;
    else if (!g.trans_a && g.trans_b)
        C.noalias() += g.alpha * A * B.transpose();
    else if (g.trans_a && !g.trans_b)
        C.noalias() += g.alpha * A.transpose() * B;
    else
        C.noalias() += g.alpha * A.transpose() * B.transpose();
    if (g.bias) C.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(g.bias, g.N);
}

bool eigen_available() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("fma");
#else
    return true;
#endif
}

}  // namespace pg_bench
