// The elementwise and row kernels of one instruction set (LayerNorm, GELU, softmax and cross
// entropy, the attention rows' max and exp, transpose, exp/tanh maps, axpy, dot, sum of squares,
// the dropout kernels with their counter hash, AdamW, 16-bit to fp32), with the 64-bit lane
// helpers the dropout hash needs. The GEMM (gemm.hpp) uses Elementwise too: its fused GELU
// epilogue and its 16-bit B conversions are these kernels' operations. Included only by the
// per-arch translation units, through simd_kernels.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "core/counter_hash_constants.hpp"
#include "kernels/half_float.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/simd/fast_math.hpp"

// An anonymous namespace: every arch TU gets its own internal copy, so no inline function
// compiled with AVX-512 flags can be picked by the linker for code that must run on a lesser
// CPU (see simd_kernels.hpp).
namespace pg::kernels::simd {
namespace {

#if defined(__AVX512F__)
// r[i][j] -> r[j][i] for a 16 x 16 block of floats held in 16 zmm registers: 32-bit, 64-bit and
// then 128-bit and 256-bit lane interleaves (a copy: exact).
inline void transpose16x16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    // r[i] now holds, in each 128-bit lane q, row group (i / 4)'s column 4 q + (i % 4).
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; ++i) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}
#endif

// ---------------------------------------------------------------------------------------------
// 64-bit lane multiply (mod 2^64, what uint64_t * does), for the dropout hash. xsimd 8.1 only has
// it on AVX-512 (vpmullq) and falls back to one scalar multiply per lane elsewhere, so SSE2, AVX2
// and NEON build it from 32 x 32 -> 64-bit products:
//   a * b = lo(a) lo(b) + ((hi(a) lo(b) + lo(a) hi(b)) << 32)   (mod 2^64)
// One overload per register type; xsimd batches convert to theirs.
// ---------------------------------------------------------------------------------------------

#if defined(__x86_64__)
inline __m128i mul64(__m128i a, __m128i b) {
    // _mm_mul_epu32 multiplies the low 32 bits of each 64-bit lane into a 64-bit product.
    const __m128i cross = _mm_add_epi64(_mm_mul_epu32(_mm_srli_epi64(a, 32), b),
                                        _mm_mul_epu32(a, _mm_srli_epi64(b, 32)));
    return _mm_add_epi64(_mm_mul_epu32(a, b), _mm_slli_epi64(cross, 32));
}
#if defined(__AVX2__)
inline __m256i mul64(__m256i a, __m256i b) {
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                           _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
    return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}
#endif
#if defined(__AVX512DQ__)
inline __m512i mul64(__m512i a, __m512i b) { return _mm512_mullo_epi64(a, b); }
#endif
#elif defined(__aarch64__)
inline uint64x2_t mul64(uint64x2_t a, uint64x2_t b) {
    const uint32x2_t a_lo = vmovn_u64(a), a_hi = vshrn_n_u64(a, 32);
    const uint32x2_t b_lo = vmovn_u64(b), b_hi = vshrn_n_u64(b, 32);
    const uint64x2_t cross = vmlal_u32(vmull_u32(a_hi, b_lo), a_lo, b_hi);
    return vaddq_u64(vmull_u32(a_lo, b_lo), vshlq_n_u64(cross, 32));
}
#endif

// 64-bit lane shifts by a constant, and the 64-bit lanes seen as 32-bit ones. xsimd 8.1's NEON
// shift picks its count at run time through a chain of out-of-line calls and its NEON
// bitwise_cast is a call too, so aarch64 gets the instructions directly.
template <int S, class Arch>
xsimd::batch<uint64_t, Arch> shift_right(xsimd::batch<uint64_t, Arch> x) {
#if defined(__aarch64__)
    return vshrq_n_u64(x, S);
#else
    return x >> S;
#endif
}
template <int S, class Arch>
xsimd::batch<uint64_t, Arch> shift_left(xsimd::batch<uint64_t, Arch> x) {
#if defined(__aarch64__)
    return vshlq_n_u64(x, S);
#else
    return x << S;
#endif
}
template <class Arch>
xsimd::batch<int32_t, Arch> as_int32_lanes(xsimd::batch<uint64_t, Arch> x) {
#if defined(__aarch64__)
    return vreinterpretq_s32_u64(x);
#else
    return xsimd::bitwise_cast<xsimd::batch<int32_t, Arch>>(x);
#endif
}

