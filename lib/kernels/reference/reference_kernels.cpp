#include "kernels/reference/reference_kernels.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"
#include "kernels/bf16_gemm.hpp"
#include "kernels/fp16_gemm.hpp"
#include "kernels/half_float.hpp"

namespace pg::kernels::reference {

namespace {

// x with a denormal read as (or flushed to) a zero of its sign: VDPBF16PS's DAZ and FTZ.
float flush_denormal(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

// op(A)[i, k] as VCVTNE2PS2BF16 rounds it (a denormal as 0), widened back to fp32.
float a_as_bf16(float a) { return bf16_to_float(float_to_bf16(flush_denormal(a))); }

// The GELU epilogue of the reference GEMMs on a finished element c at `at`.
void gelu_epilogue(const GemmArgs& g, int64_t at, float& c) {
    if (g.gelu_out) gelu_forward(g.gelu_out + at, &c, 1);
    if (g.gelu_grad_input) {
        float grad = 0.0f;
        const float one = 1.0f;
        gelu_backward(&grad, g.gelu_grad_input + at, &one, 1);
        c = grad * c;
    }
}

}  // namespace

void sgemm(const GemmArgs& g) {
    for (int i = 0; i < g.M; ++i) {
        for (int j = 0; j < g.N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < g.K; ++k) {
                float a = g.trans_a ? g.A[int64_t(k) * g.lda + i] : g.A[int64_t(i) * g.lda + k];
                const int64_t at = g.trans_b ? int64_t(j) * g.ldb + k : int64_t(k) * g.ldb + j;
                float b_decoded = 0.0f;
                if (g.Bq) dequantize(g.bq_format, g.Bq, g.bq_offset + at, 1, &b_decoded);
                const float b = g.Bq ? b_decoded
                                : !g.B16 ? g.B[at]
                                : g.b16_format == HalfFormat::fp16 ? fp16_to_float(g.B16[at])
                                                                    : bf16_to_float(g.B16[at]);
                acc += a * b;
            }
            float& c = g.C[int64_t(i) * g.ldc + j];
            float out = g.alpha * acc + (g.beta == 0.0f ? 0.0f : g.beta * c);
            if (g.bias) out += g.bias[j];
            c = out;
            gelu_epilogue(g, int64_t(i) * g.ldc + j, c);
        }
    }
}

namespace {

// fp16(x) for a double, rounded to nearest, ties to even, except that an exact tie goes
// towards `tie_sign` when it is not 0 (+-inf beyond 65504; no NaN here). Scaling by a power of
// two is exact, so t holds exactly the bits fp16 keeps and the ones it drops.
double round_to_fp16(double x, double tie_sign) {
    if (x == 0.0 || !std::isfinite(x)) return x;
    const int e = std::max(std::ilogb(x), -14);  // fp16 subnormals: the spacing of 2^-14's binade
    const double ulp = std::ldexp(1.0, e - 10), t = x / ulp;
    const double down = std::floor(t);
    double r = std::nearbyint(t);
    if (t - down == 0.5 && tie_sign != 0.0) r = tie_sign > 0 ? down + 1.0 : down;
    r *= ulp;
    return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, r) : r;
}

// fp16(a * b + c) rounded once, for fp16 values a, b, c (FMLA .8h with FPCR's defaults). a * b
// is exact in double (22 bits); the sum s is rounded at most once, and two-sum gives what it
// lost (err), which only matters when s is exactly halfway between two fp16 values: the exact
// sum is then on err's side of the tie.
float fma_fp16(float a, float b, float c) {
    const double p = double(a) * double(b), q = double(c);
    const double s = p + q;
    const double v = s - p, err = (p - (s - v)) + (q - v);  // s + err == p + q exactly
    return float(round_to_fp16(s, err));
}

// The epilogue of the SIMD GEMMs (simd::Gemm::epilogue): alpha acc + beta C + bias.
float gemm_epilogue(float acc, float alpha, float beta, float c, const float* bias) {
    if (beta != 0.0f) {
        const float out = std::fma(acc, alpha, beta * c);
        return bias ? out + *bias : out;
    }
    return bias ? std::fma(acc, alpha, *bias) : acc * alpha;
}

}  // namespace

