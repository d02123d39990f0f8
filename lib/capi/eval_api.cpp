// C API: whole-split evaluation, the sampled estimate and generation on a model; each builds a
// session for the call. The bodies shared with the session calls (session_api.cpp) are here.
#include <string>

#include "capi/boundary.hpp"
#include "capi/eval_capi.hpp"
#include "capi/handles.hpp"
#include "capi/train_boundary.hpp"  // named(): the entry point's name on its messages
#include "eval/evaluate.hpp"
#include "eval/generate.hpp"

namespace pg {
namespace capi {

namespace {

void write_eval_result(const EvalResult& r, pg_eval_result* out, const char* fn) {
    pg_eval_result full = blank_c_struct<pg_eval_result>();
    full.mean_loss = r.mean_loss;
    full.bits_per_token = r.bits_per_token;
    full.n_scored = r.n_scored;
    full.n_windows = r.n_windows;
    full.bits_per_byte = r.bits_per_byte;
    full.n_bytes = r.n_bytes;
    write_result(full, out, fn);
}

void require_result_struct(const pg_eval_result* result, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, result);
    check_struct_size(*result, fn);  // before the evaluation, not after it
}

}  // namespace

void check_slide_keep(int32_t slide_keep, int n_ctx, const char* fn) {
    require_arg(slide_keep >= 0 && slide_keep <= n_ctx, fn,
                ("slide_keep " + std::to_string(slide_keep) + " is outside [0, n_ctx = " + std::to_string(n_ctx) +
                 "] (0 = n_ctx)").c_str());
}

pg_eval_config full_default_eval_config() {
    pg_eval_config c = blank_c_struct<pg_eval_config>();
    const EvalOptions d;
    c.window = d.window;
    c.stride = d.stride;
    c.batch_size = d.batch_size;
    c.n_threads = 0;
    c.progress = nullptr;
    c.progress_user = nullptr;
    return c;
}

pg_sample_config full_default_sample_config() {
    pg_sample_config c = blank_c_struct<pg_sample_config>();
    const GenerateOptions d;
    c.temperature = d.sampling.temperature;
    c.top_k = d.sampling.top_k;
    c.top_p = d.sampling.top_p;
    c.seed = d.seed;
    c.max_tokens = d.max_tokens;
    c.n_threads = 0;
    c.on_token = nullptr;
    c.on_token_user = nullptr;
    c.stop_strings = nullptr;
    c.n_stop_strings = 0;
    c.slide_keep = 0;
    return c;
}

void session_forward(Session& session, const int32_t* tokens, int32_t B, int32_t T, const int32_t* targets,
                     float* logits, float* mean_loss, const char* fn) {
    require_arg(logits || targets, fn, "logits and targets are both NULL: nothing to compute");
    require_arg(!targets || mean_loss, fn, "mean_loss is NULL but targets were given");
    require_forward_batch(tokens, targets, B, T, session.model().config(), fn);
    const LossSum total = forward(session, tokens, B, T, targets, logits);
    // No scored position: the mean is undefined.
    if (targets) *mean_loss = total.count ? float(total.mean()) : NAN;
}

void session_evaluate(Session& session, const int32_t* tokens, std::size_t n, const pg_eval_config* config,
                      pg_eval_result* result, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, tokens);
    require_token_ids(tokens, n, session.model().config().vocab_size, fn);
    require_result_struct(result, fn);
    pg_eval_config c = full_default_eval_config();
    read_options(config, &c, fn);
    EvalOptions opt;
    opt.window = c.window;
    opt.stride = c.stride;
    opt.batch_size = c.batch_size;
    opt.progress = c.progress;
    opt.progress_user = c.progress_user;
    // pg::evaluate names no C function: the entry point's own name is added here, once.
    EvalResult r;
    named(fn, [&] { r = evaluate(session, tokens, n, opt); });
    write_eval_result(r, result, fn);
}

void session_evaluate_sampled(Session& session, const int32_t* tokens, std::size_t n, const SampledEvalOptions& opt,
                              pg_eval_result* result, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, tokens);
    require_token_ids(tokens, n, session.model().config().vocab_size, fn);
    require_result_struct(result, fn);
    EvalResult r;
    named(fn, [&] { r = evaluate_sampled(session, tokens, n, opt); });
    write_eval_result(r, result, fn);
}

