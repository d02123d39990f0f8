// Block-quantized weight formats for a frozen base, as the kernels read them, and the functions
// that make, check and read them (kernels/quant_blocks.cpp). A matrix [rows, cols] is stored row
// by row as a stream of blocks of kQuantBlock consecutive values of one row (cols must be a
// multiple of kQuantBlock, so every row starts a block): element (r, c) is value
// (r * cols + c) % kQuantBlock of block (r * cols + c) / kQuantBlock.
//   q8_0: an fp16 scale d and 32 int8 q in [-127, 127]; value = d * q (34 bytes per 32 values).
//   q4_0: an fp16 scale d and 32 4-bit codes u in [0, 15], value = d * (u - 8); value i of the
//         block is the low nibble of byte i for i < 16, the high nibble of byte i - 16 otherwise
//         (18 bytes per 32 values).
// Block size 32 with an fp16 scale (llama.cpp's Q8_0 / Q4_0 geometry) is the measured choice:
// docs/quantization.md compares 64, 128 and a scale per row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pg::kernels {

enum class QuantFormat : uint8_t { q8_0, q4_0 };

constexpr int kQuantBlock = 32;

struct BlockQ8 {
    uint16_t scale;  // fp16
    int8_t q[kQuantBlock];
};
struct BlockQ4 {
    uint16_t scale;  // fp16
    uint8_t q[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ8) == 34 && sizeof(BlockQ4) == 18, "quantized blocks must be packed");

const char* quant_format_name(QuantFormat format);  // "q8_0", "q4_0"
std::size_t quant_block_bytes(QuantFormat format);
// Bytes of a [rows, cols] matrix in `format` (cols a multiple of kQuantBlock).
std::size_t quant_matrix_bytes(QuantFormat format, int64_t rows, int64_t cols);

// Quantizes rows x cols fp32 values (row r at x + r * ld) into the block stream `out`
// (quant_matrix_bytes(format, rows, cols) bytes), one row at a time, so a loader can quantize a
// tensor while reading it. Each block's scale is its largest magnitude over 127 (q8_0) or its
// value of largest magnitude over -8 (q4_0), rounded to fp16; each value is then rounded to the
// nearest code of that fp16 scale. Throws pg::Error (PG_ERR_INVALID_ARGUMENT, naming `what` and
// the element) for a non-finite value, a block whose scale overflows fp16 (|x| above 8.3e6 for
// q8_0, 5.2e5 for q4_0), or cols not a multiple of kQuantBlock.
void quantize_rows(QuantFormat format, const float* x, int64_t rows, int64_t cols, int64_t ld, void* out,
                   const std::string& what);

// out[i] = element (first + i) of the block stream, for n elements (any first and n).
void dequantize(QuantFormat format, const void* blocks, int64_t first, int64_t n, float* out);

// A loader's check of a quantized [rows, cols] tensor of `bytes` bytes: cols a multiple of
// kQuantBlock, the byte count that of the block count, every scale finite, and no q8_0 code
// -128 (the integer kernels rely on |q| <= 127). Throws pg::Error (PG_ERR_FORMAT, naming `what`
// and the first bad block).
void validate_quantized(QuantFormat format, const void* data, std::size_t bytes, int64_t rows, int64_t cols,
                        const std::string& what);

// The transpose W^T [cols, rows] of a quantized W [rows, cols] (rows a multiple of kQuantBlock),
// requantized in `format` from W's values 32 rows at a time (no fp32 copy of W): the weight of the
// integer path's input gradient dX = dY W (kernels/quant_gemm.hpp). Each value is rounded twice
// (W's blocks, then W^T's), measured in docs/quantization.md.
void transpose_quantized(QuantFormat format, const void* w, int64_t rows, int64_t cols, void* out);

}  // namespace pg::kernels
