// Helpers shared by the checkpoint and interop tests: small models, loading from bytes with the
// status as a value, bitwise model comparison, scratch files.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "model_test_params.hpp"
#include "test_support.hpp"
#include "tokenizer/char_tokenizer.hpp"

namespace ckpt_test {

// Tiny Shakespeare's 65 characters: a realistic tokenizer without reading the data file.
inline const char* kShakespeareChars =
    "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// One layer, width 8, context 8: about 1,500 parameters, a ~7 KB checkpoint, so sweeps over
// every byte stay fast.
inline pg::ModelConfig small_config() {
    pg::ModelConfig c;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_embd = 8;
    c.n_ctx = 8;
    c.vocab_size = 65;
    c.padded_vocab_size = 68;
    return c;
}

inline std::unique_ptr<pg::Model> make_model(const pg::ModelConfig& cfg, uint64_t seed, bool with_tokenizer = true) {
    auto m = std::make_unique<pg::Model>(cfg);
    pg::init_gpt2_params(cfg, m->params(), seed);
    if (with_tokenizer) m->set_tokenizer(pg::CharTokenizer::from_text(kShakespeareChars));
    return m;
}

// A plausible mid-run training state for `model` (values that cannot be mistaken for zeros).
inline pg::TrainerState make_state(const pg::Model& model, uint64_t seed) {
    pg::TrainerState s;
    s.step = 1234;
    s.micro_batches = 4936;
    s.config.batch_size = 4;
    s.config.seq_len = 8;
    s.config.grad_accum_steps = 4;
    s.config.seed = seed;
    s.config.n_threads = 1;
    s.config.dropout = 0.1f;
    s.sampler_rng[0] = 0x0123456789abcdefull ^ seed;
    s.sampler_rng[1] = 2;
    s.sampler_rng[2] = 3;
    s.sampler_rng[3] = 4;
    const std::size_t n = std::size_t(model.num_params());
    s.adam_m.resize(n);
    s.adam_v.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        s.adam_m[i] = float(i % 97) * 1e-3f - 0.05f;
        s.adam_v[i] = float((i * 7 + seed) % 89) * 1e-6f;
    }
    return s;
}

inline std::vector<uint8_t> encode(const pg::Model& model, const pg::TrainerState* state, int level) {
    pg::io::VectorSink sink;
    pg::io::write_checkpoint(model, state, level, sink);
    return sink.bytes;
}

// Format 1.3's mapping layout (CheckpointOptions.mappable) with the weights in `storage`.
inline std::vector<uint8_t> encode_mappable(const pg::Model& model, const pg::TrainerState* state,
                                            pg::WeightStorage storage, int level = 0) {
    pg::io::CheckpointOptions o;
    o.compression_level = level;
    o.storage = storage;
    o.mappable = true;
    pg::io::VectorSink sink;
    pg::io::write_checkpoint(model, state, o, sink);
    return sink.bytes;
}

// Which byte positions of a sweep this process checks: PG_SWEEP_SHARD="k/n" takes the positions
// p with p % n == k, so the sanitized sweep runs as n ctests side by side (tests/cmake/fuzz.cmake);
// unset, every position. A malformed value fails the test rather than silently checking nothing.
struct SweepShard {
    std::size_t k = 0, n = 1;
    bool owns(std::size_t position) const { return position % n == k; }
    static SweepShard from_env() {
        SweepShard s;
        const char* env = std::getenv("PG_SWEEP_SHARD");
        if (!env || !*env) return s;
        unsigned long k = 0, n = 0;
        char tail = 0;
        if (std::sscanf(env, "%lu/%lu%c", &k, &n, &tail) != 2 || n == 0 || k >= n)
            throw std::runtime_error(std::string("PG_SWEEP_SHARD must be k/n with k < n, got \"") + env + "\"");
        s.k = k;
        s.n = n;
        return s;
    }
};

struct Loaded {
    pg_status status = PG_OK;
    std::string message;
    std::unique_ptr<pg::Model> model;
    pg::TrainerState state;
    bool has_state = false;
};

