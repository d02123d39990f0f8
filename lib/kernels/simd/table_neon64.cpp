// The neon64 kernel table. This TU alone is compiled with its instruction set's flags
// (lib/kernels/kernels.cmake); dispatch.cpp only calls it on a CPU that has them.
// AArch64 NEON: 32 q registers, so an 8 x 12 tile = 24 accumulators (GCC 12 turns the
// broadcasts into by-element FMLAs; it spills one accumulator per k step, checked in the
// disassembly). K blocks of 256: a 12 KB B panel, the textbook L1 fit for phone cores. Not yet
// tuned on phone hardware (no phone here; docs/phone.md says how to measure one).
#include "kernels/simd/simd_kernels.hpp"

namespace pg::kernels {

const KernelTable& neon64_table() {
    static const KernelTable table = simd::make_table<xsimd::neon64, 8, 3, 256>();
    return table;
}

}  // namespace pg::kernels
