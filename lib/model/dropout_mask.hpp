// The one definition of a dropout mask, shared by the reference model and the engine so that
// both drop exactly the same elements.
//
// An element survives when counter_uniform(seed, stream * 16 + place, layer << 40 | index) >= p,
// and survivors are scaled by 1 / (1 - p). `place` is one of nanoGPT's four dropout sites;
// `index` is the element's flat index in the tensor that site drops from ([B, T, C] for the
// three residual-stream sites, [B, n_head, T, T] for attention probabilities), so a mask never
// depends on how the work is split across threads. The layer goes into the index's top bits
// (indices stay below 2^40) rather than into the stream, so the 16 stream slots per micro-batch
// never overflow into the next micro-batch's slots however many layers there are.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "kernels/dispatch.hpp"
#include "model/engine.hpp"

namespace pg {

enum DropoutPlace : int {
    kDropEmbedding = 0,  // after wte + wpe
    kDropAttnProbs = 1,  // on the softmaxed attention probabilities
    kDropAttnProj = 2,   // after attn.c_proj, before the residual add
    kDropMlpProj = 3,    // after mlp.c_proj, before the residual add
    // 4 + LinearKind (4..7): the input of an adapter's low-rank branch on that linear
    // (model/low_rank.hpp); the index is row * n_in + column.
    kDropLowRankBranch = 4,
    // 8, 9: the branches on the second and third row slices of attn_qkv (k_proj, v_proj); 10:
    // on the second slice of mlp_fc (up_proj). Each branch drops its own elements, as PEFT's
    // per-module dropout does.
    kDropLowRankSlice = 8,
};

// The slot of the low-rank branch's dropout on slice `slice` (0 for a whole linear) of a
// linear of `kind`.
inline DropoutPlace low_rank_dropout_place(LinearKind kind, int slice) {
    if (slice == 0) return DropoutPlace(kDropLowRankBranch + static_cast<int>(kind));
    return DropoutPlace(kDropLowRankSlice + slice - 1 + (kind == LinearKind::mlp_fc ? 2 : 0));
}

inline bool dropout_active(const Dropout& d) { return d.p > 0.0f; }

inline void check_dropout(const Dropout& d) {
    require(d.p >= 0.0f && d.p < 1.0f, PG_ERR_INVALID_ARGUMENT,
            "dropout probability " + std::to_string(d.p) + " is outside [0, 1)");
}

// The counter-hash stream and index of an element. layer is 0 for the embedding site.
inline uint64_t dropout_stream(const Dropout& d, DropoutPlace place) {
    return d.stream * 16 + uint64_t(place);
}
inline uint64_t dropout_index(int layer, uint64_t index) { return (uint64_t(layer) << 40) | index; }

// True when the element survives.
inline bool dropout_keep(const Dropout& d, DropoutPlace place, int layer, uint64_t index) {
    return counter_uniform(d.seed, dropout_stream(d, place), dropout_index(layer, index)) >= d.p;
}

// The arguments of the dropout kernels (kernels/dispatch.hpp) for a run of elements of one site
// starting at `first`: they keep element first + i exactly when dropout_keep does.
inline kernels::DropoutArgs dropout_args(const Dropout& d, DropoutPlace place, int layer,
                                         uint64_t first) {
    kernels::DropoutArgs a;
    a.seed = d.seed;
    a.stream = dropout_stream(d, place);
    a.first_index = dropout_index(layer, first);
    a.p = d.p;
    a.scale = 1.0f / (1.0f - d.p);
    return a;
}

}  // namespace pg
