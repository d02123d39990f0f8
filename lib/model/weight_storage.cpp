// A model's weight storage (model/model.hpp): the fp32 parameters, or a frozen base whose big
// matrices are fp16, bf16 or quantized blocks. 16 bits halve the bytes of those matrices (about
// 98% of a GPT-2-vocabulary model's weights), q8_0 keeps 34 / 128 of them, q4_0 18 / 128 (the
// embedding 34 / 128); the engine widens or decodes them while it packs GEMM panels.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/checksum.hpp"
#include "kernels/dispatch.hpp"
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
        case WeightStorage::q8_0: return "q8_0";
        case WeightStorage::q4_0: return "q4_0";
    }
    return "?";
}

const char* arithmetic_name(Arithmetic arithmetic) {
    switch (arithmetic) {
        case Arithmetic::exact: return "exact";
        case Arithmetic::fp16: return "fp16";
        case Arithmetic::bf16: return "bf16";
        case Arithmetic::int8: return "int8";
    }
    return "?";
}

Arithmetic arithmetic_for(int code, WeightStorage storage, const std::string& field) {
    require(code >= int(Arithmetic::exact) && code <= int(Arithmetic::int8), PG_ERR_INVALID_ARGUMENT,
            field + " = " + std::to_string(code) +
                " is not a pg_arithmetic (PG_ARITHMETIC_EXACT, _FP16, _BF16 or _INT8)");
    const Arithmetic a = Arithmetic(code);
    require(arithmetic_fits(a, storage), PG_ERR_INVALID_ARGUMENT,
            field + " = " + arithmetic_name(a) + " does not fit the model's weight storage " +
                weight_storage_name(storage) + ": fp16 arithmetic needs an fp16 base, bf16 a bf16 base, int8 a " +
                "q8_0 or q4_0 base (pg_model_set_weight_storage)");
    return a;
}

int64_t round_to_16_bits(const float* from, uint16_t* to, int64_t n, WeightStorage storage) {
    const bool fp16 = storage == WeightStorage::fp16;
    for (int64_t i = 0; i < n; ++i) {
        to[i] = fp16 ? kernels::float_to_fp16(from[i]) : kernels::float_to_bf16(from[i]);
        const float back = fp16 ? kernels::fp16_to_float(to[i]) : kernels::bf16_to_float(to[i]);
        if (!std::isfinite(back) && std::isfinite(from[i])) return i;
    }
    return -1;
}

void widen_16_bits(const uint16_t* from, float* to, int64_t n, WeightStorage storage) {
    const bool fp16 = storage == WeightStorage::fp16;
    require(fp16 || storage == WeightStorage::bf16, PG_ERR_INTERNAL, "widen_16_bits: the storage is not 16-bit");
    kernels::half_to_float(to, from, n, fp16 ? kernels::HalfFormat::fp16 : kernels::HalfFormat::bf16);
}

namespace {

// Where each kind goes in a 16-bit model's two buffers: the 16-bit kinds in `half`, the rest
// in `rest`, each kind starting on a 64-byte boundary.
struct Layout16 {
    std::array<int64_t, kNumParamKinds> at32{}, at16{};
    int64_t n32 = 0, n16 = 0;
};

Layout16 layout_16_bit(const ParamLayout& layout) {
    Layout16 l;
    for (int k = 0; k < kNumParamKinds; ++k) {
        const int64_t size = layout.size[size_t(k)];
        if (held_in_16_bits(ParamKind(k))) {
            l.at16[size_t(k)] = l.n16;
            l.n16 += round_up(size, 32);
        } else {
            l.at32[size_t(k)] = l.n32;
            l.n32 += round_up(size, 16);
        }
    }
    return l;
}

}  // namespace

Model::Model(const ModelConfig& cfg, WeightStorage storage, uint64_t fp32_hash)
    : config_((require_engine_supports(cfg), cfg)), layout_(cfg), tensors_(build_tensor_table(cfg)) {
    if (storage == WeightStorage::fp32) {
        params_ = AlignedBuffer<float>(static_cast<std::size_t>(layout_.total));
        return;
    }
    storage_ = storage;
    converted_from_hash_ = fp32_hash;
    if (is_quantized(storage)) {
        const QuantizedLayout q = quantized_layout(storage);
        params_ = AlignedBuffer<float>(static_cast<std::size_t>(q.n32));
        quant_ = AlignedBuffer<uint8_t>(static_cast<std::size_t>(q.nq));
        offset32_ = q.at32;
        offsetq_ = q.atq;
        return;
    }
    const Layout16 l = layout_16_bit(layout_);
    params_ = AlignedBuffer<float>(static_cast<std::size_t>(l.n32));
    half_ = AlignedBuffer<uint16_t>(static_cast<std::size_t>(l.n16));
    offset32_ = l.at32;
    offset16_ = l.at16;
}

