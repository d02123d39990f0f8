// The int8 micro-kernels of quant_linear (kernels/quant_gemm.hpp) and the packed operands they
// read, made by kernels/quant_gemm.cpp. For a tile of MR rows of X and a panel of NR columns
// (rows of W), over nblocks blocks of 32 k:
//   a: block b at a + b * 32 * MR bytes, as 8 groups of 4 k, each [MR rows][4 int8];
//      (+128 on every byte, so unsigned, where the kernel's unsigned_a is set: VPDPBUSD);
//   b: block b at b + b * 32 * NR, as 8 groups of 4 k, each [NR columns][4 int8];
//   sa: [nblocks][MR] the rows' scales; sb: [nblocks][NR] the columns' (fp16 widened);
//   corr: [nblocks][NR] 128 times the sum of the column's codes in the block (what the +128 of
//     an unsigned a adds to its dot product);
//   i8mm layout (pairs of rows and columns, 8 k): a block is 4 groups of 8 k, each
//     [MR / 2 row pairs][2 rows][8 int8], and b likewise [NR / 2][2][8].
// Rows and columns past the matrix are zero codes with zero scales. The kernel writes the whole
// MR x NR tile of acc (quant_gemm.hpp's definition), row-major, to out.
#pragma once

#include <cstdint>

namespace pg::kernels {

struct Int8Tile {
    const char* name;
    int mr, nr;
    bool unsigned_a;
    bool pair_layout;  // the i8mm layout above
    void (*tile)(int nblocks, const uint8_t* a, const float* sa, const int8_t* b, const float* sb,
                 const int32_t* corr, float* out);
};

// The tile of plain C++ (every CPU; the x86 fallback below AVX2) and, per instruction set, those
// of kernels/x86/ and kernels/neon/ (call only where the CPU has the extension).
const Int8Tile& generic_int8_tile();
#if defined(__x86_64__)
const Int8Tile& avx2_int8_tile();
const Int8Tile& avx_vnni_int8_tile();
const Int8Tile& avx512_vnni_int8_tile();
#elif defined(__aarch64__)
const Int8Tile& neon_int8_tile();
const Int8Tile& dotprod_int8_tile();
const Int8Tile& i8mm_int8_tile();
#endif

}  // namespace pg::kernels
