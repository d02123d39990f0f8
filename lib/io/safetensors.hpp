// safetensors (Hugging Face): an 8-byte little-endian header length N, N bytes of UTF-8 JSON
// mapping tensor names to {dtype, shape, data_offsets [begin, end)} relative to the end of the
// header, an optional "__metadata__" string map, then the data, which the tensors must cover
// exactly: contiguous, no overlap, no trailing bytes. On top of it, the GPT-2 mapping that
// Hugging Face transformers' GPT2LMHeadModel reads (with config.json beside the file).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/file_io.hpp"
#include "core/json.hpp"
#include "model/model.hpp"

namespace pg::io {

constexpr uint64_t kMaxSafetensorsHeaderBytes = 100000000;  // safetensors' own limit

struct SafetensorsTensor {
    std::string name;
    std::string dtype;             // "F32", "BF16", ...
    std::vector<uint64_t> shape;
    uint64_t begin = 0, end = 0;   // relative to data_start
};

struct SafetensorsHeader {
    std::vector<SafetensorsTensor> tensors;  // sorted by begin
    std::vector<std::pair<std::string, std::string>> metadata;
    uint64_t data_start = 0;
    const SafetensorsTensor* find(const std::string& name) const;
    const std::string* metadata_value(const std::string& key) const;
};

// "[2, 3]": a shape in messages.
std::string shape_text(const std::vector<uint64_t>& shape);

// Validates everything the contract says (PG_ERR_FORMAT naming what is wrong).
SafetensorsHeader read_safetensors_header(const ByteSource& src);

// Writes the 8-byte length and the header: "__metadata__" (an object of strings) first, then
// the tensors in order, as compact JSON padded with spaces to a multiple of 8 bytes, as Hugging
// Face writes it, so the data that follows is aligned. The data is the caller's to write.
void write_safetensors_header(ByteSink& sink, const JsonObject& metadata,
                              const std::vector<SafetensorsTensor>& tensors);

// Hugging Face GPT-2: "transformer."-prefixed names, Conv1D weights transposed to [in, out],
// padding rows dropped, no lm_head (tied). Metadata: format "pt", and for a faithful round trip
// phonegpt.padded_vocab_size and phonegpt.tokenizer (hex of the serialized tokenizer).
void write_hf_gpt2_safetensors(const Model& model, ByteSink& sink);
std::string hf_gpt2_config_json(const ModelConfig& config);

// Import: `config_json` is the text of config.json (n_head and layer_norm_epsilon are only
// there); the geometry must agree with every tensor's shape (PG_ERR_GEOMETRY otherwise).
struct HfGpt2Import {
    ModelConfig config;
    SafetensorsHeader file;
    std::vector<uint8_t> tokenizer_bytes;  // empty when the file carries none
    std::string prefix;                    // "transformer." or "" (older exports)
};
HfGpt2Import read_hf_gpt2_header(const ByteSource& src, const std::string& config_json);
void read_hf_gpt2_data(const ByteSource& src, const HfGpt2Import& plan, Model& model);

}  // namespace pg::io
