// Chooses the kernel table once per process. This file holds the reference table; SIMD tables
// are registered per instruction set by the arch translation units.
#include "kernels/dispatch.hpp"

#include <cstdlib>
#include <cstring>

#include "core/thread_pool.hpp"
#include "kernels/reference/reference_kernels.hpp"

namespace pg::kernels {

namespace {
bool g_force_reference = false;
}

const char* active_arch_name() { return "reference"; }

const char* force_reference(bool on) {
    const char* previous = active_arch_name();
    g_force_reference = on;
    return previous;
}

void sgemm(const GemmArgs& g) { reference::sgemm(g); }

void sgemm_parallel(const GemmArgs& g, ThreadPool& pool) {
    // Split the rows of C; each thread's block is a GEMM of its own, so the result for a given
    // thread count never depends on timing.
    pool.parallel_for(g.M, [&](int, int64_t begin, int64_t end) {
        GemmArgs part = g;
        part.M = int(end - begin);
        part.A = g.trans_a ? g.A + begin : g.A + begin * g.lda;
        part.C = g.C + begin * g.ldc;
        sgemm(part);
    });
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int64_t rows, int C, float eps) {
    reference::layernorm_forward(out, mean, rstd, x, w, b, rows, C, eps);
}
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int64_t rows, int C) {
    reference::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, rows, C);
}
void gelu_forward(float* out, const float* x, int64_t n) { reference::gelu_forward(out, x, n); }
void gelu_backward(float* dx, const float* x, const float* dout, int64_t n) {
    reference::gelu_backward(dx, x, dout, n);
}
float softmax_cross_entropy(const float* logits, int V, int target, float* dlogits, float dscale) {
    return reference::softmax_cross_entropy(logits, V, target, dlogits, dscale);
}
void axpy(float* y, float a, const float* x, int64_t n) { reference::axpy(y, a, x, n); }
float dot(const float* a, const float* b, int64_t n) { return reference::dot(a, b, n); }
double sum_squares(const float* x, int64_t n) { return reference::sum_squares(x, n); }
void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, float bc1, float bc2) {
    reference::adamw(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2);
}

}  // namespace pg::kernels
