// quant_linear (kernels/quant_gemm.hpp): X quantized per row and block into packed row tiles
// once, then each column panel of W decoded into packed int8 codes and swept by the chosen
// micro-kernel (kernels/int8_tile.hpp) over every row tile. Threads split the row tiles for the
// quantization and the column panels for the product; no element depends on the split.
#include "kernels/quant_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "kernels/half_float.hpp"
#include "kernels/int8_tile.hpp"

namespace pg::kernels {

namespace {

// X's block (32 values at x): its scale and codes, as quant_gemm.hpp defines them.
float quantize_activation_block(const float* x, int8_t* q) {
    float amax = 0.0f;
    bool finite = true;
    for (int t = 0; t < kQuantBlock; ++t) {
        finite = finite && std::isfinite(x[t]);
        amax = std::max(amax, std::fabs(x[t]));
    }
    const float scale = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
    const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
    for (int t = 0; t < kQuantBlock; ++t)
        q[t] = int8_t(inverse == 0.0f ? 0.0f : std::clamp(std::nearbyint(x[t] * inverse), -127.0f, 127.0f));
    return scale;
}

// W's block of index `block` in the stream: its scale and codes.
float weight_block(QuantFormat format, const void* w, int64_t block, int8_t* q) {
    if (format == QuantFormat::q8_0) {
        const BlockQ8& b = static_cast<const BlockQ8*>(w)[block];
        std::copy(b.q, b.q + kQuantBlock, q);
        return fp16_to_float(b.scale);
    }
    const BlockQ4& b = static_cast<const BlockQ4*>(w)[block];
    for (int t = 0; t < kQuantBlock / 2; ++t) {
        q[t] = int8_t((b.q[t] & 0xf) - 8);
        q[t + kQuantBlock / 2] = int8_t((b.q[t] >> 4) - 8);
    }
    return fp16_to_float(b.scale);
}

// Where value t of row (or column) r of a block lands in a packed block of `width` rows.
int64_t packed_at(const Int8Tile& tile, int width, int r, int t) {
    if (tile.pair_layout) return (t / 8) * width * 8 + (r / 2) * 16 + (r % 2) * 8 + t % 8;
    return (t / 4) * width * 4 + r * 4 + t % 4;
}

void check_args(const QuantLinearArgs& a) {
    require(a.K > 0 && a.K % kQuantBlock == 0, PG_ERR_INVALID_ARGUMENT, [&] {
        return "quant_linear: K = " + std::to_string(a.K) + " is not a positive multiple of " +
               std::to_string(kQuantBlock);
    });
    require(a.M >= 0 && a.N >= 0 && a.ldx >= a.K && a.ldy >= a.N, PG_ERR_INVALID_ARGUMENT,
            "quant_linear: negative M or N, or ldx < K or ldy < N");
    require(a.M == 0 || a.N == 0 || (a.X && a.W && a.Y), PG_ERR_INVALID_ARGUMENT,
            "quant_linear: X, W and Y must not be null");
}

void run_parallel(ThreadPool* pool, int64_t units, const std::function<void(int64_t, int64_t)>& body) {
    if (!pool || pool->size() == 1 || units < 2) return body(0, units);
    pool->parallel_for(units, [&](int, int64_t begin, int64_t end) { body(begin, end); });
}

}  // namespace

const char* int8_tile_name(const Int8Tile& tile) { return tile.name; }

const char* int8_gemm_name() { return active_int8_tile().name; }

void quant_linear_with(const Int8Tile& tile, const QuantLinearArgs& a, ThreadPool* pool) {
    check_args(a);
    if (a.M == 0 || a.N == 0) return;
    const int MR = tile.mr, NR = tile.nr, blocks = a.K / kQuantBlock;
    const int64_t row_tiles = (a.M + MR - 1) / MR, panels = (a.N + NR - 1) / NR;
    const int64_t a_tile_bytes = int64_t(blocks) * kQuantBlock * MR;
    std::vector<uint8_t> packed_a(std::size_t(row_tiles * a_tile_bytes));
    std::vector<float> scales_a(std::size_t(row_tiles * blocks * MR));
    const uint8_t offset = tile.unsigned_a ? 0x80 : 0;  // q + 128 as a byte: q ^ 0x80
    run_parallel(pool, row_tiles, [&](int64_t t0, int64_t t1) {
        int8_t q[kQuantBlock];
        for (int64_t t = t0; t < t1; ++t)
            for (int r = 0; r < MR; ++r) {
                const int64_t i = t * MR + r;
                for (int b = 0; b < blocks; ++b) {
                    float scale = 0.0f;
                    if (i < a.M) scale = quantize_activation_block(a.X + i * a.ldx + b * kQuantBlock, q);
                    else std::fill(q, q + kQuantBlock, int8_t(0));
                    scales_a[std::size_t((t * blocks + b) * MR + r)] = scale;
                    uint8_t* dst = packed_a.data() + t * a_tile_bytes + int64_t(b) * kQuantBlock * MR;
                    for (int k = 0; k < kQuantBlock; ++k) dst[packed_at(tile, MR, r, k)] = uint8_t(q[k]) ^ offset;
                }
            }
    });
    run_parallel(pool, panels, [&](int64_t p0, int64_t p1) {
        std::vector<int8_t> packed_b(std::size_t(blocks) * kQuantBlock * NR);
        std::vector<float> scales_b(std::size_t(blocks) * NR), out(std::size_t(MR) * NR);
        std::vector<int32_t> corr(std::size_t(blocks) * NR);
        int8_t q[kQuantBlock];
        for (int64_t p = p0; p < p1; ++p) {
            const int j0 = int(p * NR), nr = std::min(NR, a.N - j0);
            for (int c = 0; c < NR; ++c)
                for (int b = 0; b < blocks; ++b) {
                    float scale = 0.0f;
                    if (c < nr) scale = weight_block(a.format, a.W, int64_t(j0 + c) * blocks + b, q);
                    else std::fill(q, q + kQuantBlock, int8_t(0));
                    int32_t sum = 0;
                    int8_t* dst = packed_b.data() + int64_t(b) * kQuantBlock * NR;
                    for (int k = 0; k < kQuantBlock; ++k) {
                        dst[packed_at(tile, NR, c, k)] = q[k];
                        sum += q[k];
                    }
                    scales_b[std::size_t(b) * NR + c] = scale;
                    corr[std::size_t(b) * NR + c] = 128 * sum;
                }
            for (int64_t t = 0; t < row_tiles; ++t) {
                tile.tile(blocks, packed_a.data() + t * a_tile_bytes, scales_a.data() + t * blocks * MR,
                          packed_b.data(), scales_b.data(), corr.data(), out.data());
                const int i0 = int(t * MR), mr = std::min(MR, a.M - i0);
                for (int r = 0; r < mr; ++r) {
                    float* y = a.Y + int64_t(i0 + r) * a.ldy + j0;
                    for (int c = 0; c < nr; ++c) {
                        float v = out[std::size_t(r) * NR + c];
                        if (a.bias) v = v + a.bias[j0 + c];
                        y[c] = a.accumulate ? y[c] + v : v;
                    }
                }
            }
        }
    });
}

void quant_linear(const QuantLinearArgs& a, ThreadPool* pool) { quant_linear_with(active_int8_tile(), a, pool); }

void quant_linear_reference(const QuantLinearArgs& a) {
    check_args(a);
    const int blocks = a.K / kQuantBlock;
    std::vector<int8_t> qx(std::size_t(a.K));
    std::vector<float> sx(static_cast<std::size_t>(blocks));
    int8_t qw[kQuantBlock];
    for (int i = 0; i < a.M; ++i) {
        for (int b = 0; b < blocks; ++b)
            sx[b] = quantize_activation_block(a.X + int64_t(i) * a.ldx + b * kQuantBlock, qx.data() + b * kQuantBlock);
        for (int j = 0; j < a.N; ++j) {
            float acc = 0.0f;
            for (int b = 0; b < blocks; ++b) {
                const float sw = weight_block(a.format, a.W, int64_t(j) * blocks + b, qw);
                int32_t dot = 0;
                for (int t = 0; t < kQuantBlock; ++t) dot += int32_t(qx[b * kQuantBlock + t]) * qw[t];
                acc = std::fma(float(dot), sx[b] * sw, acc);
            }
            float& y = a.Y[int64_t(i) * a.ldy + j];
            float v = acc;
            if (a.bias) v = v + a.bias[j];
            y = a.accumulate ? y + v : v;
        }
    }
}

// ---- The portable tile: plain loops over the packed layout (4 x 8), every CPU.
namespace {

constexpr int kGenericMR = 4, kGenericNR = 8;

void generic_tile(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb, const int32_t*,
                  float* out) {
    float acc[kGenericMR][kGenericNR] = {};
    for (int blk = 0; blk < nblocks; ++blk) {
        const int8_t* ab = reinterpret_cast<const int8_t*>(a) + int64_t(blk) * kQuantBlock * kGenericMR;
        const int8_t* bb = b + int64_t(blk) * kQuantBlock * kGenericNR;
        int32_t dot[kGenericMR][kGenericNR] = {};
        for (int g = 0; g < kQuantBlock / 4; ++g)
            for (int r = 0; r < kGenericMR; ++r)
                for (int c = 0; c < kGenericNR; ++c)
                    for (int t = 0; t < 4; ++t)
                        dot[r][c] += int32_t(ab[(g * kGenericMR + r) * 4 + t]) * bb[(g * kGenericNR + c) * 4 + t];
        for (int r = 0; r < kGenericMR; ++r)
            for (int c = 0; c < kGenericNR; ++c)
                acc[r][c] = std::fma(float(dot[r][c]), sa[blk * kGenericMR + r] * sb[blk * kGenericNR + c], acc[r][c]);
    }
    for (int r = 0; r < kGenericMR; ++r)
        for (int c = 0; c < kGenericNR; ++c) out[r * kGenericNR + c] = acc[r][c];
}

}  // namespace

const Int8Tile& generic_int8_tile() {
    static const Int8Tile tile = {"generic", kGenericMR, kGenericNR, false, false, &generic_tile};
    return tile;
}

}  // namespace pg::kernels
