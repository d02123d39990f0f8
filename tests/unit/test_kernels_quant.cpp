// The block-quantized weight formats (kernels/quant_blocks.hpp) and the two products through
// them (kernels/quant_gemm.hpp): dequantize-while-packing must equal, bit for bit, the same
// table's fp32 GEMM over the dequantized weight; every int8 tile must equal its scalar model
// (quant_linear_reference) bit for bit. PG_EXPECT_INT8_GEMM names the int8 kernel dispatch
// must pick (tests/cmake/kernels_dispatch.cmake).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "kernels/int8_tile.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/quant_gemm.hpp"
#include "kernels_quant_support.hpp"
#include "kernel_tables_under_test.hpp"

using namespace pg::kernels;
using quant_test::Quantized;
using quant_test::normals;
using quant_test::same_bits;

namespace {

std::vector<const Int8Tile*> int8_tiles_under_test() {
    const char* only = std::getenv("PG_TEST_TABLES");
    if (only && std::strcmp(only, "dispatched") == 0) return {&active_int8_tile()};
    return available_int8_tiles();
}

const QuantFormat kFormats[] = {QuantFormat::q8_0, QuantFormat::q4_0};

}  // namespace

TEST_CASE("quantized blocks round-trip within half a step of their fp16 scale", "[kernels]") {
    for (QuantFormat f : kFormats) {
        const int rows = 3, cols = 96;
        std::vector<float> x = normals(std::size_t(rows) * cols, 0.05f, 11);
        x[5] = 0.0f;
        for (int c = 32; c < 64; ++c) x[std::size_t(cols) + c] = 0.0f;  // an all-zero block
        const Quantized w(f, x, rows, cols);
        const std::vector<float> back = w.dequantized();
        const float codes_per_half = f == QuantFormat::q8_0 ? 127.0f : 8.0f;
        for (int r = 0; r < rows; ++r)
            for (int b = 0; b < cols / kQuantBlock; ++b) {
                float amax = 0.0f;
                for (int t = 0; t < kQuantBlock; ++t) amax = std::max(amax, std::fabs(x[std::size_t(r) * cols + b * 32 + t]));
                // The scale is amax / codes (rounded to fp16, relative 2^-11); q4_0's far side
                // clamps at 7 steps, a whole step from its 8.
                const float step = amax / codes_per_half * 1.001f;
                const float bound = f == QuantFormat::q8_0 ? 0.5f * step : step;
                for (int t = 0; t < kQuantBlock; ++t) {
                    const std::size_t i = std::size_t(r) * cols + b * 32 + t;
                    CHECK(std::fabs(back[i] - x[i]) <= bound);
                }
            }
        CHECK(back[5] == 0.0f);
        for (int c = 32; c < 64; ++c) CHECK(back[std::size_t(cols) + c] == 0.0f);
        // Any range of the stream decodes as the whole does.
        std::vector<float> part(50);
        dequantize(f, w.data(), 77, 50, part.data());
        CHECK(std::memcmp(part.data(), back.data() + 77, sizeof(float) * 50) == 0);
    }
}

TEST_CASE("quantize_rows refuses non-finite values, fp16-overflowing blocks and odd widths", "[kernels]") {
    for (QuantFormat f : kFormats) {
        std::vector<float> x = normals(64, 1.0f, 3);
        std::vector<unsigned char> out(quant_matrix_bytes(f, 1, 64));
        auto message_of = [&](std::vector<float> values, int64_t cols) -> std::string {
            try {
                quantize_rows(f, values.data(), 1, cols, cols, out.data(), "h.0.mlp.fc");
            } catch (const pg::Error& e) {
                CHECK(e.status() == PG_ERR_INVALID_ARGUMENT);
                return e.what();
            }
            return "";
        };
        std::vector<float> bad = x;
        bad[40] = std::numeric_limits<float>::quiet_NaN();
        CHECK_THAT(message_of(bad, 64), Catch::Contains("h.0.mlp.fc") && Catch::Contains("[0, 40]"));
        bad[40] = std::numeric_limits<float>::infinity();
        CHECK_THAT(message_of(bad, 64), Catch::Contains("not a finite number"));
        bad = x;
        bad[3] = 1e8f;
        CHECK_THAT(message_of(bad, 64), Catch::Contains("fp16 block scale"));
        CHECK_THAT(message_of(x, 48), Catch::Contains("not a positive multiple of the 32"));
        CHECK(message_of(x, 64).empty());
    }
}