// `load(out)` fills a Loaded; a pg::Error it throws becomes the status and message instead.
template <class Load>
inline Loaded loaded_or_error(Load&& load) {
    Loaded out;
    try {
        load(out);
    } catch (const pg::Error& e) {
        out.status = e.status();
        out.message = e.what();
        out.model.reset();
    }
    return out;
}

// Loads with the internal two-phase reader, as pg_model_load / pg_trainer_resume do.
inline Loaded load_bytes(const std::vector<uint8_t>& bytes, bool want_state = false) {
    return loaded_or_error([&](Loaded& out) {
        pg::io::MemorySource src(bytes.data(), bytes.size());
        pg::io::CheckpointHeader h = pg::io::read_checkpoint_header(src);
        out.model = std::make_unique<pg::Model>(pg::io::make_model_for(h));
        out.has_state = h.has_train_state;
        pg::io::read_checkpoint_data(src, h, *out.model, want_state ? &out.state : nullptr);
        out.model->set_tokenizer(std::move(h.tokenizer));
    });
}

// Maps `path` as pg_model_load_with(map_weights = 1) does, with the status as a value.
inline Loaded map_file(const std::string& path) {
    return loaded_or_error([&](Loaded& out) {
        auto file = std::make_shared<const pg::io::MappedFile>(path);
        pg::io::CheckpointHeader h = pg::io::read_checkpoint_header(*file);
        out.model = std::make_unique<pg::Model>(pg::io::map_checkpoint(file, h));
        out.model->set_tokenizer(std::move(h.tokenizer));
    });
}

using pg_test::same_config;

// Bitwise: configuration, every weight, and the tokenizer's serialized bytes.
inline bool same_model(const pg::Model& a, const pg::Model& b) {
    if (!same_config(a.config(), b.config())) return false;
    if (std::memcmp(a.params(), b.params(), std::size_t(a.num_params()) * 4) != 0) return false;
    if ((a.tokenizer() == nullptr) != (b.tokenizer() == nullptr)) return false;
    return !a.tokenizer() || a.tokenizer()->serialize() == b.tokenizer()->serialize();
}

// Bitwise, for any storage (a 16-bit or quantized model has no fp32 params()): configuration, storage,
// every tensor's bytes as held, and the tokenizer.
inline bool same_weights(const pg::Model& a, const pg::Model& b) {
    if (!same_config(a.config(), b.config()) || a.storage() != b.storage() ||
        a.fp32_weights_hash() != b.fp32_weights_hash())
        return false;
    for (const pg::TensorEntry& e : a.tensors())
        if (std::memcmp(a.tensor_bytes(e), b.tensor_bytes(e), a.tensor_nbytes(e)) != 0)
            return false;
    if ((a.tokenizer() == nullptr) != (b.tokenizer() == nullptr)) return false;
    return !a.tokenizer() || a.tokenizer()->serialize() == b.tokenizer()->serialize();
}

inline bool same_state(const pg::TrainerState& a, const pg::TrainerState& b) {
    const pg::TrainConfig &x = a.config, &y = b.config;
    return a.step == b.step && a.micro_batches == b.micro_batches &&
           std::memcmp(a.sampler_rng, b.sampler_rng, sizeof a.sampler_rng) == 0 && a.adam_m == b.adam_m &&
           a.adam_v == b.adam_v && x.batch_size == y.batch_size && x.seq_len == y.seq_len &&
           x.grad_accum_steps == y.grad_accum_steps && x.schedule == y.schedule && x.lr_max == y.lr_max &&
           x.lr_min == y.lr_min && x.warmup_steps == y.warmup_steps && x.total_steps == y.total_steps &&
           x.beta1 == y.beta1 && x.beta2 == y.beta2 && x.eps == y.eps && x.weight_decay == y.weight_decay &&
           x.decay_embeddings == y.decay_embeddings && x.grad_clip == y.grad_clip && x.dropout == y.dropout &&
           x.seed == y.seed && x.n_threads == y.n_threads;
}

inline std::string scratch_path(const std::string& name) { return pg_test::tmp_dir() + "/io_" + name; }

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace ckpt_test
