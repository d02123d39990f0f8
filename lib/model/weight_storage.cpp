// A model's weight storage (model/model.hpp): the fp32 parameters, or a frozen base whose big
// matrices are fp16 or bf16. Converting halves the bytes of those matrices (about 98% of a
// GPT-2-vocabulary model's weights); the engine widens them while it packs GEMM panels.
#include <algorithm>
#include <cmath>
#include <string>

#include "io/checksum.hpp"
#include "kernels/half_float.hpp"
#include "model/model.hpp"

namespace pg {

namespace {

// Each tensor starts on a 64-byte boundary of its buffer (GEMM panels read whole vectors).
int64_t round_up(int64_t n, int64_t elements_per_64_bytes) {
    return (n + elements_per_64_bytes - 1) / elements_per_64_bytes * elements_per_64_bytes;
}

}  // namespace

const char* weight_storage_name(WeightStorage storage) {
    switch (storage) {
        case WeightStorage::fp32: return "fp32";
        case WeightStorage::fp16: return "fp16";
        case WeightStorage::bf16: return "bf16";
        case WeightStorage::fp16_arithmetic: return "fp16 (fp16 inference arithmetic)";
    }
    return "?";
}

WeightsView Model::weights() const {
    if (storage_ == WeightStorage::fp32) return WeightsView::fp32(layout_, params_.data());
    WeightsView v;
    v.format = storage_ == WeightStorage::bf16 ? kernels::HalfFormat::bf16 : kernels::HalfFormat::fp16;
    v.fp16_arithmetic = storage_ == WeightStorage::fp16_arithmetic;
    v.half_max_abs = half_max_abs_;
    for (int k = 0; k < kNumParamKinds; ++k) {
        const ParamKind kind = ParamKind(k);
        if (held_in_16_bits(kind))
            v.half[size_t(k)] = half_.data() + offset16_[size_t(k)];
        else
            v.f32[size_t(k)] = params_.data() + offset32_[size_t(k)];
    }
    return v;
}

uint64_t Model::fp32_weights_hash() const {
    if (storage_ != WeightStorage::fp32) return converted_from_hash_;
    return io::xxh64(params_.data(), size_t(layout_.total) * sizeof(float));
}

void Model::hold_frozen_in(WeightStorage storage) {
    require(storage == WeightStorage::fp32 || storage == WeightStorage::fp16 || storage == WeightStorage::bf16 ||
                storage == WeightStorage::fp16_arithmetic,
            PG_ERR_INVALID_ARGUMENT, "weight storage must be fp32, fp16, bf16 or fp16 with fp16 arithmetic");
    if (storage == storage_) return;
    const auto fp16_values = [](WeightStorage s) {
        return s == WeightStorage::fp16 || s == WeightStorage::fp16_arithmetic;
    };
    if (fp16_values(storage) && fp16_values(storage_)) {  // the same fp16 values: only the arithmetic
        storage_ = storage;
        return;
    }
    require(storage_ == WeightStorage::fp32, PG_ERR_STATE,
            std::string("the model's weights are already held in ") + weight_storage_name(storage_) +
                " and their fp32 values are gone: load the model again to hold it in " + weight_storage_name(storage));
    const bool fp16 = fp16_values(storage);
    const float* src = params_.data();
    // Convert into new buffers first: a refusal leaves the model as it was.
    int64_t n32 = 0, n16 = 0;
    std::array<int64_t, kNumParamKinds> at32{}, at16{};
    for (int k = 0; k < kNumParamKinds; ++k) {
        const int64_t size = layout_.size[size_t(k)];
        if (held_in_16_bits(ParamKind(k))) {
            at16[size_t(k)] = n16;
            n16 += round_up(size, 32);
        } else {
            at32[size_t(k)] = n32;
            n32 += round_up(size, 16);
        }
    }
    AlignedBuffer<uint16_t> half(static_cast<size_t>(n16));
    std::array<float, kNumParamKinds> max_abs{};
    AlignedBuffer<float> rest(static_cast<size_t>(n32));
    for (int k = 0; k < kNumParamKinds; ++k) {
        const float* from = src + layout_.offset[size_t(k)];
        const int64_t size = layout_.size[size_t(k)];
        if (!held_in_16_bits(ParamKind(k))) {
            std::copy(from, from + size, rest.data() + at32[size_t(k)]);
            continue;
        }
        uint16_t* to = half.data() + at16[size_t(k)];
        for (int64_t i = 0; i < size; ++i) {
            to[i] = fp16 ? kernels::float_to_fp16(from[i]) : kernels::float_to_bf16(from[i]);
            const float back = fp16 ? kernels::fp16_to_float(to[i]) : kernels::bf16_to_float(to[i]);
            max_abs[size_t(k)] = std::max(max_abs[size_t(k)], std::fabs(back));
            if (!std::isfinite(back) && std::isfinite(from[i])) {
                for (const TensorEntry& e : tensors_)
                    if (e.kind == ParamKind(k) && e.offset <= layout_.offset[size_t(k)] + i &&
                        layout_.offset[size_t(k)] + i < e.offset + e.numel)
                        throw Error(PG_ERR_NOT_FINITE, "tensor \"" + e.name + "\" holds " + std::to_string(from[i]) +
                                                           ", beyond the range of " + weight_storage_name(storage) +
                                                           ": keep this model in fp32 (or bf16)");
                throw Error(PG_ERR_NOT_FINITE, std::string("a weight is beyond the range of ") + weight_storage_name(storage));
            }
        }
    }
    converted_from_hash_ = fp32_weights_hash();
    params_ = std::move(rest);
    half_ = std::move(half);
    offset32_ = at32;
    offset16_ = at16;
    half_max_abs_ = max_abs;
    storage_ = storage;
}

}  // namespace pg
