// The "arm64+neon+fmla-lane*" kernel tables: the neon64 xsimd kernels with a GEMM micro-kernel
// written with raw NEON intrinsics (arm_neon.h) around FMLA by element, one table per variant
// of kernels/neon/lane_variants.def (the micro-kernels: kernels/neon/lane_gemm.hpp).
//
// Why FMLA by element: the xsimd micro-kernel broadcasts one A value per row and k (a DUP, or
// a scalar load GCC folds into FMLA by element), and with 24 accumulators in a 8 x 12 tile
// GCC 12 spills one accumulator per k step. Here one q register holds four rows of A at the
// same k, and vfmaq_laneq_f32(acc, b, a, lane) multiplies a B vector by one of its lanes: per
// k step the 8 x 12 tile needs 2 A loads + 3 B loads for 24 FMLAs, in 29 of the 32 q registers
// (the disassembly of the loop has 24 fmla-by-element and no stack access; see docs/phone.md).
//
// The A layout that gives "four rows at one k" in one vector is pack_a's [kc, MR] row tile, so
// these micro-kernels read every row tile of A packed, for both layouts (Gemm::run_with with
// kPacksA): per K block and row block a copy of mc x kc values, small against the 2 mc kc nc
// flops it feeds. The blocking, the B packing and the epilogue are the xsimd GEMM's
// (simd/gemm.hpp).
//
// Only NEON of ARMv8.0 is used (every aarch64 CPU has it), so every variant runs on every
// aarch64 CPU with ASIMD; dispatch offers first the one arm_cores.def names for the CPU's MIDR.
#include "kernels/neon/lane_gemm.hpp"

#include <vector>

namespace pg::kernels {
namespace {

template <int MR, int NV, int KU>
KernelTable make_lane_table(const char* name) {
    KernelTable t = simd::make_table<xsimd::neon64, MR, NV, neon::kBlockK>();
    t.name = name;
    t.sgemm = &neon::LaneGemm<MR, NV, KU>::run;
    return t;
}

}  // namespace

const std::vector<const KernelTable*>& neon64_lane_tables() {
    static const std::vector<KernelTable> tables = {
#define PG_LANE_VARIANT(id, name, MR, NV, KU) make_lane_table<MR, NV, KU>(name),
#include "kernels/neon/lane_variants.def"
#undef PG_LANE_VARIANT
    };
    static const std::vector<const KernelTable*> pointers = [] {
        std::vector<const KernelTable*> p;
        for (const KernelTable& t : tables) p.push_back(&t);
        return p;
    }();
    return pointers;
}

}  // namespace pg::kernels
