// The avx512bw kernel table. This TU alone is compiled with its instruction set's flags
// (lib/kernels/kernels.cmake); dispatch.cpp only calls it on a CPU that has them.
// AVX-512 (F/CD/DQ/BW): 32 zmm registers, so a 12 x 32 tile = 24 accumulators.
#include "kernels/simd/simd_kernels.hpp"

namespace pg::kernels {

const KernelTable& avx512bw_table() {
    static const KernelTable table = simd::make_table<xsimd::avx512bw, 12, 2>();
    return table;
}

}  // namespace pg::kernels
