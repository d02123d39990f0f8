// C API: model configuration, creation, parameters and the tokenizer that belongs to a model.
#include <memory>
#include <string>


#include "capi/boundary.hpp"
#include "capi/eval_capi.hpp"
#include "capi/handles.hpp"
#include "model/config.hpp"
#include "model/params.hpp"

namespace {

pg::ErrorTarget err(const pg_model* m) { return pg::shared_errors(m); }

void check_index(const pg_model* model, int32_t index, const char* fn) {
    pg::require_arg(index >= 0 && index < int32_t(model->impl.tensors().size()), fn,
                    ("tensor index " + std::to_string(index) + " is outside [0, " +
                     std::to_string(model->impl.tensors().size()) + ")").c_str());
}

}  // namespace

extern "C" {

void pg_model_config_default(pg_model_config* config) {
    if (config) *config = pg::model_config_to_c(pg::ModelConfig{});
}

pg_status pg_model_config_preset(const char* name, pg_model_config* config) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_config_preset", config);
        pg::ModelConfig m = pg::model_preset(name);
        *config = pg::model_config_to_c(m);  // like *_default: fills the whole struct
    });
}

pg_status pg_model_config_validate(const pg_model_config* config) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_config_validate", config);
        pg::model_config_from_c(*config);
    });
}

int64_t pg_model_config_num_params(const pg_model_config* config) {
    int64_t n = 0;
    pg_status s = pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_config_num_params", config);
        n = pg::count_params(pg::model_config_from_c(*config));
    });
    return s == PG_OK ? n : 0;
}

pg_status pg_model_create(const pg_model_config* config, uint64_t seed, pg_model** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_create", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_model_create", config);
        auto model = std::make_unique<pg_model>(pg::model_config_from_c(*config));
        pg::init_gpt2_params(model->impl.config(), model->impl.params(), seed);
        model->impl.set_provenance(pg::Provenance::initialised_from(seed));
        *out = model.release();
    });
}

void pg_model_free(pg_model* model) { delete model; }

pg_status pg_model_provenance(const pg_model* model, pg_provenance_kind* kind, int32_t* has_init_seed,
                              uint64_t* init_seed, int64_t* steps, int64_t* tokens) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_provenance", model);
        const pg::Provenance& p = model->impl.provenance();
        if (kind) *kind = pg_provenance_kind(p.kind);
        if (has_init_seed) *has_init_seed = p.has_init_seed ? 1 : 0;
        if (init_seed) *init_seed = p.init_seed;
        if (steps) *steps = p.steps;
        if (tokens) *tokens = p.tokens;
    });
}

pg_status pg_model_allow_untrained_base(pg_model* model, int32_t allow) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_allow_untrained_base", model);
        pg::require_arg(allow == 0 || allow == 1, "pg_model_allow_untrained_base", "allow must be 0 or 1");
        model->allow_untrained_base = allow == 1;
    });
}

pg_status pg_model_set_weight_storage(pg_model* model, pg_weight_storage storage) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_set_weight_storage", model);
        const int code = pg::enum_code(storage);
        pg::require_arg(code >= PG_WEIGHTS_FP32 && code <= PG_WEIGHTS_Q4_0, "pg_model_set_weight_storage",
                        ("storage must be PG_WEIGHTS_FP32, _FP16, _BF16, _Q8_0 or _Q4_0 (or the deprecated "
                         "_FP16_ARITHMETIC, _BF16_ARITHMETIC; got " +
                         std::to_string(code) + ")")
                            .c_str());
        pg::require(code == PG_WEIGHTS_FP32 || model->impl.storage() != pg::WeightStorage::fp32 ||
                        model->n_trainers.load() == 0,
                    PG_ERR_STATE,
                    "pg_model_set_weight_storage: a trainer (pg_trainer_create or pg_trainer_resume) trains this "
                    "model's fp32 weights, which holding it in 16 bits would free: free the trainer first");
        // The deprecated spellings: a 16-bit storage with its arithmetic as the model's default.
        if (code == PG_WEIGHTS_FP16_ARITHMETIC)
            model->impl.hold_frozen_in(pg::WeightStorage::fp16, pg::Arithmetic::fp16);
        else if (code == PG_WEIGHTS_BF16_ARITHMETIC)
            model->impl.hold_frozen_in(pg::WeightStorage::bf16, pg::Arithmetic::bf16);
        else
            model->impl.hold_frozen_in(pg::WeightStorage(code));
    });
}

pg_status pg_model_weight_storage(const pg_model* model, pg_weight_storage* storage, int64_t* weight_bytes) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_weight_storage", model);
        if (storage) {
            const pg::Arithmetic a = model->impl.pass_default();
            *storage = a == pg::Arithmetic::fp16   ? PG_WEIGHTS_FP16_ARITHMETIC
                       : a == pg::Arithmetic::bf16 ? PG_WEIGHTS_BF16_ARITHMETIC
                                                   : pg_weight_storage(model->impl.storage());
        }
        if (weight_bytes) *weight_bytes = int64_t(model->impl.weight_bytes());
    });
}

