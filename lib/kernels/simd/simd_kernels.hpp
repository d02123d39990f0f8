// The SIMD kernels, written once with xsimd and instantiated per instruction set by the arch
// translation units (table_<arch>.cpp), each compiled with that instruction set's flags.
//
// Everything here is in an anonymous namespace: each arch TU gets private copies, so no inline
// function compiled with AVX-512 flags can be picked by the linker for code that must run on a
// lesser CPU (the qemu tests run the AVX2 and SSE2 tables on an emulated CPU to check this).
#pragma once

// The pieces, one header each (each in the same anonymous namespace, by the same rule):
//   tile_common.hpp      min_of and fused_fma, shared by the register-tile kernels
//   fast_math.hpp        fast exp, tanh and sigmoid on batches
//   elementwise.hpp      the elementwise and row kernels (Elementwise), the dropout hash
//   gemm.hpp             the GEMM (Gemm): packing, micro-kernel, epilogue, narrow products
//   attention_tiles.hpp  the attention-tile kernels (AttentionTiles), included below
//   decoder_kernels.hpp  the Llama family's RMSNorm, rotary positions and SwiGLU gate
// and make_table, which puts one instruction set's kernels into its KernelTable.
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/kernel_table.hpp"
#include "kernels/simd/decoder_kernels.hpp"
#include "kernels/simd/elementwise.hpp"
#include "kernels/simd/gemm.hpp"
#include "kernels/simd/tile_common.hpp"

namespace pg::kernels::simd {
namespace {

#include "kernels/simd/attention_tiles.hpp"

// The table of one instruction set. MR x (NV vectors) is its GEMM register tile.
template <class Arch, int MR, int NV, int KC>
KernelTable make_table() {
    using G = Gemm<Arch, MR, NV, KC>;
    using E = Elementwise<Arch>;
    KernelTable t;
    t.name = Arch::name();
    t.gemm_mr = MR;
    t.gemm_nr = G::NR;
    t.gemm_lanes = G::W;
    t.sgemm = &G::run;
    t.layernorm_forward = &E::layernorm_forward;
    t.layernorm_backward = &E::layernorm_backward;
    t.gelu_forward = &E::gelu_forward;
    t.gelu_backward = &E::gelu_backward;
    t.softmax_cross_entropy = &E::softmax_cross_entropy;
    t.softmax = &E::softmax;
    t.row_max = &E::row_max;
    t.row_exp_shift = &E::row_exp_shift;
    t.transpose = &E::transpose;
    t.vexp = &E::template map<Exp<Arch>>;
    t.vtanh = &E::template map<Tanh<Arch>>;
    t.axpy = &E::axpy;
    t.dot = &E::dot;
    t.sum_squares = &E::sum_squares;
    t.dropout_apply = &E::dropout_apply;
    t.dropout_residual = &E::dropout_residual;
    t.dropout_mask = &E::dropout_mask;
    t.adamw = &E::adamw;
    t.half_to_float = &E::half_to_float;
    t.attn_scores = &AttentionTiles<Arch, MR, NV>::scores;
    t.attn_accumulate = &AttentionTiles<Arch, MR, NV>::accumulate;
    using D = DecoderKernels<Arch>;
    t.rmsnorm_forward = &D::rmsnorm_forward;
    t.rmsnorm_backward = &D::rmsnorm_backward;
    t.rope_forward = &D::rope_forward;
    t.rope_backward = &D::rope_backward;
    t.swiglu_forward = &D::swiglu_forward;
    t.swiglu_backward = &D::swiglu_backward;
    return t;
}

}  // namespace
}  // namespace pg::kernels::simd