// ---------------------------------------------------------------------------------------------
// Elementwise and row kernels. Each has a vector body and a scalar tail doing the same math.
// ---------------------------------------------------------------------------------------------

template <class Arch>
struct Elementwise {
    using B = xsimd::batch<float, Arch>;
    static constexpr int64_t W = int64_t(B::size);

    static float sum(const float* x, int C) {
        B acc(0.0f);
        int64_t i = 0;
        for (; i + W <= C; i += W) acc = acc + B::load_unaligned(x + i);
        float s = xsimd::hadd(acc);
        for (; i < C; ++i) s += x[i];
        return s;
    }

    static void layernorm_forward(float* out, float* mean, float* rstd, const float* x,
                                  const float* w, const float* b, int64_t rows, int C, float eps) {
        for (int64_t row = 0; row < rows; ++row) {
            const float* xr = x + row * C;
            const float m = sum(xr, C) / float(C);
            const B mv(m);
            B acc(0.0f);
            int64_t i = 0;
            for (; i + W <= C; i += W) {
                B d = B::load_unaligned(xr + i) - mv;
                acc = xsimd::fma(d, d, acc);
            }
            float var = xsimd::hadd(acc);
            for (; i < C; ++i) var += (xr[i] - m) * (xr[i] - m);
            var /= float(C);
            const float s = 1.0f / std::sqrt(var + eps);
            const B sv(s);
            float* o = out + row * C;
            i = 0;
            for (; i + W <= C; i += W) {
                B norm = (B::load_unaligned(xr + i) - mv) * sv;
                xsimd::fma(norm, B::load_unaligned(w + i), B::load_unaligned(b + i))
                    .store_unaligned(o + i);
            }
            for (; i < C; ++i) o[i] = (xr[i] - m) * s * w[i] + b[i];
            mean[row] = m;
            rstd[row] = s;
        }
    }

    static void layernorm_backward(float* dx, float* dw, float* db, const float* dout,
                                   const float* x, const float* w, const float* mean,
                                   const float* rstd, int64_t rows, int C) {
        for (int64_t row = 0; row < rows; ++row) {
            const float* d = dout + row * C;
            const float* xr = x + row * C;
            const float m = mean[row], s = rstd[row];
            const B mv(m), sv(s);
            // dnorm = dout * w; dx += s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
            B acc_dn(0.0f), acc_dnn(0.0f);
            int64_t i = 0;
            for (; i + W <= C; i += W) {
                B norm = (B::load_unaligned(xr + i) - mv) * sv;
                B dnorm = B::load_unaligned(w + i) * B::load_unaligned(d + i);
                acc_dn = acc_dn + dnorm;
                acc_dnn = xsimd::fma(dnorm, norm, acc_dnn);
            }
            float dnorm_mean = xsimd::hadd(acc_dn), dnorm_norm_mean = xsimd::hadd(acc_dnn);
            for (; i < C; ++i) {
                float norm = (xr[i] - m) * s;
                float dnorm = w[i] * d[i];
                dnorm_mean += dnorm;
                dnorm_norm_mean += dnorm * norm;
            }
            dnorm_mean /= float(C);
            dnorm_norm_mean /= float(C);
            const B dm(dnorm_mean), dnm(dnorm_norm_mean);
            float* dxr = dx + row * C;
            i = 0;
            for (; i + W <= C; i += W) {
                B dv = B::load_unaligned(d + i);
                B norm = (B::load_unaligned(xr + i) - mv) * sv;
                B dnorm = B::load_unaligned(w + i) * dv;
                (B::load_unaligned(db + i) + dv).store_unaligned(db + i);
                xsimd::fma(norm, dv, B::load_unaligned(dw + i)).store_unaligned(dw + i);
                B g = sv * (dnorm - dm - norm * dnm);
                (B::load_unaligned(dxr + i) + g).store_unaligned(dxr + i);
            }
            for (; i < C; ++i) {
                float norm = (xr[i] - m) * s;
                float dnorm = w[i] * d[i];
                db[i] += d[i];
                dw[i] += norm * d[i];
                dxr[i] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
            }
        }
    }

