// The C boundary of the trainers (pg_trainer_* and pg_lora_trainer_*): what both need beyond
// boundary.hpp, so the two handle families check arguments and report steps the same way.
#pragma once

#include <string>

#include "capi/boundary.hpp"
#include "train/step_driver.hpp"

namespace pg {

// Runs a call into the library, prefixing the function name to its messages.
template <class F>
void named(const char* fn, F&& body) {
    try {
        body();
    } catch (const Error& e) {
        throw Error(e.status(), std::string(fn) + ": " + e.what());
    }
}

// The caller's batch arguments, named after the function, before anything runs.
inline void check_batch_args(const int32_t* inputs, const int32_t* targets, int32_t B, int32_t T, int n_ctx,
                             const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, inputs);
    PG_REQUIRE_NOT_NULL(fn, targets);
    require_arg(B >= 1, fn, ("B = " + std::to_string(B) + " must be >= 1").c_str());
    require_arg(T >= 1 && T <= n_ctx, fn,
                ("T = " + std::to_string(T) + " is outside [1, n_ctx = " + std::to_string(n_ctx) + "]").c_str());
}

// A step's result into the caller's pg_step_result (NULL: not wanted).
inline void write_step_result(const StepResult& s, pg_step_result* out, const char* fn) {
    if (!out) return;
    pg_step_result full = blank_c_struct<pg_step_result>();
    full.step = s.step;
    full.loss = s.loss;
    full.lr = s.lr;
    full.grad_norm = s.grad_norm;
    full.tokens = s.tokens;
    write_result(full, out, fn);
}

}  // namespace pg