Model::Model(const ModelConfig& cfg, WeightStorage storage, uint64_t fp32_hash, std::shared_ptr<const void> mapping,
             const std::array<const uint8_t*, kNumParamKinds>& kind_bytes, std::string origin)
    : config_((require_engine_supports(cfg), cfg)),
      layout_(cfg),
      tensors_(build_tensor_table(cfg)),
      storage_(storage),
      converted_from_hash_(fp32_hash),
      mapping_(std::move(mapping)),
      mapped_(kind_bytes),
      origin_(std::move(origin)) {}

WeightsView Model::weights(Arithmetic arithmetic) const {
    WeightsView v = stored_view();
    const Arithmetic a = arithmetic == Arithmetic::exact ? pass_default_ : arithmetic;
    v.fp16_arithmetic = a == Arithmetic::fp16 && storage_ == WeightStorage::fp16;
    v.bf16_arithmetic = a == Arithmetic::bf16 && storage_ == WeightStorage::bf16;
    v.int8_arithmetic = a == Arithmetic::int8 && is_quantized(storage_);
    if (v.fp16_arithmetic) v.half_max_abs = fp16_max_abs();
    return v;
}

WeightsView Model::stored_view() const {
    if (storage_ == WeightStorage::fp32 && !mapping_) return WeightsView::fp32(layout_, params_.data());
    WeightsView v;
    v.format = storage_ == WeightStorage::bf16 ? kernels::HalfFormat::bf16 : kernels::HalfFormat::fp16;
    for (int k = 0; k < kNumParamKinds; ++k) {
        const ParamKind kind = ParamKind(k);
        if (layout_.size[size_t(k)] == 0) continue;  // a kind the configuration lacks: null
        if (in_blocks(storage_, kind)) {
            v.quant[size_t(k)] = mapping_ ? mapped_[size_t(k)] : quant_.data() + offsetq_[size_t(k)];
            v.quant_format[size_t(k)] = quant_format_of(storage_, kind);
            v.f32[size_t(k)] = nullptr;
        } else if (mapping_ && element_bytes(kind) == 4) {
            v.f32[size_t(k)] = reinterpret_cast<const float*>(mapped_[size_t(k)]);
        } else if (is_quantized(storage_)) {
            v.f32[size_t(k)] = params_.data() + offset32_[size_t(k)];
        } else if (mapping_) {
            if (element_bytes(kind) == 2)
                v.half[size_t(k)] = reinterpret_cast<const uint16_t*>(mapped_[size_t(k)]);
            else
                v.f32[size_t(k)] = reinterpret_cast<const float*>(mapped_[size_t(k)]);
        } else if (held_in_16_bits(kind)) {
            v.half[size_t(k)] = half_.data() + offset16_[size_t(k)];
        } else {
            v.f32[size_t(k)] = params_.data() + offset32_[size_t(k)];
        }
    }
    return v;
}

const std::array<float, kNumParamKinds>& Model::fp16_max_abs() const {
    std::call_once(fp16_bounds_->scanned, [&] {
        const WeightsView v = stored_view();
        for (int k = 0; k < kNumParamKinds; ++k) {
            const uint16_t* h = v.half[size_t(k)];
            if (!h) continue;
            float m = 0.0f;
            for (int64_t i = 0, n = layout_.size[size_t(k)]; i < n; ++i)
                m = std::max(m, std::fabs(kernels::fp16_to_float(h[i])));
            fp16_bounds_->max_abs[size_t(k)] = m;
        }
    });
    return fp16_bounds_->max_abs;
}

const uint8_t* Model::tensor_bytes(const TensorEntry& e) const {
    const WeightsView v = stored_view();
    const size_t k = size_t(e.kind);
    const int64_t within = e.offset - layout_.offset[k];  // elements into its kind (whole rows)
    if (v.quant[k])
        return v.quant[k] + within / kernels::kQuantBlock * int64_t(kernels::quant_block_bytes(v.quant_format[k]));
    if (v.half[k]) return reinterpret_cast<const uint8_t*>(v.half[k] + within);
    return reinterpret_cast<const uint8_t*>(v.f32[k] + within);
}