void sgemm_fp16_arithmetic(const GemmArgs& g) {
    for (int i = 0; i < g.M; ++i) {
        for (int j = 0; j < g.N; ++j) {
            float& c = g.C[int64_t(i) * g.ldc + j];
            for (int pc = 0; pc < g.K; pc += kFp16BlockK) {
                const int kc = std::min(kFp16BlockK, g.K - pc);
                float acc = 0.0f;
                for (int k0 = 0; k0 < kc; k0 += kFp16PartialK) {
                    float partial = 0.0f;
                    for (int k = pc + k0; k < pc + std::min(kc, k0 + kFp16PartialK); ++k) {
                        const float a = fp16_to_float(float_to_fp16(g.A[int64_t(i) * g.lda + k]));
                        const int64_t at = g.trans_b ? int64_t(j) * g.ldb + k : int64_t(k) * g.ldb + j;
                        partial = fma_fp16(a, fp16_to_float(g.B16[at]), partial);
                    }
                    acc = acc + partial;
                }
                const bool first = pc == 0;
                c = gemm_epilogue(acc, g.alpha, first ? g.beta : 1.0f, c,
                                  first && g.bias ? g.bias + j : nullptr);
            }
            gelu_epilogue(g, int64_t(i) * g.ldc + j, c);
        }
    }
}

void sgemm_bf16_arithmetic(const GemmArgs& g) {
    for (int i = 0; i < g.M; ++i) {
        for (int j = 0; j < g.N; ++j) {
            float& c = g.C[int64_t(i) * g.ldc + j];
            // (a_k, b_k) of the block, 0 past its end: the zero pair that completes an odd block.
            const auto term = [&](int k, int end, float& a, float& b) {
                a = b = 0.0f;
                if (k >= end) return;
                const int64_t at = g.trans_b ? int64_t(j) * g.ldb + k : int64_t(k) * g.ldb + j;
                a = flush_denormal(a_as_bf16(g.A[int64_t(i) * g.lda + k]));
                b = flush_denormal(bf16_to_float(g.B16[at]));
            };
            for (int pc = 0; pc < g.K; pc += kBf16BlockK) {
                const int end = std::min(g.K, pc + kBf16BlockK);
                float acc = 0.0f;
                for (int k = pc; k < end; k += 2) {
                    float a0, b0, a1, b1;
                    term(k, end, a0, b0);
                    term(k + 1, end, a1, b1);
                    acc = flush_denormal(acc + a1 * b1);  // the odd element first
                    acc = flush_denormal(acc + a0 * b0);
                }
                const bool first = pc == 0;
                c = gemm_epilogue(acc, g.alpha, first ? g.beta : 1.0f, c, first && g.bias ? g.bias + j : nullptr);
            }
            gelu_epilogue(g, int64_t(i) * g.ldc + j, c);
        }
    }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int64_t rows, int C, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * C;
        float m = 0.0f;
        for (int i = 0; i < C; ++i) m += xr[i];
        m /= C;
        float var = 0.0f;
        for (int i = 0; i < C; ++i) var += (xr[i] - m) * (xr[i] - m);
        var /= C;
        float s = 1.0f / std::sqrt(var + eps);
        float* o = out + r * C;
        for (int i = 0; i < C; ++i) o[i] = (xr[i] - m) * s * w[i] + b[i];
        mean[r] = m;
        rstd[r] = s;
    }
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int64_t rows, int C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* d = dout + r * C;
        const float* xr = x + r * C;
        const float m = mean[r], s = rstd[r];
        // dnorm = dout * w; dx = s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int i = 0; i < C; ++i) {
            float norm = (xr[i] - m) * s;
            float dnorm = w[i] * d[i];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        float* dxr = dx + r * C;
        for (int i = 0; i < C; ++i) {
            float norm = (xr[i] - m) * s;
            float dnorm = w[i] * d[i];
            db[i] += d[i];
            dw[i] += norm * d[i];
            dxr[i] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
        }
    }
}

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
}

