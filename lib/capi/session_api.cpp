// C API: sessions (the inference state over a read-only model) and what runs on them:
// forward passes, evaluation and incremental generation. The model-level calls in
// model_api.cpp and eval_api.cpp run on a session made for the one call.
#include <string>

#include "capi/boundary.hpp"
#include "capi/eval_capi.hpp"
#include "capi/handles.hpp"
#include "eval/evaluate.hpp"
#include "eval/generate.hpp"

namespace {

pg::ErrorTarget err(const pg_session* s) { return pg::shared_errors(s); }
pg::ErrorTarget err(pg_session* s) { return pg::owned_errors(s); }

pg_session_config full_default_session_config() {
    pg_session_config c = pg::blank_c_struct<pg_session_config>();
    const pg::SessionOptions d;
    c.n_threads = d.n_threads;
    c.slide_keep = d.slide_keep;
    return c;
}

pg_eval_sampled_config full_default_eval_sampled_config() {
    pg_eval_sampled_config c = pg::blank_c_struct<pg_eval_sampled_config>();
    c.n_batches = 20;
    c.batch_size = 8;
    c.seed = 1337;
    return c;
}

}  // namespace

extern "C" {

void pg_session_config_default(pg_session_config* config) {
    if (config) *config = full_default_session_config();
}

pg_status pg_session_create(const pg_model* model, const pg_session_config* config, pg_session** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_session_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, model);
        pg_session_config c = full_default_session_config();
        pg::read_options(config, &c, fn);
        pg::capi::check_slide_keep(c.slide_keep, model->impl.config().n_ctx, fn);
        pg::SessionOptions opt;
        opt.n_threads = c.n_threads;
        opt.slide_keep = c.slide_keep;
        opt.arithmetic = pg::arithmetic_for(pg::enum_code(c.arithmetic), model->impl.storage(),
                                            std::string(fn) + ": config->arithmetic");
        *out = new pg_session(model, opt);
    });
}

void pg_session_free(pg_session* session) { delete session; }

const char* pg_session_last_error(const pg_session* session) {
    return session ? pg::handle_last_error(session->id, &session->last_error) : "session is NULL";
}

pg_status pg_session_n_threads(const pg_session* session, int32_t* out) {
    return pg::guarded(err(session), [&] {
        PG_REQUIRE_NOT_NULL("pg_session_n_threads", session);
        PG_REQUIRE_NOT_NULL("pg_session_n_threads", out);
        *out = session->impl.n_threads();
    });
}

pg_status pg_session_forward(pg_session* session, const int32_t* tokens, int32_t B, int32_t T,
                             const int32_t* targets, float* logits, float* mean_loss) {
    return pg::guarded(err(session), [&] {
        PG_REQUIRE_NOT_NULL("pg_session_forward", session);
        pg::capi::session_forward(session->impl, tokens, B, T, targets, logits, mean_loss, "pg_session_forward");
    });
}

pg_status pg_session_evaluate(pg_session* session, const int32_t* tokens, size_t n,
                              const pg_eval_config* config, pg_eval_result* result) {
    return pg::guarded(err(session), [&] {
        PG_REQUIRE_NOT_NULL("pg_session_evaluate", session);
        pg::capi::session_evaluate(session->impl, tokens, n, config, result, "pg_session_evaluate");
    });
}

void pg_eval_sampled_config_default(pg_eval_sampled_config* config) {
    if (config) *config = full_default_eval_sampled_config();
}

pg_status pg_session_evaluate_sampled(pg_session* session, const int32_t* tokens, size_t n,
                                      const pg_eval_sampled_config* config, pg_eval_result* result) {
    return pg::guarded(err(session), [&] {
        const char* fn = "pg_session_evaluate_sampled";
        PG_REQUIRE_NOT_NULL(fn, session);
        pg_eval_sampled_config c = full_default_eval_sampled_config();
        pg::read_options(config, &c, fn);
        pg::SampledEvalOptions opt;
        opt.n_batches = c.n_batches;
        opt.batch_size = c.batch_size;
        opt.seed = c.seed;
        pg::capi::session_evaluate_sampled(session->impl, tokens, n, opt, result, fn);
    });
}

pg_status pg_session_append(pg_session* session, const int32_t* tokens, size_t n) {
    return pg::guarded(err(session), [&] {
        const char* fn = "pg_session_append";
        PG_REQUIRE_NOT_NULL(fn, session);
        pg::require_arg(tokens != nullptr || n == 0, fn, "tokens is NULL but n is not 0");
        pg::capi::require_token_ids(tokens, n, session->model->impl.config().vocab_size, fn);
        session->impl.append(tokens, n);
    });
}

pg_status pg_session_logits(pg_session* session, float* logits, size_t capacity) {
    return pg::guarded(err(session), [&] {
        const char* fn = "pg_session_logits";
        PG_REQUIRE_NOT_NULL(fn, session);
        PG_REQUIRE_NOT_NULL(fn, logits);
        const size_t V = size_t(session->model->impl.config().vocab_size);
        pg::require_arg(capacity >= V, fn,
                        ("capacity " + std::to_string(capacity) + " is less than vocab_size " + std::to_string(V)).c_str());
        if (session->impl.position() == 0)
            throw pg::Error(PG_ERR_STATE, std::string(fn) + ": the sequence is empty (pg_session_append first)");
        const float* l = session->impl.logits();
        std::copy(l, l + V, logits);
    });
}

pg_status pg_session_generate(pg_session* session, const pg_sample_config* config, int32_t* out,
                              size_t capacity, size_t* n_out) {
    return pg::guarded(err(session), [&] {
        const char* fn = "pg_session_generate";
        PG_REQUIRE_NOT_NULL(fn, n_out);
        *n_out = 0;
        PG_REQUIRE_NOT_NULL(fn, session);
        pg::capi::session_generate(session->impl, config, out, capacity, n_out, fn);
    });
}

pg_status pg_session_reset(pg_session* session) {
    return pg::guarded(err(session), [&] {
        PG_REQUIRE_NOT_NULL("pg_session_reset", session);
        session->impl.reset();
    });
}

pg_status pg_session_position(const pg_session* session, int64_t* position) {
    return pg::guarded(err(session), [&] {
        PG_REQUIRE_NOT_NULL("pg_session_position", session);
        PG_REQUIRE_NOT_NULL("pg_session_position", position);
        *position = session->impl.position();
    });
}

}  // extern "C"
