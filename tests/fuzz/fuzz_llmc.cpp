// libFuzzer target: the llm.c model file reader (pg_model_import with PG_FORMAT_LLMC).
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "io/llmc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    try {
        pg::io::MemorySource src(data, size);
        const pg::io::LlmcHeader header = pg::io::read_llmc_header(src);
        pg::Model model(header.config);
        pg::io::read_llmc_data(src, header, model);
    } catch (const pg::Error&) {
    }
    return 0;
}
