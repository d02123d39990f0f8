// libFuzzer target: the native checkpoint reader (header, then data into a model and a training
// state), exactly as pg_model_load / pg_trainer_resume run it, and the C API's loaders of bytes
// (pg_model_load_from_memory, pg_model_load_from_fd at an offset inside a bigger file). Any
// input must give a clean pg::Error (a status) or a model; a crash, a sanitizer report or any
// other exception is a bug. A model that loads must load the same through the C API, survive
// write -> read unchanged (weights, geometry, tokenizer, training state) and write the same
// bytes twice (fuzz_property.hpp); loaded with a q8_0 weight_storage, it must give the blocks
// that quantizing it after loading gives.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "capi/handles.hpp"

#include "core/error.hpp"
#include "fuzz_property.hpp"
#include "io/checkpoint.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

struct Loaded {
    std::unique_ptr<pg::Model> model;
    bool mappable = false;  // format 1.3's layout: written back the same way
    bool has_state = false;
    pg::TrainerState state;
};

Loaded load(const uint8_t* data, std::size_t size) {
    pg::io::MemorySource src(data, size);
    pg::io::CheckpointHeader header = pg::io::read_checkpoint_header(src);
    Loaded l;
    l.model = std::make_unique<pg::Model>(pg::io::make_model_for(header));
    l.mappable = header.mappable;
    l.has_state = header.has_train_state;
    pg::io::read_checkpoint_data(src, header, *l.model, l.has_state ? &l.state : nullptr);
    l.model->set_tokenizer(std::move(header.tokenizer));
    return l;
}

std::vector<uint8_t> encode(const Loaded& l) {
    pg::io::VectorSink sink;
    pg::io::CheckpointOptions o;
    o.mappable = l.mappable;
    pg::io::write_checkpoint(*l.model, l.has_state ? &l.state : nullptr, o, sink);
    return sink.bytes;
}

bool same_state(const pg::TrainerState& a, const pg::TrainerState& b) {
    return a.step == b.step && a.micro_batches == b.micro_batches &&
           std::memcmp(a.sampler_rng, b.sampler_rng, sizeof a.sampler_rng) == 0 && a.adam_m == b.adam_m &&
           a.adam_v == b.adam_v && a.config.batch_size == b.config.batch_size && a.config.seed == b.config.seed &&
           a.config.n_threads == b.config.n_threads;
}

// The input at offset 3 of an in-memory file, with a byte after it (an asset inside an APK).
int descriptor_holding(const uint8_t* data, std::size_t size) {
    const int fd = ::memfd_create("fuzz_native", MFD_CLOEXEC);
    if (fd < 0) fuzz::property_failed("native: memfd_create failed");
    const uint8_t pad[3] = {0xA5, 0xA5, 0xA5};
    const bool written = ::pwrite(fd, pad, 3, 0) == 3 && (size == 0 || ::pwrite(fd, data, size, 3) == ssize_t(size)) &&
                         ::pwrite(fd, pad, 1, off_t(3 + size)) == 1;
    if (!written) fuzz::property_failed("native: writing the memfd failed");
    return fd;
}

// The C API's loaders of bytes: a status for every input, and the reader's model when it loads.
void check_byte_loaders(const uint8_t* data, std::size_t size, const pg::Model* expected) {
    const uint8_t none = 0;
    pg_model* from_memory = nullptr;
    const pg_status sm = pg_model_load_from_memory(size ? data : &none, size, nullptr, &from_memory);
    const int fd = descriptor_holding(data, size);
    pg_model* from_fd = nullptr;
    const pg_status sf = pg_model_load_from_fd(fd, 3, int64_t(size), nullptr, &from_fd);
    ::close(fd);
    if (sm != sf) fuzz::property_failed("native: memory and descriptor loads gave different statuses");
    if (expected) {
        if (sm != PG_OK) fuzz::property_failed("native: the reader loads a model the C API's byte loaders refuse");
        fuzz::require_same_model(*expected, from_memory->impl, "native: pg_model_load_from_memory changed the model");
        fuzz::require_same_model(*expected, from_fd->impl, "native: pg_model_load_from_fd changed the model");
    }
    pg_model_free(from_memory);
    pg_model_free(from_fd);
}

// A file that loads, loaded with weight_storage q8_0 (quantized while reading where it is a raw
// fp32 file): the model that quantizing the loaded one gives, or the same refusal.
void check_quantizing_load(const uint8_t* data, std::size_t size) {
    Loaded want = load(data, size);
    pg_status want_status = PG_OK;
    try {
        want.model->hold_frozen_in(pg::WeightStorage::q8_0);
    } catch (const pg::Error& e) {
        want_status = e.status();
    }
    pg_load_options o;
    pg_load_options_default(&o);
    o.weight_storage = PG_WEIGHTS_Q8_0;
    pg_model* got = nullptr;
    const pg_status s = pg_model_load_from_memory(data, size, &o, &got);
    if (s != want_status) fuzz::property_failed("native: quantizing while reading and after gave different statuses");
    if (got) fuzz::require_same_model(*want.model, got->impl, "native: quantizing while reading changed the blocks");
    pg_model_free(got);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    Loaded first;
    try {
        first = load(data, size);
    } catch (const pg::Error&) {
        check_byte_loaders(data, size, nullptr);
        return 0;
    }
    check_byte_loaders(data, size, first.model.get());
    check_quantizing_load(data, size);
    // Outside the try: an error from here on is a broken property, not a rejected input.
    const std::vector<uint8_t> once = encode(first);
    const Loaded again = load(once.data(), once.size());
    fuzz::require_same_model(*first.model, *again.model, "native: write -> read changed the model");
    if (first.has_state != again.has_state || (first.has_state && !same_state(first.state, again.state)))
        fuzz::property_failed("native: write -> read changed the training state");
    const pg::Tokenizer *ta = first.model->tokenizer(), *tb = again.model->tokenizer();
    if ((ta == nullptr) != (tb == nullptr) || (ta && ta->serialize() != tb->serialize()))
        fuzz::property_failed("native: write -> read changed the tokenizer");
    fuzz::require_same_bytes(once, encode(again), "native: writing the same model twice gave different bytes");
    return 0;
}
