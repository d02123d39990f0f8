// A frozen base held in quantized blocks (model/model.hpp, WeightStorage::q8_0 / q4_0): each
// held_in_16_bits kind becomes one block stream of its rows (kernels/quant_blocks.hpp), made
// from the values the model holds (fp32, or 16-bit owned or mapped) a few rows at a time, so no
// fp32 copy of a 16-bit base is ever made. LayerNorms, biases and positions stay fp32.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/half_float.hpp"
#include "kernels/quant_blocks.hpp"
#include "model/model.hpp"

namespace pg {

namespace {

constexpr int64_t kRowsPerChunk = 64;  // rows widened at a time from a 16-bit base

// The row length of kind's tensors (their last dimension), checked against the block.
int64_t quantized_row_length(const std::vector<TensorEntry>& tensors, ParamKind kind) {
    for (const TensorEntry& e : tensors) {
        if (e.kind != kind) continue;
        const int64_t cols = e.shape[size_t(e.n_dims - 1)];
        require(cols % kernels::kQuantBlock == 0, PG_ERR_UNSUPPORTED,
                "tensor \"" + e.name + "\" has rows of " + std::to_string(cols) +
                    " values, not a multiple of the quantized block (" + std::to_string(kernels::kQuantBlock) +
                    "): keep this model in fp32, fp16 or bf16");
        return cols;
    }
    throw Error(PG_ERR_INTERNAL, "quantized_row_length: no tensor of the kind");
}

}  // namespace

Model::QuantizedLayout Model::quantized_layout(WeightStorage storage) const {
    QuantizedLayout l;
    for (int k = 0; k < kNumParamKinds; ++k) {
        const ParamKind kind = ParamKind(k);
        const int64_t size = layout_.size[size_t(k)];
        if (in_blocks(storage, kind)) {  // (an empty kind, a tied model's lm_head, is nowhere)
            const int64_t cols = quantized_row_length(tensors_, kind);
            l.row_length[size_t(k)] = cols;
            l.atq[size_t(k)] = l.nq;
            const int64_t bytes = int64_t(kernels::quant_matrix_bytes(quant_format_of(storage, kind), size / cols, cols));
            l.nq += (bytes + 63) / 64 * 64;
        } else {
            l.at32[size_t(k)] = l.n32;
            l.n32 += (size + 15) / 16 * 16;
        }
    }
    return l;
}

void Model::quantize_frozen(WeightStorage storage) {
    require(storage_ == WeightStorage::fp32 || storage_ == WeightStorage::fp16 || storage_ == WeightStorage::bf16,
            PG_ERR_STATE,
            std::string("the model's weights are already held in ") + weight_storage_name(storage_) +
                " and the values it was quantized from are gone: load the model again to hold it in " +
                weight_storage_name(storage));
    const WeightsView from = stored_view();
    // Sizes first: a refusal leaves the model as it was.
    const QuantizedLayout l = quantized_layout(storage);
    AlignedBuffer<uint8_t> quant(static_cast<size_t>(l.nq));
    AlignedBuffer<float> rest(static_cast<size_t>(l.n32));
    std::vector<float> widened;
    for (int k = 0; k < kNumParamKinds; ++k) {
        const ParamKind kind = ParamKind(k);
        const int64_t size = layout_.size[size_t(k)];
        if (!in_blocks(storage, kind)) {
            std::copy(from.f32[size_t(k)], from.f32[size_t(k)] + size, rest.data() + l.at32[size_t(k)]);
            continue;
        }
        const kernels::QuantFormat format = quant_format_of(storage, kind);
        const int64_t n = l.row_length[size_t(k)], rows = size / n;
        const auto first = std::find_if(tensors_.begin(), tensors_.end(), [&](const TensorEntry& e) { return e.kind == kind; });
        const std::string what = "tensor \"" + first->name + "\" (and its kind's in later layers)";
        uint8_t* out = quant.data() + l.atq[size_t(k)];
        const int64_t row_bytes = int64_t(kernels::quant_matrix_bytes(format, 1, n));
        if (from.f32[size_t(k)]) {
            kernels::quantize_rows(format, from.f32[size_t(k)], rows, n, n, out, what);
            continue;
        }
        widened.resize(size_t(kRowsPerChunk * n));
        for (int64_t r = 0; r < rows; r += kRowsPerChunk) {
            const int64_t m = std::min(kRowsPerChunk, rows - r);
            kernels::half_to_float(widened.data(), from.half[size_t(k)] + r * n, m * n, from.format);
            kernels::quantize_rows(format, widened.data(), m, n, n, out + r * row_bytes, what);
        }
    }
    converted_from_hash_ = fp32_weights_hash();
    params_ = std::move(rest);
    half_ = AlignedBuffer<uint16_t>();
    quant_ = std::move(quant);
    offset32_ = l.at32;
    offsetq_ = l.atq;
    offset16_ = {};
    mapping_.reset();
    mapped_ = {};
    storage_ = storage;
}

}  // namespace pg
