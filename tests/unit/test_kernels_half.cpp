// A frozen 16-bit weight (fp16 or bf16) in the GEMM (GemmArgs::B16) and half_to_float, on every
// kernel table this CPU runs (natively the x86 ones; under qemu-aarch64 the NEON ones with FCVTL,
// on a core without FP16 arithmetic too). Both conversions are exact, so:
//   - half_to_float of every one of the 65536 bit patterns equals the value the format defines
//     (sign, exponent, fraction computed with ldexp here, not with the library's converter);
//   - a GEMM with B16 equals bit for bit the same table's GEMM on the fp32 copy of the weight,
//     which test_kernels.cpp checks against a double-precision product.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/kernel_table.hpp"
#include "kernel_tables_under_test.hpp"

namespace {

using pg::kernels::HalfFormat;

// The value of a bit pattern by the formats' definitions (NaN: any NaN).
double fp16_value(uint16_t h) {
    const int sign = h >> 15, exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
    const double s = sign ? -1.0 : 1.0;
    if (exponent == 0x1f) return fraction ? std::nan("") : s * INFINITY;
    if (exponent == 0) return s * std::ldexp(double(fraction), -24);
    return s * std::ldexp(1024.0 + fraction, exponent - 25);
}
double bf16_value(uint16_t b) {
    const int sign = b >> 15, exponent = (b >> 7) & 0xff, fraction = b & 0x7f;
    const double s = sign ? -1.0 : 1.0;
    if (exponent == 0xff) return fraction ? std::nan("") : s * INFINITY;
    if (exponent == 0) return s * std::ldexp(double(fraction), -133);
    return s * std::ldexp(128.0 + fraction, exponent - 134);
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// Nearest fp16 of a float in [-8, 8] (no overflow; subnormals are not reached by the weights).
uint16_t to_fp16(float f) {
    const uint32_t u = bits(f);
    const uint32_t sign = (u >> 16) & 0x8000;
    const float a = std::fabs(f);
    if (a < 6.2e-5f) return uint16_t(sign | uint32_t(std::lround(a * 16777216.0f)));  // 2^24
    int e;
    const float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
    uint32_t mant = uint32_t(std::lround(m * 2048.0f));  // 11 bits with the implicit one
    if (mant == 2048) {
        mant = 1024;
        ++e;
    }
    return uint16_t(sign | (uint32_t(e + 14) << 10) | (mant - 1024));
}
uint16_t to_bf16(float f) { return uint16_t((bits(f) + 0x8000u) >> 16); }  // rounded, no NaN

}  // namespace

TEST_CASE("half_to_float decodes every fp16 and bf16 bit pattern exactly on every table",
          "[kernels]") {
    std::vector<uint16_t> all(65536 + 5);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);  // 5 more: a vector tail
    std::vector<float> out(all.size());
    for (const pg::kernels::KernelTable* t : pg::test::kernel_tables_under_test())
        for (HalfFormat format : {HalfFormat::fp16, HalfFormat::bf16}) {
            CAPTURE(t->name, format == HalfFormat::fp16 ? "fp16" : "bf16");
            std::fill(out.begin(), out.end(), -1.0f);
            t->half_to_float(out.data(), all.data(), int64_t(all.size()), format);
            int wrong = 0;
            for (std::size_t i = 0; i < all.size(); ++i) {
                const double want =
                    format == HalfFormat::fp16 ? fp16_value(all[i]) : bf16_value(all[i]);
                const bool ok = std::isnan(want)
                                    ? std::isnan(out[i]) && std::signbit(out[i]) == bool(all[i] >> 15)
                                    : double(out[i]) == want &&
                                          std::signbit(out[i]) == bool(all[i] >> 15);
                if (!ok && ++wrong <= 5) {
                    CAPTURE(i, want, out[i]);
                    CHECK(ok);
                }
            }
            CHECK(wrong == 0);
            // Every table agrees with the scalar one bit for bit, NaN payloads included.
            std::vector<float> ref(all.size());
            pg::kernels::reference_table().half_to_float(ref.data(), all.data(),
                                                         int64_t(all.size()), format);
            CHECK(std::memcmp(ref.data(), out.data(), out.size() * sizeof(float)) == 0);
        }
}

TEST_CASE("a GEMM with a 16-bit B equals the same table's GEMM on its fp32 copy, bit for bit",
          "[kernels]") {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    auto fill = [&](std::size_t n) {
        std::vector<float> v(n);
        for (auto& x : v) x = dist(rng);
        return v;
    };
    pg::ThreadPool pool2(2);
    const bool layouts[4][2] = {{false, true}, {false, false}, {true, false}, {true, true}};
    // x W^T with W [out, in] (the LoRA base's forward) is trans_b; dy W (its input gradient)
    // plain. Shapes: partial row and column tiles, two K blocks, two N blocks (above the
    // 1.6e7-flop split threshold of sgemm_parallel), the head's 65 columns.
    const int shapes[][3] = {{13, 65, 19}, {64, 128, 128}, {120, 520, 160}, {200, 30, 600}};
    for (const pg::kernels::KernelTable* t : pg::test::kernel_tables_under_test())
        for (HalfFormat format : {HalfFormat::fp16, HalfFormat::bf16})
            for (const auto& l : layouts)
                for (const auto& s : shapes) {
                    const int M = s[0], N = s[1], K = s[2];
                    CAPTURE(t->name, format == HalfFormat::fp16 ? "fp16" : "bf16", l[0], l[1], M,
                            N, K);
                    const int lda = (l[0] ? M : K) + 1, ldb = (l[1] ? K : N) + 3, ldc = N + 2;
                    const std::vector<float> A = fill(std::size_t(l[0] ? K : M) * lda);
                    const std::vector<float> C0 = fill(std::size_t(M) * ldc);
                    const std::vector<float> bias = fill(std::size_t(N));
                    // The weight in 16 bits, and its exact fp32 copy.
                    const std::vector<float> W = fill(std::size_t(l[1] ? N : K) * ldb);
                    std::vector<uint16_t> W16(W.size());
                    for (std::size_t i = 0; i < W.size(); ++i)
                        W16[i] = format == HalfFormat::fp16 ? to_fp16(W[i]) : to_bf16(W[i]);
                    std::vector<float> W32(W.size());
                    pg::kernels::reference_table().half_to_float(W32.data(), W16.data(),
                                                                 int64_t(W16.size()), format);
                    pg::kernels::GemmArgs g = pg::kernels::gemm_args(
                        l[0], l[1], M, N, K, A.data(), lda, W32.data(), ldb, nullptr, ldc, 0.5f,
                        K == 19 ? 0.0f : 1.0f);
                    g.bias = bias.data();
                    std::vector<float> c32 = C0, c16 = C0, c16_split = C0;
                    g.C = c32.data();
                    t->sgemm(g);
                    pg::kernels::GemmArgs h = g;
                    h.B = nullptr;  // only the 16-bit weight is given
                    h.B16 = W16.data();
                    h.b16_format = format;
                    h.C = c16.data();
                    t->sgemm(h);
                    CHECK(std::memcmp(c32.data(), c16.data(), c32.size() * 4) == 0);
                    // And split across threads (the split offsets B16 as it does B).
                    h.C = c16_split.data();
                    pg::kernels::sgemm_parallel_with(*t, h, pool2);
                    CHECK(std::memcmp(c32.data(), c16_split.data(), c32.size() * 4) == 0);
                }
}
