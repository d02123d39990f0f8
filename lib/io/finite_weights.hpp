// The loaders' policy for non-finite weights: a file whose weights (or optimizer moments) hold
// NaN or infinity is refused with PG_ERR_NOT_FINITE naming the tensor and the element, for every
// format (native checkpoint, llm.c, safetensors). Such a file comes from a diverged run; loading
// it would make every later evaluation, sample or training step fail or mislead.
#pragma once

#include <cstdint>
#include <string>

#include "model/model.hpp"

namespace pg::io {

// Throws PG_ERR_NOT_FINITE ("<source>: tensor "<name>" element <i> is nan ...") for the first
// non-finite weight of `model`.
void require_finite_weights(const Model& model, const std::string& source);

// The same for one array of `n` values called `what` (e.g. the AdamW moments); `first` is the
// element index of values[0] in `what` (a loader checking a tensor piece by piece).
void require_finite_values(const float* values, int64_t n, const std::string& source, const std::string& what,
                           int64_t first = 0);

}  // namespace pg::io
