// Eigen's GEMM behind the kernels' GemmArgs (benchmarks only; see eigen_gemm.cpp).
#pragma once

#include "kernels/dispatch.hpp"

namespace pg_bench {

// C = alpha op(A) op(B) + beta C + bias, computed by Eigen. Call only if eigen_available().
void eigen_sgemm(const pg::kernels::GemmArgs& g);
// Whether this CPU runs the instruction set eigen_gemm.cpp was compiled for.
bool eigen_available();

}  // namespace pg_bench
