// Which tensors go where in a native checkpoint (checkpoint_tensors.hpp): the expected table in
// either layout, the geometry check, and the checksum checks the reader and mapper share.
#include "io/checkpoint_tensors.hpp"

#include <algorithm>

#include "io/checkpoint_sections.hpp"
#include "core/hex.hpp"

namespace pg::io::ckpt {

uint64_t round_up_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& cfg, bool with_moments, bool mappable) {
    std::vector<ExpectedTensor> out;
    const std::vector<TensorEntry> table = build_tensor_table(cfg);
    std::vector<int> order(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) order[i] = int(i);
    if (mappable)
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return table[a].offset < table[b].offset; });
    for (std::size_t j = 0; j < order.size(); ++j) {
        const TensorEntry& e = table[std::size_t(order[j])];
        ExpectedTensor t{e.name, e.n_dims, {}, order[j], held_in_16_bits(e.kind), e.kind,
                         j == 0 || table[std::size_t(order[j - 1])].kind != e.kind};
        for (int d = 0; d < e.n_dims; ++d) t.shape[d] = uint64_t(e.shape[d]);
        out.push_back(std::move(t));
    }
    if (with_moments) {
        const uint64_t n = uint64_t(count_params(cfg));
        out.push_back({kAdamM, 1, {n, 0, 0, 0}, -1, false, kWte, true});
        out.push_back({kAdamV, 1, {n, 0, 0, 0}, -2, false, kWte, true});
    }
    return out;
}

TensorDtype dtype_of(WeightStorage storage, const ExpectedTensor& e) {
    if (!e.half || storage == WeightStorage::fp32) return TensorDtype::kF32;
    if (is_quantized(storage))
        return quant_format_of(storage, e.kind) == kernels::QuantFormat::q8_0 ? TensorDtype::kQ8_0 : TensorDtype::kQ4_0;
    return storage == WeightStorage::fp16 ? TensorDtype::kF16 : TensorDtype::kBF16;
}

std::vector<int> check_tensors_against_geometry(const std::vector<CheckpointTensor>& tensors, const ModelConfig& cfg,
                                                bool with_moments, bool mappable, WeightStorage storage) {
    const std::vector<ExpectedTensor> expected = expected_tensors(cfg, with_moments, mappable);
    auto geometry = [&] {  // for the messages, composed only when one is thrown
        return "geometry (n_layer " + std::to_string(cfg.n_layer) + ", n_embd " + std::to_string(cfg.n_embd) +
               ", n_ctx " + std::to_string(cfg.n_ctx) + ", padded_vocab_size " +
               std::to_string(cfg.padded_vocab_size) + ")";
    };
    const std::size_t n = std::min(tensors.size(), expected.size());
    for (std::size_t i = 0; i < n; ++i) {
        const CheckpointTensor& t = tensors[i];
        const ExpectedTensor& e = expected[i];
        if (t.name != e.name)
            throw Error(PG_ERR_GEOMETRY, "checkpoint tensor " + std::to_string(i) + " is \"" + t.name +
                                             "\" but the " + geometry() + " needs \"" + e.name + "\" there");
        if (t.n_dims != e.n_dims || t.shape != e.shape)
            throw Error(PG_ERR_GEOMETRY, "checkpoint tensor \"" + t.name + "\" has shape " +
                                             shape_text(t.n_dims, t.shape) + " but the " + geometry() +
                                             " needs " + shape_text(e.n_dims, e.shape));
        if (!mappable) continue;
        const TensorDtype dtype = dtype_of(storage, e);
        require(t.dtype == dtype, PG_ERR_FORMAT, [&] {
            return "checkpoint tensor \"" + t.name + "\" has dtype " + dtype_text(t.dtype) + " but the file's " +
                   weight_storage_name(storage) + " storage (section WLAY) needs " + dtype_text(dtype);
        });
        const uint64_t prev_end = i == 0 ? 0 : tensors[i - 1].offset + tensors[i - 1].nbytes;
        const uint64_t at = e.group_start ? round_up_to(prev_end, kCheckpointAlignment) : prev_end;
        require(t.offset == at, PG_ERR_FORMAT, [&] {
            return "checkpoint tensor \"" + t.name + "\" starts at " + std::to_string(t.offset) +
                   " of the data region; the mapping layout puts it at " + std::to_string(at) +
                   (e.group_start ? " (its kind's first tensor, on a 64-byte boundary)" : " (right after the previous one)");
        });
    }
    if (tensors.size() != expected.size())
        throw Error(PG_ERR_GEOMETRY, "checkpoint has " + std::to_string(tensors.size()) + " tensors but the " +
                                         geometry() + (with_moments ? " with training state" : "") + " needs " +
                                         std::to_string(expected.size()));
    std::vector<int> index;
    for (const ExpectedTensor& e : expected) index.push_back(e.model_index);
    return index;
}

void require_tensor_checksum(const std::string& source, const CheckpointTensor& t, uint64_t computed) {
    require(computed == t.checksum, PG_ERR_CHECKSUM, [&] {
        return source + ": tensor \"" + t.name + "\" checksum mismatch (stored " + hex64(t.checksum) + ", computed " +
               hex64(computed) + "): the file is corrupt";
    });
}

void require_fp32_weights_hash(const std::string& source, uint64_t computed, const CheckpointHeader& h) {
    require(computed == h.fp32_weights_hash, PG_ERR_CHECKSUM, [&] {
        return source + ": the weights' hash " + hex64(computed) + " differs from the one section WLAY records (" +
               hex64(h.fp32_weights_hash) + "): the file is corrupt";
    });
}

}  // namespace pg::io::ckpt
