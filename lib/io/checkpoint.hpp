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
#include <string>
#include <vector>

#include "io/bytes.hpp"
#include "io/file_io.hpp"
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

constexpr uint64_t kCheckpointPreludeBytes = 32;
constexpr uint64_t kMaxCheckpointHeaderBytes = uint64_t(16) << 20;
// A zstd data region may not expand by more than this factor. Only nearly-constant data
// compresses further; the writer stores such data raw instead, so every file it writes loads.
constexpr uint64_t kMaxCompressionRatio = 256;

enum class TensorDtype : uint8_t { kF32 = 1 };

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

// Phase 2. `model` must have header.config; it receives the weights and header.provenance. If
// `state` is not null the file must hold training state (PG_ERR_STATE otherwise) and *state
// receives all of it, moments included.
void read_checkpoint_data(const ByteSource& src, const CheckpointHeader& header, Model& model,
                          TrainerState* state);

// Encodes model (+ training state when `state` is not null) into `sink`. compression_level 0 =
// raw, 1..19 = zstd. `state`'s moments must have num_params() elements each.
void write_checkpoint(const Model& model, const TrainerState* state, int compression_level, ByteSink& sink);

// write_checkpoint to `path` through an AtomicFileWriter.
void save_checkpoint(const Model& model, const TrainerState* state, int compression_level,
                     const std::string& path);

}  // namespace pg::io
