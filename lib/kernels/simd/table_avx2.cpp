// The avx2 kernel table. This TU alone is compiled with its instruction set's flags
// (lib/kernels/kernels.cmake); dispatch.cpp only calls it on a CPU that has them.
// AVX2 with FMA: 16 ymm registers, so a 6 x 16 tile = 12 accumulators; K blocks of 256.
#include "kernels/simd/simd_kernels.hpp"

namespace pg::kernels {

const KernelTable& avx2_table() {
    static const KernelTable table = simd::make_table<xsimd::fma3<xsimd::avx2>, 6, 2, 256>();
    return table;
}

}  // namespace pg::kernels
