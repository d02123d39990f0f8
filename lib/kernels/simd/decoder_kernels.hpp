// The Llama family's row kernels on xsimd batches (RMSNorm, rotary positions, the SwiGLU gate):
// the same formulas as kernels/reference/decoder_reference.cpp. Included only by
// simd_kernels.hpp, in its anonymous namespace rule (every arch TU gets its own copy).
#pragma once

#include <cmath>
#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "kernels/simd/fast_math.hpp"
#include "kernels/simd/tile_common.hpp"

namespace pg::kernels::simd {
namespace {

template <class Arch>
struct DecoderKernels {
    using B = xsimd::batch<float, Arch>;
    static constexpr int64_t W = int64_t(B::size);

    static void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, int64_t rows, int C,
                                float eps) {
        for (int64_t r = 0; r < rows; ++r) {
            const float* xr = x + r * C;
            B acc(0.0f);
            int64_t i = 0;
            for (; i + W <= C; i += W) {
                const B v = B::load_unaligned(xr + i);
                acc = xsimd::fma(v, v, acc);
            }
            float ss = xsimd::hadd(acc);
            for (; i < C; ++i) ss += xr[i] * xr[i];
            const float s = 1.0f / std::sqrt(ss / float(C) + eps);
            const B sv(s);
            float* o = out + r * C;
            for (i = 0; i + W <= C; i += W)
                (B::load_unaligned(xr + i) * sv * B::load_unaligned(w + i)).store_unaligned(o + i);
            for (; i < C; ++i) o[i] = xr[i] * s * w[i];
            rstd[r] = s;
        }
    }

    static void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w,
                                 const float* rstd, int64_t rows, int C) {
        for (int64_t r = 0; r < rows; ++r) {
            const float* d = dout + r * C;
            const float* xr = x + r * C;
            const float s = rstd[r];
            const B sv(s);
            B acc(0.0f);
            int64_t i = 0;
            for (; i + W <= C; i += W)
                acc = xsimd::fma(B::load_unaligned(w + i) * B::load_unaligned(d + i), B::load_unaligned(xr + i) * sv,
                                 acc);
            float dnn = xsimd::hadd(acc);
            for (; i < C; ++i) dnn += w[i] * d[i] * xr[i] * s;
            dnn /= float(C);
            const B dnnv(dnn);
            float* dxr = dx + r * C;
            for (i = 0; i + W <= C; i += W) {
                const B dv = B::load_unaligned(d + i), norm = B::load_unaligned(xr + i) * sv;
                xsimd::fma(norm, dv, B::load_unaligned(dw + i)).store_unaligned(dw + i);
                const B g = xsimd::fnma(norm, dnnv, B::load_unaligned(w + i) * dv);
                xsimd::fma(sv, g, B::load_unaligned(dxr + i)).store_unaligned(dxr + i);
            }
            for (; i < C; ++i) {
                const float norm = xr[i] * s;
                dw[i] += norm * d[i];
                dxr[i] += s * (w[i] * d[i] - norm * dnn);
            }
        }
    }

    // sign +1: rotate by the angle; -1: by minus it (the transpose, for gradients).
    static void rotate_half(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                            int head_dim, float sign) {
        const int half = head_dim / 2;
        const B signv(sign);
        for (int64_t r = 0; r < rows; ++r) {
            const float* c = cos + r * half;
            const float* s = sin + r * half;
            for (int h = 0; h < n_heads; ++h) {
                float* v1 = x + r * ld + int64_t(h) * head_dim;
                float* v2 = v1 + half;
                int64_t i = 0;
                for (; i + W <= half; i += W) {
                    const B x1 = B::load_unaligned(v1 + i), x2 = B::load_unaligned(v2 + i);
                    const B cv = B::load_unaligned(c + i), sn = signv * B::load_unaligned(s + i);
                    xsimd::fnma(x2, sn, x1 * cv).store_unaligned(v1 + i);
                    xsimd::fma(x1, sn, x2 * cv).store_unaligned(v2 + i);
                }
                for (; i < half; ++i) {
                    const float x1 = v1[i], x2 = v2[i], sn = sign * s[i];
                    v1[i] = x1 * c[i] - x2 * sn;
                    v2[i] = x2 * c[i] + x1 * sn;
                }
            }
        }
    }
    static void rope_forward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                             int head_dim) {
        rotate_half(x, ld, cos, sin, rows, n_heads, head_dim, 1.0f);
    }
    static void rope_backward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                              int head_dim) {
        rotate_half(x, ld, cos, sin, rows, n_heads, head_dim, -1.0f);
    }

    // The tails go through a zero-padded batch so that every element gets the same fast sigmoid.
    template <class Body>
    static void in_batches(int64_t n, Body body) {
        int64_t i = 0;
        for (; i + W <= n; i += W) body(i, W);
        if (i < n) body(i, n - i);
    }
    static B load(const float* p, int64_t count) { return Lanes<Arch>::load(p, count); }
    static void store(B v, float* p, int64_t count) { Lanes<Arch>::store(v, p, count); }

    static void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) {
        in_batches(n, [&](int64_t i, int64_t count) {
            const B g = load(gate + i, count);
            store(g * fast_sigmoid<Arch>(g) * load(up + i, count), out + i, count);
        });
    }

    static void swiglu_backward(float* dgate, float* dup, const float* gate, const float* up, const float* dout,
                                int64_t n) {
        in_batches(n, [&](int64_t i, int64_t count) {
            const B g = load(gate + i, count), u = load(up + i, count), d = load(dout + i, count);
            const B sig = fast_sigmoid<Arch>(g);
            const B dsilu = sig * xsimd::fma(g, B(1.0f) - sig, B(1.0f));
            store(d * u * dsilu, dgate + i, count);
            store(d * g * sig, dup + i, count);
        });
    }
};

}  // namespace
}  // namespace pg::kernels::simd