TEST_CASE("validate_quantized accepts good blocks and names the bad ones", "[kernels]") {
    for (QuantFormat f : kFormats) {
        const Quantized w(f, normals(4 * 64, 0.1f, 5), 4, 64);
        std::vector<unsigned char> bytes(w.bytes.begin(), w.bytes.end());
        auto message_of = [&](const std::vector<unsigned char>& b, int64_t rows, int64_t cols) -> std::string {
            try {
                validate_quantized(f, b.data(), b.size(), rows, cols, "wte");
            } catch (const pg::Error& e) {
                CHECK(e.status() == PG_ERR_FORMAT);
                return e.what();
            }
            return "";
        };
        CHECK(message_of(bytes, 4, 64).empty());
        CHECK_THAT(message_of(bytes, 5, 64), Catch::Contains("wte") && Catch::Contains("bytes"));
        CHECK_THAT(message_of(bytes, 8, 40), Catch::Contains("multiple"));
        std::vector<unsigned char> inf_scale = bytes;
        const std::size_t block5 = 5 * quant_block_bytes(f);
        inf_scale[block5] = 0x00, inf_scale[block5 + 1] = 0x7c;  // fp16 +inf
        CHECK_THAT(message_of(inf_scale, 4, 64), Catch::Contains("block 5") && Catch::Contains("not a finite"));
        inf_scale[block5 + 1] = 0xfe;  // a NaN
        CHECK_THAT(message_of(inf_scale, 4, 64), Catch::Contains("block 5"));
        if (f == QuantFormat::q8_0) {
            std::vector<unsigned char> min_code = bytes;
            min_code[block5 + 2 + 7] = 0x80;
            CHECK_THAT(message_of(min_code, 4, 64), Catch::Contains("-128"));
        }
    }
}

TEST_CASE("transpose_quantized requantizes W^T from W's values", "[kernels]") {
    for (QuantFormat f : kFormats) {
        const int rows = 64, cols = 96;
        const Quantized w(f, normals(std::size_t(rows) * cols, 0.1f, 9), rows, cols);
        std::vector<unsigned char> t(quant_matrix_bytes(f, cols, rows));
        transpose_quantized(f, w.data(), rows, cols, t.data());
        const std::vector<float> wd = w.dequantized();
        std::vector<float> td(std::size_t(rows) * cols);
        dequantize(f, t.data(), 0, int64_t(td.size()), td.data());
        // The transposed blocks (32 rows of one column) are requantized: each value within a
        // step of the new block's scale, which is at most the largest |w| over codes.
        double err = 0.0, norm = 0.0;
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
                const double d = td[std::size_t(c) * rows + r] - wd[std::size_t(r) * cols + c];
                err += d * d;
                norm += double(wd[std::size_t(r) * cols + c]) * wd[std::size_t(r) * cols + c];
            }
        CHECK(std::sqrt(err / norm) < (f == QuantFormat::q8_0 ? 0.01 : 0.12));
        CHECK(std::sqrt(err / norm) > 0.0);  // rounded again: not a copy
    }
}

TEST_CASE("dequantize-while-packing GEMMs equal the fp32 GEMM of the dequantized weight on every table",
          "[kernels]") {
    for (const KernelTable* table : pg::test::kernel_tables_under_test()) {
        for (QuantFormat f : kFormats) {
            // Forward x W^T (trans_b) with W [N, K], and the input gradient dy W (plain) with
            // W [K', N'] = [N, K]: edge tiles on both sides, a bias and beta.
            const int M = 13, N = 70, K = 96;
            const Quantized w(f, normals(std::size_t(N) * K, 0.1f, 21), N, K);
            const std::vector<float> wd = w.dequantized();
            for (bool trans_b : {true, false}) {
                INFO(table->name << " " << quant_format_name(f) << (trans_b ? " x W^T" : " dy W"));
                const int gn = trans_b ? N : K, gk = trans_b ? K : N;
                const std::vector<float> A = normals(std::size_t(M) * gk, 1.0f, 22), bias = normals(gn, 0.1f, 23);
                std::vector<float> C0 = normals(std::size_t(M) * gn, 1.0f, 24), Cq = C0, Cf = C0;
                GemmArgs g = gemm_args(false, trans_b, M, gn, gk, A.data(), gk, wd.data(), K, Cf.data(), gn, 0.5f, 1.0f);
                g.bias = bias.data();
                table->sgemm(g);
                g.B = nullptr;
                g.Bq = w.data();
                g.bq_format = f;
                g.C = Cq.data();
                table->sgemm(g);
                CHECK(same_bits(Cq, Cf));
            }
        }
    }
}

