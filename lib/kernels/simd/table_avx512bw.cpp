// The avx512bw kernel table. This TU alone is compiled with its instruction set's flags
// (lib/kernels/kernels.cmake); dispatch.cpp only calls it on a CPU that has them.
// AVX-512 (F/CD/DQ/BW): 32 zmm registers, so an 8 x 48 tile = 24 accumulators (8 x 48 also
// fits the PhoneGPT shapes: 4096 = 512 x 8 rows, 128 = 48 + 48 + 32 columns). K blocks of 512:
// the per-block overhead mattered more than keeping a B panel in L1 (measured on Zen 5).
#include "kernels/simd/simd_kernels.hpp"

namespace pg::kernels {

const KernelTable& avx512bw_table() {
    static const KernelTable table = simd::make_table<xsimd::avx512bw, 8, 3, 512>();
    return table;
}

}  // namespace pg::kernels
