// Merging an adapter into its base's weights and taking it out again:
//   merge:   W += scale * B A   for every adapted linear (W [out, in], B [out, r], A [r, in])
//   unmerge: W -= scale * B A
// Both run in fp32 (one sgemm per linear, beta = 1), so unmerge(merge(W)) equals W only within
// rounding: |error| <= a few ulp of max(|W|, |scale B A|) per element (tests/unit/test_lora_merge.cpp
// states and checks the bound). Biases, LayerNorms and embeddings are not touched.
#pragma once

#include "lora/adapter.hpp"
#include "model/model.hpp"

namespace pg::lora {

// Where the base weight W [out, in] (row-major) of one adapted linear starts in `model`'s
// fp32 parameters (llm.c's layout).
int64_t base_weight_offset(const Model& model, const AdaptedLinear& m);

// `out` (a model of the base's configuration) gets the base's tokenizer and its weights with
// the adapter merged: an fp32 model, also from a 16-bit or quantized base (owned or mapped),
// whose weights are then the values it holds (widened, or the blocks dequantized). The base must
// be the adapter's (check_adapter_matches_base).
void merge_into_copy(const Model& base, const Adapter& adapter, Model& out, int n_threads);

// In place. merge checks the model is the adapter's base; unmerge checks geometry and tokenizer
// only (a merged model's weights are not the base's, by construction).
void merge_in_place(Model& model, const Adapter& adapter, int n_threads);
void unmerge_in_place(Model& model, const Adapter& adapter, int n_threads);

}  // namespace pg::lora
