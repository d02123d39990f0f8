// The block formats of kernels/quant_blocks.hpp: quantization, decoding, a loader's checks and
// the transposing requantization. Scalar: they run once per tensor at load, and the GEMMs decode
// whole panels with dequantize (kernels/simd/gemm.hpp) where it is amortized over every row of
// the product.
#include "kernels/quant_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "kernels/half_float.hpp"

namespace pg::kernels {

namespace {

bool fp16_finite(uint16_t h) { return (h & 0x7c00) != 0x7c00; }

// One block of 32 values into q8_0; false if its scale overflows fp16.
bool quantize_q8(const float* x, BlockQ8& b) {
    float amax = 0.0f;
    for (int i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
    b.scale = float_to_fp16(amax / 127.0f);
    if (!fp16_finite(b.scale)) return false;
    const float d = fp16_to_float(b.scale);
    for (int i = 0; i < kQuantBlock; ++i)
        b.q[i] = int8_t(d == 0.0f ? 0.0f : std::clamp(std::nearbyint(x[i] / d), -127.0f, 127.0f));
    return true;
}

// One block into q4_0: the value of largest magnitude becomes code 0 (-8 d), so the 16 codes
// cover [-8 d, 7 d] on the side that needs the extra level.
bool quantize_q4(const float* x, BlockQ4& b) {
    float extreme = 0.0f;
    for (int i = 0; i < kQuantBlock; ++i)
        if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
    b.scale = float_to_fp16(extreme / -8.0f);
    if (!fp16_finite(b.scale)) return false;
    const float d = fp16_to_float(b.scale);
    for (int i = 0; i < kQuantBlock / 2; ++i) {
        auto code = [&](float v) {
            return uint8_t(d == 0.0f ? 8.0f : std::clamp(std::nearbyint(v / d), -8.0f, 7.0f) + 8.0f);
        };
        b.q[i] = uint8_t(code(x[i]) | code(x[i + kQuantBlock / 2]) << 4);
    }
    return true;
}

void require_block_columns(int64_t cols, const std::string& what, pg_status status) {
    require(cols > 0 && cols % kQuantBlock == 0, status, [&] {
        return what + ": " + std::to_string(cols) + " columns, not a positive multiple of the " +
               std::to_string(kQuantBlock) + "-value quantization block";
    });
}

}  // namespace

const char* quant_format_name(QuantFormat format) { return format == QuantFormat::q8_0 ? "q8_0" : "q4_0"; }

std::size_t quant_block_bytes(QuantFormat format) {
    return format == QuantFormat::q8_0 ? sizeof(BlockQ8) : sizeof(BlockQ4);
}

std::size_t quant_matrix_bytes(QuantFormat format, int64_t rows, int64_t cols) {
    return std::size_t(rows) * std::size_t(cols / kQuantBlock) * quant_block_bytes(format);
}

void quantize_rows(QuantFormat format, const float* x, int64_t rows, int64_t cols, int64_t ld, void* out,
                   const std::string& what) {
    require_block_columns(cols, what, PG_ERR_INVALID_ARGUMENT);
    const int64_t per_row = cols / kQuantBlock;
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * ld;
        for (int64_t c = 0; c < cols; ++c)
            require(std::isfinite(row[c]), PG_ERR_INVALID_ARGUMENT, [&] {
                return what + ": element [" + std::to_string(r) + ", " + std::to_string(c) + "] is " +
                       message_number(row[c]) + ", not a finite number: it cannot be quantized";
            });
        for (int64_t b = 0; b < per_row; ++b) {
            const float* src = row + b * kQuantBlock;
            const int64_t at = r * per_row + b;
            const bool ok = format == QuantFormat::q8_0 ? quantize_q8(src, static_cast<BlockQ8*>(out)[at])
                                                        : quantize_q4(src, static_cast<BlockQ4*>(out)[at]);
            require(ok, PG_ERR_INVALID_ARGUMENT, [&] {
                return what + ": row " + std::to_string(r) + ", columns " + std::to_string(b * kQuantBlock) + ".." +
                       std::to_string((b + 1) * kQuantBlock - 1) + ": values too large for an fp16 block scale (" +
                       quant_format_name(format) + ")";
            });
        }
    }
}

void dequantize(QuantFormat format, const void* blocks, int64_t first, int64_t n, float* out) {
    int64_t e = first;
    const int64_t end = first + n;
    while (e < end) {
        const int64_t block = e / kQuantBlock;
        const int from = int(e % kQuantBlock);
        const int to = int(std::min<int64_t>(kQuantBlock, from + (end - e)));
        if (format == QuantFormat::q8_0) {
            const BlockQ8& b = static_cast<const BlockQ8*>(blocks)[block];
            const float d = fp16_to_float(b.scale);
            for (int i = from; i < to; ++i) *out++ = d * float(b.q[i]);
        } else {
            const BlockQ4& b = static_cast<const BlockQ4*>(blocks)[block];
            const float d = fp16_to_float(b.scale);
            for (int i = from; i < to; ++i) {
                const int half = kQuantBlock / 2;
                const int code = i < half ? b.q[i] & 0xf : b.q[i - half] >> 4;
                *out++ = d * float(code - 8);
            }
        }
        e += to - from;
    }
}

void validate_quantized(QuantFormat format, const void* data, std::size_t bytes, int64_t rows, int64_t cols,
                        const std::string& what) {
    require_block_columns(cols, what, PG_ERR_FORMAT);
    require(rows >= 0 && bytes == quant_matrix_bytes(format, rows, cols), PG_ERR_FORMAT, [&] {
        return what + ": " + std::to_string(bytes) + " bytes, where " + std::to_string(rows) + " x " +
               std::to_string(cols) + " in " + quant_format_name(format) + " takes " +
               std::to_string(quant_matrix_bytes(format, rows, cols));
    });
    const int64_t count = rows * (cols / kQuantBlock);
    const unsigned char* p = static_cast<const unsigned char*>(data);
    const std::size_t step = quant_block_bytes(format);
    for (int64_t i = 0; i < count; ++i, p += step) {
        uint16_t scale;
        std::memcpy(&scale, p, sizeof scale);
        require(fp16_finite(scale), PG_ERR_FORMAT, [&] {
            return what + ": block " + std::to_string(i) + " (row " + std::to_string(i / (cols / kQuantBlock)) +
                   ") has a scale that is not a finite number";
        });
        if (format == QuantFormat::q8_0) {
            const int8_t* q = reinterpret_cast<const int8_t*>(p + sizeof scale);
            require(std::find(q, q + kQuantBlock, int8_t(-128)) == q + kQuantBlock, PG_ERR_FORMAT, [&] {
                return what + ": block " + std::to_string(i) + " holds the code -128 (q8_0 codes are -127..127)";
            });
        }
    }
}

void transpose_quantized(QuantFormat format, const void* w, int64_t rows, int64_t cols, void* out) {
    require_block_columns(rows, "transpose_quantized: the transposed weight's rows", PG_ERR_INVALID_ARGUMENT);
    require_block_columns(cols, "transpose_quantized: the weight's columns", PG_ERR_INVALID_ARGUMENT);
    std::vector<float> strip(std::size_t(kQuantBlock) * cols), column(kQuantBlock);
    const int64_t out_per_row = rows / kQuantBlock;
    const std::size_t step = quant_block_bytes(format);
    for (int64_t r0 = 0; r0 < rows; r0 += kQuantBlock) {
        dequantize(format, w, r0 * cols, kQuantBlock * cols, strip.data());
        for (int64_t c = 0; c < cols; ++c) {
            for (int i = 0; i < kQuantBlock; ++i) column[i] = strip[std::size_t(i) * cols + c];
            // Column c of the strip is block r0 / 32 of W^T's row c: its values are W's, so they
            // are finite and within fp16 scale range.
            quantize_rows(format, column.data(), 1, kQuantBlock, kQuantBlock,
                          static_cast<unsigned char*>(out) + (c * out_per_row + r0 / kQuantBlock) * step,
                          "transpose_quantized");
        }
    }
}

}  // namespace pg::kernels
