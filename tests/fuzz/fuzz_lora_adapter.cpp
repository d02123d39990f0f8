// libFuzzer target: the adapter file reader (pg::lora::read_adapter, what pg_lora_adapter_load
// runs). An input is the whole file. Any input must give an adapter or a pg::Error, never a
// crash, a sanitizer report or an unbounded allocation.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "io/file_io.hpp"
#include "lora/adapter_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    try {
        pg::io::MemorySource src(data, size);
        const pg::lora::Adapter adapter = pg::lora::read_adapter(src);
        (void)adapter.num_params();
    } catch (const pg::Error&) {
    }
    return 0;
}
