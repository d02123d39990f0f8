// The scalar reference of the Llama family's row kernels (RMSNorm, rotary positions, the SwiGLU
// gate): plain loops in Hugging Face's formulas, the truth the SIMD tables are tested against.
#include <cmath>

#include "kernels/reference/reference_kernels.hpp"

namespace pg::kernels::reference {

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, int64_t rows, int C, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * C;
        float ss = 0.0f;
        for (int i = 0; i < C; ++i) ss += xr[i] * xr[i];
        const float s = 1.0f / std::sqrt(ss / float(C) + eps);
        float* o = out + r * C;
        for (int i = 0; i < C; ++i) o[i] = xr[i] * s * w[i];
        rstd[r] = s;
    }
}

void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* rstd,
                      int64_t rows, int C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* d = dout + r * C;
        const float* xr = x + r * C;
        const float s = rstd[r];
        // norm = x s; dnorm = dout w; dx = s (dnorm - norm mean(dnorm norm))
        float dnorm_norm_mean = 0.0f;
        for (int i = 0; i < C; ++i) dnorm_norm_mean += w[i] * d[i] * xr[i] * s;
        dnorm_norm_mean /= float(C);
        float* dxr = dx + r * C;
        for (int i = 0; i < C; ++i) {
            const float norm = xr[i] * s;
            dw[i] += norm * d[i];
            dxr[i] += s * (w[i] * d[i] - norm * dnorm_norm_mean);
        }
    }
}

namespace {

// sign +1: the rotation by the angle; -1: by minus the angle (its transpose).
void rotate_half(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads, int head_dim,
                 float sign) {
    const int half = head_dim / 2;
    for (int64_t r = 0; r < rows; ++r) {
        const float* c = cos + r * half;
        const float* s = sin + r * half;
        for (int h = 0; h < n_heads; ++h) {
            float* v = x + r * ld + int64_t(h) * head_dim;
            for (int i = 0; i < half; ++i) {
                const float x1 = v[i], x2 = v[i + half], sn = sign * s[i];
                v[i] = x1 * c[i] - x2 * sn;
                v[i + half] = x2 * c[i] + x1 * sn;
            }
        }
    }
}

}  // namespace

void rope_forward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads, int head_dim) {
    rotate_half(x, ld, cos, sin, rows, n_heads, head_dim, 1.0f);
}

void rope_backward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                   int head_dim) {
    rotate_half(x, ld, cos, sin, rows, n_heads, head_dim, -1.0f);
}

void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

void swiglu_backward(float* dgate, float* dup, const float* gate, const float* up, const float* dout, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i], sig = 1.0f / (1.0f + std::exp(-g)), d = dout[i];
        // silu'(g) = sig (1 + g (1 - sig)). Read everything first: dgate may be gate, dup up.
        const float u = up[i];
        dgate[i] = d * u * sig * (1.0f + g * (1.0f - sig));
        dup[i] = d * g * sig;
    }
}

}  // namespace pg::kernels::reference
