// The FP16-arithmetic inference GEMM (GemmArgs::fp16_arithmetic): what it computes, shared by
// the AArch64 kernel (kernels/neon/fp16_gemm.cpp, ARMv8.2-FP16, FMLA .8h) and its exact scalar
// model (reference::sgemm_fp16_arithmetic), which the tests hold it to bit for bit.
//
// For each element of C, within each K block of kFp16BlockK (the blocks start at k = 0):
//   every run of kFp16PartialK consecutive k (the last run of a block may be shorter) is summed
//   in fp16: p = 0; p = fp16(a_k * b_k + p) for each k of the run (one rounding per FMLA), where
//   a_k is op(A)[i, k] rounded to fp16 (to nearest even) and b_k the fp16 weight;
//   each run's p is added to an fp32 accumulator: acc = acc + float(p) (rounded in fp32);
//   then C = epilogue(acc) as in every GEMM of the library (alpha acc + beta C + bias; beta 1
//   for the later K blocks), and the fused GELU on the finished element.
// Measured (docs/phone.md): relative RMS error of the logits 6.4e-4 against the fp32 product of
// the same fp16 weights, where summing the whole K in fp16 gives 1.7e-3 to 3.3e-3.
//
// Overflow guard: a run's partial sum is at most kFp16PartialK * max|a| * max|b|; dispatch only
// takes this GEMM when that bound is below kFp16PartialBound (2^14, a quarter of fp16's largest
// 65504, so no partial sum and no rounded A value can overflow), else the exact fp32 GEMM.
#pragma once

#include "kernels/dispatch.hpp"

namespace pg::kernels {

constexpr int kFp16BlockK = 512;      // K block: a [512, 8] fp16 panel is 8 KB, as fp32's [256, 8]
constexpr int kFp16PartialK = 16;     // products per fp16 partial sum
constexpr float kFp16PartialBound = 16384.0f;

// Whether an fp16-arithmetic GEMM over A values with |a| <= a_max_abs and weights with
// |b| <= b_max_abs keeps every partial sum below kFp16PartialBound (false for NaN bounds).
inline bool fp16_partials_bounded(float a_max_abs, float b_max_abs) {
    return a_max_abs <= kFp16PartialBound && b_max_abs >= 0.0f &&
           float(kFp16PartialK) * a_max_abs * b_max_abs < kFp16PartialBound;
}

#if defined(__aarch64__)
namespace neon {
// kernels/neon/fp16_gemm.cpp (built with -march=armv8.2-a+fp16; call only where HWCAP has
// asimdhp). sgemm_fp16: the GEMM above for an fp16 B16 and a plain A (trans_a false), M, N,
// K > 0. max_abs: the largest |x| over A[M, K] (NaN if any is NaN).
void sgemm_fp16(const GemmArgs& g);
float max_abs(const float* A, int M, int K, int lda);
}  // namespace neon
#endif

}  // namespace pg::kernels
