// C API: whole-split evaluation, the sampled estimate and generation.
#include <string>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "eval/evaluate.hpp"
#include "eval/generate.hpp"

namespace {

std::string* err(const pg_model* m) { return m ? &m->last_error : nullptr; }

pg_eval_config full_default_eval_config() {
    pg_eval_config c = pg::blank_c_struct<pg_eval_config>();
    const pg::EvalOptions d;
    c.window = d.window;
    c.stride = d.stride;
    c.batch_size = d.batch_size;
    c.n_threads = d.n_threads;
    c.progress = nullptr;
    c.progress_user = nullptr;
    return c;
}

pg_sample_config full_default_sample_config() {
    pg_sample_config c = pg::blank_c_struct<pg_sample_config>();
    const pg::GenerateOptions d;
    c.temperature = d.sampling.temperature;
    c.top_k = d.sampling.top_k;
    c.top_p = d.sampling.top_p;
    c.seed = d.seed;
    c.max_tokens = d.max_tokens;
    c.n_threads = d.n_threads;
    c.on_token = nullptr;
    c.on_token_user = nullptr;
    c.stop_strings = nullptr;
    c.n_stop_strings = 0;
    c.slide_keep = d.slide_keep;
    return c;
}

void write_eval_result(const pg::EvalResult& r, pg_eval_result* out, const char* fn) {
    pg_eval_result full = pg::blank_c_struct<pg_eval_result>();
    full.mean_loss = r.mean_loss;
    full.bits_per_token = r.bits_per_token;
    full.n_scored = r.n_scored;
    full.n_windows = r.n_windows;
    pg::write_result(full, out, fn);
}

void require_result_struct(const pg_eval_result* result, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, result);
    pg::check_struct_size(*result, fn);  // before the evaluation, not after it
}

}  // namespace

extern "C" {

void pg_eval_config_default(pg_eval_config* config) {
    if (config) *config = full_default_eval_config();
}

pg_status pg_evaluate(const pg_model* model, const int32_t* tokens, size_t n,
                      const pg_eval_config* config, pg_eval_result* result) {
    return pg::guarded(err(model), [&] {
        const char* fn = "pg_evaluate";
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, tokens);
        require_result_struct(result, fn);
        pg_eval_config c = full_default_eval_config();
        pg::read_options(config, &c, fn);
        pg::EvalOptions opt;
        opt.window = c.window;
        opt.stride = c.stride;
        opt.batch_size = c.batch_size;
        opt.n_threads = c.n_threads;
        opt.progress = c.progress;
        opt.progress_user = c.progress_user;
        write_eval_result(pg::evaluate(model->impl, tokens, n, opt), result, fn);
    });
}

pg_status pg_evaluate_sampled(const pg_model* model, const int32_t* tokens, size_t n,
                              int32_t n_batches, int32_t batch_size, uint64_t seed,
                              int32_t n_threads, pg_eval_result* result) {
    return pg::guarded(err(model), [&] {
        const char* fn = "pg_evaluate_sampled";
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, tokens);
        require_result_struct(result, fn);
        write_eval_result(pg::evaluate_sampled(model->impl, tokens, n, n_batches, batch_size, seed, n_threads),
                          result, fn);
    });
}

void pg_sample_config_default(pg_sample_config* config) {
    if (config) *config = full_default_sample_config();
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
        pg::require_arg(out != nullptr || capacity == 0, fn, "out is NULL but capacity is not 0");
        pg::check_token_ids(prompt, n_prompt, model->impl.config().vocab_size, fn);
        pg_sample_config c = full_default_sample_config();
        pg::read_options(config, &c, fn);
        pg::GenerateOptions opt;
        opt.sampling.temperature = c.temperature;
        opt.sampling.top_k = c.top_k;
        opt.sampling.top_p = c.top_p;
        opt.seed = c.seed;
        opt.max_tokens = c.max_tokens;
        opt.n_threads = c.n_threads;
        opt.on_token = c.on_token;
        opt.on_token_user = c.on_token_user;
        opt.slide_keep = c.slide_keep;
        pg::require_arg(c.n_stop_strings >= 0, fn, "n_stop_strings is negative");
        pg::require_arg(c.stop_strings != nullptr || c.n_stop_strings == 0, fn,
                        "stop_strings is NULL but n_stop_strings is not 0");
        for (int32_t i = 0; i < c.n_stop_strings; ++i) {
            pg::require_arg(c.stop_strings[i] != nullptr, fn,
                            ("stop_strings[" + std::to_string(i) + "] is NULL").c_str());
            opt.stop_strings.emplace_back(c.stop_strings[i]);
        }
        const size_t generated = pg::generate(model->impl, prompt, n_prompt, opt, out, capacity);
        *n_out = generated < capacity ? generated : capacity;
    });
}

}  // extern "C"
