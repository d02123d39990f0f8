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
#include "model/engine.hpp"

namespace pg {

enum DropoutPlace : int {
    kDropEmbedding = 0,  // after wte + wpe
    kDropAttnProbs = 1,  // on the softmaxed attention probabilities
    kDropAttnProj = 2,   // after attn.c_proj, before the residual add
    kDropMlpProj = 3,    // after mlp.c_proj, before the residual add
};

inline bool dropout_active(const Dropout& d) { return d.p > 0.0f; }

inline void check_dropout(const Dropout& d) {
    require(d.p >= 0.0f && d.p < 1.0f, PG_ERR_INVALID_ARGUMENT,
            "dropout probability " + std::to_string(d.p) + " is outside [0, 1)");
}

// True when the element survives. layer is 0 for the embedding site.
inline bool dropout_keep(const Dropout& d, DropoutPlace place, int layer, uint64_t index) {
    return counter_uniform(d.seed, d.stream * 16 + uint64_t(place),
                           (uint64_t(layer) << 40) | index) >= d.p;
}

}  // namespace pg
