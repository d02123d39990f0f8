// C API: LoRA configuration and the in-memory adapter.
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "capi/lora_handles.hpp"
#include "capi/text_out.hpp"
#include "capi/train_boundary.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "lora/config.hpp"
#include "lora/merge.hpp"
#include "lora/peft.hpp"
#include "train/train_config.hpp"

namespace {

pg::ErrorTarget err(const pg_lora_adapter* a) { return pg::shared_errors(a); }
pg::ErrorTarget err(pg_lora_trainer* t) { return pg::owned_errors(t); }
pg::ErrorTarget err(const pg_lora_trainer* t) { return pg::shared_errors(t); }

pg::lora::LoraTrainer& impl(pg_lora_trainer* t, const char* fn) { return pg::capi::lora_trainer_of(t, fn); }

void check_index(const pg_lora_adapter* adapter, int32_t index, const char* fn) {
    const auto n = adapter->impl.tensors().size();
    pg::require_arg(index >= 0 && static_cast<std::size_t>(index) < n, fn,
                    ("tensor index " + std::to_string(index) + " is outside [0, " +
                     std::to_string(n) + ")").c_str());
}

}  // namespace

extern "C" {

void pg_lora_config_default(pg_lora_config* config) {
    if (!config) return;
    static const pg::lora::LoraConfig defaults;
    *config = pg::lora::lora_config_to_c(defaults);
}

pg_status pg_lora_config_validate(const pg_lora_config* config) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_config_validate";
        PG_REQUIRE_NOT_NULL(fn, config);
        pg::named(fn, [&] { pg::lora::lora_config_from_c(*config); });
    });
}

pg_status pg_lora_adapter_create(const pg_model* base, const pg_lora_config* config,
                                 pg_lora_adapter** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_adapter_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, base);
        PG_REQUIRE_NOT_NULL(fn, config);
        pg::named(fn, [&] {
            const pg::lora::LoraConfig cfg = pg::lora::lora_config_from_c(*config);
            *out = new pg_lora_adapter(pg::lora::Adapter::create(base->impl, cfg));
        });
    });
}

void pg_lora_adapter_free(pg_lora_adapter* adapter) { delete adapter; }

const char* pg_lora_adapter_last_error(const pg_lora_adapter* adapter) {
    return adapter ? pg::handle_last_error(adapter->id, nullptr) : "adapter is NULL";
}

pg_status pg_lora_adapter_get_config(const pg_lora_adapter* adapter, pg_lora_config* config) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_get_config";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, config);
        pg::write_result(pg::lora::lora_config_to_c(adapter->impl.config()), config, fn);
    });
}

pg_status pg_lora_adapter_scale(const pg_lora_adapter* adapter, float* scale) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_scale";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, scale);
        *scale = adapter->impl.scale();
    });
}

pg_status pg_lora_adapter_num_params(const pg_lora_adapter* adapter, int64_t* out) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_num_params";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = adapter->impl.num_params();
    });
}

pg_status pg_lora_adapter_num_tensors(const pg_lora_adapter* adapter, int32_t* out) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_num_tensors";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = static_cast<int32_t>(adapter->impl.tensors().size());
    });
}

pg_status pg_lora_adapter_tensor_info(const pg_lora_adapter* adapter, int32_t index,
                                      pg_tensor_info* info) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_tensor_info";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, info);
        check_index(adapter, index, fn);
        const pg::lora::AdapterTensor& t = adapter->impl.tensors()[static_cast<std::size_t>(index)];
        pg_tensor_info full = pg::blank_c_struct<pg_tensor_info>();
        full.name = t.name.c_str();
        full.n_dims = 2;
        full.shape[0] = t.shape[0];
        full.shape[1] = t.shape[1];
        full.numel = t.numel;
        full.offset = t.offset;
        full.data = adapter->impl.params() + t.offset;
        pg::write_result(full, info, fn);
    });
}

pg_status pg_lora_adapter_find_tensor(const pg_lora_adapter* adapter, const char* name,
                                      int32_t* index) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_find_tensor";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, name);
        PG_REQUIRE_NOT_NULL(fn, index);
        const int i = adapter->impl.find_tensor(name);
        pg::require_arg(i >= 0, fn, ("no adapter tensor named \"" + std::string(name) + "\"").c_str());
        *index = i;
    });
}

pg_status pg_lora_adapter_tensor_data_mutable(pg_lora_adapter* adapter, int32_t index,
                                              float** data) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_tensor_data_mutable";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, data);
        check_index(adapter, index, fn);
        *data = adapter->impl.params() + adapter->impl.tensors()[static_cast<std::size_t>(index)].offset;
    });
}

