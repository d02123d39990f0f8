// libFuzzer target: the native checkpoint reader (header, then data into a model and a training
// state), exactly as pg_model_load / pg_trainer_resume run it. Any input must give a clean
// pg::Error or a model; a crash, a sanitizer report or any other exception is a bug.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "io/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    try {
        pg::io::MemorySource src(data, size);
        pg::io::CheckpointHeader header = pg::io::read_checkpoint_header(src);
        pg::Model model(header.config);
        pg::TrainerState state;
        pg::io::read_checkpoint_data(src, header, model, header.has_train_state ? &state : nullptr);
    } catch (const pg::Error&) {
    }
    return 0;
}
