// The dropout kernels (kernels::dropout_apply / dropout_residual / dropout_mask) on every table
// this CPU can run: the SIMD tables compute the counter hash of lib/core/rng.hpp many lanes at a
// time and must keep exactly the elements the scalar definition keeps, with bit-identical
// outputs, for any seed, stream, first index (including the layer bits and 64-bit wrap-around),
// probability (including ties u == p and the extremes) and length (every vector tail). Tagged
// [kernels], so qemu also runs it on the AVX2, SSE2 and aarch64 tables.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/kernel_table.hpp"
#include "model/dropout_mask.hpp"

using pg::kernels::DropoutArgs;
using pg::kernels::KernelTable;

namespace {

std::vector<float> random_values(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = dist(rng);
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The definition, spelled out here independently of every table.
bool keeps(const DropoutArgs& d, int64_t i) {
    return pg::counter_uniform(d.seed, d.stream, d.first_index + uint64_t(i)) >= d.p;
}

// Runs the three kernels of `table` and checks each element against the definition, bit for bit;
// the in-place forms (out aliasing an input) must give the same bits.
void check_table(const KernelTable& table, const DropoutArgs& d, int64_t n) {
    INFO("table " << table.name << ", n " << n << ", p " << d.p << ", seed " << d.seed << ", stream "
                  << d.stream << ", first index " << d.first_index);
    const std::vector<float> in = random_values(n, uint32_t(n * 31 + 7));
    const std::vector<float> x = random_values(n, uint32_t(n * 17 + 3));
    const size_t count = static_cast<size_t>(n);
    std::vector<float> expect_apply(count), expect_residual(count), expect_mask(count);
    for (int64_t i = 0; i < n; ++i) {
        const bool keep = keeps(d, i);
        expect_apply[size_t(i)] = keep ? in[size_t(i)] * d.scale : 0.0f;
        expect_mask[size_t(i)] = keep ? d.scale : 0.0f;
    }
    // The residual rounds the product, then the sum (no fused multiply-add, which a compiler
    // would form from x + in * scale where FMA is baseline): add the stored products.
    for (int64_t i = 0; i < n; ++i) expect_residual[size_t(i)] = x[size_t(i)] + expect_apply[size_t(i)];

    // One float of canary past the end: no kernel may write beyond n.
    const float canary = 12345.0f;
    std::vector<float> out(size_t(n) + 1, canary);
    table.dropout_apply(out.data(), in.data(), n, d);
    CHECK(out[size_t(n)] == canary);
    out.resize(size_t(n));
    CHECK(same_bits(out, expect_apply));

    std::vector<float> inplace = in;
    table.dropout_apply(inplace.data(), inplace.data(), n, d);
    CHECK(same_bits(inplace, expect_apply));

    out.assign(size_t(n) + 1, canary);
    table.dropout_residual(out.data(), x.data(), in.data(), n, d);
    CHECK(out[size_t(n)] == canary);
    out.resize(size_t(n));
    CHECK(same_bits(out, expect_residual));

    inplace = x;
    table.dropout_residual(inplace.data(), inplace.data(), in.data(), n, d);
    CHECK(same_bits(inplace, expect_residual));

    out.assign(size_t(n) + 1, canary);
    table.dropout_mask(out.data(), n, d);
    CHECK(out[size_t(n)] == canary);
    out.resize(size_t(n));
    CHECK(same_bits(out, expect_mask));
}

DropoutArgs args(uint64_t seed, uint64_t stream, uint64_t first_index, float p) {
    DropoutArgs d;
    d.seed = seed;
    d.stream = stream;
    d.first_index = first_index;
    d.p = p;
    d.scale = 1.0f / (1.0f - p);
    return d;
}

}  // namespace

TEST_CASE("dropout kernels keep exactly the counter-hash elements on every table", "[kernels][dropout]") {
    const std::vector<const KernelTable*> tables = pg::kernels::available_tables();
    REQUIRE(std::string(tables.back()->name) == "reference");

    // Lengths around every vector width (4, 8, 16 floats) and some long ones, odd ones included.
    const int64_t lengths[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 1000, 4099};
    const float probabilities[] = {0.0f,
                                   0x1.0p-24f,                       // the smallest nonzero u
                                   std::nextafter(0x1.0p-24f, 1.0f),  // just above it
                                   0.1f,
                                   0.3f,
                                   0.5f,
                                   std::nextafter(1.0f, 0.0f)};  // keeps only u == 1 - 2^-24
    const uint64_t seeds[] = {0, 1234, 0xFFFFFFFFFFFFFFFFull, 0x8000000000000001ull};
    const uint64_t streams[] = {0, 17 * 16 + 1, 0xFFFFFFFFull, 0x123456789ABCDEFull};
    // Element 0's hash index: 0, unaligned ones, the layer bits (layer << 40 | index) and the
    // top of the 64-bit range, where first_index + i wraps around.
    const uint64_t first_indices[] = {0, 1, 3, (uint64_t(5) << 40) | 123457, (uint64_t(1) << 40) - 7,
                                      0xFFFFFFFFFFFFFFFFull - 40};

    for (const KernelTable* table : tables) {
        for (int64_t n : lengths)
            for (float p : probabilities) check_table(*table, args(1234, 17 * 16 + 2, 99, p), n);
        for (uint64_t seed : seeds)
            for (uint64_t stream : streams)
                for (uint64_t first : first_indices) check_table(*table, args(seed, stream, first, 0.3f), 97);
    }
}

TEST_CASE("dropout kernels keep an element whose uniform equals p exactly", "[kernels][dropout]") {
    // Ties decide keep (u >= p): take p from the hash's own values, so every table meets u == p
    // at some lane position, and elements either side of it.
    const uint64_t seed = 77, stream = 5;
    for (const KernelTable* table : pg::kernels::available_tables()) {
        for (uint64_t tie : {0ull, 1ull, 6ull, 13ull, 30ull}) {
            const float p = pg::counter_uniform(seed, stream, tie);
            if (p <= 0.0f) continue;  // a zero p is covered by the first test
            DropoutArgs d = args(seed, stream, 0, p);
            check_table(*table, d, 37);
            std::vector<float> mask(37);
            table->dropout_mask(mask.data(), 37, d);
            CHECK(mask[size_t(tie)] == d.scale);
        }
    }
}

TEST_CASE("dropout kernels over many indices match the definition on every table", "[kernels][dropout]") {
    // A long run of indices with random seeds, streams and probabilities: each table's kept set
    // equals the scalar definition element by element.
    std::mt19937_64 rng(2024);
    const int64_t n = 20000;
    std::vector<float> mask(static_cast<size_t>(n));
    for (int round = 0; round < 6; ++round) {
        const DropoutArgs d = args(rng(), rng(), rng() >> 20, float(rng() % 1000) / 1000.0f);
        for (const KernelTable* table : pg::kernels::available_tables()) {
            INFO("table " << table->name << ", round " << round);
            table->dropout_mask(mask.data(), n, d);
            int64_t wrong = 0;
            for (int64_t i = 0; i < n; ++i) wrong += (mask[size_t(i)] != 0.0f) != keeps(d, i);
            CHECK(wrong == 0);
        }
    }
}

TEST_CASE("dropout_args maps a model's dropout sites to the kernels", "[model][dropout]") {
    // The engine calls the kernels with dropout_args(d, place, layer, first element); the kernels
    // must then keep exactly what dropout_keep (the reference model's definition) keeps.
    pg::Dropout d;
    d.p = 0.25f;
    d.seed = 99;
    d.stream = 3;
    const int64_t n = 301;
    std::vector<float> mask(static_cast<size_t>(n));
    for (int place = pg::kDropEmbedding; place <= pg::kDropMlpProj; ++place) {
        for (int layer : {0, 1, 11}) {
            const uint64_t first = 1000 + uint64_t(place) * 7;
            const pg::kernels::DropoutArgs a = pg::dropout_args(d, pg::DropoutPlace(place), layer, first);
            CHECK(a.scale == 1.0f / (1.0f - d.p));
            pg::kernels::dropout_mask(mask.data(), n, a);
            int64_t wrong = 0;
            for (int64_t i = 0; i < n; ++i)
                wrong += (mask[size_t(i)] != 0.0f) !=
                         pg::dropout_keep(d, pg::DropoutPlace(place), layer, first + uint64_t(i));
            CHECK(wrong == 0);
        }
    }
}