pg_status pg_lora_merge(const pg_model* base, const pg_lora_adapter* adapter, int32_t n_threads,
                        pg_model** merged) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_merge";
        PG_REQUIRE_NOT_NULL(fn, merged);
        *merged = nullptr;
        PG_REQUIRE_NOT_NULL(fn, base);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        auto out = std::make_unique<pg_model>(base->impl.config());
        pg::named(fn, [&] { pg::lora::merge_into_copy(base->impl, adapter->impl, out->impl, n_threads); });
        *merged = out.release();
    });
}

pg_status pg_lora_merge_in_place(pg_model* model, const pg_lora_adapter* adapter, int32_t n_threads) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_merge_in_place";
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        pg::named(fn, [&] { pg::lora::merge_in_place(model->impl, adapter->impl, n_threads); });
    });
}

pg_status pg_lora_unmerge_in_place(pg_model* model, const pg_lora_adapter* adapter, int32_t n_threads) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_unmerge_in_place";
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        pg::named(fn, [&] { pg::lora::unmerge_in_place(model->impl, adapter->impl, n_threads); });
    });
}

pg_status pg_lora_adapter_save(const pg_lora_adapter* adapter, const char* path) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_save";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, path);
        pg::named(fn, [&] { pg::lora::save_adapter(adapter->impl, path); });
    });
}

pg_status pg_lora_adapter_load(const char* path, const pg_model* base, pg_lora_adapter** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_adapter_load";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, path);
        pg::named(fn, [&] {
            auto loaded = std::make_unique<pg_lora_adapter>(pg::lora::load_adapter(path));
            if (base) {
                pg::lora::check_adapter_matches_base(loaded->impl, base->impl);
                pg::lora::check_base_trained(base->impl, base->allow_untrained_base, "validating the adapter");
            }
            *out = loaded.release();
        });
    });
}

pg_status pg_lora_adapter_check_base(const pg_lora_adapter* adapter, const pg_model* base) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_check_base";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, base);
        pg::named(fn, [&] {
            pg::lora::check_adapter_matches_base(adapter->impl, base->impl);
            pg::lora::check_base_trained(base->impl, base->allow_untrained_base, "validating the adapter");
        });
    });
}

pg_status pg_lora_adapter_base_json(const pg_lora_adapter* adapter, char* text, size_t capacity, size_t* len) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_base_json";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, len);
        pg::require_arg(text != nullptr || capacity == 0, fn, "text is NULL with a capacity above 0");
        pg::capi::copy_text_out(pg::lora::base_identity_json(adapter->impl.base()), text, capacity, len, fn);
    });
}

pg_status pg_lora_adapter_training_record(const pg_lora_adapter* adapter, int64_t* n_steps, int64_t* tokens,
                                          const float** losses, const float** learning_rates) {
    return pg::guarded(err(adapter), [&] {
        PG_REQUIRE_NOT_NULL("pg_lora_adapter_training_record", adapter);
        const pg::lora::TrainingRecord& r = adapter->impl.record();
        if (n_steps) *n_steps = r.steps;
        if (tokens) *tokens = r.tokens;
        if (losses) *losses = r.losses.empty() ? nullptr : r.losses.data();
        if (learning_rates) *learning_rates = r.learning_rates.empty() ? nullptr : r.learning_rates.data();
    });
}

pg_status pg_lora_trainer_create(const pg_model* base, pg_lora_adapter* adapter, const pg_train_config* config,
                                 pg_lora_trainer** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_trainer_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, base);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, config);
        auto handle = std::make_unique<pg_lora_trainer>();
        handle->adapter = adapter;
        pg::named(fn, [&] {
            handle->impl = std::make_unique<pg::lora::LoraTrainer>(
                base->impl, adapter->impl, pg::train_config_from_c(*config), base->allow_untrained_base);
        });
        *out = handle.release();
    });
}

void pg_lora_trainer_free(pg_lora_trainer* trainer) { delete trainer; }

const char* pg_lora_trainer_last_error(const pg_lora_trainer* trainer) {
    return trainer ? pg::handle_last_error(trainer->id, &trainer->last_error) : "trainer is NULL";
}

pg_status pg_lora_trainer_set_data(pg_lora_trainer* trainer, const int32_t* tokens, size_t n) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_set_data";
        pg::lora::LoraTrainer& t = impl(trainer, fn);
        pg::named(fn, [&] { t.set_data(tokens, n); });
    });
}

