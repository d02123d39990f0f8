// C API: validating an uploaded adapter (lib/coordinator/validate): the validator of one base, its
// report and the report's JSON.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "phonegpt/phonegpt_coordinator.h"
#include "capi/boundary.hpp"
#include "coordinator/coordinator_handles.hpp"
#include "capi/handles.hpp"
#include "capi/lora_handles.hpp"
#include "capi/text_out.hpp"
#include "core/file_io.hpp"
#include "coordinator/validate.hpp"

struct pg_validator {
    explicit pg_validator(const pg::Model& base, const pg::lora::ValidationPolicy& policy) : impl(base, policy) {}
    pg::lora::Validator impl;
    pg::HandleId id;
    pg::HandleMessage last_error;  // written by the set_* calls
};

struct pg_validation_report {
    explicit pg_validation_report(pg::lora::ValidationReport r) : impl(std::move(r)) {}
    pg::lora::ValidationReport impl;
};

namespace {

pg::ErrorTarget validator_err(const pg_validator* v) { return pg::shared_errors(v); }
pg::ErrorTarget validator_err(pg_validator* v) { return pg::owned_errors(v); }

pg_validation_policy default_policy() {
    const pg::lora::ValidationPolicy d;
    auto c = pg::blank_c_struct<pg_validation_policy>();
    c.signature = static_cast<pg_signature_policy>(d.signature);
    c.start_tolerance = d.start_tolerance;
    c.divergence_tolerance = d.divergence_tolerance;
    c.heldout_tolerance = d.heldout_tolerance;
    c.n_threads = d.n_threads;
    c.base_trained = static_cast<pg_base_trained_policy>(d.base_trained);
    c.max_update_ratio = d.max_update_ratio;
    c.max_round_ratio = d.max_round_ratio;
    return c;
}

// The whole of a file (an upload), through the library's one bounded reader.
std::string read_whole(const char* path) {
    pg::io::FileSource src(path);
    std::string bytes(std::size_t(src.size()), '\0');
    src.read_at(0, bytes.data(), bytes.size(), "upload");
    return bytes;
}

pg_status finish(pg::lora::ValidationReport r, pg_validation_report** out) {
    *out = new pg_validation_report(std::move(r));
    return PG_OK;
}

}  // namespace

extern "C" {

void pg_validation_policy_default(pg_validation_policy* policy) {
    if (policy) *policy = default_policy();
}

pg_status pg_validator_create(const pg_model* base, const pg_validation_policy* policy, pg_validator** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_validator_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, base);
        pg_validation_policy c = default_policy();
        pg::read_options(policy, &c, fn);
        pg::require_arg(c.signature >= PG_SIGNATURE_REQUIRED && c.signature <= PG_SIGNATURE_OFF, fn,
                        "policy->signature is not a pg_signature_policy");
        pg::require_arg(c.base_trained >= PG_BASE_TRAINED_REFUSE_UNTRAINED && c.base_trained <= PG_BASE_TRAINED_OFF, fn,
                        "policy->base_trained is not a pg_base_trained_policy");
        pg::lora::ValidationPolicy p;
        p.signature = static_cast<pg::lora::SignaturePolicy>(c.signature);
        p.start_tolerance = c.start_tolerance;
        p.divergence_tolerance = c.divergence_tolerance;
        p.heldout_tolerance = c.heldout_tolerance;
        p.n_threads = c.n_threads;
        p.base_trained = static_cast<pg::lora::BaseTrainedPolicy>(c.base_trained);
        p.max_update_ratio = c.max_update_ratio;
        p.max_round_ratio = c.max_round_ratio;
        *out = new pg_validator(base->impl, p);
    });
}

void pg_validator_free(pg_validator* validator) { delete validator; }

const char* pg_validator_last_error(const pg_validator* validator) {
    return validator ? pg::handle_last_error(validator->id, &validator->last_error) : "";
}

pg_status pg_validator_set_trusted_keys(pg_validator* validator, const pg_trusted_keys* keys) {
    return pg::guarded(validator_err(validator), [&] {
        PG_REQUIRE_NOT_NULL("pg_validator_set_trusted_keys", validator);
        PG_REQUIRE_NOT_NULL("pg_validator_set_trusted_keys", keys);
        validator->impl.set_trusted_keys(keys->impl);
    });
}

pg_status pg_validator_set_reference(pg_validator* validator, const pg_lora_adapter* resumed_from,
                                     const int32_t* tokens, size_t n) {
    return pg::guarded(validator_err(validator), [&] {
        PG_REQUIRE_NOT_NULL("pg_validator_set_reference", validator);
        PG_REQUIRE_NOT_NULL("pg_validator_set_reference", tokens);
        pg::capi::require_token_ids(tokens, n, validator->impl.base().config().vocab_size, "pg_validator_set_reference");
        validator->impl.set_reference(resumed_from ? &resumed_from->impl : nullptr, tokens, n);
    });
}

pg_status pg_validator_set_heldout(pg_validator* validator, const int32_t* tokens, size_t n) {
    return pg::guarded(validator_err(validator), [&] {
        PG_REQUIRE_NOT_NULL("pg_validator_set_heldout", validator);
        PG_REQUIRE_NOT_NULL("pg_validator_set_heldout", tokens);
        pg::capi::require_token_ids(tokens, n, validator->impl.base().config().vocab_size, "pg_validator_set_heldout");
        validator->impl.set_heldout(tokens, n);
    });
}

