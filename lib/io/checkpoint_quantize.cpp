// Quantizing a native checkpoint while it is read (read_checkpoint_quantized, pg_model_load_with
// with a q8_0 / q4_0 weight_storage): a raw fp32 file's tensors are read a few rows at a time in
// llm.c's order, checked (checksum, finite values) and quantized into the model's blocks, and the
// fp32 weights' hash (the base's identity) is computed on the way, so the fp32 model is never held
// whole. Every other file loads in its own storage and is quantized after (checkpoint.hpp).
#include <algorithm>
#include <vector>

#include "core/checksum.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_tensors.hpp"
#include "io/finite_weights.hpp"
#include "kernels/quant_blocks.hpp"

namespace pg::io {

using namespace ckpt;

namespace {

constexpr std::size_t kChunkFloats = std::size_t(1) << 18;  // 1 MB of fp32 rows read at a time

}  // namespace

Model read_checkpoint_quantized(const ByteSource& src, const CheckpointHeader& h, WeightStorage storage) {
    require(is_quantized(storage), PG_ERR_INTERNAL, "read_checkpoint_quantized: the storage is not quantized");
    if (h.storage != WeightStorage::fp32 || h.compressed) {
        Model model = make_model_for(h);
        read_checkpoint_data(src, h, model, nullptr);
        model.hold_frozen_in(storage);
        return model;
    }
    Model model(h.config, storage, 0);  // the hash is known once every weight was read
    model.set_provenance(h.provenance);
    const std::string& name = src.name();
    std::vector<int> file_index(model.tensors().size(), -1);
    for (std::size_t i = 0; i < h.tensors.size(); ++i)
        if (h.model_index[i] >= 0) file_index[std::size_t(h.model_index[i])] = int(i);
    Xxh64 weights;  // of the fp32 weights in llm.c's order, as Model::fp32_weights_hash
    std::vector<float> chunk;
    for (const ExpectedTensor& x : expected_tensors(h.config, false, true)) {
        const TensorEntry& e = model.tensors()[std::size_t(x.model_index)];
        const CheckpointTensor& t = h.tensors[std::size_t(file_index[std::size_t(x.model_index)])];
        const int64_t cols = e.shape[std::size_t(e.n_dims - 1)], rows = e.numel / cols;
        const bool blocks = model.element_bytes(e.kind) == 0;
        const kernels::QuantFormat format = quant_format_of(storage, e.kind);
        const int64_t row_bytes = blocks ? int64_t(kernels::quant_matrix_bytes(format, 1, cols)) : cols * 4;
        const int64_t chunk_rows = std::max<int64_t>(1, int64_t(kChunkFloats) / cols);
        const std::string what = "tensor \"" + e.name + "\"";
        uint8_t* dst = model.tensor_bytes(e);
        Xxh64 tensor;
        for (int64_t r = 0; r < rows; r += chunk_rows) {
            const int64_t m = std::min(chunk_rows, rows - r);
            const std::size_t n = std::size_t(m * cols);
            float* values = reinterpret_cast<float*>(dst + r * row_bytes);  // fp32 kinds: in place
            if (blocks) {
                chunk.resize(n);
                values = chunk.data();
            }
            src.read_at(h.data_start + t.offset + uint64_t(r * cols) * 4, values, n * 4, "tensor data");
            tensor.update(values, n * 4);
            weights.update(values, n * 4);
            require_finite_values(values, int64_t(n), name, what, r * cols);
            if (blocks) kernels::quantize_rows(format, values, m, cols, cols, dst + r * row_bytes, name + ": " + what);
        }
        require_tensor_checksum(name, t, tensor.digest());
    }
    if (h.mappable) require_fp32_weights_hash(name, weights.digest(), h);
    model.record_fp32_weights_hash(weights.digest());
    return model;
}

}  // namespace pg::io
