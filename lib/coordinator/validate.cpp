#include "coordinator/validate.hpp"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "core/error.hpp"
#include "eval/evaluate.hpp"
#include "eval/session.hpp"
#include "core/file_io.hpp"
#include "core/hex.hpp"
#include "core/json.hpp"
#include "lora/adapter_file.hpp"
#include "coordinator/average.hpp"
#include "lora/lora_hook.hpp"
#include "lora/merge.hpp"

namespace pg::lora {

namespace {

constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

std::string fixed(double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
}

// The message of a comparison that throws pg::Error on a mismatch ("" when it matches).
template <class F>
std::string mismatch(F&& compare) {
    try {
        compare();
        return "";
    } catch (const Error& e) {
        return e.what();
    }
}

// Mean of losses[begin, end).
double mean_of(const std::vector<float>& v, std::size_t begin, std::size_t end) {
    double s = 0.0;
    for (std::size_t i = begin; i < end; ++i) s += v[i];
    return s / double(end - begin);
}

std::vector<int32_t> checked_tokens(const int32_t* tokens, std::size_t n, const Model& base, const char* what) {
    require(tokens != nullptr && n >= 2, PG_ERR_INVALID_ARGUMENT,
            std::string(what) + ": needs at least 2 tokens, got " + std::to_string(tokens ? n : 0));
    // Precondition: ids in [0, vocab_size), checked at the C boundary (capi::require_token_ids).
    for (std::size_t i = 0; i < n; ++i) assert(tokens[i] >= 0 && tokens[i] < base.config().vocab_size);
    (void)base;
    return std::vector<int32_t>(tokens, tokens + n);
}

// The "base trained" check of the coordinator's own base: its outcome and message.
std::pair<CheckOutcome, std::string> base_trained_check(const Provenance& p, BaseTrainedPolicy policy) {
    if (policy == BaseTrainedPolicy::kOff) return {CheckOutcome::kSkipped, "the policy does not check the base's training"};
    switch (p.kind) {
        case Provenance::Kind::trained: return {CheckOutcome::kPassed, "the base was " + p.describe()};
        case Provenance::Kind::initialised:
            return {CheckOutcome::kFailed, "the base was " + p.describe() +
                                               ": its weights are random, so an adapter over it learns noise while its "
                                               "loss still falls (policy base_trained = off allows it)"};
        case Provenance::Kind::unknown: break;
    }
    const std::string why = "the base's provenance is not recorded (a checkpoint older than format 1.1, or imported weights)";
    if (policy == BaseTrainedPolicy::kRequireRecord)
        return {CheckOutcome::kFailed, why + " and the policy requires a base recorded as trained"};
    return {CheckOutcome::kSkipped, why + " (policy base_trained = require_record refuses that)"};
}

}  // namespace

const char* check_outcome_name(CheckOutcome o) {
    switch (o) {
        case CheckOutcome::kPassed: return "passed";
        case CheckOutcome::kFailed: return "failed";
        case CheckOutcome::kSkipped: return "skipped";
    }
    return "unknown";
}

ValidationReport::ValidationReport()
    : reference_loss(kNotMeasured), first_loss(kNotMeasured), last_loss(kNotMeasured),
      heldout_base_loss(kNotMeasured), heldout_adapter_loss(kNotMeasured), update_ratio(kNotMeasured),
      round_ratio(kNotMeasured) {}

int ValidationReport::count(CheckOutcome o) const {
    int k = 0;
    for (const auto& c : checks) k += c.outcome == o;
    return k;
}

const ValidationCheck* ValidationReport::find(const std::string& name) const {
    for (const auto& c : checks)
        if (c.name == name) return &c;
    return nullptr;
}

std::string ValidationReport::first_failure() const {
    for (const auto& c : checks)
        if (c.outcome == CheckOutcome::kFailed) return c.name + ": " + c.message;
    return "";
}

std::string ValidationReport::json() const {
    io::JsonObject o;
    o.boolean("accepted", accepted);
    o.integer("passed", count(CheckOutcome::kPassed)).integer("failed", count(CheckOutcome::kFailed));
    o.integer("skipped", count(CheckOutcome::kSkipped));
    if (key_id.empty())
        o.null("key_id");
    else
        o.str("key_id", key_id);
    o.integer("steps", steps).integer("tokens", tokens);
    io::JsonObject figures;
    auto figure = [&](const char* key, double v) {
        if (std::isfinite(v))
            figures.num(key, v);
        else
            figures.null(key);
    };
    figure("reference_loss", reference_loss);
    figure("first_loss", first_loss);
    figure("last_loss", last_loss);
    figure("heldout_base_loss", heldout_base_loss);
    figure("heldout_adapter_loss", heldout_adapter_loss);
    figure("heldout_improvement", heldout_base_loss - heldout_adapter_loss);
    figure("update_ratio", update_ratio);
    figure("round_ratio", round_ratio);
    o.object("figures", figures);
    std::vector<io::JsonObject> items;
    for (const auto& c : checks) {
        io::JsonObject item;
        item.str("name", c.name).str("outcome", check_outcome_name(c.outcome)).str("message", c.message);
        items.push_back(item);
    }
    o.array("checks", items);
    return o.text();
}

Validator::Validator(const Model& base, const ValidationPolicy& policy)
    : base_(base), identity_(identify_base(base)), policy_(policy), reference_loss_(kNotMeasured),
      heldout_base_loss_(kNotMeasured) {
    auto nonneg = [](float v, const char* name) {
        require(std::isfinite(v) && v >= 0.0f, PG_ERR_INVALID_ARGUMENT,
                std::string("validation policy: ") + name + " = " + std::to_string(v) + " is not a finite value >= 0");
    };
    nonneg(policy.start_tolerance, "start_tolerance");
    nonneg(policy.divergence_tolerance, "divergence_tolerance");
    nonneg(policy.heldout_tolerance, "heldout_tolerance");
    nonneg(policy.max_update_ratio, "max_update_ratio");
    nonneg(policy.max_round_ratio, "max_round_ratio");
    if (base.storage() == WeightStorage::fp32 && !base.mapped()) {
        // Each target's own weights: a sliced target (q_proj, up_proj...) against its rows only.
        const ModelConfig& c = base.config();
        for (int layer = 0; layer < c.n_layer; ++layer)
            for (int t = 0; t < kNumTargets; ++t) {
                const Target target = Target(t);
                if (!(family_targets(c) & target_bit(target))) continue;
                AdaptedLinear m;
                m.layer = layer, m.target = target, m.kind = target_kind(target);
                m.in = target_in(target, c), m.out = target_out(target, c), m.row_offset = target_row_offset(target, c);
                const float* w = base.params() + base_weight_offset(base, m);
                double sum2 = 0.0;
                for (int64_t i = 0; i < m.in * m.out; ++i) sum2 += double(w[i]) * double(w[i]);
                weight_norms_[{layer, t}] = std::sqrt(sum2);
            }
    }
    require(policy.base_trained == BaseTrainedPolicy::kRefuseUntrained ||
                policy.base_trained == BaseTrainedPolicy::kRequireRecord || policy.base_trained == BaseTrainedPolicy::kOff,
            PG_ERR_INVALID_ARGUMENT, "validation policy: base_trained is not a pg_base_trained_policy");
    require(policy.signature == SignaturePolicy::kRequired || policy.signature == SignaturePolicy::kOptional ||
                policy.signature == SignaturePolicy::kOff,
            PG_ERR_INVALID_ARGUMENT, "validation policy: signature is not a pg_signature_policy");
}

double Validator::loss_on(const Adapter* adapter, const std::vector<int32_t>& tokens) const {
    SessionOptions so;
    so.n_threads = policy_.n_threads;
    Session session(base_, so);
    std::unique_ptr<LoraHook> hook;
    if (adapter) {
        hook = std::make_unique<LoraHook>(*adapter, nullptr);
        session.set_linear_hook(hook.get());
    }
    return evaluate(session, tokens.data(), tokens.size(), EvalOptions{}).mean_loss;
}

void Validator::set_reference(const Adapter* resumed_from, const int32_t* tokens, std::size_t n) {
    const std::vector<int32_t> t = checked_tokens(tokens, n, base_, "validator reference tokens");
    if (resumed_from) check_adapter_matches_base(*resumed_from, base_);
    reference_loss_ = loss_on(resumed_from, t);
}

void Validator::set_heldout(const int32_t* tokens, std::size_t n) {
    heldout_ = checked_tokens(tokens, n, base_, "validator held-out tokens");
    heldout_base_loss_ = loss_on(nullptr, heldout_);
}

ValidationReport Validator::validate(const void* bytes, std::size_t n, const std::string* signature) const {
    std::optional<Adapter> adapter;
    std::string load_error;
    try {
        io::MemorySource src(bytes, n, "upload");
        adapter.emplace(read_adapter(src));
    } catch (const Error& e) {
        load_error = e.what();
        if (load_error.empty()) load_error = "unreadable";
    }
    return validate_loaded(adapter ? &*adapter : nullptr, load_error, bytes, n, signature);
}

ValidationReport Validator::validate_loaded(const Adapter* adapter, const std::string& load_error, const void* bytes,
                                            std::size_t n, const std::string* signature) const {
    ValidationReport r;
    auto add = [&](const char* name, CheckOutcome o, std::string message) {
        r.checks.push_back({name, o, std::move(message)});
        return o == CheckOutcome::kPassed;
    };
    auto pass_or_fail = [&](const char* name, const std::string& failure, std::string ok_message) {
        return failure.empty() ? add(name, CheckOutcome::kPassed, std::move(ok_message))
                               : add(name, CheckOutcome::kFailed, failure);
    };
    const CheckOutcome skip = CheckOutcome::kSkipped;
    if (!load_error.empty()) adapter = nullptr;
    const std::string not_loaded = "the adapter file did not load";

    // --- the file ---
    const bool loaded = adapter != nullptr;
    if (loaded)
        add("format", CheckOutcome::kPassed,
            std::to_string(adapter->tensors().size()) + " tensors, metadata and tensor checksums match");
    else
        add("format", CheckOutcome::kFailed, load_error);

    // --- the base: geometry, weights, tokenizer (each compared on its own) ---
    bool geometry_ok = false, weights_ok = false, tokenizer_ok = false;
    if (loaded) {
        BaseIdentity want = adapter->base(), have = identity_;
        want.has_tokenizer = have.has_tokenizer = false;  // geometry only
        std::string why = mismatch([&] { check_base_identity(want, have, false); });
        if (why.empty())
            why = mismatch([&] { check_lora_config_against(adapter->config(), base_.config()); });
        geometry_ok = pass_or_fail("geometry", why, identity_.describe() + ", " + std::to_string(adapter->linears().size()) +
                                                        " adapted linears of rank " + std::to_string(adapter->config().rank));
        if (geometry_ok) {
            weights_ok = pass_or_fail(
                "base weights",
                adapter->base().weights_hash == identity_.weights_hash
                    ? ""
                    : mismatch([&] { check_base_identity(adapter->base(), identity_, true); }),
                "base fingerprint " + io::hex64(identity_.fingerprint()));
            BaseIdentity tok = identity_;
            tok.config = adapter->base().config;  // compare the tokenizers alone
            tokenizer_ok = pass_or_fail("tokenizer", mismatch([&] { check_base_identity(adapter->base(), tok, false); }),
                                        identity_.has_tokenizer ? "the same tokenizer" : "no tokenizer on either side");
        } else {
            add("base weights", skip, "the geometry differs");
            add("tokenizer", skip, "the geometry differs");
        }
    } else {
        add("geometry", skip, not_loaded);
        add("base weights", skip, not_loaded);
        add("tokenizer", skip, not_loaded);
    }

    // --- the coordinator's base itself: was it trained? (whatever the upload holds) ---
    {
        auto [outcome, message] = base_trained_check(base_.provenance(), policy_.base_trained);
        add("base trained", outcome, std::move(message));
    }

    // --- the signature, by policy ---
    const bool has_signature = signature != nullptr;
    if (policy_.signature == SignaturePolicy::kOff) {
        add("signature", skip, "the policy does not check signatures");
    } else if (!has_signature) {
        if (policy_.signature == SignaturePolicy::kRequired)
            add("signature", CheckOutcome::kFailed, "the policy requires a signature and the upload has none");
        else
            add("signature", skip, "unsigned (the policy makes signatures optional)");
    } else if (!loaded) {
        add("signature", skip, not_loaded);
    } else {
        const Verification v =
            verify_adapter_signature(*signature, bytes, n, adapter->base(), adapter->record(), trusted_);
        r.key_id = v.key_id;
        pass_or_fail("signature", v.valid ? "" : v.first_failure(), "signed by trusted key " + v.key_id);
    }

    // --- the loss trajectory ---
    r.reference_loss = reference_loss_;
    if (!loaded) {
        for (const char* name : {"trajectory present", "trajectory finite", "trajectory length", "trajectory start",
                                 "trajectory not diverging"})
            add(name, skip, not_loaded);
    } else {
        const TrainingRecord& rec = adapter->record();
        r.steps = rec.steps;
        r.tokens = rec.tokens;
        const bool present = pass_or_fail(
            "trajectory present", rec.steps >= 1 && !rec.losses.empty() ? "" : "the training record has no steps",
            std::to_string(rec.steps) + " steps");
        const std::size_t n_losses = rec.losses.size();
        bool finite = false, long_enough = false;
        if (present) {
            // Steps named as the trainer counts them (pg_step_result.step: 1 after the first).
            auto first_nonfinite = [&](const std::vector<float>& v, const char* what) -> std::string {
                for (std::size_t i = 0; i < v.size(); ++i)
                    if (!std::isfinite(v[i]))
                        return std::string("the ") + what + " recorded for step " + std::to_string(i + 1) + " of " +
                               std::to_string(v.size()) + " is " + io::nonfinite_token(v[i]);
                return "";
            };
            std::string why = first_nonfinite(rec.losses, "loss");
            if (why.empty()) why = first_nonfinite(rec.learning_rates, "learning rate");
            finite = pass_or_fail("trajectory finite", why, "every loss and learning rate is finite");
            std::string len_why;
            if (int64_t(n_losses) != rec.steps || int64_t(rec.learning_rates.size()) != rec.steps)
                len_why = std::to_string(n_losses) + " losses and " + std::to_string(rec.learning_rates.size()) +
                          " learning rates for " + std::to_string(rec.steps) + " recorded steps";
            else if (rec.tokens < rec.steps)
                len_why = std::to_string(rec.tokens) + " tokens for " + std::to_string(rec.steps) + " steps";
            long_enough = pass_or_fail("trajectory length", len_why,
                                       std::to_string(rec.steps) + " steps over " + std::to_string(rec.tokens) + " tokens");
        } else {
            add("trajectory finite", skip, "no trajectory");
            add("trajectory length", skip, "no trajectory");
        }
        const bool usable = present && finite && long_enough;
        if (usable) {
            r.first_loss = rec.losses.front();
            r.last_loss = rec.losses.back();
        }
        if (!usable) {
            add("trajectory start", skip, "no usable trajectory");
        } else if (!std::isfinite(reference_loss_)) {
            add("trajectory start", skip, "no reference tokens were given to the validator");
        } else {
            const double gap = std::fabs(r.first_loss - reference_loss_);
            const std::string figures = "first loss " + fixed(r.first_loss) + ", reference loss " + fixed(reference_loss_) +
                                        " (|difference| " + fixed(gap) + ", tolerance " +
                                        fixed(policy_.start_tolerance) + ")";
            pass_or_fail("trajectory start", gap <= policy_.start_tolerance ? "" : "does not start near the base: " + figures,
                         figures);
        }
        if (!usable) {
            add("trajectory not diverging", skip, "no usable trajectory");
        } else {
            const std::size_t quarter = std::max<std::size_t>(1, n_losses / 4);
            const double head = mean_of(rec.losses, 0, quarter), tail = mean_of(rec.losses, n_losses - quarter, n_losses);
            const std::string figures = "mean loss of the first " + std::to_string(quarter) + " steps " + fixed(head) +
                                        ", of the last " + std::to_string(quarter) + " " + fixed(tail) + " (tolerance " +
                                        fixed(policy_.divergence_tolerance) + ")";
            pass_or_fail("trajectory not diverging",
                         tail <= head + policy_.divergence_tolerance ? "" : "the loss rose: " + figures, figures);
        }
    }

    // --- the update's size against the base's weights (no data needed) ---
    if (!(geometry_ok && weights_ok)) {
        add("update norm", skip, loaded ? "the adapter is not this base's" : not_loaded);
    } else if (weight_norms_.empty()) {
        add("update norm", skip, "the base's weights are not fp32 in memory (16-bit or mapped)");
    } else {
        const std::vector<double> norms = update_norms(*adapter);
        std::size_t worst = 0;
        std::vector<double> ratios;
        for (std::size_t k = 0; k < norms.size(); ++k) {
            const AdaptedLinear& m = adapter->linears()[k];
            const double w = weight_norms_.at({m.layer, int(m.target)});
            ratios.push_back(w > 0.0 ? norms[k] / w : (norms[k] > 0.0 ? HUGE_VAL : 0.0));
            if (ratios[k] > ratios[worst]) worst = k;
        }
        const AdaptedLinear& m = adapter->linears()[worst];
        r.update_ratio = ratios[worst];
        const std::string figures = "largest ||s B A|| / ||W|| " + fixed(r.update_ratio) + " (layer " +
                                    std::to_string(m.layer) + " " + target_name(m.target) + "; limit " +
                                    fixed(policy_.max_update_ratio) + ")";
        pass_or_fail("update norm", r.update_ratio <= policy_.max_update_ratio ? "" : "the update is too large: " + figures,
                     figures);
    }

    // --- the coordinator's held-out evaluation ---
    r.heldout_base_loss = heldout_base_loss_;
    if (heldout_.empty()) {
        add("held-out evaluation", skip, "no held-out tokens were given to the validator");
    } else if (!(geometry_ok && weights_ok && tokenizer_ok)) {
        add("held-out evaluation", skip, loaded ? "the adapter is not this base's" : not_loaded);
    } else {
        r.heldout_adapter_loss = loss_on(adapter, heldout_);
        const double improvement = r.heldout_base_loss - r.heldout_adapter_loss;
        const std::string figures = "held-out loss " + fixed(r.heldout_adapter_loss) + ", base " +
                                    fixed(r.heldout_base_loss) + ", improvement " + fixed(improvement) + " over " +
                                    std::to_string(heldout_.size()) + " tokens";
        pass_or_fail("held-out evaluation",
                     -improvement <= policy_.heldout_tolerance
                         ? ""
                         : "worse than the base by more than " + fixed(policy_.heldout_tolerance) + ": " + figures,
                     figures);
    }

    r.accepted = r.count(CheckOutcome::kFailed) == 0;
    if (loaded) r.adapter.emplace(*adapter);
    return r;
}

void Validator::compare_round(const std::vector<ValidationReport*>& reports) const {
    using Site = std::pair<int, int>;
    auto comparable = [](const ValidationReport* r) {
        const ValidationCheck* g = r->find("geometry");
        return r->adapter && g && g->outcome == CheckOutcome::kPassed;
    };
    std::map<Site, std::vector<double>> by_site;
    std::vector<std::vector<double>> norms(reports.size());
    int n_comparable = 0;
    for (std::size_t i = 0; i < reports.size(); ++i) {
        require(reports[i] != nullptr, PG_ERR_INVALID_ARGUMENT, "compare_round: report " + std::to_string(i) + " is NULL");
        require(reports[i]->find("round norm") == nullptr, PG_ERR_STATE,
                "compare_round: report " + std::to_string(i) + " was already compared with a round");
        if (!comparable(reports[i])) continue;
        ++n_comparable;
        norms[i] = update_norms(*reports[i]->adapter);
        const auto& linears = reports[i]->adapter->linears();
        for (std::size_t k = 0; k < linears.size(); ++k) by_site[{linears[k].layer, int(linears[k].target)}].push_back(norms[i][k]);
    }
    std::map<Site, double> median;
    for (const auto& [site, v] : by_site) median[site] = median_of(v);
    for (std::size_t i = 0; i < reports.size(); ++i) {
        ValidationReport& r = *reports[i];
        auto add = [&](CheckOutcome o, std::string message) { r.checks.push_back({"round norm", o, std::move(message)}); };
        if (!comparable(&r)) {
            add(CheckOutcome::kSkipped, r.adapter ? "the adapter's geometry is not this base's" : "the adapter file did not load");
        } else if (n_comparable < 3) {
            add(CheckOutcome::kSkipped, "the round has " + std::to_string(n_comparable) +
                                            " comparable uploads; a median needs at least 3");
        } else {
            const auto& linears = r.adapter->linears();
            std::size_t worst = 0;
            std::vector<double> ratios;
            for (std::size_t k = 0; k < linears.size(); ++k) {
                const double med = median.at({linears[k].layer, int(linears[k].target)});
                ratios.push_back(med > 0.0 ? norms[i][k] / med : (norms[i][k] > 0.0 ? HUGE_VAL : 1.0));
                if (ratios[k] > ratios[worst]) worst = k;
            }
            r.round_ratio = ratios[worst];
            const std::string figures = "largest ||s B A|| over the round's median " + fixed(r.round_ratio) + " (layer " +
                                        std::to_string(linears[worst].layer) + " " + target_name(linears[worst].target) +
                                        ", " + std::to_string(n_comparable) + " uploads; limit " +
                                        fixed(policy_.max_round_ratio) + ")";
            if (r.round_ratio <= policy_.max_round_ratio)
                add(CheckOutcome::kPassed, figures);
            else
                add(CheckOutcome::kFailed, "larger than the round's other uploads: " + figures);
        }
        r.accepted = r.count(CheckOutcome::kFailed) == 0;
    }
}

}  // namespace pg::lora
