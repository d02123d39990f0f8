// The one place where something outside the base weights changes a linear layer of a block:
// every one of a block's four linear layers, in training (forward and backward), whole-split
// evaluation and the KV-cached generation step, goes through Engine's single linear() function,
// and that function calls the hook (if one is attached) right after the base product. An
// adapter (LoRA: out += scale * (in A^T) B^T) implements this interface; without a hook the
// model is the plain one and nothing extra runs.
//
// Contract of a hook (the engine guarantees the arguments, the hook trusts them):
// - forward adds its term into out (writes it, with ctx.overwrite); it must not write anything
//   else the engine can see.
// - backward adds d(loss)/d(in) of its term into din (writes it, with ctx.overwrite) and
//   accumulates d(loss)/d(its own parameters) into storage it owns. It is called once per
//   layer and kind per backward pass, in reverse layer order, with the same `in` its forward
//   saw (recomputed when the engine recomputes activations). din is null where nothing
//   reads the input gradient (a frozen base below the lowest adapted linear): the hook then
//   takes its own gradients only.
// - Both run on the calling thread and may split their work with ctx.pool (each call is one
//   parallel region or a few; the pool is not reentrant, so never call parallel_for from
//   inside a parallel_for body). Results must not depend on the thread count beyond rounding
//   that is the same for the same count: use the pool's fixed chunks and fixed-order sums.
// - A hook is read-only in forward (several sessions of one model may share nothing but the
//   model; an adapter attached to one session is that session's): forward may be called from
//   one thread at a time per engine, never concurrently on one hook object unless the hook
//   says it allows that.
#pragma once

#include <cstdint>

#include "core/thread_pool.hpp"

namespace pg {

// A block's linear layers, named as in Hugging Face's GPT-2 (transformer.h.<layer>.<name>).
enum class LinearKind : int {
    attn_qkv = 0,   // attn.c_attn   [3C, C]
    attn_proj = 1,  // attn.c_proj   [C, C]
    mlp_fc = 2,     // mlp.c_fc      [4C, C]
    mlp_proj = 3,   // mlp.c_proj    [C, 4C]
};
constexpr int kNumLinearKinds = 4;

// "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj".
inline const char* linear_kind_name(LinearKind kind) {
    switch (kind) {
        case LinearKind::attn_qkv: return "attn.c_attn";
        case LinearKind::attn_proj: return "attn.c_proj";
        case LinearKind::mlp_fc: return "mlp.c_fc";
        case LinearKind::mlp_proj: return "mlp.c_proj";
    }
    return "?";
}

// What a hook call may need besides the tensors.
struct LinearHookContext {
    ThreadPool& pool;
    // True in a training forward/backward, where an adapter applies its own dropout; false in
    // evaluation and generation.
    bool training = false;
    // The micro-batch's dropout seed and stream (Dropout::seed / Dropout::stream of the pass),
    // for a hook's own dropout masks: derive them with counter_hash from (seed, stream, layer,
    // kind, row * n_in + column) so they do not depend on threads.
    uint64_t seed = 0;
    uint64_t stream = 0;
    // The pass's rows are positions [first_position, first_position + rows) of `sequences`
    // sequences (rows = sequences * positions per sequence; generation: 1 sequence).
    int first_position = 0;
    // True: forward writes its term into out, backward its input gradient into din, instead of
    // adding it; their old contents are not read. The engine calls the hook first this way
    // where the base product then adds itself in and applies a GELU (or its derivative) on its
    // register tiles. In backward din may then be the very input `in` (a GELU output whose
    // gradient replaces it): a hook reads all of in before it writes din.
    bool overwrite = false;
};

class LinearHook {
public:
    virtual ~LinearHook() = default;

    // Whether the hook has a term for this layer (false: the engine leaves the layer to the
    // base alone and calls neither forward nor backward for it).
    virtual bool adapts(int layer, LinearKind kind) const = 0;

    // out[rows, n_out] += hook term of in[rows, n_in].
    virtual void forward(int layer, LinearKind kind, const float* in, int64_t rows, int n_in, float* out,
                         int n_out, const LinearHookContext& ctx) = 0;

    // din[rows, n_in] += d(hook term)/d(in) . dout (din null: not wanted); the hook's own
    // gradients += ... . in is the same input forward saw; dout is d(loss)/d(out) [rows, n_out].
    virtual void backward(int layer, LinearKind kind, const float* in, const float* dout, int64_t rows,
                          int n_in, float* din, int n_out, const LinearHookContext& ctx) = 0;
};

}  // namespace pg
