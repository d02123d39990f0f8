// llm.c's model file (Karpathy's llm.c, train_gpt2.c): a header of 256 little-endian int32
// (magic 20240326, version 3 = fp32 or 5 = bf16, max_seq_len, vocab_size, num_layers,
// num_heads, channels, padded_vocab_size, zeros), then every parameter in llm.c's tensor order,
// which is our in-memory order, so import and export are straight copies.
#pragma once

#include "core/file_io.hpp"
#include "model/model.hpp"

namespace pg::io {

constexpr int32_t kLlmcMagic = 20240326;
constexpr uint64_t kLlmcHeaderBytes = 256 * 4;

struct LlmcHeader {
    ModelConfig config;
    int32_t version = 3;        // 3: fp32, 5: bf16
    uint64_t bytes_per_param = 4;
};

// Validates the header and that the file holds exactly the parameters it declares.
LlmcHeader read_llmc_header(const ByteSource& src);
// Fills `model` (geometry from the header). bf16 files are widened exactly to fp32.
void read_llmc_data(const ByteSource& src, const LlmcHeader& header, Model& model);
// Writes version 3 (fp32), padding rows kept. llm.c has no layernorm_eps field (it uses 1e-5),
// so other values are PG_ERR_UNSUPPORTED rather than a silently different model.
void write_llmc(const Model& model, ByteSink& sink);

}  // namespace pg::io
