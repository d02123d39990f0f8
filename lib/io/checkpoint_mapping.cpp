// Format 1.3's mapped load (map_checkpoint, pg_model_load_with with map_weights): a model whose
// weights are the mapped file's bytes, after every check a copied load makes (docs/formats.md
// section 1.8).
#include "io/checkpoint.hpp"
#include "io/checkpoint_tensors.hpp"
#include "core/checksum.hpp"
#include "io/finite_weights.hpp"

namespace pg::io {

using namespace ckpt;

Model map_checkpoint(std::shared_ptr<const MappedFile> file, const CheckpointHeader& h) {
    const std::string& name = file->name();
    const std::string version = std::to_string(h.major) + "." + std::to_string(h.minor);
    require(!h.compressed, PG_ERR_UNSUPPORTED,
            name + ": the weights are zstd-compressed, so they cannot be mapped: save the model raw (compression_level "
                   "0) with align_for_mapping = 1 or a 16-bit weight_storage, or load it without map_weights");
    require(h.mappable, PG_ERR_UNSUPPORTED,
            name + ": a format " + version + " file without the mapping layout (section WLAY, format 1.3) cannot be "
                   "mapped: save it again with pg_save_options.align_for_mapping = 1 (or a 16-bit weight_storage), "
                   "or load it without map_weights");
    const uint8_t* region = file->data() + h.data_start;
    const ParamLayout layout(h.config);
    const std::vector<TensorEntry> table = build_tensor_table(h.config);
    std::array<const uint8_t*, kNumParamKinds> kinds{};
    for (std::size_t i = 0; i < h.tensors.size(); ++i) {
        const int at = h.model_index[i];
        if (at < 0) continue;  // the moments are not the model's
        const CheckpointTensor& t = h.tensors[i];
        require_tensor_checksum(name, t, xxh64(region + t.offset, std::size_t(t.nbytes)));
        const TensorEntry& e = table[std::size_t(at)];
        if (e.offset == layout.offset[std::size_t(e.kind)]) kinds[std::size_t(e.kind)] = region + t.offset;
    }
    for (int k = 0; k < kNumParamKinds; ++k) {  // (a kind the configuration lacks is empty)
        const uint8_t* p = kinds[std::size_t(k)];
        require(layout.size[std::size_t(k)] == 0 || (p && reinterpret_cast<uintptr_t>(p) % kCheckpointAlignment == 0),
                PG_ERR_INTERNAL, name + ": a mapped kind is missing or misaligned");
    }
    if (h.storage == WeightStorage::fp32) {
        Xxh64 hash;  // llm.c's order, each kind contiguous: the hash of the fp32 parameters
        for (int k = 0; k < kNumParamKinds; ++k) hash.update(kinds[std::size_t(k)], std::size_t(layout.size[std::size_t(k)]) * 4);
        require_fp32_weights_hash(name, hash.digest(), h);
    }
    Model model(h.config, h.storage, h.fp32_weights_hash, file, kinds, name);
    model.set_provenance(h.provenance);
    require_finite_weights(model, name);
    return model;
}

}  // namespace pg::io
