// The read-only half of the model/trainer split: configuration, the named parameter table,
// the weights in one aligned allocation, and the tokenizer that belongs to the weights.
// The weights are fp32 unless the model was made a 16-bit frozen base (hold_frozen_in): then its
// big matrices are fp16 or bf16 and everything that needs fp32 weights (params(): training every
// weight, saving, merging, tensor access) is refused with PG_ERR_STATE, while passes over the
// frozen base (evaluation, sessions, LoRA training) read weights().
// A model's weights may also live in a read-only file mapping (a checkpoint opened with
// pg_model_load_with's map_weights, io/checkpoint.hpp map_checkpoint): then nothing is owned or
// writable, and params() is refused the same way.
#pragma once

#include <cassert>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/error.hpp"
#include "model/config.hpp"
#include "model/params.hpp"
#include "model/provenance.hpp"
#include "model/weights_view.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pg {

// How a model holds its weights (pg_weight_storage's values): all fp32, or the frozen base's
// matrices (held_in_16_bits) in IEEE fp16 or bfloat16, or in blocks of 32 values with an fp16
// scale (kernels/quant_blocks.hpp): q8_0 (int8 codes) or q4_0 (4-bit codes; the token embedding,
// also the tied head, stays q8_0: quant_format_of). Storage says only how values are held; how
// passes multiply by them is their Arithmetic.
enum class WeightStorage : int { fp32 = 0, fp16 = 1, bf16 = 2, q8_0 = 5, q4_0 = 6 };
const char* weight_storage_name(WeightStorage storage);
inline bool is_quantized(WeightStorage storage) {
    return storage == WeightStorage::q8_0 || storage == WeightStorage::q4_0;
}
// The block format a quantized storage holds `kind` in.
inline kernels::QuantFormat quant_format_of(WeightStorage storage, ParamKind kind) {
    return storage == WeightStorage::q4_0 && kind != kWte ? kernels::QuantFormat::q4_0 : kernels::QuantFormat::q8_0;
}
// How a pass multiplies by the frozen base (pg_arithmetic's values), chosen by what runs it (a
// session, a trainer): exact = the fp32 products of the stored values; fp16 / bf16 / int8 apply
// to a base stored in fp16 / bf16 / q8_0 or q4_0 (arithmetic_fits) and trade exactness for speed
// (kernels::GemmArgs::fp16_arithmetic, ::bf16_arithmetic, kernels::quant_linear).
enum class Arithmetic : int { exact = 0, fp16 = 1, bf16 = 2, int8 = 3 };
const char* arithmetic_name(Arithmetic arithmetic);
inline bool arithmetic_fits(Arithmetic arithmetic, WeightStorage storage) {
    switch (arithmetic) {
        case Arithmetic::exact: return true;
        case Arithmetic::fp16: return storage == WeightStorage::fp16;
        case Arithmetic::bf16: return storage == WeightStorage::bf16;
        case Arithmetic::int8: return is_quantized(storage);
    }
    return false;
}
// Refuses (PG_ERR_INVALID_ARGUMENT, naming `field`) an arithmetic outside the enumeration or one
// that does not fit `storage`.
Arithmetic arithmetic_for(int code, WeightStorage storage, const std::string& field);
// Rounds n fp32 values to `storage`'s 16-bit format (fp16 or bf16; round to nearest, ties to
// even) into `to`. Returns the index of the first finite value beyond the format's range (the
// conversion stops there), or -1.
int64_t round_to_16_bits(const float* from, uint16_t* to, int64_t n, WeightStorage storage);
// The inverse: n values of `storage`'s 16-bit format (fp16 or bf16) as fp32 into `to`, exactly
// (every 16-bit value is an fp32 value; NaN stays NaN), through the active kernel table's
// conversion, the one the engine widens 16-bit weights with.
void widen_16_bits(const uint16_t* from, float* to, int64_t n, WeightStorage storage);