    static constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
    static constexpr float kGeluCubic = 0.044715f;

    // GELU(x) = 0.5 x (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the
    // sigmoid form costs one exp and one division, about a fifth fewer operations than going
    // through tanh (GELU is about a tenth of a PhoneGPT step: forward, recomputed, gradient).
    static B gelu(B x) {
        const B two_u = B(2.0f * kGeluScale) * x * xsimd::fma(B(kGeluCubic) * x, x, B(1.0f));
        return x * fast_sigmoid(two_u);
    }
    // With s = sigmoid(2u): (1 + tanh u) / 2 = s and 1 - tanh^2 u = 4 s (1 - s), so
    // gelu'(x) = s + 2 x s (1 - s) u'(x), u'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
    static B gelu_grad(B x) {
        const B x2 = x * x;
        const B s = fast_sigmoid(B(2.0f * kGeluScale) * x * xsimd::fma(B(kGeluCubic), x2, B(1.0f)));
        const B du = B(kGeluScale) * xsimd::fma(B(3.0f * kGeluCubic), x2, B(1.0f));
        return xsimd::fma(B(2.0f) * x * s * (B(1.0f) - s), du, s);
    }

    // Tails go through a zero-padded batch, so every element gets the same fast math.
    static void gelu_forward(float* out, const float* x, int64_t n) {
        int64_t i = 0;
        for (; i + W <= n; i += W) gelu(B::load_unaligned(x + i)).store_unaligned(out + i);
        if (i < n) {
            alignas(64) float buf[W] = {};
            for (int64_t j = 0; j < n - i; ++j) buf[j] = x[i + j];
            gelu(B::load_aligned(buf)).store_aligned(buf);
            for (int64_t j = 0; j < n - i; ++j) out[i + j] = buf[j];
        }
    }

    // c[i] = gelu'(x[i]) * c[i]: the GEMM's fused GELU backward (GemmArgs::gelu_grad_input).
    static void gelu_grad_times(float* c, const float* x, int64_t n) {
        int64_t i = 0;
        for (; i + W <= n; i += W)
            (gelu_grad(B::load_unaligned(x + i)) * B::load_unaligned(c + i)).store_unaligned(c + i);
        if (i < n) {
            alignas(64) float buf[W] = {};
            for (int64_t j = 0; j < n - i; ++j) buf[j] = x[i + j];
            gelu_grad(B::load_aligned(buf)).store_aligned(buf);
            for (int64_t j = 0; j < n - i; ++j) c[i + j] = buf[j] * c[i + j];
        }
    }

