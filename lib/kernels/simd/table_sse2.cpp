// The sse2 kernel table. This TU alone is compiled with its instruction set's flags
// (lib/kernels/kernels.cmake); dispatch.cpp only calls it on a CPU that has them.
// SSE2 (every x86_64): 16 xmm registers, a 6 x 8 tile = 12 accumulators; no FMA instruction, so xsimd::fma is a multiply then an add; K blocks of 256.
#include "kernels/simd/simd_kernels.hpp"

namespace pg::kernels {

const KernelTable& sse2_table() {
    static const KernelTable table = simd::make_table<xsimd::sse2, 6, 2, 256>();
    return table;
}

}  // namespace pg::kernels
