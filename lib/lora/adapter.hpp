// The in-memory LoRA adapter: its configuration, the identity of the base it was made for, the
// A [rank, in] and B [out, rank] factors of every adapted (layer, linear) in one aligned fp32
// allocation, and the record of its training. Everything a file, a merge, a trainer or a
// coordinator needs is read from here, never assumed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "lora/config.hpp"
#include "model/low_rank.hpp"
#include "model/model.hpp"

namespace pg::lora {

// Who the adapter belongs to: the base's geometry and hashes of its weights and tokenizer, so
// that applying it to another base is refused with a message naming both sides.
struct BaseIdentity {
    ModelConfig config;
    uint64_t weights_hash = 0;     // xxh64 of the base's fp32 parameters (llm.c order)
    bool has_tokenizer = false;
    uint64_t tokenizer_hash = 0;   // xxh64 of the tokenizer's serialized bytes
    pg_tokenizer_kind tokenizer_kind = PG_TOKENIZER_CHAR;  // when has_tokenizer
    int32_t tokenizer_vocab = 0;                           // when has_tokenizer
    // The base's own account of its weights (trained for N steps from seed S, never trained,
    // or unknown): a description, not part of the identity (the weights hash is), so a base
    // reloaded from a file that does not record it still matches. Unknown in files before 1.2.
    Provenance provenance;
    // One number for the whole base: xxh64 over the geometry's fields and the two hashes.
    uint64_t fingerprint() const;
    // "6 layers, 4 heads, width 128, context 128, vocab 65 (68 rows), char tokenizer".
    std::string describe() const;
};

// A base's block architecture beyond GPT-2's (pg_model_config's names and values: norm, qk_norm,
// positions, rope_*, n_kv_head, head_dim, qkv_bias, linear_bias, mlp, mlp_hidden, tied_head);
// empty for GPT-2's block, so the identity of a GPT-2 base is what it was before the Llama family.
struct ArchitectureField {
    const char* name;
    double value;
    bool real;  // a float field (rope_theta...); the others are integers
};
std::vector<ArchitectureField> architecture_fields(const ModelConfig& c);

// Reads a model's identity (hashes its weights: memory speed, ~30 ms for a 64M base).
BaseIdentity identify_base(const Model& base);

// What training did to the adapter (appended by the trainer, stored in files, checked by
// coordinators): one loss and one learning rate per optimizer step.
struct TrainingRecord {
    int64_t steps = 0;
    int64_t tokens = 0;
    uint64_t seed = 0;             // the training run's seed (batches, dropout)
    std::vector<float> losses;     // per step, steps entries
    std::vector<float> learning_rates;
};

// One adapted linear (a target in a layer): where its factors live in the adapter's allocation
// and which rows of the engine's (fused) linear its term lands on.
struct AdaptedLinear {
    int layer = 0;
    Target target = Target::attn_c_attn;
    LinearKind kind = LinearKind::attn_qkv;  // target_kind(target)
    int64_t in = 0, out = 0;
    int64_t row_offset = 0;  // first row of the slice in the fused linear (0 for a whole linear)
    int64_t a_offset = 0;  // floats; A is [rank, in], row-major
    int64_t b_offset = 0;  // floats; B is [out, rank], row-major
};

// One named tensor (an A or a B) of the public table.
struct AdapterTensor {
    std::string name;      // "h.3.attn.c_attn.lora_A.weight", "model.layers.3.self_attn.q_proj.lora_A.weight"
    std::array<int64_t, 2> shape{};
    int64_t numel = 0;
    int64_t offset = 0;    // floats from the start of the allocation
    int linear = 0;        // index into linears()
    bool is_a = true;
};

class Adapter {
public:
    // Validates cfg against base's geometry (throws pg::Error) and allocates zeroed factors.
    Adapter(const LoraConfig& cfg, const BaseIdentity& base);

    // A fresh adapter for `base` initialised as PEFT does (init_peft).
    static Adapter create(const Model& base, const LoraConfig& cfg);

    // PEFT's default initialisation from cfg.init_seed: every A ~ kaiming-uniform with
    // a = sqrt(5), i.e. U(-1/sqrt(in), 1/sqrt(in)), drawn by one pg::Rng in tensor order; every
    // B = 0. Same seed, same factors, on every machine.
    void init_peft();

    const LoraConfig& config() const { return config_; }
    const BaseIdentity& base() const { return base_; }
    float scale() const { return config_.scale(); }
    const std::vector<AdaptedLinear>& linears() const { return linears_; }
    const std::vector<AdapterTensor>& tensors() const { return tensors_; }
    int64_t num_params() const { return static_cast<int64_t>(params_.size()); }
    float* params() { return params_.data(); }
    const float* params() const { return params_.data(); }

    // The adapted linear for (layer, target), or nullptr if that one is not adapted.
    const AdaptedLinear* find(int layer, Target target) const;
    // The adapted targets on the engine linear (layer, kind), consecutive in linears() and in
    // row order: first points at the first of count (count 0: none).
    struct Span {
        const AdaptedLinear* first = nullptr;
        int count = 0;
    };
    Span on_linear(int layer, LinearKind kind) const;
    float* a(const AdaptedLinear& m) { return params_.data() + m.a_offset; }
    float* b(const AdaptedLinear& m) { return params_.data() + m.b_offset; }
    const float* a(const AdaptedLinear& m) const { return params_.data() + m.a_offset; }
    const float* b(const AdaptedLinear& m) const { return params_.data() + m.b_offset; }
    // Index of the tensor named `name`, or -1.
    int find_tensor(const std::string& name) const;

    TrainingRecord& record() { return record_; }
    const TrainingRecord& record() const { return record_; }

private:
    LoraConfig config_;
    BaseIdentity base_;
    std::vector<AdaptedLinear> linears_;
    std::vector<AdapterTensor> tensors_;
    std::vector<int> by_layer_target_;  // [n_layer * kNumTargets] -> linears_ index or -1
    AlignedBuffer<float> params_;
    TrainingRecord record_;
};

// The factors of one adapted linear as the model's low-rank term (model/low_rank.hpp); ld_out is
// the fused linear's row count (the caller offsets out by m.row_offset columns).
LowRankFactors low_rank_factors(const Adapter& adapter, const AdaptedLinear& m);

// Throws PG_ERR_GEOMETRY, naming both sides, unless `base` is the base the adapter was made
// for: the same geometry, tokenizer (kind, vocabulary, bytes) and weights.
void check_adapter_matches_base(const Adapter& adapter, const Model& base);
// Throws PG_ERR_STATE unless `base` was trained (or its provenance is unknown) or `allow`:
// a never-trained base holds random weights, and an adapter trained on it learns noise while
// its loss still goes down. `what` names the operation in the message.
void check_base_trained(const Model& base, bool allow, const std::string& what);
// The same comparison of two identities; compare_weights = false checks geometry and tokenizer
// only (for a model the adapter is merged into).
void check_base_identity(const BaseIdentity& expected, const BaseIdentity& found, bool compare_weights);

}  // namespace pg::lora
