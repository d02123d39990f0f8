// The parameter table: every weight of the model in one allocation, in llm.c's tensor order
// (so llm.c files are a straight copy), with a named per-layer view for users and files.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.hpp"

namespace pg {

// The 16 stacked tensors, in llm.c's order. Linear weights are [out, in].
enum ParamKind : int {
    kWte = 0,    // [Vp, C]
    kWpe,        // [n_ctx, C]
    kLn1w,       // [L, C]
    kLn1b,       // [L, C]
    kQkvw,       // [L, 3C, C]
    kQkvb,       // [L, 3C]
    kAttprojw,   // [L, C, C]
    kAttprojb,   // [L, C]
    kLn2w,       // [L, C]
    kLn2b,       // [L, C]
    kFcw,        // [L, 4C, C]
    kFcb,        // [L, 4C]
    kFcprojw,    // [L, C, 4C]
    kFcprojb,    // [L, C]
    kLnfw,       // [C]
    kLnfb,       // [C]
    kNumParamKinds
};

// Sizes and offsets (in floats) of the 16 stacked tensors.
struct ParamLayout {
    std::array<int64_t, kNumParamKinds> size{};
    std::array<int64_t, kNumParamKinds> offset{};
    int64_t total = 0;

    ParamLayout() = default;
    explicit ParamLayout(const ModelConfig& cfg);
};

// Typed pointers to the 16 tensors of one parameter-shaped buffer (weights, gradients or
// AdamW moments all share the layout). Layer l of a stacked tensor starts at l * its per-layer
// size.
template <class T>
struct GptTensors {
    T *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb,
        *fcprojw, *fcprojb, *lnfw, *lnfb;
};

template <class T>
GptTensors<T> bind_tensors(const ParamLayout& layout, T* base) {
    T* p[kNumParamKinds];
    for (int k = 0; k < kNumParamKinds; ++k) p[k] = base + layout.offset[k];
    return GptTensors<T>{p[0], p[1], p[2],  p[3],  p[4],  p[5],  p[6],  p[7],
                         p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]};
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

// The public table in the order documented in phonegpt.h: wte, wpe, then layer by layer
// (ln_1.weight, ln_1.bias, attn.c_attn.weight, attn.c_attn.bias, attn.c_proj.weight,
// attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight, mlp.c_fc.bias, mlp.c_proj.weight,
// mlp.c_proj.bias), then ln_f.weight, ln_f.bias.
std::vector<TensorEntry> build_tensor_table(const ModelConfig& cfg);

// GPT-2 initialisation (see pg_model_create) into params[0..layout.total), from `seed`.
void init_gpt2_params(const ModelConfig& cfg, float* params, uint64_t seed);

}  // namespace pg