void session_generate(Session& session, const pg_sample_config* config, int32_t* out, std::size_t capacity,
                      std::size_t* n_out, const char* fn) {
    require_arg(out != nullptr || capacity == 0, fn, "out is NULL but capacity is not 0");
    pg_sample_config c = full_default_sample_config();
    read_options(config, &c, fn);
    GenerateOptions opt;
    opt.sampling.temperature = c.temperature;
    opt.sampling.top_k = c.top_k;
    opt.sampling.top_p = c.top_p;
    opt.seed = c.seed;
    opt.max_tokens = c.max_tokens;
    opt.on_token = c.on_token;
    opt.on_token_user = c.on_token_user;
    check_slide_keep(c.slide_keep, session.model().config().n_ctx, fn);
    require_arg(c.n_stop_strings >= 0, fn, "n_stop_strings is negative");
    require_arg(c.stop_strings != nullptr || c.n_stop_strings == 0, fn,
                "stop_strings is NULL but n_stop_strings is not 0");
    for (int32_t i = 0; i < c.n_stop_strings; ++i) {
        require_arg(c.stop_strings[i] != nullptr, fn, ("stop_strings[" + std::to_string(i) + "] is NULL").c_str());
        opt.stop_strings.emplace_back(c.stop_strings[i]);
    }
    // This call's slide_keep, then the session's again (also when generation throws).
    struct SlideKeep {
        Session& s;
        int saved;
        ~SlideKeep() { s.set_slide_keep(saved); }
    } restore{session, session.slide_keep()};
    if (c.slide_keep) session.set_slide_keep(c.slide_keep);
    const std::size_t generated = generate(session, opt, out, capacity);
    *n_out = generated < capacity ? generated : capacity;
}

}  // namespace capi
}  // namespace pg

namespace {

pg::ErrorTarget err(const pg_model* m) { return pg::shared_errors(m); }

}  // namespace

extern "C" {

void pg_eval_config_default(pg_eval_config* config) {
    if (config) *config = pg::capi::full_default_eval_config();
}

pg_status pg_evaluate(const pg_model* model, const int32_t* tokens, size_t n,
                      const pg_eval_config* config, pg_eval_result* result) {
    return pg::guarded(err(model), [&] {
        const char* fn = "pg_evaluate";
        PG_REQUIRE_NOT_NULL(fn, model);
        pg_eval_config c = pg::capi::full_default_eval_config();
        pg::read_options(config, &c, fn);
        pg::SessionOptions so;
        so.n_threads = c.n_threads;
        pg::Session session(model->impl, so);
        pg::capi::session_evaluate(session, tokens, n, config, result, fn);
    });
}

pg_status pg_evaluate_sampled(const pg_model* model, const int32_t* tokens, size_t n,
                              int32_t n_batches, int32_t batch_size, uint64_t seed,
                              int32_t n_threads, pg_eval_result* result) {
    return pg::guarded(err(model), [&] {
        const char* fn = "pg_evaluate_sampled";
        PG_REQUIRE_NOT_NULL(fn, model);
        pg::SessionOptions so;
        so.n_threads = n_threads;
        pg::Session session(model->impl, so);
        pg::SampledEvalOptions opt;
        opt.n_batches = n_batches;
        opt.batch_size = batch_size;
        opt.seed = seed;
        pg::capi::session_evaluate_sampled(session, tokens, n, opt, result, fn);
    });
}

void pg_sample_config_default(pg_sample_config* config) {
    if (config) *config = pg::capi::full_default_sample_config();
}

pg_status pg_generate(const pg_model* model, const int32_t* prompt, size_t n_prompt,
                      const pg_sample_config* config, int32_t* out, size_t capacity, size_t* n_out) {
    return pg::guarded(err(model), [&] {
        const char* fn = "pg_generate";
        PG_REQUIRE_NOT_NULL(fn, n_out);
        *n_out = 0;
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, prompt);
        pg::require_arg(n_prompt >= 1, fn, "the prompt is empty (n_prompt must be at least 1)");
        pg::capi::require_token_ids(prompt, n_prompt, model->impl.config().vocab_size, fn);
        pg_sample_config c = pg::capi::full_default_sample_config();
        pg::read_options(config, &c, fn);
        pg::SessionOptions so;  // slide_keep: session_generate applies the config's
        so.n_threads = c.n_threads;
        pg::Session session(model->impl, so);
        session.append(prompt, n_prompt);
        pg::capi::session_generate(session, config, out, capacity, n_out, fn);
    });
}

}  // extern "C"
