// C API: what a phone does to its upload before sending it: Ed25519 keys and signing the adapter
// file (lib/lora/sign), and client-side differential privacy (lib/lora/privacy). Verifying and
// averaging are the coordinator's (lib/coordinator/coordinator_api.cpp).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/boundary.hpp"
#include "capi/lora_handles.hpp"
#include "capi/text_out.hpp"
#include "lora/privacy.hpp"
#include "lora/sign.hpp"

struct pg_signing_key {
    explicit pg_signing_key(pg::lora::SigningKey k) : impl(std::move(k)) {}
    pg::lora::SigningKey impl;
};

namespace {

pg::ErrorTarget adapter_err(const pg_lora_adapter* a) { return pg::shared_errors(a); }

pg_lora_privacy_config default_privacy_config() {
    const pg::lora::PrivacyOptions d;
    auto c = pg::blank_c_struct<pg_lora_privacy_config>();
    c.clip_norm = d.clip_norm;
    c.noise_multiplier = d.noise_multiplier;
    c.seed = d.seed;
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
        const std::string s = pg::lora::key_id_of(pg::lora::public_key_from(public_key));
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
