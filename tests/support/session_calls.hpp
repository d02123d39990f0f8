// One forward pass, evaluation or generation on a session made for the call, for the tests that
// check the work itself rather than a session's state (the C API's one entry for each job is the
// session's). A failure's status is returned and its message is pg_last_error().
#pragma once

#include <phonegpt/phonegpt.h>

#include <cstddef>
#include <cstdint>

#include "call_session.hpp"  // bindings/

namespace pg_test {

using pg_bindings::on_call_session;

inline pg_status forward(const pg_model* model, const int32_t* tokens, int32_t B, int32_t T, const int32_t* targets,
                         float* logits, float* mean_loss, int32_t n_threads) {
    return on_call_session(model, n_threads, [&](pg_session* s) {
        return pg_session_forward(s, tokens, B, T, targets, logits, mean_loss);
    });
}

// config->n_threads (NULL: all cores) sizes the session.
inline pg_status evaluate(const pg_model* model, const int32_t* tokens, std::size_t n, const pg_eval_config* config,
                          pg_eval_result* result) {
    return on_call_session(model, config ? config->n_threads : 0, [&](pg_session* s) {
        return pg_session_evaluate(s, tokens, n, config, result);
    });
}

inline pg_status evaluate_sampled(const pg_model* model, const int32_t* tokens, std::size_t n, int32_t n_batches,
                                  int32_t batch_size, uint64_t seed, int32_t n_threads, pg_eval_result* result) {
    pg_eval_sampled_config c;
    pg_eval_sampled_config_default(&c);
    c.n_batches = n_batches;
    c.batch_size = batch_size;
    c.seed = seed;
    return on_call_session(model, n_threads, [&](pg_session* s) {
        return pg_session_evaluate_sampled(s, tokens, n, &c, result);
    });
}

// Appends `prompt` to a fresh session with config->n_threads (NULL: all cores) and generates.
inline pg_status generate(const pg_model* model, const int32_t* prompt, std::size_t n_prompt,
                          const pg_sample_config* config, int32_t* out, std::size_t capacity, std::size_t* n_out) {
    return on_call_session(model, config ? config->n_threads : 0, [&](pg_session* s) {
        const pg_status appended = pg_session_append(s, prompt, n_prompt);
        return appended == PG_OK ? pg_session_generate(s, config, out, capacity, n_out) : appended;
    });
}

}  // namespace pg_test
