// C API: the coordinator's side of the federated loop: the keys it trusts, verifying an upload's
// signature (coordinator/verify) and averaging adapters (coordinator/average).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "phonegpt/phonegpt_coordinator.h"
#include "capi/boundary.hpp"
#include "capi/lora_handles.hpp"
#include "coordinator/average.hpp"
#include "coordinator/coordinator_handles.hpp"
#include "coordinator/verify.hpp"

namespace {

pg_lora_average_config default_average_config() {
    auto c = pg::blank_c_struct<pg_lora_average_config>();
    const pg::lora::AverageOptions d;
    c.method = static_cast<pg_lora_average_method>(d.method);
    c.svd_rank = d.svd_rank;
    c.clip = static_cast<pg_lora_clip_mode>(d.clip);
    c.clip_norm = d.clip_norm;
    c.trim_fraction = d.trim_fraction;
    return c;
}

}  // namespace

extern "C" {

pg_status pg_trusted_keys_create(pg_trusted_keys** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_trusted_keys_create", out);
        *out = new pg_trusted_keys();
    });
}

pg_status pg_trusted_keys_add(pg_trusted_keys* keys, const uint8_t public_key[32]) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_trusted_keys_add", keys);
        PG_REQUIRE_NOT_NULL("pg_trusted_keys_add", public_key);
        keys->impl.add(pg::lora::public_key_from(public_key));
    });
}

void pg_trusted_keys_free(pg_trusted_keys* keys) { delete keys; }

pg_status pg_lora_signature_verify(const pg_trusted_keys* trusted, const pg_lora_adapter* adapter, const void* file_bytes,
                                   size_t n, const char* signature, size_t sig_len, int32_t* valid, char* reason,
                                   size_t reason_capacity) {
    return pg::guarded(pg::shared_errors(adapter), [&] {
        const char* fn = "pg_lora_signature_verify";
        PG_REQUIRE_NOT_NULL(fn, trusted);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, valid);
        pg::require_arg(file_bytes != nullptr || n == 0, fn, "file_bytes is NULL");
        pg::require_arg(signature != nullptr || sig_len == 0, fn, "signature is NULL");
        pg::require_arg(reason != nullptr || reason_capacity == 0, fn, "reason is NULL");
        const auto v = pg::lora::verify_adapter_signature(std::string(signature ? signature : "", sig_len), file_bytes, n,
                                                          adapter->impl.base(), adapter->impl.record(), trusted->impl);
        *valid = v.valid ? 1 : 0;
        if (reason_capacity > 0) {
            const std::string why = v.first_failure();
            const std::size_t k = std::min(why.size(), reason_capacity - 1);
            std::memcpy(reason, why.data(), k);
            reason[k] = '\0';
        }
    });
}

void pg_lora_average_config_default(pg_lora_average_config* config) {
    if (config) *config = default_average_config();
}

pg_status pg_lora_average(const pg_lora_adapter* const* adapters, size_t n, const double* weights,
                          const pg_lora_average_config* config, pg_lora_adapter** out,
                          pg_lora_average_report* report) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_lora_average";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, adapters);
        pg::require_arg(n >= 1, fn, "n is 0 (nothing to average)");
        pg_lora_average_config c = default_average_config();
        pg::read_options(config, &c, fn);
        pg::require_arg(c.method >= PG_LORA_AVERAGE_FEDAVG_FACTORS && c.method <= PG_LORA_AVERAGE_MEDIAN, fn,
                        "config->method is not a pg_lora_average_method");
        pg::require_arg(c.clip >= PG_LORA_CLIP_NONE && c.clip <= PG_LORA_CLIP_BOUND, fn,
                        "config->clip is not a pg_lora_clip_mode");
        std::vector<const pg::lora::Adapter*> in(n);
        for (size_t i = 0; i < n; ++i) {
            pg::require_arg(adapters[i] != nullptr, fn, ("adapters[" + std::to_string(i) + "] is NULL").c_str());
            in[i] = &adapters[i]->impl;
        }
        const std::vector<double> w = weights ? std::vector<double>(weights, weights + n) : std::vector<double>{};
        pg::lora::AverageReport r;
        pg::lora::AverageOptions options;
        options.method = static_cast<pg::lora::AverageMethod>(c.method);
        options.svd_rank = c.svd_rank;
        options.clip = static_cast<pg::lora::ClipMode>(c.clip);
        options.clip_norm = c.clip_norm;
        options.trim_fraction = c.trim_fraction;
        pg::lora::Adapter avg = pg::lora::average_adapters(in, w, options, &r);
        if (report) {
            auto rep = pg::blank_c_struct<pg_lora_average_report>();
            rep.rank = r.rank;
            rep.relative_error = r.relative_error;
            rep.svd_residual = r.svd_residual;
            rep.clipped = r.clipped;
            rep.clip_bound = r.clip_bound;
            pg::write_result(rep, report, fn);
        }
        *out = new pg_lora_adapter(std::move(avg));
    });
}

}  // extern "C"
