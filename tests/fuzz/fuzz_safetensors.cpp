// libFuzzer target: the safetensors reader and the GPT-2 import (pg_model_import with
// PG_FORMAT_SAFETENSORS). An input is a little-endian uint32 length L, L bytes of config.json,
// then the .safetensors file, so both files are fuzzed together.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "io/safetensors.hpp"
#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    uint32_t config_len;
    std::memcpy(&config_len, data, 4);
    if (config_len > size - 4) return 0;
    const std::string config(reinterpret_cast<const char*>(data + 4), config_len);
    const uint8_t* file = data + 4 + config_len;
    const std::size_t file_size = size - 4 - config_len;
    try {
        pg::io::MemorySource src(file, file_size);
        const pg::io::HfGpt2Import plan = pg::io::read_hf_gpt2_header(src, config);
        pg::Model model(plan.config);
        pg::io::read_hf_gpt2_data(src, plan, model);
        if (!plan.tokenizer_bytes.empty())
            pg::deserialize_tokenizer(plan.tokenizer_bytes.data(), plan.tokenizer_bytes.size());
    } catch (const pg::Error&) {
    }
    return 0;
}