pg_status pg_model_weights_mapped(const pg_model* model, int32_t* mapped) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_weights_mapped", model);
        PG_REQUIRE_NOT_NULL("pg_model_weights_mapped", mapped);
        *mapped = model->impl.mapped() ? 1 : 0;
    });
}

const char* pg_model_last_error(const pg_model* model) {
    return model ? pg::handle_last_error(model->id, nullptr) : "model is NULL";
}

pg_status pg_model_get_config(const pg_model* model, pg_model_config* config) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_get_config", model);
        PG_REQUIRE_NOT_NULL("pg_model_get_config", config);
        pg::write_result(pg::model_config_to_c(model->impl.config()), config, "pg_model_get_config");
    });
}

pg_status pg_model_num_params(const pg_model* model, int64_t* out) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_num_params", model);
        PG_REQUIRE_NOT_NULL("pg_model_num_params", out);
        *out = model->impl.num_params();
    });
}

pg_status pg_model_set_tokenizer(pg_model* model, const pg_tokenizer* tok) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_set_tokenizer", model);
        PG_REQUIRE_NOT_NULL("pg_model_set_tokenizer", tok);
        pg::require_arg(tok->impl != nullptr, "pg_model_set_tokenizer", "tokenizer is empty");
        pg::capi::require_tokenizer_fits(*tok->impl, model->impl.config(), "pg_model_set_tokenizer");
        model->set_tokenizer(tok->impl->clone());
    });
}

pg_status pg_model_get_tokenizer(const pg_model* model, const pg_tokenizer** tok) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_get_tokenizer", model);
        PG_REQUIRE_NOT_NULL("pg_model_get_tokenizer", tok);
        // Built when the tokenizer was set (pg_model::set_tokenizer): reading writes nothing.
        *tok = model->tokenizer_handle.get();
    });
}

pg_status pg_model_num_tensors(const pg_model* model, int32_t* out) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_num_tensors", model);
        PG_REQUIRE_NOT_NULL("pg_model_num_tensors", out);
        *out = int32_t(model->impl.tensors().size());
    });
}

pg_status pg_model_tensor_info(const pg_model* model, int32_t index, pg_tensor_info* info) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_tensor_info", model);
        PG_REQUIRE_NOT_NULL("pg_model_tensor_info", info);
        check_index(model, index, "pg_model_tensor_info");
        const pg::TensorEntry& e = model->impl.tensors()[index];
        pg_tensor_info full = pg::blank_c_struct<pg_tensor_info>();
        full.name = e.name.c_str();
        full.n_dims = e.n_dims;
        for (int d = 0; d < e.n_dims; ++d) full.shape[d] = e.shape[d];
        full.numel = e.numel;
        full.offset = e.offset;
        // A 16-bit frozen base has no fp32 copy to point into (pg_model_set_weight_storage).
        // fp32 tensors (owned or mapped) give their data; 16-bit ones NULL.
        full.data = model->impl.element_bytes(e.kind) == 4
                        ? reinterpret_cast<const float*>(model->impl.tensor_bytes(e))
                        : nullptr;
        pg::write_result(full, info, "pg_model_tensor_info");
    });
}

pg_status pg_model_find_tensor(const pg_model* model, const char* name, int32_t* index) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_find_tensor", model);
        PG_REQUIRE_NOT_NULL("pg_model_find_tensor", name);
        PG_REQUIRE_NOT_NULL("pg_model_find_tensor", index);
        const auto& t = model->impl.tensors();
        for (size_t i = 0; i < t.size(); ++i) {
            if (t[i].name == name) {
                *index = int32_t(i);
                return;
            }
        }
        throw pg::Error(PG_ERR_INVALID_ARGUMENT,
                        std::string("pg_model_find_tensor: no tensor named \"") + name + "\"");
    });
}

pg_status pg_model_tensor_data_mutable(pg_model* model, int32_t index, float** data) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_tensor_data_mutable", model);
        PG_REQUIRE_NOT_NULL("pg_model_tensor_data_mutable", data);
        check_index(model, index, "pg_model_tensor_data_mutable");
        *data = model->impl.params() + model->impl.tensors()[index].offset;
    });
}

pg_status pg_model_params(const pg_model* model, const float** data, int64_t* n) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_params", model);
        PG_REQUIRE_NOT_NULL("pg_model_params", data);
        PG_REQUIRE_NOT_NULL("pg_model_params", n);
        *data = model->impl.params();
        *n = model->impl.num_params();
    });
}

pg_status pg_model_forward(const pg_model* model, const int32_t* tokens, int32_t B, int32_t T,
                           const int32_t* targets, float* logits, float* mean_loss, int32_t n_threads) {
    return pg::guarded(err(model), [&] {
        const char* fn = "pg_model_forward";
        PG_REQUIRE_NOT_NULL(fn, model);
        pg::SessionOptions so;
        so.n_threads = n_threads;
        pg::Session session(model->impl, so);
        pg::capi::session_forward(session, tokens, B, T, targets, logits, mean_loss, fn);
    });
}

}  // extern "C"