uint8_t* Model::tensor_bytes(const TensorEntry& e) {
    require_owned();
    return const_cast<uint8_t*>(static_cast<const Model&>(*this).tensor_bytes(e));
}

void Model::read_fp32(float* out) const {
    const WeightsView v = stored_view();
    for (int k = 0; k < kNumParamKinds; ++k) {
        const int64_t n = layout_.size[size_t(k)];
        float* to = out + layout_.offset[size_t(k)];
        if (n == 0) continue;
        if (v.quant[size_t(k)])
            kernels::dequantize(v.quant_format[size_t(k)], v.quant[size_t(k)], 0, n, to);
        else if (v.half[size_t(k)])
            kernels::half_to_float(to, v.half[size_t(k)], n, v.format);
        else
            std::copy(v.f32[size_t(k)], v.f32[size_t(k)] + n, to);
    }
}

std::size_t Model::tensor_nbytes(const TensorEntry& e) const {
    if (!in_blocks(storage_, e.kind)) return std::size_t(e.numel) * std::size_t(element_bytes(e.kind));
    return std::size_t(e.numel) / kernels::kQuantBlock * kernels::quant_block_bytes(quant_format_of(storage_, e.kind));
}

std::size_t Model::weight_bytes() const {
    if (!mapping_) return params_.size() * sizeof(float) + half_.size() * sizeof(uint16_t) + quant_.size();
    std::size_t n = 0;
    for (const TensorEntry& e : tensors_) n += tensor_nbytes(e);
    return n;
}

uint64_t Model::fp32_weights_hash() const {
    if (storage_ != WeightStorage::fp32 || mapping_) return converted_from_hash_;
    return io::xxh64(params_.data(), size_t(layout_.total) * sizeof(float));
}

void Model::hold_frozen_in(WeightStorage storage, Arithmetic pass_default) {
    require(storage == WeightStorage::fp32 || storage == WeightStorage::fp16 || storage == WeightStorage::bf16 ||
                is_quantized(storage),
            PG_ERR_INVALID_ARGUMENT, "weight storage must be fp32, fp16, bf16, q8_0 or q4_0");
    require(arithmetic_fits(pass_default, storage), PG_ERR_INTERNAL, "hold_frozen_in: the arithmetic does not fit");
    if (storage != storage_) {
        if (is_quantized(storage)) quantize_frozen(storage);
        else convert_to_16_bits(storage);
    }
    pass_default_ = pass_default;
}

void Model::convert_to_16_bits(WeightStorage storage) {
    require(storage_ == WeightStorage::fp32, PG_ERR_STATE,
            std::string("the model's weights are already held in ") + weight_storage_name(storage_) +
                " and their fp32 values are gone: load the model again to hold it in " + weight_storage_name(storage));
    require_owned();
    const float* src = params_.data();
    // Convert into new buffers first: a refusal leaves the model as it was.
    const Layout16 l = layout_16_bit(layout_);
    AlignedBuffer<uint16_t> half(static_cast<size_t>(l.n16));
    AlignedBuffer<float> rest(static_cast<size_t>(l.n32));
    for (int k = 0; k < kNumParamKinds; ++k) {
        const float* from = src + layout_.offset[size_t(k)];
        const int64_t size = layout_.size[size_t(k)];
        if (!held_in_16_bits(ParamKind(k))) {
            std::copy(from, from + size, rest.data() + l.at32[size_t(k)]);
            continue;
        }
        const int64_t i = round_to_16_bits(from, half.data() + l.at16[size_t(k)], size, storage);
        if (i >= 0) {
            for (const TensorEntry& e : tensors_)
                if (e.kind == ParamKind(k) && e.offset <= layout_.offset[size_t(k)] + i &&
                    layout_.offset[size_t(k)] + i < e.offset + e.numel)
                    throw Error(PG_ERR_NOT_FINITE, "tensor \"" + e.name + "\" holds " + std::to_string(from[i]) +
                                                       ", beyond the range of " + weight_storage_name(storage) +
                                                       ": keep this model in fp32 (or bf16)");
            throw Error(PG_ERR_NOT_FINITE, std::string("a weight is beyond the range of ") + weight_storage_name(storage));
        }
    }
    converted_from_hash_ = fp32_weights_hash();
    params_ = std::move(rest);
    half_ = std::move(half);
    offset32_ = l.at32;
    offset16_ = l.at16;
    storage_ = storage;
    fp16_bounds_ = std::make_unique<Fp16Bounds>();
}

}  // namespace pg
