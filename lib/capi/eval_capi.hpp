// The bodies shared by the model-level calls (pg_model_forward, pg_evaluate, pg_evaluate_sampled,
// pg_generate, each on a session made for the call) and the session calls: argument checks,
// option structs read, the work run on the session, results written. fn names the C function
// in messages. Defined in eval_api.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "eval/evaluate.hpp"
#include "eval/session.hpp"
#include "phonegpt/phonegpt.h"

namespace pg {
namespace capi {

void session_forward(Session& session, const int32_t* tokens, int32_t B, int32_t T, const int32_t* targets,
                     float* logits, float* mean_loss, const char* fn);
void session_evaluate(Session& session, const int32_t* tokens, std::size_t n, const pg_eval_config* config,
                      pg_eval_result* result, const char* fn);
void session_evaluate_sampled(Session& session, const int32_t* tokens, std::size_t n, const SampledEvalOptions& options,
                              pg_eval_result* result, const char* fn);
// Generates after the session's sequence; config->slide_keep, if not 0, applies to this call's
// slides; config->n_threads is not read (the session's threads run it).
void session_generate(Session& session, const pg_sample_config* config, int32_t* out, std::size_t capacity,
                      std::size_t* n_out, const char* fn);

// slide_keep in [0, n_ctx] (0 = n_ctx).
void check_slide_keep(int32_t slide_keep, int n_ctx, const char* fn);

// pg_eval_config / pg_sample_config with every field at its default.
pg_eval_config full_default_eval_config();
pg_sample_config full_default_sample_config();

}  // namespace capi
}  // namespace pg
