// libFuzzer target: the llm.c model file reader (pg_model_import with PG_FORMAT_LLMC). A model
// that loads must survive write -> read unchanged and write the same bytes twice
// (fuzz_property.hpp); an fp32 (version 3) input whose header holds nothing else is
// reproduced byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "fuzz_property.hpp"
#include "io/llmc.hpp"

namespace {

std::unique_ptr<pg::Model> load(const uint8_t* data, std::size_t size, int32_t* version) {
    pg::io::MemorySource src(data, size);
    const pg::io::LlmcHeader header = pg::io::read_llmc_header(src);
    auto model = std::make_unique<pg::Model>(header.config);
    pg::io::read_llmc_data(src, header, *model);
    if (version) *version = header.version;
    return model;
}

std::vector<uint8_t> encode(const pg::Model& model) {
    pg::io::VectorSink sink;
    pg::io::write_llmc(model, sink);
    return sink.bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    std::unique_ptr<pg::Model> first;
    int32_t version = 0;
    try {
        first = load(data, size, &version);
    } catch (const pg::Error&) {
        return 0;
    }
    const std::vector<uint8_t> once = encode(*first);
    const auto again = load(once.data(), once.size(), nullptr);
    fuzz::require_same_model(*first, *again, "llmc: write -> read changed the model");
    fuzz::require_same_bytes(once, encode(*again), "llmc: writing the same model twice gave different bytes");
    // The writer fills header words 0..7 and zeroes the rest; an input that does the same
    // (fp32, padded_vocab_size given) must come back unchanged.
    int32_t header[256];
    std::memcpy(header, data, sizeof header);
    bool plain = version == 3 && header[7] != 0;
    for (int i = 8; i < 256 && plain; ++i) plain = header[i] == 0;
    if (plain && std::vector<uint8_t>(data, data + size) != once)
        fuzz::property_failed("llmc: a plain fp32 file did not come back byte for byte");
    return 0;
}
