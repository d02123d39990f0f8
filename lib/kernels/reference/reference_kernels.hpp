// The scalar reference kernels: plain loops, written to be obviously right. They are the
// truth every SIMD kernel is tested against, and the table used when PG_KERNELS=reference.
#pragma once

#include "kernels/dispatch.hpp"

namespace pg::kernels::reference {

void sgemm(const GemmArgs& g);
// The exact scalar model of the fp16-arithmetic GEMM (kernels/fp16_gemm.hpp), for an fp16 B16
// and a plain A: every fp16 rounding of the FMLA .8h kernel done in software (a fused
// multiply-add rounded once to fp16, ties to even, subnormals kept), the fp32 folds and the
// epilogue of the SIMD GEMMs, so the kernel must equal it bit for bit. Not in the reference
// table (which stays exact): the tests, and measurements of the error on any host, call it.
void sgemm_fp16_arithmetic(const GemmArgs& g);
// The bf16-arithmetic GEMM's exact model (kernels/bf16_gemm.hpp).
void sgemm_bf16_arithmetic(const GemmArgs& g);
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int64_t rows, int C, float eps);
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int64_t rows, int C);
void gelu_forward(float* out, const float* x, int64_t n);
void gelu_backward(float* dx, const float* x, const float* dout, int64_t n);
float softmax_cross_entropy(const float* logits, int V, int target, float* dlogits, float dscale);
void softmax(float* out, const float* x, int n);
float row_max(const float* x, int64_t n, int64_t width);
float row_exp_shift(float* x, int64_t n, int64_t width, float shift);
void transpose(float* dst, int64_t ldd, const float* src, int64_t lds, int rows, int cols);
void vexp(float* out, const float* x, int64_t n);
void vtanh(float* out, const float* x, int64_t n);
void axpy(float* y, float a, const float* x, int64_t n);
float dot(const float* a, const float* b, int64_t n);
double sum_squares(const float* x, int64_t n);
void dropout_apply(float* out, const float* in, int64_t n, const DropoutArgs& d);
void dropout_residual(float* out, const float* x, const float* branch, int64_t n,
                      const DropoutArgs& d);
void dropout_mask(float* mask, int64_t n, const DropoutArgs& d);
void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, float bc1, float bc2);
void half_to_float(float* out, const uint16_t* in, int64_t n, HalfFormat format);
// kernels/reference/decoder_reference.cpp
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, int64_t rows, int C, float eps);
void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* rstd,
                      int64_t rows, int C);
void rope_forward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads, int head_dim);
void rope_backward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                   int head_dim);
void swiglu_forward(float* out, const float* gate, const float* up, int64_t n);
void swiglu_backward(float* dgate, float* dup, const float* gate, const float* up, const float* dout, int64_t n);
// kernels/reference/attention_reference.cpp
void attn_scores(float* S, int64_t lds, const float* A, int64_t lda, const float* Bt, int64_t ldb,
                 int M, int N, int K, float alpha, int diag);
void attn_accumulate(float* C, int64_t ldc, const float* A, int64_t lda, bool trans_a, const float* B,
                     int64_t ldb, int M, int N, int K, int diag);

}  // namespace pg::kernels::reference
