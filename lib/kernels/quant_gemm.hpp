// Products through a block-quantized frozen weight W [N, K] (kernels/quant_blocks.hpp): the
// forward Y = X W^T of a linear layer and, through W's quantized transpose, its input gradient.
// Two strategies:
//   dequantize while packing: sgemm / sgemm_parallel with GemmArgs::Bq (the exact fp32 GEMM of
//     the dequantized weight, on every table; both Y = X W^T and dX = dY W);
//   integer: quant_linear below: X quantized per row and block of 32 to int8, int8 x int8 dot
//     products (VPDPBUSD, SDOT, SMMLA where the CPU has them), the block scales applied in fp32.
// docs/quantization.md has the measured error and speed of both.
//
// quant_linear computes, for each element of Y (the exact model of every int8 kernel, which the
// tests hold them to bit for bit; reference: quant_linear_reference):
//   X's row i, block b (32 values from k = 32 b): amax = max |x|; sx = amax / 127 (NaN if a value
//     is not finite); qx = clamp(nearbyint(x * (1 / sx)), -127, 127) (0 where sx is 0 or NaN);
//   W's block (j, b): its fp16 scale sw and codes qw (q8_0: -127..127; q4_0: -8..7);
//   acc = 0; for each block b in order: acc = fma(float(sum_t qx[t] qw[t]), sx * sw, acc)
//     (the integer sum is exact, the scale product rounded to fp32);
//   Y[i, j] = acc (+ bias[j]) (then + Y[i, j] when accumulate).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/quant_blocks.hpp"

namespace pg {
class ThreadPool;
}

namespace pg::kernels {

struct QuantLinearArgs {
    int M = 0, N = 0, K = 0;  // K a multiple of kQuantBlock
    const float* X = nullptr;
    int ldx = 0;
    const void* W = nullptr;  // [N, K] block stream
    QuantFormat format = QuantFormat::q8_0;
    float* Y = nullptr;
    int ldy = 0;
    const float* bias = nullptr;  // [N] or null
    bool accumulate = false;      // Y += the product instead of Y = the product
};

// An int8 micro-kernel (kernels/int8_tile.hpp has the packed layouts it reads).
struct Int8Tile;

// The int8 kernels this CPU runs, best first, the scalar reference last.
std::vector<const Int8Tile*> available_int8_tiles();
const char* int8_tile_name(const Int8Tile& tile);
// The kernel quant_linear uses: the first of available_int8_tiles() (or the one PG_INT8_KERNEL
// names, if this CPU runs it), the generic tile where the active fp32 table is the reference
// (PG_KERNELS=reference, force_reference).
const Int8Tile& active_int8_tile();
// Its name: "avx512-vnni", "avx-vnni", "avx2", "generic", "arm64+i8mm", "arm64+dotprod",
// "arm64+neon" or "reference".
const char* int8_gemm_name();

// The integer product above; threads split Y's columns (and X's quantization by rows), every
// element computed by the same operations whatever the split. Throws pg::Error
// (PG_ERR_INVALID_ARGUMENT) for K not a multiple of kQuantBlock or a null array.
void quant_linear(const QuantLinearArgs& a, ThreadPool* pool = nullptr);
void quant_linear_with(const Int8Tile& tile, const QuantLinearArgs& a, ThreadPool* pool = nullptr);
// Plain loops over the definition (the truth of the tests).
void quant_linear_reference(const QuantLinearArgs& a);

}  // namespace pg::kernels