    static void gelu_backward(float* dx, const float* x, const float* dout, int64_t n) {
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            B g = gelu_grad(B::load_unaligned(x + i));
            xsimd::fma(g, B::load_unaligned(dout + i), B::load_unaligned(dx + i))
                .store_unaligned(dx + i);
        }
        if (i < n) {
            alignas(64) float buf[W] = {};
            for (int64_t j = 0; j < n - i; ++j) buf[j] = x[i + j];
            gelu_grad(B::load_aligned(buf)).store_aligned(buf);
            for (int64_t j = 0; j < n - i; ++j) dx[i + j] += buf[j] * dout[i + j];
        }
    }

    // The largest lane (xsimd 8.1 has no max reduction).
    static float horizontal_max(B v) {
        alignas(64) float lanes[W];
        v.store_aligned(lanes);
        float maxv = lanes[0];
        for (int64_t j = 1; j < W; ++j) maxv = lanes[j] > maxv ? lanes[j] : maxv;
        return maxv;
    }

    static float max_of(const float* x, int64_t n) {
        B mx(x[0]);
        int64_t i = 0;
        for (; i + W <= n; i += W) mx = xsimd::max(mx, B::load_unaligned(x + i));
        float maxv = horizontal_max(mx);
        for (; i < n; ++i) maxv = x[i] > maxv ? x[i] : maxv;
        return maxv;
    }

    static float softmax_cross_entropy(const float* logits, int V, int target, float* dlogits,
                                       float dscale) {
        const float target_logit = logits[target];  // read first: dlogits may overwrite logits
        const float maxv = max_of(logits, V);
        int64_t i = 0;

        // exp(logit - max), summed; kept in dlogits (if given) for the gradient pass.
        const B mv(maxv);
        B acc(0.0f);
        for (; i + W <= V; i += W) {
            B e = fast_exp(B::load_unaligned(logits + i) - mv);
            if (dlogits) e.store_unaligned(dlogits + i);
            acc = acc + e;
        }
        float sum = xsimd::hadd(acc);
        if (i < V) {
            alignas(64) float buf[W];
            for (int64_t j = 0; j < W; ++j) buf[j] = i + j < V ? logits[i + j] - maxv : -100.0f;
            fast_exp(B::load_aligned(buf)).store_aligned(buf);
            for (int64_t j = 0; i + j < V; ++j) {
                sum += buf[j];
                if (dlogits) dlogits[i + j] = buf[j];
            }
        }
        if (dlogits) {
            const B scale(dscale / sum);
            i = 0;
            for (; i + W <= V; i += W)
                (B::load_unaligned(dlogits + i) * scale).store_unaligned(dlogits + i);
            for (; i < V; ++i) dlogits[i] *= dscale / sum;
            dlogits[target] -= dscale;
        }
        return std::log(sum) - (target_logit - maxv);
    }

    // Row softmax: max, exp(x - max) summed, then scaled by 1 / sum.
    static void softmax(float* out, const float* x, int n) {
        const float maxv = max_of(x, n);
        const B mv(maxv);
        B acc(0.0f);
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            B e = fast_exp(B::load_unaligned(x + i) - mv);
            e.store_unaligned(out + i);
            acc = acc + e;
        }
        float sum = xsimd::hadd(acc);
        if (i < n) {
            alignas(64) float buf[W];
            for (int64_t j = 0; j < W; ++j) buf[j] = i + j < n ? x[i + j] - maxv : 0.0f;
            fast_exp(B::load_aligned(buf)).store_aligned(buf);
            for (int64_t j = 0; i + j < n; ++j) {
                sum += buf[j];
                out[i + j] = buf[j];
            }
        }
        const float inv = 1.0f / sum;
        const B inv_v(inv);
        i = 0;
        for (; i + W <= n; i += W) (B::load_unaligned(out + i) * inv_v).store_unaligned(out + i);
        for (; i < n; ++i) out[i] *= inv;
    }

    // Lane indices 0..W-1 as floats (exact), for masking the visible part of a row.
    static B lane_index() {
        alignas(64) static const float iota[64] = {
            0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
            22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
            44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
        static_assert(W <= 64, "lane_index covers up to 64 lanes");
        return B::load_aligned(iota);
    }

    // Whole vectors over [0, width) with lanes at or past n masked; only a width that is not a
    // multiple of W leaves a short tail (copied through a buffer).
    static float row_max(const float* x, int64_t n, int64_t width) {
        const B lanes = lane_index(), visible = B(float(n)), lowest = B(-INFINITY);
        B mx = lowest;
        int64_t i = 0;
        for (; i + W <= width && i < n; i += W) {
            const auto keep = (lanes + B(float(i))) < visible;
            mx = xsimd::max(mx, xsimd::select(keep, B::load_unaligned(x + i), lowest));
        }
        float maxv = horizontal_max(mx);
        for (; i < n; ++i) maxv = x[i] > maxv ? x[i] : maxv;
        return maxv;
    }

    static float row_exp_shift(float* x, int64_t n, int64_t width, float shift) {
        const B lanes = lane_index(), visible = B(float(n)), sv = B(shift), zero = B(0.0f);
        B acc(0.0f);
        int64_t i = 0;
        for (; i + W <= width; i += W) {
            if (i >= n) {
                zero.store_unaligned(x + i);
                continue;
            }
            const auto keep = (lanes + B(float(i))) < visible;
            const B e = xsimd::select(keep, fast_exp(B::load_unaligned(x + i) - sv), zero);
            e.store_unaligned(x + i);
            acc = acc + e;
        }
        float sum = xsimd::hadd(acc);
        if (i < width) {
            alignas(64) float buf[W] = {};
            for (int64_t j = 0; j < width - i; ++j) buf[j] = x[i + j] - shift;
            fast_exp(B::load_aligned(buf)).store_aligned(buf);
            for (int64_t j = 0; j < width - i; ++j) {
                const float e = i + j < n ? buf[j] : 0.0f;
                x[i + j] = e;
                sum += e;
            }
        }
        return sum;
    }

    // W rows of one source column per gather, stored as W contiguous floats of a dst row; the
    // rows past the last whole W are copied one by one. Offsets are 32-bit lane indices, so a
    // gather spans at most (W - 1) * lds floats (checked; a wider one falls back to scalar).
    static void transpose(float* dst, int64_t ldd, const float* src, int64_t lds, int rows,
                          int cols) {
        using I = xsimd::batch<int32_t, Arch>;
        int i0 = 0;
#if defined(__AVX512F__)
        // 16 x 16 blocks through registers: a gather of 16 rows per column measured 3 times
        // slower (the attention's K and V of a head, [T, 32] and [T, 64], per pair and pass).
        if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) {
            if (cols % 16 == 0) {
                for (; i0 + 16 <= rows; i0 += 16)
                    for (int j0 = 0; j0 < cols; j0 += 16) {
                        __m512 r[16];
                        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (i0 + i) * lds + j0);
                        transpose16x16(r);
                        for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + (j0 + j) * ldd + i0, r[j]);
                    }
            }
        }
