// The table behind dispatch.hpp: one set of function pointers per instruction set. dispatch.cpp
// picks one per process; tests and benchmarks may also reach every table this CPU can run
// (available_tables()) to check each against the scalar reference.
#pragma once

#include <vector>

#include "kernels/dispatch.hpp"

namespace pg::kernels {

struct KernelTable {
    const char* name;  // "avx512bw", "fma3+avx2", "sse2", "arm64+neon+fmla-lane" (and its
                       // variants, kernels/neon/lane_variants.def), "arm64+neon", "reference"
    // The GEMM micro-tile (rows x columns of C per register block); sgemm_parallel aligns its
    // split to it so that threads get whole tiles.
    int gemm_mr;
    int gemm_nr;
    int gemm_lanes;  // floats per vector: the narrowest column panel

    void (*sgemm)(const GemmArgs& g);
    void (*layernorm_forward)(float* out, float* mean, float* rstd, const float* x, const float* w,
                              const float* b, int64_t rows, int C, float eps);
    void (*layernorm_backward)(float* dx, float* dw, float* db, const float* dout, const float* x,
                               const float* w, const float* mean, const float* rstd, int64_t rows,
                               int C);
    void (*gelu_forward)(float* out, const float* x, int64_t n);
    void (*gelu_backward)(float* dx, const float* x, const float* dout, int64_t n);
    float (*softmax_cross_entropy)(const float* logits, int V, int target, float* dlogits,
                                   float dscale);
    void (*softmax)(float* out, const float* x, int n);
    float (*row_max)(const float* x, int64_t n, int64_t width);
    float (*row_exp_shift)(float* x, int64_t n, int64_t width, float shift);
    void (*transpose)(float* dst, int64_t ldd, const float* src, int64_t lds, int rows, int cols);
    void (*vexp)(float* out, const float* x, int64_t n);
    void (*vtanh)(float* out, const float* x, int64_t n);
    void (*axpy)(float* y, float a, const float* x, int64_t n);
    float (*dot)(const float* a, const float* b, int64_t n);
    double (*sum_squares)(const float* x, int64_t n);
    void (*dropout_apply)(float* out, const float* in, int64_t n, const DropoutArgs& d);
    void (*dropout_residual)(float* out, const float* x, const float* branch, int64_t n,
                             const DropoutArgs& d);
    void (*dropout_mask)(float* mask, int64_t n, const DropoutArgs& d);
    void (*adamw)(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, float bc1, float bc2);
    void (*half_to_float)(float* out, const uint16_t* in, int64_t n, HalfFormat format);
    void (*attn_scores)(float* S, int64_t lds, const float* A, int64_t lda, const float* Bt,
                        int64_t ldb, int M, int N, int K, float alpha, int diag);
    void (*attn_accumulate)(float* C, int64_t ldc, const float* A, int64_t lda, bool trans_a,
                            const float* B, int64_t ldb, int M, int N, int K, int diag);
    void (*rmsnorm_forward)(float* out, float* rstd, const float* x, const float* w, int64_t rows, int C,
                            float eps);
    void (*rmsnorm_backward)(float* dx, float* dw, const float* dout, const float* x, const float* w,
                             const float* rstd, int64_t rows, int C);
    void (*rope_forward)(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                         int head_dim);
    void (*rope_backward)(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                          int head_dim);
    void (*swiglu_forward)(float* out, const float* gate, const float* up, int64_t n);
    void (*swiglu_backward)(float* dgate, float* dup, const float* gate, const float* up, const float* dout,
                            int64_t n);
};

// The scalar table (kernels/reference).
const KernelTable& reference_table();

// The table every kernel call goes through (PG_KERNELS=reference / force_reference honoured).
const KernelTable& active_table();

// Every table this CPU and OS can run, best first, the reference table last.
std::vector<const KernelTable*> available_tables();

// sgemm_parallel with an explicit table (tests run it on every table).
void sgemm_parallel_with(const KernelTable& table, const GemmArgs& g, ThreadPool& pool);

// The SIMD tables, one per translation unit built with that instruction set's flags. Only call
// one after checking the CPU supports it (available_tables() does).
#if defined(__x86_64__)
const KernelTable& avx512bw_table();
const KernelTable& avx2_table();
const KernelTable& sse2_table();
#elif defined(__aarch64__)
const KernelTable& neon64_table();
// neon64 with a GEMM micro-kernel in raw intrinsics around FMLA by element, one table per
// variant of kernels/neon/lane_variants.def, in its order
// (kernels/neon/table_neon64_fmla_lane.cpp).
const std::vector<const KernelTable*>& neon64_lane_tables();
#endif

}  // namespace pg::kernels