class Model {
public:
    // Validates cfg (throws pg::Error) and allocates zeroed weights.
    explicit Model(const ModelConfig& cfg)
        : config_((require_engine_supports(cfg), cfg)),
          layout_(cfg),
          tensors_(build_tensor_table(cfg)),
          params_(static_cast<std::size_t>(layout_.total)) {}
    // Allocates zeroed weights held in `storage` from the start (a 16-bit or quantized
    // checkpoint's reader: no fp32 copy ever exists; all-zero blocks are valid blocks).
    // `fp32_hash` is fp32_weights_hash() of the fp32 weights the 16-bit or quantized ones were
    // rounded from (the file records it); ignored for fp32. PG_ERR_UNSUPPORTED for a quantized
    // storage whose rows are not whole blocks.
    Model(const ModelConfig& cfg, WeightStorage storage, uint64_t fp32_hash);
    // Weights that live in `mapping` (kept alive by the model): `kind_bytes[k]` is where kind k's
    // tensors start (all layers contiguous, llm.c's order), in `storage`'s representation
    // (held_in_16_bits kinds 16-bit for fp16 / bf16, block streams for q8_0 / q4_0). Read-only: params() and every writer of
    // the weights are refused with PG_ERR_STATE naming `origin`.
    Model(const ModelConfig& cfg, WeightStorage storage, uint64_t fp32_hash, std::shared_ptr<const void> mapping,
          const std::array<const uint8_t*, kNumParamKinds>& kind_bytes, std::string origin);

    const ModelConfig& config() const { return config_; }
    const ParamLayout& layout() const { return layout_; }
    const std::vector<TensorEntry>& tensors() const { return tensors_; }
    int64_t num_params() const { return layout_.total; }
    // All num_params() weights in fp32, llm.c's order. Throws PG_ERR_STATE for a 16-bit or a
    // mapped base.
    float* params() {
        require_fp32();
        return params_.data();
    }
    const float* params() const {
        require_fp32();
        return params_.data();
    }
    // What a pass reads: the fp32 parameters, or the 16-bit or quantized matrices and the fp32
    // rest, to be multiplied in `arithmetic` where it fits the storage (exact elsewhere); exact
    // means the arithmetic a deprecated _ARITHMETIC storage spelling chose (pass_default()).
    WeightsView weights(Arithmetic arithmetic = Arithmetic::exact) const;
    // The arithmetic pg_model_set_weight_storage's deprecated PG_WEIGHTS_FP16_ARITHMETIC /
    // _BF16_ARITHMETIC spellings chose for passes that name none (exact otherwise).
    Arithmetic pass_default() const { return pass_default_; }

    WeightStorage storage() const { return storage_; }
    bool mapped() const { return mapping_ != nullptr; }
    // The bytes of one tensor of tensors() in this model's storage (2 per element when its kind
    // is held in 16 bits, else 4; a quantized kind's tensor is its rows' blocks), owned or
    // mapped; the writable one refuses a mapped model. tensor_nbytes: how many.
    const uint8_t* tensor_bytes(const TensorEntry& e) const;
    uint8_t* tensor_bytes(const TensorEntry& e);
    std::size_t tensor_nbytes(const TensorEntry& e) const;
    int element_bytes(ParamKind kind) const {
        if (storage_ == WeightStorage::fp32 || !held_in_16_bits(kind)) return 4;
        return is_quantized(storage_) ? 0 : 2;
    }
    // Makes this model a frozen base held in `storage` (model/weight_storage.cpp): fp16 / bf16
    // round every held_in_16_bits tensor to the nearest value (ties to even) and free its fp32
    // copy; fp32 on an fp32 model, or the model's own storage again, changes nothing. Refused
    // (PG_ERR_STATE) from 16 bits to another storage (the fp32 values are gone: load the model
    // again) and (PG_ERR_NOT_FINITE) when a weight is beyond the format's range. The base's
    // fingerprint stays the one of the fp32 weights it came from (fp32_weights_hash), so adapters
    // move between the fp32 and the 16-bit (or quantized) copy of one base. The same storage
    // again keeps the values and only sets pass_default.
    // q8_0 / q4_0 quantize those tensors block by block (kernels::quantize_rows) from the fp32
    // weights or from the 16-bit values held (the fp32 values are gone there); between the two
    // quantized storages, or from one back to 16 bits, PG_ERR_STATE. PG_ERR_UNSUPPORTED when a
    // row length is not a multiple of the block. `pass_default` is the arithmetic of passes that
    // name none (the deprecated _ARITHMETIC spellings; it must fit the storage).
    void hold_frozen_in(WeightStorage storage, Arithmetic pass_default = Arithmetic::exact);
    // xxh64 of the fp32 weights (llm.c order) this model holds or was converted from.
    uint64_t fp32_weights_hash() const;
    // For a loader that quantizes fp32 weights as it reads them (io::read_checkpoint_quantized):
    // their hash, known only at the end. Precondition: the storage is not fp32.
    void record_fp32_weights_hash(uint64_t hash) {
        require(storage_ != WeightStorage::fp32, PG_ERR_INTERNAL, "record_fp32_weights_hash: an fp32 model");
        converted_from_hash_ = hash;
    }
    // Every weight as an fp32 value into out[num_params()], llm.c's order: the fp32 weights, the
    // 16-bit ones widened (exactly) or the blocks dequantized, owned or mapped.
    void read_fp32(float* out) const;
    // Bytes of weight memory held (fp32 and 16-bit parts; for a mapped model, the mapped tensors').
    std::size_t weight_bytes() const;

