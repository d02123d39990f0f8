#include "io/finite_weights.hpp"

#include <cmath>

#include "core/error.hpp"

namespace pg::io {

void require_finite_values(const float* values, int64_t n, const std::string& source, const std::string& what) {
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(values[i]))
            throw Error(PG_ERR_NOT_FINITE, source + ": " + what + " element " + std::to_string(i) + " is " +
                                               std::to_string(values[i]) +
                                               ": the file holds a diverged model (NaN or infinite values), "
                                               "which is never loaded");
    }
}

void require_finite_weights(const Model& model, const std::string& source) {
    for (const auto& t : model.tensors())
        require_finite_values(model.params() + t.offset, t.numel, source, "tensor \"" + t.name + "\"");
}

}  // namespace pg::io
