// The read-only half of the model/trainer split: configuration, the named parameter table,
// the weights in one aligned allocation, and the tokenizer that belongs to the weights.
// The weights are fp32 unless the model was made a 16-bit frozen base (hold_frozen_in): then its
// big matrices are fp16 or bf16 and everything that needs fp32 weights (params(): training every
// weight, saving, merging, tensor access) is refused with PG_ERR_STATE, while passes over the
// frozen base (evaluation, sessions, LoRA training) read weights().
#pragma once

#include <cassert>
#include <memory>
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

// How a model holds its weights: all fp32, or the frozen base's matrices (held_in_16_bits) in
// IEEE fp16 or bfloat16; fp16_arithmetic holds the same fp16 values and lets inference passes
// multiply in fp16 (kernels::GemmArgs::fp16_arithmetic). The values match pg_weight_storage.
enum class WeightStorage : int { fp32 = 0, fp16 = 1, bf16 = 2, fp16_arithmetic = 3 };
const char* weight_storage_name(WeightStorage storage);

class Model {
public:
    // Validates cfg (throws pg::Error) and allocates zeroed weights.
    explicit Model(const ModelConfig& cfg)
        : config_((validate_model_config(cfg), cfg)),
          layout_(cfg),
          tensors_(build_tensor_table(cfg)),
          params_(static_cast<std::size_t>(layout_.total)) {}

    const ModelConfig& config() const { return config_; }
    const ParamLayout& layout() const { return layout_; }
    const std::vector<TensorEntry>& tensors() const { return tensors_; }
    int64_t num_params() const { return layout_.total; }
    // All num_params() weights in fp32, llm.c's order. Throws PG_ERR_STATE for a 16-bit base.
    float* params() {
        require_fp32();
        return params_.data();
    }
    const float* params() const {
        require_fp32();
        return params_.data();
    }
    // What a pass reads: the fp32 parameters, or the 16-bit matrices and the fp32 rest.
    WeightsView weights() const;

    WeightStorage storage() const { return storage_; }
    // Makes this model a frozen base held in `storage` (model/weight_storage.cpp): fp16 / bf16
    // round every held_in_16_bits tensor to the nearest value (ties to even) and free its fp32
    // copy; fp32 on an fp32 model, or the model's own storage again, changes nothing. Refused
    // (PG_ERR_STATE) from 16 bits to another storage (the fp32 values are gone: load the model
    // again) and (PG_ERR_NOT_FINITE) when a weight is beyond the format's range. The base's
    // fingerprint stays the one of the fp32 weights it came from (fp32_weights_hash), so adapters
    // move between the fp32 and the 16-bit copy of one base. fp16 and fp16_arithmetic hold the
    // same values: between them only the arithmetic of inference passes changes.
    void hold_frozen_in(WeightStorage storage);
    // xxh64 of the fp32 weights (llm.c order) this model holds or was converted from.
    uint64_t fp32_weights_hash() const;
    // Bytes of weight memory held (fp32 and 16-bit parts).
    std::size_t weight_bytes() const { return params_.size() * sizeof(float) + half_.size() * sizeof(uint16_t); }

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
    void require_fp32() const {
        require(storage_ == WeightStorage::fp32, PG_ERR_STATE,
                std::string("the model's weights are held in ") + weight_storage_name(storage_) +
                    " as a frozen base (pg_model_set_weight_storage): this needs its fp32 weights; load the model "
                    "again for it");
    }

    ModelConfig config_;
    ParamLayout layout_;
    std::vector<TensorEntry> tensors_;
    WeightStorage storage_ = WeightStorage::fp32;
    // fp32: every tensor at layout_'s offsets. 16-bit: only the fp32 tensors, at offset32_.
    AlignedBuffer<float> params_;
    AlignedBuffer<uint16_t> half_;  // 16-bit: the held_in_16_bits tensors, at offset16_
    std::array<int64_t, kNumParamKinds> offset32_{}, offset16_{};
    std::array<float, kNumParamKinds> half_max_abs_{};  // 16-bit: the largest |value| per tensor
    uint64_t converted_from_hash_ = 0;  // 16-bit: fp32_weights_hash() of the weights before
    std::unique_ptr<Tokenizer> tokenizer_;
    Provenance provenance_;
};

}  // namespace pg
