// C API: the coordinator's side of the federated loop: Ed25519 keys, signing and verifying
// adapter files (lib/lora/sign), and averaging adapters (lib/coordinator/average).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/boundary.hpp"
#include "coordinator/coordinator_handles.hpp"
#include "capi/lora_handles.hpp"
#include "capi/text_out.hpp"
#include "coordinator/average.hpp"
#include "lora/privacy.hpp"
#include "lora/sign.hpp"

namespace {

pg::lora::PublicKey public_key_from(const uint8_t* bytes) {
    pg::lora::PublicKey k;
    std::memcpy(k.data(), bytes, k.size());
    return k;
}

pg::ErrorTarget adapter_err(const pg_lora_adapter* a) { return pg::shared_errors(a); }

pg_lora_privacy_config default_privacy_config() {
    const pg::lora::PrivacyOptions d;
    auto c = pg::blank_c_struct<pg_lora_privacy_config>();
    c.clip_norm = d.clip_norm;
    c.noise_multiplier = d.noise_multiplier;
    c.seed = d.seed;
    return c;
}

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

pg_status pg_signing_key_generate(pg_signing_key** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_signing_key_generate", out);
        *out = nullptr;
        *out = new pg_signing_key(pg::lora::SigningKey::generate());
    });
}

pg_status pg_signing_key_from_seed(const uint8_t seed[32], pg_signing_key** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_signing_key_from_seed", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_signing_key_from_seed", seed);
        std::array<uint8_t, 32> s;
        std::memcpy(s.data(), seed, s.size());
        *out = new pg_signing_key(pg::lora::SigningKey::from_seed(s));
    });
}

pg_status pg_signing_key_save(const pg_signing_key* key, const char* path) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_signing_key_save", key);
        PG_REQUIRE_NOT_NULL("pg_signing_key_save", path);
        key->impl.save(path);
    });
}

pg_status pg_signing_key_load(const char* path, pg_signing_key** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_signing_key_load", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_signing_key_load", path);
        *out = new pg_signing_key(pg::lora::SigningKey::load(path));
    });
}

pg_status pg_signing_key_public(const pg_signing_key* key, uint8_t public_key[32]) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_signing_key_public", key);
        PG_REQUIRE_NOT_NULL("pg_signing_key_public", public_key);
        std::memcpy(public_key, key->impl.public_key().data(), 32);
    });
}

void pg_signing_key_free(pg_signing_key* key) { delete key; }

pg_status pg_key_id(const uint8_t public_key[32], char id[17]) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_key_id", public_key);
        PG_REQUIRE_NOT_NULL("pg_key_id", id);
        const std::string s = pg::lora::key_id_of(public_key_from(public_key));
        std::memcpy(id, s.c_str(), 17);
    });
}

pg_status pg_lora_adapter_sign(const pg_signing_key* key, const pg_lora_adapter* adapter, const void* file_bytes,
                               size_t n, char* signature, size_t capacity, size_t* len) {
    return pg::guarded(adapter_err(adapter), [&] {
        const char* fn = "pg_lora_adapter_sign";
        PG_REQUIRE_NOT_NULL(fn, key);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, file_bytes);
        PG_REQUIRE_NOT_NULL(fn, len);
        pg::require_arg(signature != nullptr || capacity == 0, fn, "signature is NULL");
        const std::string text = pg::lora::sign_adapter(key->impl, file_bytes, n, adapter->impl.base(), adapter->impl.record());
        pg::capi::copy_text_out(text, signature, capacity, len, fn);
    });
}

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
        keys->impl.add(public_key_from(public_key));
    });
}

void pg_trusted_keys_free(pg_trusted_keys* keys) { delete keys; }

pg_status pg_lora_signature_verify(const pg_trusted_keys* trusted, const pg_lora_adapter* adapter, const void* file_bytes,
                                   size_t n, const char* signature, size_t sig_len, int32_t* valid, char* reason,
                                   size_t reason_capacity) {
    return pg::guarded(adapter_err(adapter), [&] {
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

void pg_lora_privacy_config_default(pg_lora_privacy_config* config) {
    if (config) *config = default_privacy_config();
}

pg_status pg_lora_adapter_privatize(pg_lora_adapter* adapter, const pg_lora_adapter* start,
                                   const pg_lora_privacy_config* config, pg_lora_privacy_report* report) {
    return pg::guarded(pg::shared_errors(adapter), [&] {
        const char* fn = "pg_lora_adapter_privatize";
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, start);
        pg::require_arg(start != adapter, fn, "start is the adapter itself (give the round's starting adapter)");
        pg_lora_privacy_config c = default_privacy_config();
        pg::read_options(config, &c, fn);
        const pg::lora::PrivacyReport r =
            pg::lora::privatize_update(adapter->impl, start->impl, {c.clip_norm, c.noise_multiplier, c.seed});
        if (report) {
            auto rep = pg::blank_c_struct<pg_lora_privacy_report>();
            rep.delta_norm = r.delta_norm;
            rep.clipped = r.clipped ? 1 : 0;
            rep.noise_stddev = r.noise_stddev;
            rep.noised = r.noised;
            pg::write_result(rep, report, fn);
        }
    });
}

pg_status pg_privacy_epsilon(double noise_multiplier, int64_t rounds, double delta, double* epsilon, double* order) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_privacy_epsilon", epsilon);
        const pg::lora::PrivacyBudget b = pg::lora::dp_epsilon(noise_multiplier, rounds, delta);
        *epsilon = b.epsilon;
        if (order) *order = b.order;
    });
}

}  // extern "C"