void gelu_forward(float* out, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + std::tanh(kGeluScale * (v + 0.044715f * v * v * v)));
    }
}

void gelu_backward(float* dx, const float* x, const float* dout, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        float u = kGeluScale * (v + 0.044715f * v * v * v);
        float t = std::tanh(u);
        float sech2 = 1.0f - t * t;
        float grad = 0.5f * (1.0f + t) + 0.5f * v * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] += grad * dout[i];
    }
}

float softmax_cross_entropy(const float* logits, int V, int target, float* dlogits, float dscale) {
    const float target_logit = logits[target];  // read first: dlogits may overwrite logits
    float maxv = logits[0];
    for (int i = 1; i < V; ++i) maxv = logits[i] > maxv ? logits[i] : maxv;
    double sum = 0.0;
    for (int i = 0; i < V; ++i) sum += std::exp(double(logits[i] - maxv));
    const float log_sum = float(std::log(sum));
    if (dlogits) {
        for (int i = 0; i < V; ++i) {
            float p = float(std::exp(double(logits[i] - maxv)) / sum);
            dlogits[i] = dscale * (p - (i == target ? 1.0f : 0.0f));
        }
    }
    return log_sum - (target_logit - maxv);
}

void softmax(float* out, const float* x, int n) {
    float maxv = x[0];
    for (int i = 1; i < n; ++i) maxv = x[i] > maxv ? x[i] : maxv;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += std::exp(double(x[i] - maxv));
    for (int i = 0; i < n; ++i) out[i] = float(std::exp(double(x[i] - maxv)) / sum);
}

float row_max(const float* x, int64_t n, int64_t /*width*/) {
    float maxv = x[0];
    for (int64_t i = 1; i < n; ++i) maxv = x[i] > maxv ? x[i] : maxv;
    return maxv;
}

float row_exp_shift(float* x, int64_t n, int64_t width, float shift) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - shift);
        sum += x[i];
    }
    for (int64_t i = n; i < width; ++i) x[i] = 0.0f;
    return float(sum);
}

void transpose(float* dst, int64_t ldd, const float* src, int64_t lds, int rows, int cols) {
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
}

void vexp(float* out, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}

void vtanh(float* out, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::tanh(x[i]);
}

void axpy(float* y, float a, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

float dot(const float* a, const float* b, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

double sum_squares(const float* x, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
    return s;
}

namespace {
// The one definition of a kept element (lib/core/rng.hpp's counter hash); the SIMD tables are
// tested bit for bit against it.
bool dropout_keeps(const DropoutArgs& d, int64_t i) {
    return counter_uniform(d.seed, d.stream, d.first_index + uint64_t(i)) >= d.p;
}
}  // namespace

void dropout_apply(float* out, const float* in, int64_t n, const DropoutArgs& d) {
    for (int64_t i = 0; i < n; ++i) out[i] = dropout_keeps(d, i) ? in[i] * d.scale : 0.0f;
}

void dropout_residual(float* out, const float* x, const float* branch, int64_t n,
                      const DropoutArgs& d) {
    for (int64_t i = 0; i < n; ++i)
        out[i] = x[i] + (dropout_keeps(d, i) ? branch[i] * d.scale : 0.0f);
}

void dropout_mask(float* mask, int64_t n, const DropoutArgs& d) {
    for (int64_t i = 0; i < n; ++i) mask[i] = dropout_keeps(d, i) ? d.scale : 0.0f;
}

void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, float bc1, float bc2) {
    for (int64_t i = 0; i < n; ++i) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        float mhat = m[i] / bc1;
        float vhat = v[i] / bc2;
        p[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * p[i]);
    }
}

}  // namespace pg::kernels::reference

namespace pg::kernels::reference {

void half_to_float(float* out, const uint16_t* in, int64_t n, HalfFormat format) {
    for (int64_t i = 0; i < n; ++i)
        out[i] = format == HalfFormat::fp16 ? fp16_to_float(in[i]) : bf16_to_float(in[i]);
}

}  // namespace pg::kernels::reference
