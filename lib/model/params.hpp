// The parameter table: every weight of the model in one allocation, in llm.c's tensor order
// (so llm.c files are a straight copy), with a named per-layer view for users and files.
// The Llama family uses the same stacked kinds (a kind the configuration does not have is
// empty): q/k/v fused per layer as rows [q_width + 2 * kv_width, C] and gate/up as
// [2 * mlp_hidden, C], so each Hugging Face projection is a contiguous row slice of its kind.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.hpp"

namespace pg {

// The stacked tensors: GPT-2's 16 in llm.c's order, then the Llama family's extras. Linear
// weights are [out, in]. Shapes for GPT-2 / the Llama family (QKV = q_width + 2 * kv_width,
// F = 4C or 2 * mlp_hidden (gate rows, then up rows), H = 4C or mlp_hidden); empty kinds are
// those the configuration lacks (wpe with rotary positions, the norm biases with RMSNorm,
// biases turned off, q/k norms, a tied head).
enum ParamKind : int {
    kWte = 0,    // [Vp, C]
    kWpe,        // [n_ctx, C]
    kLn1w,       // [L, C]
    kLn1b,       // [L, C]
    kQkvw,       // [L, QKV, C]
    kQkvb,       // [L, QKV]
    kAttprojw,   // [L, C, q_width]
    kAttprojb,   // [L, C]
    kLn2w,       // [L, C]
    kLn2b,       // [L, C]
    kFcw,        // [L, F, C]
    kFcb,        // [L, F]
    kFcprojw,    // [L, C, H]
    kFcprojb,    // [L, C]
    kLnfw,       // [C]
    kLnfb,       // [C]
    kQNorm,      // [L, head_dim]  Qwen3's per-head query RMSNorm
    kKNorm,      // [L, head_dim]  and key RMSNorm
    kLmHead,     // [Vp, C]        an untied output head
    kNumParamKinds
};

// Sizes and offsets (in floats) of the stacked tensors.
struct ParamLayout {
    std::array<int64_t, kNumParamKinds> size{};
    std::array<int64_t, kNumParamKinds> offset{};
    int64_t total = 0;

    ParamLayout() = default;
    explicit ParamLayout(const ModelConfig& cfg);
};

// Typed pointers to the tensors of one parameter-shaped buffer (weights, gradients or
// AdamW moments all share the layout). Layer l of a stacked tensor starts at l * its per-layer
// size.
template <class T>
struct GptTensors {
    T *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb,
        *fcprojw, *fcprojb, *lnfw, *lnfb, *qnorm, *knorm, *lmhead;
};

template <class T>
GptTensors<T> bind_tensors(const ParamLayout& layout, T* base) {
    T* p[kNumParamKinds];
    for (int k = 0; k < kNumParamKinds; ++k) p[k] = base + layout.offset[k];
    return GptTensors<T>{p[0], p[1],  p[2],  p[3],  p[4],  p[5],  p[6],  p[7],  p[8], p[9],
                         p[10], p[11], p[12], p[13], p[14], p[15], p[16], p[17], p[18]};
}

// One named tensor of the public table ("h.3.attn.c_attn.weight" is layer 3's slice of kQkvw).
struct TensorEntry {
    std::string name;
    int n_dims = 0;
    std::array<int64_t, 4> shape{};
    int64_t numel = 0;
    int64_t offset = 0;     // floats from the start of the parameter allocation
    ParamKind kind = kWte;
    int layer = -1;         // -1 for wte, wpe, ln_f
    bool is_linear_weight = false;  // 2-D weights of linear layers: the ones AdamW decays
};

// The public table in the order documented in phonegpt.h. GPT-2: wte, wpe, then layer by layer
// (ln_1.weight, ln_1.bias, attn.c_attn.weight, attn.c_attn.bias, attn.c_proj.weight,
// attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight, mlp.c_fc.bias, mlp.c_proj.weight,
// mlp.c_proj.bias), then ln_f.weight, ln_f.bias. The Llama family: Hugging Face transformers'
// names and order (model.embed_tokens.weight, model.layers.N.input_layernorm.weight,
// self_attn.{q,k,v}_proj.{weight,bias}, self_attn.{q,k}_norm.weight, self_attn.o_proj.{weight,bias},
// post_attention_layernorm.weight, mlp.{gate,up,down}_proj.{weight,bias}, model.norm.weight,
// lm_head.weight), only those the configuration has.
std::vector<TensorEntry> build_tensor_table(const ModelConfig& cfg);

// Initialisation (see pg_model_create) into params[0..layout.total), from `seed`, of every
// family (the name is from when there was one): GPT-2's, and for the Llama family Hugging
// Face's (every matrix normal with std 0.02, norms 1, biases 0).
void init_gpt2_params(const ModelConfig& cfg, float* params, uint64_t seed);

}  // namespace pg
