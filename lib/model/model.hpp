// The read-only half of the model/trainer split: configuration, the named parameter table,
// the weights in one aligned allocation, and the tokenizer that belongs to the weights.
#pragma once

#include <cassert>
#include <memory>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "model/config.hpp"
#include "model/params.hpp"
#include "model/provenance.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pg {

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
    float* params() { return params_.data(); }
    const float* params() const { return params_.data(); }

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
    ModelConfig config_;
    ParamLayout layout_;
    std::vector<TensorEntry> tensors_;
    AlignedBuffer<float> params_;
    std::unique_ptr<Tokenizer> tokenizer_;
    Provenance provenance_;
};

}  // namespace pg
