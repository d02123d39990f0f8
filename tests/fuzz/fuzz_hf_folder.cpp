// libFuzzer target: the Hugging Face folder importer (pg::io::import_hf_folder, what
// pg_model_import with PG_FORMAT_HF_FOLDER runs) on the Llama family. An input is a little-endian
// uint32 length L, L bytes of config.json, then model.safetensors; both are written into a folder
// of this process's own and imported as stored. A model that loads must export to a folder that
// imports to the same model bit for bit, and export the same bytes twice (fuzz_property.hpp).
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "fuzz_property.hpp"
#include "io/hf_model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

// A fresh folder under TMPDIR (or /tmp) for this process, made once.
std::string scratch_folder(const char* name) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp ? tmp : "/tmp") + "/pg_fuzz_hf_" + name + "_XXXXXX";
    if (!::mkdtemp(dir.data())) fuzz::property_failed("mkdtemp failed");
    return dir;
}

pg::Model import(const std::string& dir) {
    std::unique_ptr<pg::Tokenizer> tokenizer;
    return pg::io::import_hf_folder(dir, pg::io::kHfStorageAsStored, &tokenizer);
}

std::vector<uint8_t> file_bytes(const std::string& path) { return pg::io::read_small_file(path, std::size_t(1) << 26); }

// A plain write (no fsync: the input files are scratch, and most inputs never load).
void write_input(const std::string& path, const uint8_t* data, std::size_t n) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(data, 1, n, f) != n || std::fclose(f) != 0) fuzz::property_failed("writing an input file failed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    static const std::string in = scratch_folder("in"), out = scratch_folder("out"), again = scratch_folder("again");
    if (size < 4) return 0;
    uint32_t config_len;
    std::memcpy(&config_len, data, 4);
    if (config_len > size - 4) return 0;
    write_input(in + "/config.json", data + 4, config_len);
    write_input(in + "/model.safetensors", data + 4 + config_len, size - 4 - config_len);
    std::unique_ptr<pg::Model> first;
    try {
        first = std::make_unique<pg::Model>(import(in));
    } catch (const pg::Error&) {
        return 0;
    }
    pg::io::export_hf_folder(*first, out);
    const pg::Model second = import(out);
    fuzz::require_same_model(*first, second, "hf folder: export -> import changed the model");
    pg::io::export_hf_folder(second, again);
    fuzz::require_same_bytes(file_bytes(out + "/model.safetensors"), file_bytes(again + "/model.safetensors"),
                             "hf folder: exporting the same model twice gave different weights");
    fuzz::require_same_bytes(file_bytes(out + "/config.json"), file_bytes(again + "/config.json"),
                             "hf folder: exporting the same model twice gave a different config.json");
    return 0;
}
