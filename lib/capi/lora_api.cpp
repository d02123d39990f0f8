// C API: LoRA configuration and the in-memory adapter.
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "capi/lora_handles.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "lora/config.hpp"
#include "lora/merge.hpp"

namespace {

std::string* err(const pg_lora_adapter* a) { return a ? &a->last_error : nullptr; }

void check_index(const pg_lora_adapter* adapter, int32_t index, const char* fn) {
    const auto n = adapter->impl.tensors().size();
    pg::require_arg(index >= 0 && static_cast<std::size_t>(index) < n, fn,
                    ("tensor index " + std::to_string(index) + " is outside [0, " +
                     std::to_string(n) + ")").c_str());
}

// Internal messages get the function's name in front.
template <class F>
void named(const char* fn, F&& body) {
    try {
        body();
    } catch (const pg::Error& e) {
        throw pg::Error(e.status(), std::string(fn) + ": " + e.what());
    }
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
        named(fn, [&] { pg::lora::lora_config_from_c(*config); });
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
        named(fn, [&] {
            const pg::lora::LoraConfig cfg = pg::lora::lora_config_from_c(*config);
            *out = new pg_lora_adapter(pg::lora::Adapter::create(base->impl, cfg));
        });
    });
}

void pg_lora_adapter_free(pg_lora_adapter* adapter) { delete adapter; }

const char* pg_lora_adapter_last_error(const pg_lora_adapter* adapter) {
    return adapter ? adapter->last_error.c_str() : "adapter is NULL";
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
        named(fn, [&] { pg::lora::merge_into_copy(base->impl, adapter->impl, out->impl, n_threads); });
        *merged = out.release();
    });
}

pg_status pg_lora_merge_in_place(pg_model* model, const pg_lora_adapter* adapter, int32_t n_threads) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_merge_in_place";
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        named(fn, [&] { pg::lora::merge_in_place(model->impl, adapter->impl, n_threads); });
    });
}

pg_status pg_lora_unmerge_in_place(pg_model* model, const pg_lora_adapter* adapter, int32_t n_threads) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_unmerge_in_place";
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        named(fn, [&] { pg::lora::unmerge_in_place(model->impl, adapter->impl, n_threads); });
    });
}

pg_status pg_lora_adapter_save(const pg_lora_adapter* adapter, const char* path) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_save";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, path);
        named(fn, [&] { pg::lora::save_adapter(adapter->impl, path); });
    });
}

pg_status pg_lora_adapter_load(const char* path, const pg_model* base, pg_lora_adapter** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_adapter_load";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, path);
        named(fn, [&] {
            auto loaded = std::make_unique<pg_lora_adapter>(pg::lora::load_adapter(path));
            if (base) pg::lora::check_adapter_matches_base(loaded->impl, base->impl);
            *out = loaded.release();
        });
    });
}

pg_status pg_lora_adapter_check_base(const pg_lora_adapter* adapter, const pg_model* base) {
    return pg::guarded(err(adapter), [&] {
        const char* fn = "pg_lora_adapter_check_base";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, base);
        named(fn, [&] { pg::lora::check_adapter_matches_base(adapter->impl, base->impl); });
    });
}

}  // extern "C"
