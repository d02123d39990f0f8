// Validating an uploaded adapter against the coordinator's base: every check runs and is
// reported by name with its outcome (passed / failed / skipped, and why), so an operator sees
// everything wrong with an upload at once, not the first thing. The checks, in report order:
//   format              the file reads: format version, metadata and tensor checksums, finite
//                       factors (lora/adapter_file.hpp's reader)
//   geometry            the base geometry the adapter names equals the coordinator's base, and
//                       the adapter's own configuration (rank, targets, layers) fits it
//   base weights        the base weights hash it was trained on is this base's
//   tokenizer           the same tokenizer (kind, vocabulary, bytes), or both none
//   base trained        the coordinator's base was trained (model/provenance.hpp), by policy:
//                       a never-trained base holds random weights, so every upload over it
//                       learns noise while its loss still falls
//   signature           by policy: required / optional / off, against the trusted keys
//   trajectory present  the training record has at least one step
//   trajectory finite   every recorded loss and learning rate is finite
//   trajectory length   losses and learning rates as long as the recorded steps, tokens >= steps
//   trajectory start    the first loss is within start_tolerance of the reference loss (the base,
//                       plus the adapter the round resumed from, on tokens of the adapter's kind)
//   trajectory not diverging  mean of the last quarter of the losses <= mean of the first
//                       quarter + divergence_tolerance
//   update norm         per adapted linear, ||s B A||_F / ||W||_F (W the base's weight) is at
//                       most max_update_ratio: needs no data, so a scaled-up update is refused
//                       even without a held-out split
//   held-out evaluation the adapter on the coordinator's held-out tokens: its loss, the base's,
//                       and the improvement; fails when worse than the base by more than
//                       heldout_tolerance
//   round norm          added by compare_round once the round's uploads are in: per linear,
//                       ||s B A||_F over the median of the round's uploads' is at most
//                       max_round_ratio
// A check that cannot run (its input failed or was not given) is skipped with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lora/adapter.hpp"
#include "coordinator/verify.hpp"
#include "model/model.hpp"

namespace pg::lora {

enum class SignaturePolicy { kRequired = 0, kOptional = 1, kOff = 2 };
// What the "base trained" check asks of the base's provenance: refuse a base recorded as never
// trained (an unrecorded provenance is skipped, with the reason); require a record of training
// (an unrecorded one fails too); or nothing.
enum class BaseTrainedPolicy { kRefuseUntrained = 0, kRequireRecord = 1, kOff = 2 };
enum class CheckOutcome { kPassed = 0, kFailed = 1, kSkipped = 2 };
const char* check_outcome_name(CheckOutcome o);  // "passed", "failed", "skipped"

struct ValidationPolicy {
    SignaturePolicy signature = SignaturePolicy::kRequired;
    BaseTrainedPolicy base_trained = BaseTrainedPolicy::kRefuseUntrained;
    float start_tolerance = 0.5f;       // nats
    float divergence_tolerance = 0.1f;  // nats
    float heldout_tolerance = 0.5f;     // nats
    int n_threads = 0;                  // evaluations; <= 0: all cores
    // Defaults from measurement (docs/federated.md, "Bounds on the update"): honest adapters
    // stay far below, B scaled by 1,000 is far above.
    float max_update_ratio = 20.0f;
    float max_round_ratio = 2.5f;
};

struct ValidationCheck {
    std::string name;
    CheckOutcome outcome = CheckOutcome::kSkipped;
    std::string message;
};

struct ValidationReport {
    std::vector<ValidationCheck> checks;
    bool accepted = false;               // no check failed
    std::string key_id;                  // the signer named by the signature ("" if none)
    int64_t steps = 0, tokens = 0;       // from the record (0 when the file did not load)
    // Figures; NaN when not measured.
    double reference_loss, first_loss, last_loss, heldout_base_loss, heldout_adapter_loss;
    double update_ratio;  // the largest ||s B A||_F / ||W||_F over the adapted linears
    double round_ratio;   // the largest norm over the round's median (compare_round)
    std::optional<Adapter> adapter;      // what the file holds, when it loaded
    ValidationReport();
    int count(CheckOutcome o) const;
    const ValidationCheck* find(const std::string& name) const;
    // "check: message" of the first failed check, or "".
    std::string first_failure() const;
    // The report as JSON (lib/io/json's writer): accepted, counts, key id, figures (null when
    // not measured) and every check.
    std::string json() const;
};

// The coordinator's side of one round: the base, the keys it trusts, the reference loss the
// trajectories must start near and the held-out tokens (both losses computed once, here, not
// per upload). Borrows the base, which must outlive it and not change.
class Validator {
public:
    Validator(const Model& base, const ValidationPolicy& policy);
    const ValidationPolicy& policy() const { return policy_; }
    void set_trusted_keys(const TrustedKeys& keys) { trusted_ = keys; }
    // The base's loss (plus `resumed_from`'s, which must be this base's adapter, when not null)
    // on `tokens` of the adapter's kind of data: where a trajectory must start.
    void set_reference(const Adapter* resumed_from, const int32_t* tokens, std::size_t n);
    // The held-out split: evaluates the base on it now.
    void set_heldout(const int32_t* tokens, std::size_t n);
    const Model& base() const { return base_; }

    // Validates an adapter file's bytes and its signature file's text (nullptr: no signature).
    // Never throws for anything in the upload; throws only for out-of-memory.
    ValidationReport validate(const void* bytes, std::size_t n, const std::string* signature) const;
    // The same from an already-read adapter (`load_error` non-empty: it did not read, with that
    // reason; then `adapter` is ignored).
    ValidationReport validate_loaded(const Adapter* adapter, const std::string& load_error, const void* bytes,
                                     std::size_t n, const std::string* signature) const;
    // Once a round's uploads are validated: adds the "round norm" check to each report (per
    // linear, its update's norm over the median of the uploads that adapt that linear, among
    // those that passed "geometry"), and refuses those above max_round_ratio. Skipped (with the
    // reason) for an upload that did not load and for every upload of a round with fewer than 3.
    void compare_round(const std::vector<ValidationReport*>& reports) const;

private:
    double loss_on(const Adapter* adapter, const std::vector<int32_t>& tokens) const;
    const Model& base_;
    BaseIdentity identity_;
    ValidationPolicy policy_;
    TrustedKeys trusted_;
    double reference_loss_;
    std::vector<int32_t> heldout_;
    double heldout_base_loss_;
    // ||W||_F of the base's weight of each (layer, linear kind); empty when the base's weights
    // are not fp32 in memory (16-bit or mapped), which skips "update norm".
    std::map<std::pair<int, int>, double> weight_norms_;
};

}  // namespace pg::lora