pg_status pg_lora_trainer_step(pg_lora_trainer* trainer, pg_step_result* result) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_step";
        pg::lora::LoraTrainer& t = impl(trainer, fn);
        if (result) pg::check_struct_size(*result, fn);  // before the step, which cannot be undone
        pg::StepResult r;
        pg::named(fn, [&] { r = t.step(); });
        pg::write_step_result(r, result, fn);
    });
}

pg_status pg_lora_trainer_step_batch(pg_lora_trainer* trainer, const int32_t* inputs, const int32_t* targets,
                                     int32_t B, int32_t T, pg_step_result* result) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_step_batch";
        pg::lora::LoraTrainer& t = impl(trainer, fn);
        pg::check_batch_args(inputs, targets, B, T, t.base().config(), fn);
        if (result) pg::check_struct_size(*result, fn);  // before the step, which cannot be undone
        pg::StepResult r;
        pg::named(fn, [&] { r = t.step_batch(inputs, targets, B, T); });
        pg::write_step_result(r, result, fn);
    });
}

pg_status pg_lora_trainer_compute_gradients(pg_lora_trainer* trainer, const int32_t* inputs, const int32_t* targets,
                                            int32_t B, int32_t T, float* mean_loss) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_compute_gradients";
        pg::lora::LoraTrainer& t = impl(trainer, fn);
        pg::check_batch_args(inputs, targets, B, T, t.base().config(), fn);
        float loss = 0.0f;
        pg::named(fn, [&] { loss = t.compute_gradients(inputs, targets, B, T); });
        if (mean_loss) *mean_loss = loss;
    });
}

pg_status pg_lora_trainer_grad(const pg_lora_trainer* trainer, int32_t index, const float** data) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_grad";
        PG_REQUIRE_NOT_NULL(fn, trainer);
        PG_REQUIRE_NOT_NULL(fn, data);
        pg::require_arg(trainer->impl != nullptr, fn, "trainer has no state");
        const pg::lora::LoraTrainer& t = *trainer->impl;
        check_index(trainer->adapter, index, fn);
        *data = t.grads() + t.adapter().tensors()[std::size_t(index)].offset;
    });
}

pg_status pg_lora_trainer_save(const pg_lora_trainer* trainer, const char* path) {
    return pg::guarded(err(trainer), [&] {
        const char* fn = "pg_lora_trainer_save";
        PG_REQUIRE_NOT_NULL(fn, trainer);
        PG_REQUIRE_NOT_NULL(fn, path);
        pg::require_arg(trainer->impl != nullptr, fn, "trainer has no state");
        const pg::lora::LoraTrainer& t = *trainer->impl;
        pg::named(fn, [&] { pg::lora::save_adapter_training(t.adapter(), t.state(), path); });
    });
}

pg_status pg_lora_trainer_resume(const char* path, const pg_model* base, pg_lora_adapter** adapter_out,
                                 pg_lora_trainer** trainer_out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_trainer_resume";
        PG_REQUIRE_NOT_NULL(fn, adapter_out);
        PG_REQUIRE_NOT_NULL(fn, trainer_out);
        *adapter_out = nullptr;
        *trainer_out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, path);
        PG_REQUIRE_NOT_NULL(fn, base);
        pg::named(fn, [&] {
            pg::TrainerState state;
            auto adapter = std::make_unique<pg_lora_adapter>(pg::lora::load_adapter_training(path, state));
            pg::lora::check_adapter_matches_base(adapter->impl, base->impl);
            auto trainer = std::make_unique<pg_lora_trainer>();
            trainer->adapter = adapter.get();
            try {
                trainer->impl = std::make_unique<pg::lora::LoraTrainer>(base->impl, adapter->impl, state,
                                                                        base->allow_untrained_base);
            } catch (const pg::Error& e) {
                // Values the trainer refuses came from the file: a format error, named as such.
                const pg_status s = e.status() == PG_ERR_INVALID_ARGUMENT ? PG_ERR_FORMAT : e.status();
                throw pg::Error(s, std::string(path) + ": training state: " + e.what());
            }
            *adapter_out = adapter.release();
            *trainer_out = trainer.release();
        });
    });
}

pg_status pg_lora_export_peft(const pg_lora_adapter* adapter, const char* folder) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_export_peft";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, folder);
        pg::named(fn, [&] { pg::lora::export_peft(adapter->impl, folder); });
    });
}

pg_status pg_lora_import_peft(const char* folder, const pg_model* base, pg_lora_adapter** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_import_peft";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, folder);
        PG_REQUIRE_NOT_NULL(fn, base);
        pg::named(fn, [&] { *out = new pg_lora_adapter(pg::lora::import_peft(folder, base->impl)); });
    });
}

}  // extern "C"