pg_status pg_lora_validate(const pg_validator* validator, const void* bytes, size_t n, const char* signature,
                           size_t sig_len, pg_validation_report** out) {
    pg_status status = PG_OK;
    const pg_status guard = pg::guarded(validator_err(validator), [&] {
        const char* fn = "pg_lora_validate";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, validator);
        pg::require_arg(bytes != nullptr || n == 0, fn, "bytes is NULL");
        std::unique_ptr<std::string> sig;
        if (signature) sig = std::make_unique<std::string>(signature, sig_len);
        status = finish(validator->impl.validate(bytes ? bytes : "", n, sig.get()), out);
    });
    return guard != PG_OK ? guard : status;
}

pg_status pg_lora_validate_file(const pg_validator* validator, const char* adapter_path, const char* signature_path,
                                pg_validation_report** out) {
    return pg::guarded(validator_err(validator), [&] {
        const char* fn = "pg_lora_validate_file";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, validator);
        PG_REQUIRE_NOT_NULL(fn, adapter_path);
        const std::string bytes = read_whole(adapter_path);
        std::unique_ptr<std::string> sig;
        if (signature_path) sig = std::make_unique<std::string>(read_whole(signature_path));
        finish(validator->impl.validate(bytes.data(), bytes.size(), sig.get()), out);
    });
}

void pg_validation_report_free(pg_validation_report* report) { delete report; }

pg_status pg_validation_report_summary(const pg_validation_report* report, pg_validation_summary* summary) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_validation_report_summary";
        PG_REQUIRE_NOT_NULL(fn, report);
        PG_REQUIRE_NOT_NULL(fn, summary);
        const pg::lora::ValidationReport& r = report->impl;
        auto s = pg::blank_c_struct<pg_validation_summary>();
        s.accepted = r.accepted ? 1 : 0;
        s.n_checks = int32_t(r.checks.size());
        s.n_failed = r.count(pg::lora::CheckOutcome::kFailed);
        s.n_skipped = r.count(pg::lora::CheckOutcome::kSkipped);
        s.key_id = r.key_id.c_str();
        s.steps = r.steps;
        s.tokens = r.tokens;
        s.reference_loss = r.reference_loss;
        s.first_loss = r.first_loss;
        s.last_loss = r.last_loss;
        s.heldout_base_loss = r.heldout_base_loss;
        s.heldout_adapter_loss = r.heldout_adapter_loss;
        s.update_ratio = r.update_ratio;
        s.round_ratio = r.round_ratio;
        pg::write_result(s, summary, fn);
    });
}

pg_status pg_validation_report_check(const pg_validation_report* report, int32_t index, pg_validation_check* check) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_validation_report_check";
        PG_REQUIRE_NOT_NULL(fn, report);
        PG_REQUIRE_NOT_NULL(fn, check);
        const auto& checks = report->impl.checks;
        pg::require_arg(index >= 0 && std::size_t(index) < checks.size(), fn,
                        ("index " + std::to_string(index) + " is outside [0, " + std::to_string(checks.size()) + ")").c_str());
        const pg::lora::ValidationCheck& c = checks[std::size_t(index)];
        auto out = pg::blank_c_struct<pg_validation_check>();
        out.name = c.name.c_str();
        out.outcome = static_cast<pg_check_outcome>(c.outcome);
        out.message = c.message.c_str();
        pg::write_result(out, check, fn);
    });
}

pg_status pg_validation_report_json(const pg_validation_report* report, char* text, size_t capacity, size_t* len) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_validation_report_json";
        PG_REQUIRE_NOT_NULL(fn, report);
        PG_REQUIRE_NOT_NULL(fn, len);
        pg::require_arg(text != nullptr || capacity == 0, fn, "text is NULL");
        pg::capi::copy_text_out(report->impl.json(), text, capacity, len, fn);
    });
}

pg_status pg_validation_report_adapter(const pg_validation_report* report, pg_lora_adapter** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_validation_report_adapter";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, report);
        if (!report->impl.adapter)
            throw pg::Error(PG_ERR_STATE, std::string(fn) + ": the upload did not load (" +
                                              report->impl.checks.front().message + ")");
        *out = new pg_lora_adapter(*report->impl.adapter);
    });
}

pg_status pg_validation_reports_compare_round(const pg_validator* validator, pg_validation_report* const* reports,
                                             size_t n) {
    return pg::guarded(validator_err(validator), [&] {
        const char* fn = "pg_validation_reports_compare_round";
        PG_REQUIRE_NOT_NULL(fn, validator);
        pg::require_arg(reports != nullptr || n == 0, fn, "reports is NULL");
        std::vector<pg::lora::ValidationReport*> in(n);
        for (size_t i = 0; i < n; ++i) {
            pg::require_arg(reports[i] != nullptr, fn, ("reports[" + std::to_string(i) + "] is NULL").c_str());
            in[i] = &reports[i]->impl;
        }
        validator->impl.compare_round(in);
    });
}

}  // extern "C"
