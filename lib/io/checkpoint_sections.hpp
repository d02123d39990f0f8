// The byte-level pieces of the native checkpoint (docs/formats.md section 1) that its writer
// (checkpoint_writer.cpp), reader (checkpoint_reader.cpp) and mapper (checkpoint_mapping.cpp)
// share: the magic, flags and section tags, the prelude and the header checksum, the text of
// tags, hashes and shapes in messages, and each section's encoder and decoder (GEOM, PROV,
// OPTM, TENS; TRAN's are public, in checkpoint.hpp). Internal to lib/io.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "io/checkpoint.hpp"
#include "kernels/quant_blocks.hpp"

namespace pg::io::ckpt {

inline constexpr uint8_t kMagic[8] = {0x89, 'P', 'G', 'C', 'K', '\r', '\n', 0x1A};
inline constexpr uint32_t kFlagZstd = 1u;         // prelude flags: the data region is one zstd frame
inline constexpr uint32_t kSectionRequired = 1u;  // section flags: readers that do not know it must refuse

// Section tags: 4 ASCII bytes, stored in this byte order.
inline constexpr char kTagGeometry[5] = "GEOM";
inline constexpr char kTagTokenizer[5] = "TOKN";
inline constexpr char kTagTrainState[5] = "TRAN";
inline constexpr char kTagTensors[5] = "TENS";
inline constexpr char kTagProvenance[5] = "PROV";
inline constexpr char kTagOptimizer[5] = "OPTM";
inline constexpr char kTagLayout[5] = "WLAY";
inline constexpr char kTagPadding[5] = "PADD";
inline constexpr char kTagDropoutRamp[5] = "DRMP";

inline constexpr const char* kAdamM = "optimizer.adam_m";
inline constexpr const char* kAdamV = "optimizer.adam_v";

// For messages: a tag with non-printable bytes escaped, "[a, b]" (hashes: io/hex.hpp's hex64).
std::string tag_text(const uint8_t* tag);
std::string shape_text(int n_dims, const std::array<uint64_t, 4>& shape);

// The block format of a quantized dtype (none for f32 / f16 / bf16).
std::optional<kernels::QuantFormat> block_format_of(TensorDtype d);
// A tensor's bytes in `d`: elements x width, or whole blocks of a quantized dtype (0 when its
// rows, of row_length values, are not whole blocks).
uint64_t tensor_nbytes(TensorDtype d, uint64_t numel, uint64_t row_length);
// For messages: the code and its name, "2 (f16)".
std::string dtype_text(TensorDtype d);

void encode_geometry(ByteWriter& w, const ModelConfig& c);
ModelConfig decode_geometry(ByteReader& r);  // validated: PG_ERR_GEOMETRY naming the field
void encode_provenance(ByteWriter& w, const Provenance& p);
Provenance decode_provenance(ByteReader& r);
// OPTM: the optimizer settings other than AdamW's (TRAN keeps its 1.1 layout).
void encode_optimizer(ByteWriter& w, const TrainConfig& c);
void decode_optimizer(ByteReader& r, TrainConfig& c);
// DRMP: the dropout ramp's length in steps (only written when it is above 0).
void encode_dropout_ramp(ByteWriter& w, const TrainConfig& c);
void decode_dropout_ramp(ByteReader& r, TrainConfig& c);
void encode_tensor_table(ByteWriter& w, const std::vector<CheckpointTensor>& tensors);
// Parses the table and checks it is well formed on its own: dtypes, shapes, sizes = shape x
// dtype, offsets contiguous from 0 (hence in order, without gaps or overlap).
// The mapping layout also allows the 16-bit and quantized dtypes (a quantized tensor's rows
// whole blocks, its nbytes that of its block count) and alignment gaps (under
// kCheckpointAlignment bytes; check_tensors_against_geometry checks where they are).
std::vector<CheckpointTensor> decode_tensor_table(ByteReader& r, bool mappable);

// The 32-byte prelude without its last field (the header checksum), and that checksum: XXH64
// of the prelude's first 24 bytes and the header.
std::vector<uint8_t> build_prelude(uint32_t flags, uint64_t header_bytes, uint16_t minor);
uint64_t header_checksum(const uint8_t* prelude24, const uint8_t* header, std::size_t header_bytes);

}  // namespace pg::io::ckpt
