// libFuzzer target: the safetensors reader and the GPT-2 import (pg_model_import with
// PG_FORMAT_SAFETENSORS). An input is a little-endian uint32 length L, L bytes of config.json,
// then the .safetensors file, so both files are fuzzed together. A model that loads must
// survive export -> import unchanged and export the same bytes twice (fuzz_property.hpp).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "fuzz_property.hpp"
#include "io/safetensors.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

std::unique_ptr<pg::Model> load(const uint8_t* file, std::size_t size, const std::string& config) {
    pg::io::MemorySource src(file, size);
    const pg::io::HfGpt2Import plan = pg::io::read_hf_gpt2_header(src, config);
    auto model = std::make_unique<pg::Model>(plan.config);
    pg::io::read_hf_gpt2_data(src, plan, *model);
    if (!plan.tokenizer_bytes.empty())
        pg::deserialize_tokenizer(plan.tokenizer_bytes.data(), plan.tokenizer_bytes.size());
    return model;
}

std::vector<uint8_t> encode(const pg::Model& model) {
    pg::io::VectorSink sink;
    pg::io::write_hf_gpt2_safetensors(model, sink);
    return sink.bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    uint32_t config_len;
    std::memcpy(&config_len, data, 4);
    if (config_len > size - 4) return 0;
    const std::string config(reinterpret_cast<const char*>(data + 4), config_len);
    std::unique_ptr<pg::Model> first;
    try {
        first = load(data + 4 + config_len, size - 4 - config_len, config);
    } catch (const pg::Error&) {
        return 0;
    }
    const std::vector<uint8_t> once = encode(*first);
    const auto again = load(once.data(), once.size(), pg::io::hf_gpt2_config_json(first->config()));
    fuzz::require_same_model(*first, *again, "safetensors: export -> import changed the model");
    fuzz::require_same_bytes(once, encode(*again), "safetensors: exporting the same model twice gave different bytes");
    return 0;
}