#endif
        if (lds <= INT32_MAX / W) {
            alignas(64) int32_t offsets[W];
            for (int64_t r = 0; r < W; ++r) offsets[r] = int32_t(r * lds);
            const I index = I::load_aligned(offsets);
            for (; i0 + W <= rows; i0 += W) {
                const float* s = src + i0 * lds;
                for (int j = 0; j < cols; ++j)
                    B::gather(s + j, index).store_unaligned(dst + j * ldd + i0);
            }
        }
        for (int i = i0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
    }

    // out = f(x) elementwise for a batch function f (fast exp, fast tanh).
    template <class F>
    static void map(float* out, const float* x, int64_t n) {
        int64_t i = 0;
        for (; i + W <= n; i += W) F::apply(B::load_unaligned(x + i)).store_unaligned(out + i);
        if (i < n) {
            alignas(64) float buf[W] = {};
            for (int64_t j = 0; j < n - i; ++j) buf[j] = x[i + j];
            F::apply(B::load_aligned(buf)).store_aligned(buf);
            for (int64_t j = 0; j < n - i; ++j) out[i + j] = buf[j];
        }
    }

    static void axpy(float* y, float a, const float* x, int64_t n) {
        const B av(a);
        int64_t i = 0;
        for (; i + W <= n; i += W)
            xsimd::fma(av, B::load_unaligned(x + i), B::load_unaligned(y + i))
                .store_unaligned(y + i);
        for (; i < n; ++i) y[i] += a * x[i];
    }

    // 16-bit floats to fp32 (exact). fp16: one conversion instruction per vector where the
    // instruction set has it (AVX-512F VCVTPH2PS on 16, F16C on 8, NEON FCVTL on 4 lanes),
    // the scalar definition (kernels/half_float.hpp) elsewhere and in the tail; bf16 is a
    // 16-bit shift, which GCC vectorises from the plain loop.
    static void half_to_float(float* out, const uint16_t* in, int64_t n, HalfFormat format) {
        int64_t i = 0;
        if (format == HalfFormat::bf16) {
            for (; i < n; ++i) out[i] = bf16_to_float(in[i]);
            return;
        }
#if defined(__AVX512F__)
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                          reinterpret_cast<const __m256i*>(in + i))));
#elif defined(__F16C__)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(out + i,
                             _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#elif defined(__aarch64__)
        for (; i + 4 <= n; i += 4)
            vst1q_f32(out + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(in + i))));
