#include "io/llmc.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "io/finite_weights.hpp"

namespace pg::io {

LlmcHeader read_llmc_header(const ByteSource& src) {
    const std::string& name = src.name();
    require(src.size() >= kLlmcHeaderBytes, PG_ERR_FORMAT,
            name + ": " + std::to_string(src.size()) + " bytes is shorter than llm.c's 1024-byte header");
    int32_t h[256];
    src.read_at(0, h, sizeof h, "llm.c header");
    if (h[0] != kLlmcMagic) {
        std::string hint = std::memcmp(h, "\x89PGCK", 5) == 0 ? " (this is a native phonegpt checkpoint: use pg_model_load)" : "";
        throw Error(PG_ERR_FORMAT, name + ": bad magic " + std::to_string(h[0]) + " (an llm.c model file starts with " +
                                       std::to_string(kLlmcMagic) + ")" + hint);
    }
    LlmcHeader out;
    out.version = h[1];
    require(out.version == 3 || out.version == 5, PG_ERR_VERSION,
            name + ": llm.c model file version " + std::to_string(out.version) +
                " is not supported (3 = fp32 and 5 = bf16 are)");
    out.bytes_per_param = out.version == 3 ? 4 : 2;
    ModelConfig& c = out.config;
    c.n_ctx = h[2];
    c.vocab_size = h[3];
    c.n_layer = h[4];
    c.n_head = h[5];
    c.n_embd = h[6];
    c.padded_vocab_size = h[7];
    c.layernorm_eps = 1e-5f;  // llm.c's fixed value
    if (c.padded_vocab_size == 0 && c.vocab_size > 0 && c.vocab_size <= kMaxVocab)
        c.padded_vocab_size = (c.vocab_size + 3) / 4 * 4;
    try {
        validate_model_config(c);
    } catch (const Error& e) {
        throw Error(PG_ERR_GEOMETRY, name + ": llm.c header: " + e.what());
    }
    // count_params <= kMaxParams (2^33), so this product cannot overflow.
    const uint64_t need = kLlmcHeaderBytes + uint64_t(count_params(c)) * out.bytes_per_param;
    require(src.size() >= need, PG_ERR_FORMAT,
            name + ": truncated: the header's geometry needs " + std::to_string(need) + " bytes, the file has " +
                std::to_string(src.size()));
    require(src.size() == need, PG_ERR_FORMAT,
            name + ": " + std::to_string(src.size() - need) + " unexpected trailing bytes after the parameters");
    return out;
}

void read_llmc_data(const ByteSource& src, const LlmcHeader& header, Model& model) {
    const uint64_t n = uint64_t(model.num_params());
    require(n == uint64_t(count_params(header.config)), PG_ERR_INTERNAL, "read_llmc_data: geometry mismatch");
    if (header.version == 3) {
        src.read_at(kLlmcHeaderBytes, model.params(), std::size_t(n * 4), "parameters");
        require_finite_weights(model, src.name());
        return;
    }
    // bf16 is the top half of an fp32: widening is exact.
    std::vector<uint16_t> chunk(std::size_t(1) << 18);
    float* out = model.params();
    for (uint64_t done = 0; done < n;) {
        const std::size_t m = std::size_t(std::min<uint64_t>(chunk.size(), n - done));
        src.read_at(kLlmcHeaderBytes + done * 2, chunk.data(), m * 2, "bf16 parameters");
        widen_16_bits(chunk.data(), out + done, int64_t(m), WeightStorage::bf16);
        done += m;
    }
    require_finite_weights(model, src.name());
}

void write_llmc(const Model& model, ByteSink& sink) {
    const ModelConfig& c = model.config();
    require(c.layernorm_eps == 1e-5f, PG_ERR_UNSUPPORTED,
            "llm.c model files have no layernorm_eps field (llm.c uses 1e-5); this model uses " +
                std::to_string(c.layernorm_eps));
    int32_t h[256] = {};
    h[0] = kLlmcMagic;
    h[1] = 3;
    h[2] = c.n_ctx;
    h[3] = c.vocab_size;
    h[4] = c.n_layer;
    h[5] = c.n_head;
    h[6] = c.n_embd;
    h[7] = c.padded_vocab_size;
    sink.write(h, sizeof h);
    sink.write(model.params(), std::size_t(model.num_params()) * 4);
}

}  // namespace pg::io
