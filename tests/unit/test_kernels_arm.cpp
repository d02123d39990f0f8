// CPU feature detection and the aarch64 tables. Under qemu-aarch64 (tests/cmake/
// kernels_dispatch.cmake) PG_EXPECT_FEATURES / PG_EXPECT_NO_FEATURES list the features the
// emulated CPU has / lacks (cortex-a53: ARMv8.0; max: every extension), so HWCAP detection is
// checked on both, and PG_EXPECT_CORE the core dispatch must have recognised from MIDR_EL1.
// Every lane-FMA GEMM variant is also checked against the xsimd neon64 GEMM bit for bit: all
// compute each element of C by the same chain of fused multiply-adds, so any difference means a
// variant reads a wrong A or B value or changes the order of the operations.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/arm_cores.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/kernel_table.hpp"

namespace {

std::set<std::string> words(const std::string& s) {
    std::istringstream in(s);
    std::set<std::string> out;
    for (std::string w; in >> w;) out.insert(w);
    return out;
}

}  // namespace

TEST_CASE("cpu_features reports what the CPU has, as PG_EXPECT_FEATURES says", "[kernels]") {
    const std::set<std::string> have = words(pg::kernels::cpu_features());
    CAPTURE(pg::kernels::cpu_features());
    REQUIRE(!have.empty());
#if defined(__aarch64__)
    // Every ARMv8-A CPU has NEON, and every aarch64 table is offered: first the lane-FMA
    // variant arm_cores.def names for this core, then the other variants, then the xsimd one.
    CHECK(have.count("asimd") == 1);
    const auto tables = pg::kernels::available_tables();
    const auto& lanes = pg::kernels::neon64_lane_tables();
    REQUIRE(tables.size() == lanes.size() + 2);
    CHECK(std::string(tables[0]->name) ==
          pg::kernels::lane_variant_for_midr(pg::kernels::dispatch_midr()));
    for (std::size_t i = 0; i < lanes.size(); ++i)
        CHECK(std::string(tables[i]->name).rfind("arm64+neon+fmla-lane", 0) == 0);
    CHECK(std::string(tables[lanes.size()]->name) == "arm64+neon");
    // The core qemu emulates (-cpu cortex-a76: MIDR 0x414fd0b1), read with mrs MIDR_EL1.
    if (const char* core = std::getenv("PG_EXPECT_CORE")) {
        CAPTURE(pg::kernels::cpu_core());
        CHECK(std::string(pg::kernels::cpu_core()).rfind(std::string(core) + " (MIDR ", 0) == 0);
    }
#elif defined(__x86_64__)
    CHECK(have.count("sse2") == 1);
    // A table is offered exactly when its features are detected.
    bool avx2_table = false, avx512_table = false;
    for (auto* t : pg::kernels::available_tables()) {
        avx2_table = avx2_table || std::string(t->name) == "fma3+avx2";
        avx512_table = avx512_table || std::string(t->name) == "avx512bw";
    }
    CHECK(avx2_table == (have.count("avx2") == 1 && have.count("fma") == 1));
    CHECK(avx512_table == (have.count("avx512bw") == 1));
#endif
    if (const char* expect = std::getenv("PG_EXPECT_FEATURES"))
        for (const std::string& w : words(expect)) {
            CAPTURE(w);
            CHECK(have.count(w) == 1);
        }
    if (const char* absent = std::getenv("PG_EXPECT_NO_FEATURES"))
        for (const std::string& w : words(absent)) {
            CAPTURE(w);
            CHECK(have.count(w) == 0);
        }
}

#if defined(__aarch64__)
TEST_CASE("every lane-FMA GEMM variant equals the xsimd neon64 GEMM bit for bit", "[kernels]") {
    const pg::kernels::KernelTable* xs = nullptr;
    for (auto* t : pg::kernels::available_tables())
        if (std::string(t->name) == "arm64+neon") xs = t;
    REQUIRE(xs);
    REQUIRE(pg::kernels::neon64_lane_tables().size() >= 2);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto fill = [&](std::size_t n) {
        std::vector<float> v(n);
        for (auto& x : v) x = dist(rng);
        return v;
    };
    const bool layouts[4][2] = {{false, true}, {false, false}, {true, false}, {true, true}};
    // M: a partial tile, tall 24-row blocks, two row blocks (MC = 16 MR); N: 1-, 2- and
    // 3-vector last panels, two N blocks (NC = 504 or 512); K: two K blocks (256; 128 for a
    // wide transposed A), an odd K (the k2 variant's tail step).
    // The xsimd product is computed once per shape and every variant compared with it.
    for (auto& l : layouts)
        for (int M : {13, 50, 207})
            for (int N : {13, 68, 509})
                for (int K : {1, 19, 300}) {
                    CAPTURE(l[0], l[1], M, N, K);
                    const int lda = (l[0] ? M : K) + 3, ldb = (l[1] ? K : N) + 1, ldc = N + 2;
                    const std::vector<float> A = fill(std::size_t(l[0] ? K : M) * lda);
                    const std::vector<float> B = fill(std::size_t(l[1] ? N : K) * ldb);
                    const std::vector<float> C0 = fill(std::size_t(M) * ldc);
                    const std::vector<float> bias = fill(std::size_t(N));
                    pg::kernels::GemmArgs g = pg::kernels::gemm_args(
                        l[0], l[1], M, N, K, A.data(), lda, B.data(), ldb, nullptr, ldc, 0.75f,
                        K == 19 ? 0.0f : 0.5f);
                    g.bias = K == 1 ? nullptr : bias.data();
                    std::vector<float> c_xsimd = C0;
                    g.C = c_xsimd.data();
                    xs->sgemm(g);
                    for (const pg::kernels::KernelTable* lane : pg::kernels::neon64_lane_tables()) {
                        CAPTURE(lane->name);
                        std::vector<float> c_lane = C0;
                        g.C = c_lane.data();
                        lane->sgemm(g);
                        CHECK(std::memcmp(c_lane.data(), c_xsimd.data(), c_lane.size() * 4) == 0);
                    }
                }
}
#endif
