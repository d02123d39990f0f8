// The bf16-arithmetic GEMM (GemmArgs::bf16_arithmetic): what it computes, shared by the x86
// kernel (kernels/x86/bf16_gemm.cpp, AVX512_BF16's VDPBF16PS) and its exact scalar model
// (reference::sgemm_bf16_arithmetic), which the tests hold it to bit for bit.
//
// For each element of C, within each K block of kBf16BlockK (the blocks start at k = 0):
//   acc = 0; for each pair of k (k0, k0 + 1) of the block, k0 - block start even (a block of odd
//   length ends with a pair whose second value is 0 on both sides):
//     acc = acc + a[k0 + 1] * b[k0 + 1], then acc = acc + a[k0] * b[k0], each add rounded to
//     fp32 (the order of VDPBF16PS: the odd element first), with denormal inputs read as 0 and
//     denormal results flushed to 0;
//   where a_k is op(A)[i, k] rounded to bf16 (to nearest even; a denormal fp32 as 0) and b_k the
//   bf16 weight (the product of two bf16 values is exact in fp32);
//   then C = epilogue(acc) as in every GEMM of the library (alpha acc + beta C + bias; beta 1
//   for the later K blocks), and the fused GELU on the finished element.
// The rounding of A is the whole error: bf16 keeps 8 of fp32's 24 significand bits, so each
// product is off by up to 2^-9 relative (measured in docs/performance.md "bf16 arithmetic").
// bf16 has fp32's exponent range, so no input that fp32 takes overflows here.
#pragma once

#include "kernels/dispatch.hpp"

namespace pg::kernels {

constexpr int kBf16BlockK = 512;  // as the fp32 AVX-512 GEMM's K block

#if defined(__x86_64__)
namespace x86 {
// kernels/x86/bf16_gemm.cpp (built with -mavx512bf16; call only where CPUID reports AVX512_BF16
// and AVX-512 BW): the GEMM above for a bf16 B16 and a plain A (trans_a false), M, N, K > 0.
void sgemm_bf16(const GemmArgs& g);
}  // namespace x86
#endif

}  // namespace pg::kernels
