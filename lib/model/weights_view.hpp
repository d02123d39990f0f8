// What an Engine pass reads the weights from: every tensor in fp32 (the usual case), or a frozen
// base whose big matrices (the token embedding, which is also the tied head, and the four block
// linears) are held in fp16, bf16 or quantized blocks (kernels/quant_blocks.hpp) and the rest (LayerNorms, biases, positions) in fp32
// (model/weight_storage.hpp). The engine widens a 16-bit matrix only where it reads it: inside the
// GEMM's B packing (kernels::GemmArgs::B16) or one row at a time (the embedding lookup and the
// one-position cached step), so a pass over a 16-bit base gives, bit for bit, what it gives over
// the fp32 copy of the same 16-bit values; a quantized matrix likewise (GemmArgs::Bq), unless
// the pass multiplies it in int8 (int8_arithmetic: kernels::quant_linear in linear()).
#pragma once

#include <array>
#include <cstdint>

#include "kernels/dispatch.hpp"
#include "model/params.hpp"

namespace pg {

// The tensors a 16-bit (or quantized) base holds in 16 bits (or blocks): wte, the four linear
// weights and an untied head.
inline bool held_in_16_bits(ParamKind kind) {
    return kind == kWte || kind == kQkvw || kind == kAttprojw || kind == kFcw || kind == kFcprojw || kind == kLmHead;
}

// One weight matrix (or a layer's slice of one), in one of the two representations.
struct WeightMatrix {
    const float* f32 = nullptr;
    const uint16_t* half = nullptr;  // set: the matrix is 16-bit (f32 is null)
    kernels::HalfFormat format = kernels::HalfFormat::fp16;
    // An inference pass over an fp16 base that may multiply in fp16 (WeightsView::fp16_arithmetic)
    // and the largest |value| of the matrix (the fp16 GEMM's overflow guard).
    bool fp16_arithmetic = false;
    float max_abs = 0.0f;
    // A pass over a bf16 base that may multiply in bf16 (WeightsView::bf16_arithmetic).
    bool bf16_arithmetic = false;
    // Set: the matrix is block-quantized, element e of it being element quant_first + e of the
    // block stream quant (whose rows start blocks). int8_arithmetic: linear() may multiply it
    // with kernels::quant_linear.
    const uint8_t* quant = nullptr;
    kernels::QuantFormat quant_format = kernels::QuantFormat::q8_0;
    int64_t quant_first = 0;
    bool int8_arithmetic = false;

    WeightMatrix at(int64_t offset) const {
        WeightMatrix m = *this;
        if (f32) m.f32 += offset;
        if (half) m.half += offset;
        if (quant) m.quant_first += offset;
        return m;
    }
    // The block stream from this matrix's first element (quant_first is a multiple of the block).
    const void* quant_blocks() const {
        return quant + quant_first / kernels::kQuantBlock * int64_t(kernels::quant_block_bytes(quant_format));
    }
    // The B operand of a GEMM: B, B16 or Bq, whichever holds the matrix.
    void set_gemm_b(kernels::GemmArgs& g) const {
        g.Bq = quant;
        g.bq_format = quant_format;
        g.bq_offset = quant_first;
        g.B = f32;
        g.B16 = half;
        g.b16_format = format;
        g.fp16_arithmetic = half && fp16_arithmetic;
        g.b16_max_abs = max_abs;
        g.bf16_arithmetic = half && bf16_arithmetic;
    }
    // Row r (n values, at r * n) as fp32: the row itself, or its widened copy in scratch[n].
    const float* row(int64_t r, int n, float* scratch) const {
        if (f32) return f32 + r * n;
        if (quant) {
            kernels::dequantize(quant_format, quant, quant_first + r * n, n, scratch);
            return scratch;
        }
        kernels::half_to_float(scratch, half + r * n, n, format);
        return scratch;
    }
};

struct WeightsView {
    std::array<const float*, kNumParamKinds> f32{};      // null where the tensor is 16-bit
    std::array<const uint16_t*, kNumParamKinds> half{};  // null where it is fp32
    kernels::HalfFormat format = kernels::HalfFormat::fp16;
    // The pass multiplies an fp16 base in fp16 (Arithmetic::fp16): its GEMMs may take kernels::GemmArgs::fp16_arithmetic. Only
    // passes without gradients keep it (Engine::forward_backward clears it; bf16_arithmetic it keeps).
    bool fp16_arithmetic = false;
    std::array<float, kNumParamKinds> half_max_abs{};  // the largest |value| of each 16-bit tensor
    // The pass multiplies a bf16 base in bf16 (Arithmetic::bf16): its GEMMs
    // may take kernels::GemmArgs::bf16_arithmetic, in every pass (training passes keep it).
    bool bf16_arithmetic = false;
    // Block-quantized tensors (null where the tensor is fp32 or 16-bit) and their formats; with
    // int8_arithmetic their products in linear() may run in int8 (Arithmetic::int8).
    std::array<const uint8_t*, kNumParamKinds> quant{};
    std::array<kernels::QuantFormat, kNumParamKinds> quant_format{};
    bool int8_arithmetic = false;

    static WeightsView fp32(const ParamLayout& layout, const float* params) {
        WeightsView v;
        for (int k = 0; k < kNumParamKinds; ++k) v.f32[size_t(k)] = params + layout.offset[size_t(k)];
        return v;
    }
    // Whether the big matrices are held only in a frozen format (16-bit or quantized).
    bool frozen_only() const { return half[kWte] != nullptr || quant[kWte] != nullptr; }
    WeightMatrix matrix(ParamKind kind) const {
        WeightMatrix m{f32[size_t(kind)], half[size_t(kind)], format, fp16_arithmetic, half_max_abs[size_t(kind)],
                       bf16_arithmetic};
        m.quant = quant[size_t(kind)];
        m.quant_format = quant_format[size_t(kind)];
        m.int8_arithmetic = m.quant && int8_arithmetic;
        return m;
    }
    // The fp32 tensors (the 16-bit ones null), for the code that reads LayerNorms and biases.
    GptTensors<const float> fp32_tensors() const {
        const auto& p = f32;
        return GptTensors<const float>{p[0],  p[1],  p[2],  p[3],  p[4],  p[5],  p[6],  p[7],  p[8], p[9],
                                       p[10], p[11], p[12], p[13], p[14], p[15], p[16], p[17], p[18]};
    }
};

}  // namespace pg
