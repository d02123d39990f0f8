// Which tensors a native checkpoint of a geometry holds, in which order, where and in which
// dtype: the model's table order (formats 1.0 - 1.2, and 1.3 files written without the mapping
// layout), or format 1.3's mapping layout (llm.c's order, each kind's first tensor and each
// AdamW moment on a kCheckpointAlignment boundary, wte and the block linears in 16 bits for a
// 16-bit storage, in blocks for a quantized one (1.6); docs/formats.md section 1.8). The writer lays files out from it, the reader
// checks a decoded table against it, and both check tensor bytes against their checksums with
// the same messages. Internal to lib/io.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"

namespace pg::io::ckpt {

// The tensors a file of this geometry must hold, in file order: the model's table, then the two
// AdamW moments when it carries training state.
struct ExpectedTensor {
    std::string name;
    int n_dims;
    std::array<uint64_t, 4> shape;
    int model_index;   // in build_tensor_table's order; -1 / -2 for the moments
    bool half;         // 16 bits in a 16-bit file, blocks in a quantized one
    ParamKind kind;    // (the moments: kWte, unused since half is false)
    bool group_start;  // mapping layout: the first tensor of its kind (or a moment), aligned
};

uint64_t round_up_to(uint64_t n, uint64_t a);

// The table's order (1.0 - 1.2 and the default), or llm.c's order (the mapping layout: every
// kind's tensors contiguous, so a mapped kind is one array as the engine reads it).
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& cfg, bool with_moments, bool mappable = false);

// A tensor's dtype in a file of this storage: fp32, or for the kinds held in 16 bits
// (held_in_16_bits) the storage's 16-bit dtype or block format (quant_format_of).
TensorDtype dtype_of(WeightStorage storage, const ExpectedTensor& e);

// The geometry decides which tensors exist and their shapes; the table must say the same.
// Returns each file tensor's model_index. The mapping layout: llm.c's order, the dtypes of
// `storage`, and each group's first tensor exactly on the next aligned offset, the others
// right after the previous one.
std::vector<int> check_tensors_against_geometry(const std::vector<CheckpointTensor>& tensors, const ModelConfig& cfg,
                                                bool with_moments, bool mappable, WeightStorage storage);

// PG_ERR_CHECKSUM naming `source` and the tensor unless `computed` is t's stored checksum.
void require_tensor_checksum(const std::string& source, const CheckpointTensor& t, uint64_t computed);
// PG_ERR_CHECKSUM unless `computed` is the fp32 weights' hash section WLAY records.
void require_fp32_weights_hash(const std::string& source, uint64_t computed, const CheckpointHeader& h);

}  // namespace pg::io::ckpt
