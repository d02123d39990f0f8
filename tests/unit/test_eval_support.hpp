// Helpers shared by the evaluation and generation tests: small models, random tokens, and the
// two independent computations they are checked against (pg::Engine and the scalar reference).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "capi/handles.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "model/engine.hpp"
#include "reference_model.hpp"
#include "phonegpt/phonegpt.h"

namespace pg_eval_test {

struct ModelDeleter {
    void operator()(pg_model* m) const { pg_model_free(m); }
};
using ModelPtr = std::unique_ptr<pg_model, ModelDeleter>;

inline ModelPtr make_model(const char* preset, uint64_t seed) {
    pg_model_config c;
    REQUIRE(pg_model_config_preset(preset, &c) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&c, seed, &m) == PG_OK);
    return ModelPtr(m);
}

// "tiny": 2 layers, 2 heads, width 16, context 16, vocabulary 65.
inline ModelPtr tiny_model(uint64_t seed) { return make_model("tiny", seed); }

inline std::vector<int32_t> random_tokens(std::size_t n, int vocab, uint64_t seed) {
    pg::Rng rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng.below(uint64_t(vocab)));
    return t;
}

// Adds N(0, std) noise to every weight (padding rows of wte stay 0), so that a freshly
// initialised model's near-uniform predictions become sharp and position-dependent: a test
// comparing two computations then compares something.
inline void perturb_weights(pg_model* m, float std, uint64_t seed) {
    pg::Rng rng(seed);
    pg::Model& model = m->impl;
    float* p = model.params();
    for (int64_t i = 0; i < model.num_params(); ++i) p[i] += float(std * rng.normal());
    const pg::ModelConfig& cfg = model.config();
    for (int64_t i = int64_t(cfg.vocab_size) * cfg.n_embd; i < int64_t(cfg.padded_vocab_size) * cfg.n_embd; ++i)
        p[i] = 0.0f;
}

// Logits [T, vocab_size] of one sequence from the fast engine (one thread).
inline std::vector<float> engine_logits(const pg_model* m, const int32_t* tokens, int T) {
    const pg::Model& model = m->impl;
    pg::ThreadPool pool(1);
    pg::Engine engine(model.config(), 1, T);
    std::vector<float> logits(std::size_t(T) * model.config().vocab_size);
    engine.forward(model.params(), tokens, nullptr, 1, T, nullptr, logits.data(), pool);
    return logits;
}

// Cross-entropy of `target` after tokens[0, T), from the scalar reference model in double.
inline double reference_last_loss(const pg_model* m, const int32_t* tokens, int T, int32_t target) {
    const pg::Model& model = m->impl;
    const std::vector<double> params(model.params(), model.params() + model.num_params());
    std::vector<int32_t> targets(std::size_t(T), -1);
    targets[std::size_t(T - 1)] = target;
    std::vector<double> losses(static_cast<std::size_t>(T));
    pg::ReferenceGpt<double> reference(model.config(), 1, T);
    reference.forward(params.data(), tokens, targets.data(), losses.data(), nullptr, pg::Dropout{});
    return losses[std::size_t(T - 1)];
}

}  // namespace pg_eval_test