TEST_CASE("sgemm_parallel splits a quantized weight's columns bitwise as sgemm computes them", "[kernels]") {
    pg::ThreadPool pool(2);
    const int M = 40, N = 416, K = 512;  // a column split (N >> M) over 16 MFLOP
    const Quantized w(QuantFormat::q4_0, normals(std::size_t(N) * K, 0.1f, 31), N, K);
    for (bool trans_b : {true, false}) {
        const int gn = trans_b ? N : K, gk = trans_b ? K : N;
        const std::vector<float> A = normals(std::size_t(M) * gk, 1.0f, 32);
        std::vector<float> serial(std::size_t(M) * gn), split(serial.size());
        GemmArgs g = gemm_args(false, trans_b, M, gn, gk, A.data(), gk, nullptr, K, serial.data(), gn);
        g.Bq = w.data();
        g.bq_format = QuantFormat::q4_0;
        sgemm(g);
        g.C = split.data();
        sgemm_parallel(g, pool);
        CHECK(same_bits(split, serial));
    }
}

TEST_CASE("every int8 tile equals quant_linear_reference bit for bit", "[kernels]") {
    pg::ThreadPool pool(2);
    for (const Int8Tile* tile : int8_tiles_under_test()) {
        for (QuantFormat f : kFormats) {
            INFO(int8_tile_name(*tile) << " " << quant_format_name(f));
            const int M = 7, N = 37, K = 96;
            const Quantized w(f, normals(std::size_t(N) * K, 0.1f, 41), N, K);
            std::vector<float> X = normals(std::size_t(M) * (K + 5), 1.0f, 42);
            for (int k = 0; k < 32; ++k) X[std::size_t(2) * (K + 5) + 32 + k] = 0.0f;  // a zero block
            X[std::size_t(5) * (K + 5) + 70] = std::numeric_limits<float>::infinity();
            const std::vector<float> bias = normals(N, 0.1f, 43);
            for (bool accumulate : {false, true}) {
                std::vector<float> expect = normals(std::size_t(M) * (N + 3), 1.0f, 44), got = expect, split = expect;
                QuantLinearArgs a;
                a.M = M, a.N = N, a.K = K, a.X = X.data(), a.ldx = K + 5, a.W = w.data(), a.format = f;
                a.ldy = N + 3, a.bias = accumulate ? nullptr : bias.data(), a.accumulate = accumulate;
                a.Y = expect.data();
                quant_linear_reference(a);
                a.Y = got.data();
                quant_linear_with(*tile, a);
                CHECK(same_bits(got, expect));
                a.Y = split.data();
                quant_linear_with(*tile, a, &pool);
                CHECK(same_bits(split, expect));
                // The row with an infinity is NaN throughout (a diverged run must show), the others finite.
                CHECK(std::isnan(got[std::size_t(5) * (N + 3) + 9]));
                CHECK(std::isfinite(got[std::size_t(4) * (N + 3) + 9]));
            }
        }
    }
}

TEST_CASE("quant_linear stays within int8's error of the exact product and refuses bad K", "[kernels]") {
    const int M = 16, N = 64, K = 256;
    const Quantized w(QuantFormat::q8_0, normals(std::size_t(N) * K, 0.05f, 51), N, K);
    const std::vector<float> wd = w.dequantized(), X = normals(std::size_t(M) * K, 1.0f, 52);
    std::vector<float> exact(std::size_t(M) * N), y(exact.size());
    reference_table().sgemm(gemm_args(false, true, M, N, K, X.data(), K, wd.data(), K, exact.data(), N));
    QuantLinearArgs a;
    a.M = M, a.N = N, a.K = K, a.X = X.data(), a.ldx = K, a.W = w.data(), a.Y = y.data(), a.ldy = N;
    quant_linear(a);
    const double rel = quant_test::relative_rms(y, exact);
    CHECK(rel > 0.0);  // the activations are rounded: not the exact product
    CHECK(rel < 0.01);
    a.K = 100;
    CHECK_THROWS_WITH(quant_linear(a), Catch::Contains("K = 100"));
}

TEST_CASE("dispatch picks the int8 kernel PG_EXPECT_INT8_GEMM names", "[kernels]") {
    const std::vector<const Int8Tile*> tiles = available_int8_tiles();
    REQUIRE(!tiles.empty());
    CHECK(std::string(tiles.back()->name) == "generic");
    if (const char* expect = std::getenv("PG_EXPECT_INT8_GEMM")) CHECK(std::string(int8_gemm_name()) == expect);
    else if (!std::getenv("PG_INT8_KERNEL")) CHECK(&active_int8_tile() == tiles.front());
    const char* previous = force_reference(true);
    CHECK(std::string(int8_gemm_name()) == "generic");
    force_reference(std::strcmp(previous, "reference") == 0);
}
