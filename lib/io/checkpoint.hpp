// The native checkpoint: a self-describing file holding the model's geometry, its tokenizer,
// every weight with its own checksum and, when asked, the complete training state, so nothing
// about a model is read from code. Byte-by-byte layout: docs/formats.md.
//
// Reading is two-phase so that nothing is allocated before it is validated:
//   1. read_checkpoint_header() reads and checks the prelude and the header (magic, version
//      window, header size cap, header checksum, every section, the tensor table against the
//      geometry, the data size against the file size) and allocates only header-sized memory.
//   2. The caller allocates the model from header.config, then read_checkpoint_data() fills it
//      (and the AdamW moments), checking each tensor's checksum.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "core/file_io.hpp"
#include "model/model.hpp"
#include "train/train_config.hpp"

namespace pg::io {

// The format version this library writes. A reader accepts every major <= this one that was
// ever written (fixtures in tests/fixtures/) and any minor of a known major: minor versions only
// add optional sections, which older readers skip.
constexpr uint16_t kCheckpointMajor = 1;
constexpr uint16_t kCheckpointMinor = 1;  // 1.1 added the optional PROV section (provenance)
// 1.2 added the required OPTM section (a Muon trainer state); only such files are written as 1.2.
constexpr uint16_t kCheckpointMinorOptimizer = 2;
// 1.3 added the mapping layout (the required WLAY section): tensors in llm.c's order, each kind's
// first tensor and the data region on a kCheckpointAlignment boundary, the 16-bit dtypes for a
// frozen base. Only files written with it (CheckpointOptions: a 16-bit storage or mappable) are
// 1.3; every other file is written as before, byte for byte.
constexpr uint16_t kCheckpointMinorMappable = 3;
// 1.4 added the required DRMP section (a training state whose dropout ramps up,
// pg_train_config.dropout_ramp_steps > 0); only such files are written as 1.4.
constexpr uint16_t kCheckpointMinorDropoutRamp = 4;
// 1.5 added the architecture fields to the GEOM section (after GPT-2's seven: a model that is
// not GPT-2's block, such as the Llama family); only such files are written as 1.5.
constexpr uint16_t kCheckpointMinorArchitecture = 5;
// 1.6 added the block-quantized storages (WLAY storage 5 q8_0, 6 q4_0; tensor dtypes 4 q8_0,
// 5 q4_0) for a frozen base; only such files are written as 1.6.
constexpr uint16_t kCheckpointMinorQuantized = 6;
// The newest minor this library reads and writes (named in the message for an unknown section).
constexpr uint16_t kCheckpointMinorNewest = kCheckpointMinorQuantized;
constexpr uint64_t kCheckpointAlignment = 64;

constexpr uint64_t kCheckpointPreludeBytes = 32;
constexpr uint64_t kMaxCheckpointHeaderBytes = uint64_t(16) << 20;
// A zstd data region may not expand by more than this factor. Only nearly-constant data
// compresses further; the writer stores such data raw instead, so every file it writes loads.
constexpr uint64_t kMaxCompressionRatio = 256;

// All but kF32 only in the mapping layout; kQ8_0 / kQ4_0 are blocks of 32 values of one row
// (kernels/quant_blocks.hpp), so their tensors' last dimension is whole blocks.
enum class TensorDtype : uint8_t { kF32 = 1, kF16 = 2, kBF16 = 3, kQ8_0 = 4, kQ4_0 = 5 };

struct CheckpointTensor {
    std::string name;
    TensorDtype dtype = TensorDtype::kF32;
    int n_dims = 0;
    std::array<uint64_t, 4> shape{};
    uint64_t offset = 0;    // bytes from the start of the (uncompressed) data region
    uint64_t nbytes = 0;
    uint64_t checksum = 0;  // xxh64 of the tensor's bytes, seed 0
};

struct CheckpointHeader {
    uint16_t major = 0, minor = 0;
    bool compressed = false;
    ModelConfig config;
    std::unique_ptr<Tokenizer> tokenizer;  // null when the file has none
    bool has_train_state = false;
    TrainerState train_state;  // when has_train_state: every field except adam_m / adam_v
    Provenance provenance;     // from PROV; unknown for a file without it (1.0)
    std::vector<CheckpointTensor> tensors;
    // The mapping layout (section WLAY, 1.3): the tensors in llm.c's order, aligned; the weights'
    // storage (16-bit or quantized: wte and the four block linears are fp16 / bf16 / q8_0 / q4_0)
    // and the xxh64 of the fp32 weights they are (or were rounded or quantized from), the base's
    // identity.
    bool mappable = false;
    WeightStorage storage = WeightStorage::fp32;
    uint64_t fp32_weights_hash = 0;
    // For each file tensor, its index in the model's tensors(), or -1 / -2 for the AdamW moments.
    std::vector<int> model_index;
    uint64_t data_start = 0;  // file offset of the data region
    uint64_t data_bytes = 0;  // uncompressed size of the data region
    std::vector<std::string> skipped_sections;  // unknown optional sections (tags)
};

// The trainer state without the moments, as section TRAN stores it (docs/formats.md §1.2; 124
// bytes). The adapter training checkpoint (§5) stores the same bytes. decode checks structure
// only (PG_ERR_FORMAT naming the field); the trainer validates the values when it resumes.
void encode_train_state(ByteWriter& w, const TrainerState& s);
TrainerState decode_train_state(ByteReader& r);

// Phase 1. Throws PG_ERR_FORMAT / VERSION / CHECKSUM / GEOMETRY / IO naming what is wrong.
CheckpointHeader read_checkpoint_header(const ByteSource& src);

// Phase 2. `model` must have header.config and header.storage (make_model_for); it receives the
// weights and header.provenance. If
// `state` is not null the file must hold training state (PG_ERR_STATE otherwise) and *state
// receives all of it, moments included.
void read_checkpoint_data(const ByteSource& src, const CheckpointHeader& header, Model& model,
                          TrainerState* state);

// A model with the header's geometry and storage (zeroed), for read_checkpoint_data: a 16-bit
// or quantized file gives such a model directly, so loading it never holds fp32 weights.
Model make_model_for(const CheckpointHeader& header);

// Instead of make_model_for + read_checkpoint_data when the model is wanted in a quantized
// `storage` (q8_0 / q4_0): a raw fp32 file's tensors are read a few rows at a time and quantized
// as they arrive, so the fp32 model is never held whole; every check of a copied load is made
// (checksums, finite values, the fp32 weights' hash). Other files load in their own storage and
// are quantized after (a 16-bit one without an fp32 copy; a compressed fp32 one, whose stream is
// in the table's order, not llm.c's that its hash needs, whole first).
Model read_checkpoint_quantized(const ByteSource& src, const CheckpointHeader& header, WeightStorage storage);

// Instead of phase 2: a model whose weights are `file`'s bytes, not a copy (the model keeps the
// mapping alive). Refused with PG_ERR_UNSUPPORTED for a compressed file or one without the
// mapping layout (the message says how to save one). Every model tensor's checksum and the
// fp32 weights' hash are verified over the mapping first, so a file truncated or corrupted
// before this call is refused; what happens after it is the caller's (docs/formats.md 1.8).
Model map_checkpoint(std::shared_ptr<const MappedFile> file, const CheckpointHeader& header);

// How write_checkpoint lays out a file.
struct CheckpointOptions {
    int compression_level = 0;  // 0 = raw, 1..19 = zstd
    // The weights' storage in the file: unset = as the model holds them. fp16 / bf16 from an fp32
    // model rounds wte and the block linears while writing (PG_ERR_NOT_FINITE beyond fp16's
    // range); from a 16-bit or quantized model only its own storage (its fp32 values are gone:
    // PG_ERR_STATE). A quantized model is written in its blocks (format 1.6, the mapping layout).
    std::optional<WeightStorage> storage;
    bool mappable = false;  // the mapping layout (1.3); implied by a 16-bit storage
};

// Encodes model (+ training state when `state` is not null) into `sink`. compression_level 0 =
// raw, 1..19 = zstd. `state`'s moments must have num_params() elements each.
// A training state needs fp32 weights in the file (PG_ERR_INVALID_ARGUMENT otherwise).
void write_checkpoint(const Model& model, const TrainerState* state, const CheckpointOptions& options,
                      ByteSink& sink);
inline void write_checkpoint(const Model& model, const TrainerState* state, int compression_level, ByteSink& sink) {
    CheckpointOptions o;
    o.compression_level = compression_level;
    write_checkpoint(model, state, o, sink);
}

// write_checkpoint to `path` through an AtomicFileWriter.
void save_checkpoint(const Model& model, const TrainerState* state, const CheckpointOptions& options,
                     const std::string& path);
inline void save_checkpoint(const Model& model, const TrainerState* state, int compression_level,
                            const std::string& path) {
    CheckpointOptions o;
    o.compression_level = compression_level;
    save_checkpoint(model, state, o, path);
}

}  // namespace pg::io
