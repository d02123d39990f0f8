// The bf16-arithmetic GEMM (GemmArgs::bf16_arithmetic, kernels/bf16_gemm.hpp). Where the CPU
// has AVX512_BF16 dispatch must take the VDPBF16PS kernel, and it must equal its exact scalar
// model (reference::sgemm_bf16_arithmetic) bit for bit and stay within bf16's error of the exact
// product; without it (qemu-x86_64's CPUs, AVX-512 CPUs before Cooper Lake, aarch64, the
// reference table) a GEMM that asks for it is the exact one bit for bit. PG_EXPECT_BF16_GEMM
// names the GEMM dispatch must report (tests/cmake/kernels_dispatch.cmake).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.hpp"
#include "kernels/bf16_gemm.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/half_float.hpp"
#include "kernels/reference/reference_kernels.hpp"
#include "half_gemm_support.hpp"

namespace {

using half_gemm_test::relative_rms;
using half_gemm_test::same_bits;
using pg::kernels::GemmArgs;

bool bf16_gemm_present() { return std::string(pg::kernels::bf16_arithmetic_gemm()) != "none"; }

// A GEMM problem with a bf16 weight: A [M, K] fp32 (plain), W [N, K] (trans_b) or [K, N] in
// bf16, C [M, N]; a_scale and w_scale the standard deviations of normal A and W values.
struct Bf16Problem {
    GemmArgs g;
    std::vector<float> A, C0, bias, gelu_in, gelu_out;
    std::vector<uint16_t> W;
    Bf16Problem(bool trans_b, int M, int N, int K, float a_scale, float w_scale, uint32_t seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const int lda = K + 3, ldb = (trans_b ? K : N) + 1, ldc = N + 2;
        A.resize(std::size_t(M) * lda);
        for (float& x : A) x = a_scale * normal(rng);
        W.resize(std::size_t(trans_b ? N : K) * ldb);
        for (uint16_t& w : W) w = pg::kernels::float_to_bf16(w_scale * normal(rng));
        C0.resize(std::size_t(M) * ldc);
        for (float& x : C0) x = normal(rng);
        bias.resize(std::size_t(N));
        for (float& x : bias) x = 0.1f * normal(rng);
        gelu_in.resize(C0.size());
        for (float& x : gelu_in) x = normal(rng);
        gelu_out.assign(C0.size(), 0.0f);
        g = pg::kernels::gemm_args(false, trans_b, M, N, K, A.data(), lda, nullptr, ldb, nullptr, ldc);
        g.B16 = W.data();
        g.b16_format = pg::kernels::HalfFormat::bf16;
        g.bf16_arithmetic = true;
    }
    // C (and the fused GELU's output, if asked for, after C) for g with the given function.
    template <class F>
    std::vector<float> run(F&& gemm) {
        std::vector<float> C = C0;
        GemmArgs h = g;
        h.C = C.data();
        if (h.gelu_out) {
            std::fill(gelu_out.begin(), gelu_out.end(), 0.0f);
            h.gelu_out = gelu_out.data();
        }
        gemm(h);
        if (h.gelu_out) C.insert(C.end(), gelu_out.begin(), gelu_out.end());
        return C;
    }
};

void exact_gemm(const GemmArgs& g) {
    GemmArgs exact = g;
    exact.bf16_arithmetic = false;
    pg::kernels::sgemm(exact);
}

// The scalar model, then the fused GELU as the active table computes it (the SIMD GEMMs fuse
// their table's GELU, whose fast tanh differs from the reference table's).
void model_with_table_gelu(const GemmArgs& g) {
    GemmArgs plain = g;
    plain.gelu_out = nullptr;
    plain.gelu_grad_input = nullptr;
    pg::kernels::reference::sgemm_bf16_arithmetic(plain);
    for (int i = 0; i < g.M; ++i) {
        const int64_t at = int64_t(i) * g.ldc;
        if (g.gelu_out) pg::kernels::gelu_forward(g.gelu_out + at, g.C + at, g.N);
        if (g.gelu_grad_input) {  // C = gelu'(x) C, as gelu_backward into a zero row gives it
            std::vector<float> grad(std::size_t(g.N), 0.0f);
            pg::kernels::gelu_backward(grad.data(), g.gelu_grad_input + at, g.C + at, g.N);
            std::memcpy(g.C + at, grad.data(), grad.size() * sizeof(float));
        }
    }
}

}  // namespace

TEST_CASE("dispatch takes the VDPBF16PS GEMM exactly where the CPU has AVX512_BF16", "[kernels]") {
    const std::string gemm = pg::kernels::bf16_arithmetic_gemm();
    CAPTURE(gemm, pg::kernels::cpu_features(), pg::kernels::active_arch_name());
    const std::string features = std::string(" ") + pg::kernels::cpu_features() + " ";
    const bool reference = std::string(pg::kernels::active_arch_name()) == "reference";
    CHECK((gemm == "avx512-bf16+vdpbf16ps") == (features.find(" avx512_bf16 ") != std::string::npos && !reference));
    CHECK((gemm == "none" || gemm == "avx512-bf16+vdpbf16ps"));
    if (const char* expect = std::getenv("PG_EXPECT_BF16_GEMM")) CHECK(gemm == expect);
}

