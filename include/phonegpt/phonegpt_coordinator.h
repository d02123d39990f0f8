/*
 * libphonegpt_coordinator: the coordinator's side of federated LoRA fine-tuning (docs/federated.md):
 * the keys it trusts, verifying an upload's signature, validating uploads against a base and
 * averaging adapters. The phone's side (training, adapters, signing the upload, the data
 * filter, differential privacy) is phonegpt.h, which this header includes; its conventions
 * (statuses, pg_last_error(), option structs, thread-safety) hold here too.
 *
 * Link libphonegpt_coordinator (CMake: phonegpt::phonegpt_coordinator) instead of libphonegpt:
 * it holds the whole phone library as well, so there is one copy of the library's state
 * (pg_last_error() covers the calls of both headers). An app that only trains links
 * libphonegpt and carries neither the verifier nor the averaging's SVD.
 */
#ifndef PHONEGPT_COORDINATOR_H
#define PHONEGPT_COORDINATOR_H

#include "phonegpt/phonegpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Trusted keys, signature verification and averaging                                        */
/* ------------------------------------------------------------------------------------------ */

/* The public keys a coordinator accepts. */
typedef struct pg_trusted_keys pg_trusted_keys;
PG_API pg_status pg_trusted_keys_create(pg_trusted_keys** out);
PG_API pg_status pg_trusted_keys_add(pg_trusted_keys* keys, const uint8_t public_key[32]);
PG_API void pg_trusted_keys_free(pg_trusted_keys* keys);

/* Verifies a signature file (`signature`, `sig_len` bytes) for the adapter file `file_bytes`
 * holding `adapter`: parseable, key id consistent, key trusted, Ed25519 signature valid over
 * the manifest, file bytes (SHA-256 and size), base fingerprint and training record as signed.
 * Every check runs. Returns PG_OK when the verification ran (whatever its outcome): *valid is 1
 * when every check passed, else 0 and `reason` (if capacity > 0) gets "check: detail" of the
 * first failed check, NUL-terminated and cut to fit. */
PG_API pg_status pg_lora_signature_verify(const pg_trusted_keys* trusted, const pg_lora_adapter* adapter,
                                          const void* file_bytes, size_t n, const char* signature,
                                          size_t sig_len, int32_t* valid, char* reason,
                                          size_t reason_capacity);

/* Averaging adapters of one base into one (the update of adapter i is s_i B_i A_i, weights are
 * normalised to sum 1; docs/federated.md):
 *   FEDAVG_FACTORS  A and B averaged separately (what coordinators usually do): NOT the mean
 *                   update; the report gives its relative error against it. One rank and scale.
 *   CAT             factors stacked (PEFT's "cat"): exact; the ranks add up (and must stay
 *                   within the base's widths).
 *   SVD             the exact mean update re-compressed to svd_rank by a truncated SVD; the
 *                   report gives the relative Frobenius residual.
 *   FROZEN_A        FFA-LoRA: every adapter trained with freeze_a and the same A; averaging B
 *                   is exact.
 *   TRIMMED_MEAN    robust: per coordinate of the dense updates, the mean of what remains after
 *                   dropping the trim_fraction largest and smallest values, re-compressed to
 *                   svd_rank as SVD; one vote per adapter (weights must be NULL).
 *   MEDIAN          robust: the coordinate-wise median, re-compressed likewise (weights NULL).
 * Clipping (any method) first scales each adapter's whole update down to a norm bound, so no
 * upload weighs more than a typical one (docs/federated.md, "Robust aggregation"). */
typedef enum pg_lora_average_method {
    PG_LORA_AVERAGE_FEDAVG_FACTORS = 0,
    PG_LORA_AVERAGE_CAT = 1,
    PG_LORA_AVERAGE_SVD = 2,
    PG_LORA_AVERAGE_FROZEN_A = 3,
    PG_LORA_AVERAGE_TRIMMED_MEAN = 4,
    PG_LORA_AVERAGE_MEDIAN = 5
} pg_lora_average_method;

/* The bound each update's Frobenius norm (over all adapted linears) is clipped to. */
typedef enum pg_lora_clip_mode {
    PG_LORA_CLIP_NONE = 0,       /* default */
    PG_LORA_CLIP_MEDIAN = 1,     /* the median of the inputs' norms */
    PG_LORA_CLIP_BOUND = 2       /* clip_norm */
} pg_lora_clip_mode;

typedef struct pg_lora_average_config {
    uint32_t struct_size;
    pg_lora_average_method method;   /* default PG_LORA_AVERAGE_FEDAVG_FACTORS */
    int32_t svd_rank;                /* SVD, TRIMMED_MEAN, MEDIAN: the result's rank; 0 (default) =
                                        largest input rank */
    pg_lora_clip_mode clip;          /* default PG_LORA_CLIP_NONE */
    double clip_norm;                /* PG_LORA_CLIP_BOUND: the bound, > 0 */
    double trim_fraction;            /* TRIMMED_MEAN: dropped at each end, [0, 0.5); default 0.25 */
} pg_lora_average_config;
PG_API void pg_lora_average_config_default(pg_lora_average_config* config);

