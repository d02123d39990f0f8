// The inner loops llvm-mca measures (scripts/mca_gemm_variants.py): for each lane-FMA GEMM
// variant of lib/kernels/neon/lane_variants.def, its full register tile (MR rows x NV vectors),
// as the library instantiates it, with the LLVM-MCA region markers of lane_gemm.hpp around one
// unrolled k step (PG_MCA_MARKERS). Compiled for aarch64 to assembly only, never linked.
#include "kernels/neon/lane_gemm.hpp"

#define PG_LANE_VARIANT(id, name, MR, NV, KU)                                                  \
    extern "C" void pg_mca_variant##id(int kc, const float* a, const float* bp, float* c) {    \
        pg::kernels::neon::LaneGemm<MR, NV, KU>::tile<NV, MR, id>(                             \
            kc, a, MR, bp, NV * 4, c, NV * 4, 1.0f, 0.0f, nullptr, MR, 4, {});                 \
    }
#include "kernels/neon/lane_variants.def"
#undef PG_LANE_VARIANT