    const Tokenizer* tokenizer() const { return tokenizer_.get(); }
    // Precondition: tok is NULL or its vocabulary is config().vocab_size (checked at the C
    // boundary by capi::require_tokenizer_fits, and by the checkpoint reader for a file's).
    void set_tokenizer(std::unique_ptr<Tokenizer> tok) {
        assert(!tok || tok->vocab_size() == config_.vocab_size);
        tokenizer_ = std::move(tok);
    }

    // Where the weights come from (model/provenance.hpp); unknown until someone records it.
    const Provenance& provenance() const { return provenance_; }
    void set_provenance(const Provenance& p) { provenance_ = p; }
    Provenance& provenance() { return provenance_; }

private:
    WeightsView stored_view() const;  // weights() without an arithmetic
    void quantize_frozen(WeightStorage storage);     // hold_frozen_in: to q8_0 / q4_0 (model/quantized_base.cpp)
    void convert_to_16_bits(WeightStorage storage);  // hold_frozen_in: fp32 to fp16 / bf16
    // The largest |value| of each fp16 tensor (the fp16 arithmetic's overflow guard), scanned
    // once from the values held, however they came, when a pass first asks for fp16 arithmetic.
    struct Fp16Bounds {
        std::once_flag scanned;
        std::array<float, kNumParamKinds> max_abs{};
    };
    const std::array<float, kNumParamKinds>& fp16_max_abs() const;
    void require_fp32() const {
        require_owned();
        require(storage_ == WeightStorage::fp32, PG_ERR_STATE,
                std::string("the model's weights are held in ") + weight_storage_name(storage_) +
                    " as a frozen base (pg_model_set_weight_storage): this needs its fp32 weights; load the model "
                    "again for it");
    }
    void require_owned() const {
        require(!mapping_, PG_ERR_STATE,
                "the model's weights are memory-mapped read-only from \"" + origin_ +
                    "\" (pg_model_load_with, map_weights): this needs weights the model owns; load the file "
                    "without map_weights for it");
    }
    // Where a quantized storage puts each kind: block streams in quant_ (bytes), the rest in
    // params_ (floats), each kind on a 64-byte boundary (model/quantized_base.cpp).
    struct QuantizedLayout {
        std::array<int64_t, kNumParamKinds> row_length{}, atq{}, at32{};
        int64_t nq = 0, n32 = 0;
    };
    QuantizedLayout quantized_layout(WeightStorage storage) const;
    bool in_blocks(WeightStorage storage, ParamKind kind) const {
        return is_quantized(storage) && held_in_16_bits(kind) && layout_.size[std::size_t(kind)] > 0;
    }

    ModelConfig config_;
    ParamLayout layout_;
    std::vector<TensorEntry> tensors_;
    WeightStorage storage_ = WeightStorage::fp32;
    // fp32: every tensor at layout_'s offsets. 16-bit: only the fp32 tensors, at offset32_.
    AlignedBuffer<float> params_;
    AlignedBuffer<uint16_t> half_;  // 16-bit: the held_in_16_bits tensors, at offset16_
    std::array<int64_t, kNumParamKinds> offset32_{}, offset16_{};
    uint64_t converted_from_hash_ = 0;  // 16-bit or mapped: fp32_weights_hash() of the fp32 weights
    std::shared_ptr<const void> mapping_;  // set: the weights are read-only in this mapping
    std::array<const uint8_t*, kNumParamKinds> mapped_{};  // mapped: where each kind starts
    std::string origin_;                                   // mapped: the file, for messages
    AlignedBuffer<uint8_t> quant_;  // quantized: the held_in_16_bits kinds' block streams, at offsetq_
    std::array<int64_t, kNumParamKinds> offsetq_{};  // bytes
    Arithmetic pass_default_ = Arithmetic::exact;
    mutable std::unique_ptr<Fp16Bounds> fp16_bounds_ = std::make_unique<Fp16Bounds>();
    std::unique_ptr<Tokenizer> tokenizer_;
    Provenance provenance_;
};

}  // namespace pg