#endif
        for (; i < n; ++i) out[i] = fp16_to_float(in[i]);
    }

    static float dot(const float* a, const float* b, int64_t n) {
        // Four accumulators hide the FMA latency.
        B acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
        int64_t i = 0;
        for (; i + 4 * W <= n; i += 4 * W) {
            acc0 = xsimd::fma(B::load_unaligned(a + i), B::load_unaligned(b + i), acc0);
            acc1 = xsimd::fma(B::load_unaligned(a + i + W), B::load_unaligned(b + i + W), acc1);
            acc2 = xsimd::fma(B::load_unaligned(a + i + 2 * W), B::load_unaligned(b + i + 2 * W),
                              acc2);
            acc3 = xsimd::fma(B::load_unaligned(a + i + 3 * W), B::load_unaligned(b + i + 3 * W),
                              acc3);
        }
        for (; i + W <= n; i += W)
            acc0 = xsimd::fma(B::load_unaligned(a + i), B::load_unaligned(b + i), acc0);
        float s = xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
        for (; i < n; ++i) s += a[i] * b[i];
        return s;
    }

    static double sum_squares(const float* x, int64_t n) {
        using D = xsimd::batch<double, Arch>;
        constexpr int64_t WD = int64_t(D::size);
        D acc0(0.0), acc1(0.0);
        int64_t i = 0;
        for (; i + 2 * WD <= n; i += 2 * WD) {
            D v0 = D::load_unaligned(x + i), v1 = D::load_unaligned(x + i + WD);
            acc0 = xsimd::fma(v0, v0, acc0);
            acc1 = xsimd::fma(v1, v1, acc1);
        }
        double s = xsimd::hadd(acc0 + acc1);
        for (; i < n; ++i) s += double(x[i]) * double(x[i]);
        return s;
    }

    // Dropout keep flags for W consecutive elements at a time: counter_uniform (core/rng.hpp)
    // computed in 64-bit lanes, bit for bit. The even-numbered elements of a group go in one
    // batch and the odd ones in another, so that packing each pair of 64-bit lanes into 32-bit
    // lanes leaves the elements in order (little-endian: lane 2j = even[j], 2j+1 = odd[j]).
    struct DropoutLanes {
        using U = xsimd::batch<uint64_t, Arch>;
        static constexpr int64_t UW = int64_t(U::size);
        static_assert(2 * UW == W, "two 64-bit batches fill one float batch");

        U key;               // seed ^ stream * kCounterStreamMul
        U even, odd;         // index * kCounterIndexMul for the group's even and odd elements
        const U step;        // W * kCounterIndexMul: the next group (mod 2^64, as in the scalar)
        const U mix;
        const B p;

        explicit DropoutLanes(const DropoutArgs& d)
            : step(uint64_t(W) * kCounterIndexMul), mix(kCounterMixMul), p(d.p) {
            alignas(64) uint64_t e[UW], o[UW];
            for (int64_t j = 0; j < UW; ++j) {
                e[j] = (d.first_index + uint64_t(2 * j)) * kCounterIndexMul;
                o[j] = (d.first_index + uint64_t(2 * j + 1)) * kCounterIndexMul;
            }
            key = U(d.seed ^ (d.stream * kCounterStreamMul));
            even = U::load_aligned(e);
            odd = U::load_aligned(o);
        }

        // counter_hash(...) >> 40. Its last step, x ^ (x >> 32), leaves bits 40..63 alone, so
        // the top 24 bits are those of the second product.
        U top24(U index_term) const {
            U x = key ^ index_term;
            x = U(mul64(x ^ shift_right<32>(x), mix));
            x = U(mul64(x ^ shift_right<32>(x), mix));
            return shift_right<40>(x);
        }

        // The keep flags of the next W elements: counter_uniform >= p.
        xsimd::batch_bool<float, Arch> next() {
            const U packed = top24(even) | shift_left<32>(top24(odd));
            even = even + step;
            odd = odd + step;
            // Below 2^24, so the int -> float conversion is exact, as the scalar one is.
            return xsimd::to_float(as_int32_lanes(packed)) * B(0x1.0p-24f) >= p;
        }
    };

    // The dropout kernels: whole vectors, then a tail through zero-padded buffers (the hash of
    // the padding lanes is computed and ignored).
    static void dropout_apply(float* out, const float* in, int64_t n, const DropoutArgs& d) {
        DropoutLanes lanes(d);
        const B scale(d.scale), zero(0.0f);
        int64_t i = 0;
        for (; i + W <= n; i += W)
            xsimd::select(lanes.next(), B::load_unaligned(in + i) * scale, zero)
                .store_unaligned(out + i);
        if (i < n) {
            alignas(64) float buf[W] = {};
            for (int64_t j = 0; j < n - i; ++j) buf[j] = in[i + j];
            xsimd::select(lanes.next(), B::load_aligned(buf) * scale, zero).store_aligned(buf);
            for (int64_t j = 0; j < n - i; ++j) out[i + j] = buf[j];
        }
    }

    static void dropout_residual(float* out, const float* x, const float* branch, int64_t n,
                                 const DropoutArgs& d) {
        DropoutLanes lanes(d);
        const B scale(d.scale), zero(0.0f);
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            const B kept = xsimd::select(lanes.next(), B::load_unaligned(branch + i) * scale, zero);
            (B::load_unaligned(x + i) + kept).store_unaligned(out + i);
        }
        if (i < n) {
            alignas(64) float xb[W] = {};
            alignas(64) float bb[W] = {};
            for (int64_t j = 0; j < n - i; ++j) {
                xb[j] = x[i + j];
                bb[j] = branch[i + j];
            }
            const B kept = xsimd::select(lanes.next(), B::load_aligned(bb) * scale, zero);
            (B::load_aligned(xb) + kept).store_aligned(xb);
            for (int64_t j = 0; j < n - i; ++j) out[i + j] = xb[j];
        }
    }

    static void dropout_mask(float* mask, int64_t n, const DropoutArgs& d) {
        DropoutLanes lanes(d);
        const B scale(d.scale), zero(0.0f);
        int64_t i = 0;
        for (; i + W <= n; i += W) xsimd::select(lanes.next(), scale, zero).store_unaligned(mask + i);
        if (i < n) {
            alignas(64) float buf[W];
            xsimd::select(lanes.next(), scale, zero).store_aligned(buf);
            for (int64_t j = 0; j < n - i; ++j) mask[i + j] = buf[j];
        }
    }

    static void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr,
                      float beta1, float beta2, float eps, float weight_decay, float bc1,
                      float bc2) {
        const B b1(beta1), b2(beta2), one_b1(1.0f - beta1), one_b2(1.0f - beta2);
        const B inv_bc1(1.0f / bc1), inv_bc2(1.0f / bc2), lr_v(lr), eps_v(eps), wd(weight_decay);
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            B gv = B::load_unaligned(g + i);
            B mv = xsimd::fma(b1, B::load_unaligned(m + i), one_b1 * gv);
            B vv = xsimd::fma(b2, B::load_unaligned(v + i), one_b2 * gv * gv);
            mv.store_unaligned(m + i);
            vv.store_unaligned(v + i);
            B pv = B::load_unaligned(p + i);
            B step = mv * inv_bc1 / (xsimd::sqrt(vv * inv_bc2) + eps_v) + wd * pv;
            xsimd::fnma(lr_v, step, pv).store_unaligned(p + i);
        }
        for (; i < n; ++i) {
            m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
            v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
            float step = m[i] * (1.0f / bc1) / (std::sqrt(v[i] * (1.0f / bc2)) + eps) +
                         weight_decay * p[i];
            p[i] -= lr * step;
        }
    }
};

template <class Arch>
struct Exp {
    static xsimd::batch<float, Arch> apply(xsimd::batch<float, Arch> x) { return fast_exp(x); }
};
template <class Arch>
struct Tanh {
    static xsimd::batch<float, Arch> apply(xsimd::batch<float, Arch> x) { return fast_tanh(x); }
};

}  // namespace
}  // namespace pg::kernels::simd