TEST_CASE("the bf16-arithmetic GEMM equals its scalar model bit for bit, or the exact GEMM without AVX512_BF16",
          "[kernels]") {
    pg::ThreadPool pool(3);
    // M: a partial row tile, two row blocks (128); N: partial 16-lane vectors, a 1- and 2-vector
    // last panel, two N blocks (960); K: odd (a zero-padded last pair), under and over the 32 k
    // of a packing step, two K blocks (512).
    for (bool trans_b : {true, false})
        for (int M : {1, 13, 150})
            for (int N : {5, 68, 1000})
                for (int K : {7, 64, 301, 530}) {
                    if (int64_t(M) * N * K > 15000000) continue;  // the scalar model is slow under qemu
                    CAPTURE(trans_b, M, N, K);
                    Bf16Problem p(trans_b, M, N, K, 1.0f, 0.05f, uint32_t(M * 7 + N * 3 + K));
                    // alpha, beta, bias and the fused GELU as the engine uses them
                    p.g.alpha = K == 64 ? 0.75f : 1.0f;
                    p.g.beta = K == 301 ? 1.0f : 0.0f;
                    p.g.bias = K == 7 ? nullptr : p.bias.data();
                    if (K == 530) {
                        if (trans_b) p.g.gelu_out = p.gelu_out.data();
                        else p.g.gelu_grad_input = p.gelu_in.data();
                    }
                    const std::vector<float> fast = p.run([](const GemmArgs& g) { pg::kernels::sgemm(g); });
                    const std::vector<float> exact = p.run(exact_gemm);
                    const std::vector<float> split =
                        p.run([&](const GemmArgs& g) { pg::kernels::sgemm_parallel(g, pool); });
                    if (bf16_gemm_present()) {
                        // The scalar model only where the kernel follows it: it is the slowest
                        // part of this test under qemu, and unused without the extension.
                        CHECK(same_bits(fast, p.run(model_with_table_gelu)));
                        CHECK_FALSE(same_bits(fast, exact));
                    } else {
                        CHECK(same_bits(fast, exact));
                    }
                    CHECK(same_bits(split, fast));
                }
}

TEST_CASE("the bf16-arithmetic GEMM's model matches VDPBF16PS on denormals, zeros, infinities and NaN",
          "[kernels]") {
    if (!bf16_gemm_present()) {
        SUCCEED("no AVX512_BF16 here: only the exact GEMM runs");
        return;
    }
    Bf16Problem p(true, 9, 20, 40, 1.0f, 0.05f, 11);
    const float denormal = std::numeric_limits<float>::denorm_min() * 1000.0f;
    const float specials[] = {0.0f, -0.0f, denormal, -denormal, 1e-38f, 3e38f, -3e38f,
                              std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
    for (int i = 0; i < p.g.M; ++i) p.A[std::size_t(i) * p.g.lda + std::size_t(i) * 3] = specials[i];
    p.W[5] = pg::kernels::float_to_bf16(denormal);  // a denormal weight: DAZ
    p.W[50] = pg::kernels::float_to_bf16(1e-30f);   // a product below fp32's normals: FTZ
    p.A[1] = 1e-10f;
    const std::vector<float> fast = p.run([](const GemmArgs& g) { pg::kernels::sgemm(g); });
    const std::vector<float> model = p.run(pg::kernels::reference::sgemm_bf16_arithmetic);
    for (std::size_t i = 0; i < fast.size(); ++i) {
        CAPTURE(i, fast[i], model[i]);
        if (std::isnan(model[i])) CHECK(std::isnan(fast[i]));
        else CHECK(pg::kernels::bits_of_float(fast[i]) == pg::kernels::bits_of_float(model[i]));
    }
}

// The tolerance: on activation-like inputs (A ~ N(0, 1), a LayerNorm output's scale; weights ~
// N(0, 0.05)) the scalar model's relative RMS error against the exact product of the same bf16
// weights was measured at 1.66e-3 to 1.68e-3 for K = 128, 512 and 2048, either layout of B
// (printed below; the kernel's is the same, bit for bit). It is the rounding of A to bf16 (at
// most 2^-9 relative per value), independent of K since the roundings are independent. 2e-3 is
// 1.2x that; the error must also be above 1e-3, or the GEMM did not round A at all.
TEST_CASE("the bf16-arithmetic GEMM is within bf16's rounding error of the exact product", "[kernels]") {
    for (bool trans_b : {true, false})
        for (int K : {128, 512, 2048}) {
            Bf16Problem p(trans_b, 64, 96, K, 1.0f, 0.05f, uint32_t(K));
            const std::vector<float> exact = p.run(pg::kernels::reference::sgemm);
            const std::vector<float> model = p.run(pg::kernels::reference::sgemm_bf16_arithmetic);
            const double model_error = relative_rms(model, exact, p.g);
            CAPTURE(trans_b, K, model_error);
            WARN("bf16-arithmetic GEMM, K = " << K << ": relative RMS error " << model_error);
            CHECK(model_error < 2e-3);
            CHECK(model_error > 1e-3);
            if (bf16_gemm_present()) {
                const std::vector<float> fast = p.run([](const GemmArgs& g) { pg::kernels::sgemm(g); });
                CHECK(relative_rms(fast, exact, p.g) == model_error);
            }
        }
}

TEST_CASE("a GEMM asking for bf16 arithmetic is exact where it does not apply", "[kernels]") {
    // An fp16 weight, an fp32 B and a transposed A never take the bf16 GEMM.
    Bf16Problem p(true, 20, 40, 64, 1.0f, 0.05f, 3);
    const std::vector<float> bf16_exact = p.run(exact_gemm);
    p.g.b16_format = pg::kernels::HalfFormat::fp16;  // the same bits read as fp16
    CHECK(same_bits(p.run([](const GemmArgs& g) { pg::kernels::sgemm(g); }), p.run(exact_gemm)));
    p.g.b16_format = pg::kernels::HalfFormat::bf16;
    std::vector<float> wide(p.W.size());
    for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = pg::kernels::bf16_to_float(p.W[i]);
    p.g.B16 = nullptr;
    p.g.B = wide.data();
    CHECK(same_bits(p.run([](const GemmArgs& g) { pg::kernels::sgemm(g); }), bf16_exact));
}
