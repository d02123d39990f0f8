// C API: training configuration and the trainer (pg_trainer_save / pg_trainer_resume live with
// the checkpoints in io_api.cpp).
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/train_boundary.hpp"
#include "capi/handles.hpp"
#include "train/trainer.hpp"

namespace {

pg::ErrorTarget err(const pg_trainer* t) { return pg::shared_errors(t); }
pg::ErrorTarget err(pg_trainer* t) { return pg::owned_errors(t); }

// The trainer handle must be one that pg_trainer_create or pg_trainer_resume filled.
pg::Trainer& impl(pg_trainer* t, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, t);
    pg::require_arg(t->impl != nullptr, fn, "trainer has no state");
    return *t->impl;
}
const pg::Trainer& impl(const pg_trainer* t, const char* fn) {
    return impl(const_cast<pg_trainer*>(t), fn);
}

}  // namespace

pg_trainer::~pg_trainer() {
    if (model) --model->n_trainers;
}

extern "C" {

void pg_train_config_default(pg_train_config* config) {
    if (!config) return;
    *config = pg::train_config_to_c(pg::TrainConfig{});
}

pg_status pg_trainer_create(pg_model* model, const pg_train_config* config, pg_trainer** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_trainer_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, config);
        auto handle = std::make_unique<pg_trainer>();
        handle->attach(model);
        pg::named(fn, [&] {
            handle->impl = std::make_unique<pg::Trainer>(model->impl, pg::train_config_from_c(*config));
        });
        *out = handle.release();
    });
}

void pg_trainer_free(pg_trainer* trainer) { delete trainer; }

const char* pg_trainer_last_error(const pg_trainer* trainer) {
    return trainer ? pg::handle_last_error(trainer->id, &trainer->last_error) : "trainer is NULL";
}

pg_status pg_trainer_get_config(const pg_trainer* trainer, pg_train_config* config) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_get_config";
        const pg::Trainer& t = impl(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, config);
        pg::write_result(pg::train_config_to_c(t.config()), config, fn);
    });
}

pg_status pg_trainer_set_data(pg_trainer* trainer, const int32_t* tokens, size_t n) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_set_data";
        pg::Trainer& t = impl(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, tokens);
        pg::named(fn, [&] { t.set_data(tokens, n); });
    });
}

pg_status pg_trainer_step(pg_trainer* trainer, pg_step_result* result) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_step";
        pg::Trainer& t = impl(trainer, fn);
        if (result) pg::check_struct_size(*result, fn);  // before the step, which cannot be undone
        pg::StepResult r;
        pg::named(fn, [&] { r = t.step(); });
        pg::write_step_result(r, result, fn);
    });
}

pg_status pg_trainer_step_batch(pg_trainer* trainer, const int32_t* inputs, const int32_t* targets,
                                int32_t B, int32_t T, pg_step_result* result) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_step_batch";
        pg::Trainer& t = impl(trainer, fn);
        pg::check_batch_args(inputs, targets, B, T, t.model().config(), fn);
        if (result) pg::check_struct_size(*result, fn);  // before the step, which cannot be undone
        pg::StepResult r;
        pg::named(fn, [&] { r = t.step_batch(inputs, targets, B, T); });
        pg::write_step_result(r, result, fn);
    });
}

pg_status pg_trainer_compute_gradients(pg_trainer* trainer, const int32_t* inputs,
                                       const int32_t* targets, int32_t B, int32_t T,
                                       float* mean_loss) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_compute_gradients";
        pg::Trainer& t = impl(trainer, fn);
        pg::check_batch_args(inputs, targets, B, T, t.model().config(), fn);
        float loss = 0.0f;
        pg::named(fn, [&] { loss = t.compute_gradients(inputs, targets, B, T); });
        if (mean_loss) *mean_loss = loss;
    });
}

pg_status pg_trainer_grad(const pg_trainer* trainer, int32_t index, const float** data) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_grad";
        const pg::Trainer& t = impl(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, data);
        const auto& tensors = t.model().tensors();
        pg::require_arg(index >= 0 && index < int32_t(tensors.size()), fn,
                        ("tensor index " + std::to_string(index) + " is outside [0, " +
                         std::to_string(tensors.size()) + ")").c_str());
        *data = t.grads() + tensors[std::size_t(index)].offset;
    });
}

pg_status pg_trainer_step_count(const pg_trainer* trainer, int64_t* step) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_step_count";
        const pg::Trainer& t = impl(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, step);
        *step = t.step_count();
    });
}

pg_status pg_trainer_lr_at(const pg_trainer* trainer, int64_t step, float* lr) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_lr_at";
        const pg::Trainer& t = impl(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, lr);
        pg::require_arg(step >= 0, fn, ("step = " + std::to_string(step) + " is negative").c_str());
        *lr = t.lr_at(step);
    });
}

pg_status pg_trainer_n_threads(const pg_trainer* trainer, int32_t* n_threads) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_n_threads";
        const pg::Trainer& t = impl(trainer, fn);
        PG_REQUIRE_NOT_NULL(fn, n_threads);
        *n_threads = t.threads();
    });
}

// Deprecated spelling (phonegpt.h): the same call.
pg_status pg_trainer_threads(const pg_trainer* trainer, int32_t* n_threads) { return pg_trainer_n_threads(trainer, n_threads); }

pg_status pg_trainer_set_threads(pg_trainer* trainer, int32_t n_threads) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_trainer_set_threads";
        pg::Trainer& t = impl(trainer, fn);
        pg::named(fn, [&] { t.set_threads(n_threads); });
    });
}

}  // extern "C"
