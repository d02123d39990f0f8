// C API: what the LoRA trainer answers as the full trainer does (trainer_api.cpp), with the same
// names after the handle's prefix: its configuration, step count, schedule and thread count.
#include <string>

#include "capi/boundary.hpp"
#include "capi/lora_handles.hpp"
#include "capi/train_boundary.hpp"
#include "train/train_config.hpp"

namespace {

pg::ErrorTarget err(const pg_lora_trainer* t) { return pg::shared_errors(t); }
pg::ErrorTarget err(pg_lora_trainer* t) { return pg::owned_errors(t); }

}  // namespace

extern "C" {

pg_status pg_lora_trainer_get_config(const pg_lora_trainer* trainer, pg_train_config* config) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_get_config";
        const pg::lora::LoraTrainer& t = pg::capi::lora_trainer_of(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, config);
        pg::write_result(pg::train_config_to_c(t.config()), config, fn);
    });
}

pg_status pg_lora_trainer_step_count(const pg_lora_trainer* trainer, int64_t* step) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_step_count";
        const pg::lora::LoraTrainer& t = pg::capi::lora_trainer_of(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, step);
        *step = t.step_count();
    });
}

pg_status pg_lora_trainer_lr_at(const pg_lora_trainer* trainer, int64_t step, float* lr) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_lr_at";
        const pg::lora::LoraTrainer& t = pg::capi::lora_trainer_of(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, lr);
        pg::require_arg(step >= 0, fn, ("step = " + std::to_string(step) + " is negative").c_str());
        *lr = t.lr_at(step);
    });
}

pg_status pg_lora_trainer_n_threads(const pg_lora_trainer* trainer, int32_t* n_threads) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_n_threads";
        const pg::lora::LoraTrainer& t = pg::capi::lora_trainer_of(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, n_threads);
        *n_threads = t.threads();
    });
}

pg_status pg_lora_trainer_set_threads(pg_lora_trainer* trainer, int32_t n_threads) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_set_threads";
        pg::lora::LoraTrainer& t = pg::capi::lora_trainer_of(trainer, fn);
        pg::named(fn, [&] { t.set_threads(n_threads); });
    });
}

}  // extern "C"