typedef struct pg_lora_average_report {
    uint32_t struct_size;
    int32_t rank;                    /* the result's rank */
    double relative_error;           /* ||result's update - mean update||_F / ||mean update||_F,
                                        over every adapted linear (fp32; ~1e-7 when exact) */
    double svd_residual;             /* SVD, TRIMMED_MEAN, MEDIAN: the truncation's relative
                                        residual; else 0 */
    int32_t clipped;                 /* how many updates clipping scaled down */
    double clip_bound;               /* the norm bound applied; 0 without clipping */
} pg_lora_average_report;

/* Averages n >= 1 adapters; weights NULL = equal, else n finite weights >= 0 with a positive
 * sum (e.g. example counts); relative_error is measured against the method's target (the
 * weighted mean update, or the robust methods' coordinate-wise result). The result is a new, complete adapter of the same base (its
 * configuration, base identity, and a training record with the inputs' total tokens and no
 * steps). Different bases, targets or layers (any method), or ranks/scales (FEDAVG_FACTORS,
 * FROZEN_A), or A factors (FROZEN_A) are PG_ERR_GEOMETRY naming the adapter and both sides. */
PG_API pg_status pg_lora_average(const pg_lora_adapter* const* adapters, size_t n,
                                 const double* weights, const pg_lora_average_config* config,
                                 pg_lora_adapter** out, pg_lora_average_report* report);

/* ------------------------------------------------------------------------------------------ */
/* Validating an upload (docs/federated.md, "Validation")                                    */
/* ------------------------------------------------------------------------------------------ */

/* What a validator does with signatures. */
typedef enum pg_signature_policy {
    PG_SIGNATURE_REQUIRED = 0,   /* an unsigned or badly signed upload fails (default) */
    PG_SIGNATURE_OPTIONAL = 1,   /* unsigned is skipped; a signature present must verify */
    PG_SIGNATURE_OFF = 2         /* not checked (skipped) */
} pg_signature_policy;

/* What a validator asks of its base's provenance (pg_model_provenance), the "base trained"
 * check. A base that was never trained holds random weights: an adapter over it learns noise
 * while its loss still falls, and every upload would look fine. */
typedef enum pg_base_trained_policy {
    PG_BASE_TRAINED_REFUSE_UNTRAINED = 0, /* PG_PROVENANCE_INITIALISED fails; UNKNOWN (a checkpoint
                                             before format 1.1, imported weights) is skipped,
                                             with that reason (default) */
    PG_BASE_TRAINED_REQUIRE_RECORD = 1,   /* only PG_PROVENANCE_TRAINED passes */
    PG_BASE_TRAINED_OFF = 2               /* not checked (skipped) */
} pg_base_trained_policy;

typedef struct pg_validation_policy {
    uint32_t struct_size;
    pg_signature_policy signature;   /* default PG_SIGNATURE_REQUIRED */
    float start_tolerance;           /* |first recorded loss - reference loss| allowed, nats;
                                        default 0.5 */
    float divergence_tolerance;      /* mean loss of the record's last quarter may exceed its
                                        first quarter's by this, nats; default 0.1 */
    float heldout_tolerance;         /* the adapter's held-out loss may exceed the base's by
                                        this, nats; default 0.5 */
    int32_t n_threads;               /* evaluations; <= 0: all cores (default 0) */
    pg_base_trained_policy base_trained; /* default PG_BASE_TRAINED_REFUSE_UNTRAINED; this
                                        policy, not pg_model_allow_untrained_base, decides */
    float max_update_ratio;          /* "update norm": per adapted linear, ||s B A||_F over the
                                        base weight's ||W||_F at most this; default 20 */
    float max_round_ratio;           /* "round norm": per linear, ||s B A||_F over the median of
                                        the round's uploads at most this; default 2.5 */
} pg_validation_policy;
PG_API void pg_validation_policy_default(pg_validation_policy* policy);

/* A coordinator's validator for one base (borrowed: it must outlive the validator and not
 * change). It holds the trusted keys (copied), the reference loss and the held-out split, both
 * evaluated once when set, not per upload. */
typedef struct pg_validator pg_validator;
PG_API pg_status pg_validator_create(const pg_model* base, const pg_validation_policy* policy,
                                     pg_validator** out);
