// libFuzzer target: the native checkpoint reader (header, then data into a model and a training
// state), exactly as pg_model_load / pg_trainer_resume run it. Any input must give a clean
// pg::Error or a model; a crash, a sanitizer report or any other exception is a bug. A model
// that loads must survive write -> read unchanged (weights, geometry, tokenizer, training
// state) and write the same bytes twice (fuzz_property.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    Loaded first;
    try {
        first = load(data, size);
    } catch (const pg::Error&) {
        return 0;
    }
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
