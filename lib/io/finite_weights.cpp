#include "io/finite_weights.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "kernels/quant_blocks.hpp"

namespace pg::io {

void require_finite_values(const float* values, int64_t n, const std::string& source, const std::string& what,
                           int64_t first) {
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(values[i]))
            throw Error(PG_ERR_NOT_FINITE, source + ": " + what + " element " + std::to_string(first + i) + " is " +
                                               std::to_string(values[i]) +
                                               ": the file holds a diverged model (NaN or infinite values), "
                                               "which is never loaded");
    }
}

void require_finite_weights(const Model& model, const std::string& source) {
    // Every storage (fp32, 16-bit, quantized, owned or mapped): an fp16 / bf16 value is NaN or
    // infinite exactly when its exponent bits are all ones; a quantized block's fp16 scale must
    // be finite (kernels::validate_quantized, PG_ERR_FORMAT).
    const uint16_t exponent = model.storage() == WeightStorage::bf16 ? 0x7f80 : 0x7c00;
    for (const auto& t : model.tensors()) {
        const uint8_t* bytes = model.tensor_bytes(t);
        const std::string what = "tensor \"" + t.name + "\"";
        if (model.element_bytes(t.kind) == 4) {
            require_finite_values(reinterpret_cast<const float*>(bytes), t.numel, source, what);
            continue;
        }
        if (model.element_bytes(t.kind) == 0) {  // blocks: finite scales, codes the kernels take
            const int64_t cols = t.shape[std::size_t(t.n_dims - 1)];
            kernels::validate_quantized(quant_format_of(model.storage(), t.kind), bytes, model.tensor_nbytes(t),
                                        t.numel / cols, cols, source + ": " + what);
            continue;
        }
        for (int64_t i = 0; i < t.numel; ++i) {
            uint16_t h;
            std::memcpy(&h, bytes + 2 * i, 2);
            if ((h & exponent) == exponent)
                throw Error(PG_ERR_NOT_FINITE, source + ": " + what + " element " + std::to_string(i) + " is " +
                                                   ((h & (exponent ^ 0x7fff)) ? "nan" : "inf") + " (" +
                                                   weight_storage_name(model.storage()) +
                                                   "): the file holds a diverged model (NaN or infinite values), "
                                                   "which is never loaded");
        }
    }
}

}  // namespace pg::io