PG_API void pg_validator_free(pg_validator* validator);
PG_API const char* pg_validator_last_error(const pg_validator* validator);
/* Replaces the trusted keys with a copy of `keys`. */
PG_API pg_status pg_validator_set_trusted_keys(pg_validator* validator, const pg_trusted_keys* keys);
/* Where a trajectory must start: the loss of the base (with `resumed_from`, the adapter the
 * round started from, when not NULL; it must be this base's) on `tokens` (n >= 2) of the
 * adapter's kind of data, evaluated now. Without a reference the start check is skipped. */
PG_API pg_status pg_validator_set_reference(pg_validator* validator, const pg_lora_adapter* resumed_from,
                                            const int32_t* tokens, size_t n);
/* The coordinator's held-out split (n >= 2): the base is evaluated on it now, each upload when
 * validated; without it the held-out check is skipped. */
PG_API pg_status pg_validator_set_heldout(pg_validator* validator, const int32_t* tokens, size_t n);

typedef enum pg_check_outcome {
    PG_CHECK_PASSED = 0,
    PG_CHECK_FAILED = 1,
    PG_CHECK_SKIPPED = 2         /* could not run: its input failed or was not given */
} pg_check_outcome;

/* The report of one validation (opaque). */
typedef struct pg_validation_report pg_validation_report;

/* Validates an upload: the adapter file's `n` bytes and its signature file's text (`signature`
 * NULL = unsigned). Every check runs and is reported, in this order: "format", "geometry",
 * "base weights", "tokenizer", "base trained", "signature", "trajectory present",
 * "trajectory finite", "trajectory length", "trajectory start", "trajectory not diverging",
 * "update norm", "held-out evaluation" (docs/federated.md states each rule); then
 * pg_validation_reports_compare_round adds "round norm". Returns PG_OK whenever the validation ran, whatever the
 * upload holds (hostile bytes included); the report says whether it is accepted. */
PG_API pg_status pg_lora_validate(const pg_validator* validator, const void* bytes, size_t n,
                                  const char* signature, size_t sig_len, pg_validation_report** out);
/* The same from files; `signature_path` NULL = unsigned. A file that cannot be read is
 * PG_ERR_IO (nothing was uploaded to validate). */
PG_API pg_status pg_lora_validate_file(const pg_validator* validator, const char* adapter_path,
                                       const char* signature_path, pg_validation_report** out);
PG_API void pg_validation_report_free(pg_validation_report* report);

typedef struct pg_validation_summary {
    uint32_t struct_size;
    int32_t accepted;                /* 1 when no check failed */
    int32_t n_checks;
    int32_t n_failed;
    int32_t n_skipped;
    const char* key_id;              /* the signer's key id, "" when unsigned or unreadable
                                        (owned by the report) */
    int64_t steps;                   /* the training record's (0 when the file did not load) */
    int64_t tokens;
    /* Figures (NaN when not measured): */
    double reference_loss;           /* the base's (+ resumed adapter's) on the reference tokens */
    double first_loss;               /* the record's first and last losses */
    double last_loss;
    double heldout_base_loss;
    double heldout_adapter_loss;     /* improvement = heldout_base_loss - heldout_adapter_loss */
    double update_ratio;             /* the largest ||s B A||_F / ||W||_F over the linears */
    double round_ratio;              /* the largest norm over the round's median ("round norm") */
} pg_validation_summary;
PG_API pg_status pg_validation_report_summary(const pg_validation_report* report,
                                              pg_validation_summary* summary);

typedef struct pg_validation_check {
    uint32_t struct_size;
    const char* name;                /* owned by the report */
    pg_check_outcome outcome;
    const char* message;             /* why it failed or was skipped, or what passed */
} pg_validation_check;
/* Check `index` in [0, n_checks). */
PG_API pg_status pg_validation_report_check(const pg_validation_report* report, int32_t index,
                                            pg_validation_check* check);
/* The report as JSON (docs/federated.md): sizing as for pg_tokenizer_decode. */
PG_API pg_status pg_validation_report_json(const pg_validation_report* report, char* text,
                                           size_t capacity, size_t* len);
/* A new handle on the adapter the upload holds (what was validated: average exactly this);
 * PG_ERR_STATE when the file did not load. */
PG_API pg_status pg_validation_report_adapter(const pg_validation_report* report,
                                              pg_lora_adapter** out);
/* Once every upload of a round is validated: adds the "round norm" check to each of the n
 * reports (an upload's per-linear update norm over the median of the uploads adapting that
 * linear, at most policy.max_round_ratio) and updates their acceptance. Skipped for an upload
 * that did not load or fit the base, and for all when fewer than 3 are comparable. A report
 * compared before is PG_ERR_STATE (nothing is changed). */
PG_API pg_status pg_validation_reports_compare_round(const pg_validator* validator,
                                                     pg_validation_report* const* reports, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* PHONEGPT_COORDINATOR_H */
