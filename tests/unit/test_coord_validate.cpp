// Validating an upload (lib/coordinator/validate): a really trained, signed adapter passes every
// check; each check then fails alone (the others pass or are skipped for a stated reason), and
// the report names it; every check runs, whatever failed before it; the C API and the JSON.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "lora/lora_trainer.hpp"
#include "lora/sign.hpp"
#include "coordinator/validate.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt_coordinator.h"
#include "test_support.hpp"
#include "tokenizer/char_tokenizer.hpp"
#include "train/trainer.hpp"

using namespace pg::lora;

namespace {

std::vector<int32_t> pattern_tokens(const pg::Model& base, std::size_t n, int period);

// A coordinator's base: initialised from `seed`, then really trained for two steps (so its
// provenance says trained and the "base trained" check passes; it has its own test case).
pg::Model tiny_model(uint64_t seed) {
    pg::Model m(pg::model_preset("tiny"));
    pg::init_gpt2_params(m.config(), m.params(), seed);
    m.set_provenance(pg::Provenance::initialised_from(seed));
    pg::TrainConfig tc;
    tc.batch_size = 2;
    tc.warmup_steps = 0;
    pg::Trainer trainer(m, tc);
    const std::vector<int32_t> data = pattern_tokens(m, 1024, 7);
    trainer.set_data(data.data(), data.size());
    trainer.step();
    trainer.step();
    return m;
}

// A short periodic text of the base's vocabulary: easy to learn, so a few steps of LoRA
// training lower the loss.
std::vector<int32_t> pattern_tokens(const pg::Model& base, std::size_t n, int period) {
    std::vector<int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = int32_t((i % std::size_t(period)) * 3 % std::size_t(base.config().vocab_size));
    return t;
}

// An adapter trained for `steps` real steps on the pattern over `base`.
Adapter trained_adapter(const pg::Model& base, int steps, float lr = 1e-2f) {
    LoraConfig cfg;
    cfg.rank = 4;
    Adapter a = Adapter::create(base, cfg);
    pg::TrainConfig tc;
    tc.batch_size = 4;
    tc.warmup_steps = 0;
    tc.total_steps = steps;
    tc.lr_max = lr;
    tc.lr_min = lr;
    tc.weight_decay = 0.0f;
    LoraTrainer trainer(base, a, tc);
    const std::vector<int32_t> data = pattern_tokens(base, 4096, 11);
    trainer.set_data(data.data(), data.size());
    for (int i = 0; i < steps; ++i) trainer.step();
    return a;
}

std::vector<uint8_t> file_bytes(const Adapter& a) {
    pg::io::VectorSink sink;
    write_adapter(a, sink);
    return sink.bytes;
}

SigningKey key_from(uint8_t fill) {
    std::array<uint8_t, 32> seed;
    seed.fill(fill);
    return SigningKey::from_seed(seed);
}

struct Upload {
    std::vector<uint8_t> bytes;
    std::string signature;
};

Upload signed_upload(const Adapter& a, const SigningKey& key) {
    Upload u{file_bytes(a), ""};
    u.signature = sign_adapter(key, u.bytes.data(), u.bytes.size(), a.base(), a.record());
    return u;
}

// The coordinator of these tests: trusts key 1, reference and held-out on the pattern.
struct Coordinator {
    const pg::Model& base;
    Validator validator;
    std::vector<int32_t> heldout;
    Coordinator(const pg::Model& b, ValidationPolicy policy = {})
        : base(b), validator(b, policy), heldout(pattern_tokens(b, 512, 11)) {
        TrustedKeys keys;
        keys.add(key_from(1).public_key());
        validator.set_trusted_keys(keys);
        validator.set_reference(nullptr, heldout.data(), heldout.size());
        validator.set_heldout(heldout.data(), heldout.size());
    }
    ValidationReport check(const Upload& u) const {
        return validator.validate(u.bytes.data(), u.bytes.size(), &u.signature);
    }
};

const char* const kAllChecks[] = {"format", "geometry", "base weights", "tokenizer", "base trained", "signature",
                                  "trajectory present",
                                  "trajectory finite", "trajectory length", "trajectory start",
                                  "trajectory not diverging", "update norm", "held-out evaluation"};

// Every check is in the report, in order; the ones in `failed` failed and every other passed
// or was skipped (the skipped ones are in `skipped`).
void expect_outcomes(const ValidationReport& r, const std::vector<std::string>& failed,
                     const std::vector<std::string>& skipped) {
    REQUIRE(r.checks.size() == std::size(kAllChecks));
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
        const ValidationCheck& c = r.checks[i];
        INFO(c.name << ": " << check_outcome_name(c.outcome) << " (" << c.message << ")");
        CHECK(c.name == kAllChecks[i]);
        CHECK_FALSE(c.message.empty());
        const bool want_failed = std::find(failed.begin(), failed.end(), c.name) != failed.end();
        const bool want_skipped = std::find(skipped.begin(), skipped.end(), c.name) != skipped.end();
        CHECK(c.outcome == (want_failed ? CheckOutcome::kFailed
                            : want_skipped ? CheckOutcome::kSkipped
                                           : CheckOutcome::kPassed));
    }
    CHECK(r.accepted == failed.empty());
}

}  // namespace

TEST_CASE("validate: a trained, signed adapter of this base passes every check", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    const Coordinator coord(base);
    const Adapter a = trained_adapter(base, 24);
    const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
    expect_outcomes(r, {}, {});
    CHECK(r.key_id == key_from(1).key_id());
    CHECK(r.steps == 24);
    CHECK(r.tokens == a.record().tokens);
    CHECK(r.first_loss == Approx(a.record().losses.front()));
    CHECK(r.last_loss < r.first_loss);
    // The trained adapter really is better on the held-out pattern than the base.
    CHECK(r.heldout_adapter_loss < r.heldout_base_loss);
    CHECK(std::fabs(r.reference_loss - r.heldout_base_loss) < 1e-12);  // the same tokens here
    REQUIRE(r.adapter.has_value());
    CHECK(same_adapter(*r.adapter, a));
}

TEST_CASE("validate: format and checksums fail alone; everything after is skipped, not hidden", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    const Coordinator coord(base);
    Upload u = signed_upload(trained_adapter(base, 8), key_from(1));
    u.bytes[u.bytes.size() - 3] ^= 0x10;  // a factor's byte: its checksum no longer matches
    const ValidationReport r = coord.check(u);
    expect_outcomes(r, {"format"},
                    {"geometry", "base weights", "tokenizer", "signature", "trajectory present", "trajectory finite",
                     "trajectory length", "trajectory start", "trajectory not diverging", "update norm",
                     "held-out evaluation"});
    CHECK_THAT(r.find("format")->message, Catch::Contains("checksum mismatch"));
    CHECK_THAT(r.first_failure(), Catch::StartsWith("format: "));
    CHECK_FALSE(r.adapter.has_value());
    // Truncated, empty and garbage uploads: the same, never a throw.
    for (std::size_t n : {std::size_t(0), std::size_t(7), u.bytes.size() / 2}) {
        const ValidationReport t = coord.validator.validate(u.bytes.data(), n, &u.signature);
        CHECK_FALSE(t.accepted);
        CHECK(t.find("format")->outcome == CheckOutcome::kFailed);
        CHECK(t.checks.size() == std::size(kAllChecks));
    }
}

TEST_CASE("validate: geometry, base weights and tokenizer each fail alone", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    const Coordinator coord(base);
    const Adapter good = trained_adapter(base, 8);

    SECTION("geometry: an adapter of a base with another context length") {
        pg::ModelConfig mc = base.config();
        mc.n_ctx = base.config().n_ctx * 2;
        pg::Model other(mc);
        pg::init_gpt2_params(other.config(), other.params(), 1);
        Adapter a = Adapter::create(other, good.config());
        a.record() = good.record();
        const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
        expect_outcomes(r, {"geometry"}, {"base weights", "tokenizer", "update norm", "held-out evaluation"});
        CHECK_THAT(r.find("geometry")->message, Catch::Contains("n_ctx"));
    }
    SECTION("base weights: the same geometry, other weights") {
        const pg::Model other = tiny_model(2);
        Adapter a = Adapter::create(other, good.config());
        std::memcpy(a.params(), good.params(), std::size_t(good.num_params()) * 4);
        a.record() = good.record();
        const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
        expect_outcomes(r, {"base weights"}, {"update norm", "held-out evaluation"});
        CHECK_THAT(r.find("base weights")->message, Catch::Contains("weights differ"));
    }
    SECTION("tokenizer: the same weights, another tokenizer") {
        pg::Model other(base.config());
        std::memcpy(other.params(), base.params(), std::size_t(base.num_params()) * 4);
        other.set_tokenizer(pg::CharTokenizer::from_text("abcdefgh"));
        Adapter a = Adapter::create(other, good.config());
        std::memcpy(a.params(), good.params(), std::size_t(good.num_params()) * 4);
        a.record() = good.record();
        const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
        expect_outcomes(r, {"tokenizer"}, {"held-out evaluation"});
        CHECK_THAT(r.find("tokenizer")->message, Catch::Contains("tokenizer differs"));
    }
}

TEST_CASE("validate: the signature policy (required, optional, off) and the trusted keys", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    const Adapter a = trained_adapter(base, 8);
    const Upload u = signed_upload(a, key_from(1));

    SECTION("required: unsigned fails alone") {
        const Coordinator coord(base);
        const ValidationReport r = coord.validator.validate(u.bytes.data(), u.bytes.size(), nullptr);
        expect_outcomes(r, {"signature"}, {});
        CHECK_THAT(r.find("signature")->message, Catch::Contains("requires a signature"));
    }
    SECTION("a valid signature by an unknown key fails alone, naming the key") {
        const Coordinator coord(base);
        const ValidationReport r = coord.check(signed_upload(a, key_from(9)));
        expect_outcomes(r, {"signature"}, {});
        CHECK_THAT(r.find("signature")->message, Catch::Contains("trusted key"));
        CHECK(r.key_id == key_from(9).key_id());
    }
    SECTION("a signature copied from another adapter fails alone") {
        const Coordinator coord(base);
        Upload copied = signed_upload(trained_adapter(base, 9), key_from(1));
        copied.signature = u.signature;
        const ValidationReport r = coord.check(copied);
        expect_outcomes(r, {"signature"}, {});
    }
    SECTION("optional: unsigned is skipped and accepted; a bad signature still fails") {
        ValidationPolicy p;
        p.signature = SignaturePolicy::kOptional;
        const Coordinator coord(base, p);
        expect_outcomes(coord.validator.validate(u.bytes.data(), u.bytes.size(), nullptr), {}, {"signature"});
        expect_outcomes(coord.check(signed_upload(a, key_from(9))), {"signature"}, {});
    }
    SECTION("off: never checked") {
        ValidationPolicy p;
        p.signature = SignaturePolicy::kOff;
        const Coordinator coord(base, p);
        expect_outcomes(coord.check(signed_upload(a, key_from(9))), {}, {"signature"});
    }
}

TEST_CASE("validate: each trajectory check fails alone", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    const Coordinator coord(base);
    const Adapter good = trained_adapter(base, 16);

    SECTION("present: no steps") {
        Adapter a = good;
        a.record() = TrainingRecord{};
        const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
        expect_outcomes(r, {"trajectory present"},
                        {"trajectory finite", "trajectory length", "trajectory start", "trajectory not diverging"});
    }
    SECTION("finite: a NaN loss, uploaded in a signed file (format 1.2 carries it)") {
        Adapter a = good;
        a.record().losses[5] = std::nanf("");
        const Upload u = signed_upload(a, key_from(1));
        const std::string bytes(u.bytes.begin(), u.bytes.end());
        CHECK_THAT(bytes, Catch::Contains("\"phonegpt.adapter_format\":\"1.3\""));
        const ValidationReport r = coord.check(u);
        expect_outcomes(r, {"trajectory finite"}, {"trajectory start", "trajectory not diverging"});
        CHECK(r.find("trajectory finite")->message == "the loss recorded for step 6 of 16 is nan");
        CHECK_THAT(r.first_failure(), Catch::StartsWith("trajectory finite: "));
    }
    SECTION("finite: an infinite learning rate, uploaded in a signed file") {
        Adapter a = good;
        a.record().learning_rates[15] = -INFINITY;
        const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
        expect_outcomes(r, {"trajectory finite"}, {"trajectory start", "trajectory not diverging"});
        CHECK(r.find("trajectory finite")->message == "the learning rate recorded for step 16 of 16 is -inf");
    }
    SECTION("length: more steps than losses") {
        Adapter a = good;
        a.record().learning_rates.pop_back();
        const std::vector<uint8_t> bytes = file_bytes(good);
        ValidationPolicy p;
        p.signature = SignaturePolicy::kOff;
        const Coordinator off(base, p);
        const ValidationReport r = off.validator.validate_loaded(&a, "", bytes.data(), bytes.size(), nullptr);
        expect_outcomes(r, {"trajectory length"}, {"signature", "trajectory start", "trajectory not diverging"});
        CHECK_THAT(r.find("trajectory length")->message, Catch::Contains("15 learning rates for 16"));
    }
    SECTION("start: a trajectory that starts far from the base's loss") {
        Adapter a = good;
        for (float& l : a.record().losses) l -= 2.0f;  // claims the base already knew the data
        const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
        expect_outcomes(r, {"trajectory start"}, {});
        CHECK_THAT(r.find("trajectory start")->message, Catch::Contains("tolerance 0.5000"));
    }
    SECTION("not diverging: the loss rises") {
        Adapter a = good;
        const std::size_t n = a.record().losses.size();
        for (std::size_t i = n / 2; i < n; ++i) a.record().losses[i] += 3.0f;
        const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
        expect_outcomes(r, {"trajectory not diverging"}, {});
        CHECK_THAT(r.find("trajectory not diverging")->message, Catch::Contains("the loss rose"));
    }
    SECTION("start without a reference, held-out without tokens: skipped, not passed") {
        const Validator bare(base, ValidationPolicy{});
        const Upload u = signed_upload(good, key_from(1));
        const ValidationReport r = bare.validate(u.bytes.data(), u.bytes.size(), nullptr);
        expect_outcomes(r, {"signature"}, {"trajectory start", "held-out evaluation"});
    }
}

TEST_CASE("validate: the held-out evaluation fails alone when the adapter is worse than the base", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    ValidationPolicy p;
    p.heldout_tolerance = 0.0f;
    p.max_update_ratio = 1e9f;  // this test is about the held-out check alone
    const Coordinator coord(base, p);
    Adapter a = trained_adapter(base, 24);
    // The learned update reversed and amplified: the record (a real one) still looks fine.
    for (const AdaptedLinear& m : a.linears())
        for (int64_t i = 0; i < m.out * a.config().rank; ++i) a.b(m)[i] *= -30.0f;
    const ValidationReport r = coord.check(signed_upload(a, key_from(1)));
    expect_outcomes(r, {"held-out evaluation"}, {});
    CHECK(r.heldout_adapter_loss > r.heldout_base_loss);
    CHECK_THAT(r.find("held-out evaluation")->message, Catch::Contains("worse than the base"));
}

TEST_CASE("validate: base trained, by policy: the coordinator's base must have been trained", "[coord][validate]") {
    const pg::Model trained = tiny_model(1);
    const Upload u = signed_upload(trained_adapter(trained, 8), key_from(1));
    // The same weights (so every other check passes), recorded as never trained / not recorded.
    auto with_provenance = [&](const pg::Provenance& p) {
        pg::Model m(trained.config());
        std::memcpy(m.params(), trained.params(), std::size_t(trained.num_params()) * 4);
        m.set_provenance(p);
        return m;
    };
    const pg::Model untrained = with_provenance(pg::Provenance::initialised_from(1));
    const pg::Model unrecorded = with_provenance(pg::Provenance{});
    auto check = [&](const pg::Model& base, BaseTrainedPolicy policy) {
        ValidationPolicy p;
        p.base_trained = policy;
        return Coordinator(base, p).check(u);
    };
    const std::string trained_message = "the base was " + trained.provenance().describe();
    CHECK_THAT(trained_message, Catch::StartsWith("the base was trained for 2 steps ("));

    SECTION("refuse_untrained (the default): a never-trained base fails alone, an unrecorded one is skipped") {
        CHECK(ValidationPolicy{}.base_trained == BaseTrainedPolicy::kRefuseUntrained);
        ValidationReport r = check(trained, BaseTrainedPolicy::kRefuseUntrained);
        expect_outcomes(r, {}, {});
        CHECK(r.find("base trained")->message == trained_message);
        r = check(untrained, BaseTrainedPolicy::kRefuseUntrained);
        expect_outcomes(r, {"base trained"}, {});
        CHECK_THAT(r.first_failure(), Catch::StartsWith("base trained: the base was initialised from seed 1, never trained"));
        r = check(unrecorded, BaseTrainedPolicy::kRefuseUntrained);
        expect_outcomes(r, {}, {"base trained"});
        CHECK_THAT(r.find("base trained")->message, Catch::Contains("provenance is not recorded"));
    }
    SECTION("require_record: only a base recorded as trained passes") {
        expect_outcomes(check(trained, BaseTrainedPolicy::kRequireRecord), {}, {});
        expect_outcomes(check(untrained, BaseTrainedPolicy::kRequireRecord), {"base trained"}, {});
        const ValidationReport r = check(unrecorded, BaseTrainedPolicy::kRequireRecord);
        expect_outcomes(r, {"base trained"}, {});
        CHECK_THAT(r.find("base trained")->message, Catch::Contains("requires a base recorded as trained"));
    }
    SECTION("off: never checked") {
        const ValidationReport r = check(untrained, BaseTrainedPolicy::kOff);
        expect_outcomes(r, {}, {"base trained"});
        CHECK_THAT(r.find("base trained")->message, Catch::Contains("does not check"));
    }
    SECTION("an upload that does not even read still shows the base's state") {
        ValidationPolicy p;
        const ValidationReport r = Coordinator(untrained, p).validator.validate("junk", 4, nullptr);
        CHECK(r.find("format")->outcome == CheckOutcome::kFailed);
        CHECK(r.find("base trained")->outcome == CheckOutcome::kFailed);
    }
    ValidationPolicy bad;
    bad.base_trained = static_cast<BaseTrainedPolicy>(5);
    CHECK_THROWS_AS(Validator(trained, bad), pg::Error);
}

TEST_CASE("validate: the reference resumes from the round's adapter", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    const Adapter round1 = trained_adapter(base, 24);
    const std::vector<int32_t> tokens = pattern_tokens(base, 512, 11);
    Validator v(base, ValidationPolicy{});
    v.set_reference(nullptr, tokens.data(), tokens.size());
    const ValidationReport from_base = v.validate(nullptr, 0, nullptr);
    v.set_reference(&round1, tokens.data(), tokens.size());
    const ValidationReport from_round1 = v.validate(nullptr, 0, nullptr);
    CHECK(from_round1.reference_loss < from_base.reference_loss - 0.05);
    // An adapter of another base is refused as a reference.
    const pg::Model other = tiny_model(2);
    const Adapter foreign = Adapter::create(other, LoraConfig{});
    CHECK_THROWS_AS(v.set_reference(&foreign, tokens.data(), tokens.size()), pg::Error);
}

TEST_CASE("validate: the C API, the report's JSON and bad arguments", "[coord][validate][c_api]") {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* base = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &base) == PG_OK);
    REQUIRE(pg_model_allow_untrained_base(base, 1) == PG_OK);  // a random base on purpose
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    lc.rank = 2;
    pg_lora_adapter* adapter = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &lc, &adapter) == PG_OK);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 4;
    tc.warmup_steps = 0;
    tc.lr_max = tc.lr_min = 1e-2f;
    pg_lora_trainer* trainer = nullptr;
    REQUIRE(pg_lora_trainer_create(base, adapter, &tc, &trainer) == PG_OK);
    std::vector<int32_t> tokens(2048);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(i % 11 * 3 % mc.vocab_size);
    REQUIRE(pg_lora_trainer_set_data(trainer, tokens.data(), tokens.size()) == PG_OK);
    for (int i = 0; i < 6; ++i) REQUIRE(pg_lora_trainer_step(trainer, nullptr) == PG_OK);
    pg_lora_trainer_free(trainer);

    const std::string path = pg_test::tmp_dir() + "/validate_c_api.pgadapter";
    REQUIRE(pg_lora_adapter_save(adapter, path.c_str()) == PG_OK);
    char* bytes = nullptr;
    size_t n = 0;
    REQUIRE(pg_read_file(path.c_str(), &bytes, &n) == PG_OK);
    uint8_t seed[32] = {1};
    pg_signing_key* key = nullptr;
    REQUIRE(pg_signing_key_from_seed(seed, &key) == PG_OK);
    size_t sig_len = 0;
    REQUIRE(pg_lora_adapter_sign(key, adapter, bytes, n, nullptr, 0, &sig_len) == PG_ERR_BUFFER_TOO_SMALL);
    std::string sig(sig_len + 1, '\0');
    REQUIRE(pg_lora_adapter_sign(key, adapter, bytes, n, &sig[0], sig.size(), &sig_len) == PG_OK);
    sig.resize(sig_len);
    const std::string sig_path = path + ".sig";
    pg::io::write_file_atomically(sig_path, sig.data(), sig.size());
    uint8_t pub[32];
    REQUIRE(pg_signing_key_public(key, pub) == PG_OK);
    pg_trusted_keys* trusted = nullptr;
    REQUIRE(pg_trusted_keys_create(&trusted) == PG_OK);
    REQUIRE(pg_trusted_keys_add(trusted, pub) == PG_OK);

    pg_validation_policy policy;
    pg_validation_policy_default(&policy);
    CHECK(policy.signature == PG_SIGNATURE_REQUIRED);
    CHECK(policy.start_tolerance == 0.5f);
    CHECK(policy.base_trained == PG_BASE_TRAINED_REFUSE_UNTRAINED);
    // This base is random on purpose: the default policy refuses every upload over it, by name.
    {
        pg_validator* strict = nullptr;
        REQUIRE(pg_validator_create(base, &policy, &strict) == PG_OK);
        REQUIRE(pg_validator_set_trusted_keys(strict, trusted) == PG_OK);
        pg_validation_report* rep = nullptr;
        REQUIRE(pg_lora_validate(strict, bytes, n, sig.data(), sig.size(), &rep) == PG_OK);
        pg_validation_summary s = {sizeof s};
        REQUIRE(pg_validation_report_summary(rep, &s) == PG_OK);
        CHECK(s.accepted == 0);
        CHECK(s.n_failed == 1);
        pg_validation_check c = {sizeof c};
        REQUIRE(pg_validation_report_check(rep, 4, &c) == PG_OK);
        CHECK(std::string(c.name) == "base trained");
        CHECK(c.outcome == PG_CHECK_FAILED);
        CHECK_THAT(c.message, Catch::Contains("never trained"));
        pg_validation_report_free(rep);
        pg_validator_free(strict);
    }
    policy.base_trained = PG_BASE_TRAINED_OFF;
    pg_validator* v = nullptr;
    REQUIRE(pg_validator_create(base, &policy, &v) == PG_OK);
    REQUIRE(pg_validator_set_trusted_keys(v, trusted) == PG_OK);
    REQUIRE(pg_validator_set_reference(v, nullptr, tokens.data(), 256) == PG_OK);
    REQUIRE(pg_validator_set_heldout(v, tokens.data() + 256, 256) == PG_OK);

    pg_validation_report* rep = nullptr;
    REQUIRE(pg_lora_validate(v, bytes, n, sig.data(), sig.size(), &rep) == PG_OK);
    pg_validation_summary s = {sizeof s};
    REQUIRE(pg_validation_report_summary(rep, &s) == PG_OK);
    CHECK(s.accepted == 1);
    CHECK(s.n_checks == 13);
    CHECK(s.n_failed == 0);
    CHECK(s.n_skipped == 1);  // base trained: off
    CHECK(s.steps == 6);
    char id[17];
    REQUIRE(pg_key_id(pub, id) == PG_OK);
    CHECK(std::string(s.key_id) == id);
    CHECK(std::isfinite(s.heldout_adapter_loss));
    pg_validation_check c = {sizeof c};
    REQUIRE(pg_validation_report_check(rep, 5, &c) == PG_OK);
    CHECK(std::string(c.name) == "signature");
    CHECK(c.outcome == PG_CHECK_PASSED);
    CHECK(pg_validation_report_check(rep, 13, &c) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::isfinite(s.update_ratio));
    CHECK(s.update_ratio < policy.max_update_ratio);
    CHECK(std::isnan(s.round_ratio));
    size_t len = 0;
    REQUIRE(pg_validation_report_json(rep, nullptr, 0, &len) == PG_ERR_BUFFER_TOO_SMALL);
    std::string json(len + 1, '\0');
    REQUIRE(pg_validation_report_json(rep, &json[0], json.size(), &len) == PG_OK);
    json.resize(len);
    const pg::io::JsonValue parsed = pg::io::parse_json(json.data(), json.size(), "report");
    CHECK(parsed.find("accepted")->as_bool("accepted"));
    CHECK(parsed.find("checks")->as_array("checks").size() == 13);
    CHECK(parsed.find("checks")->as_array("checks")[0].find("name")->as_string("name") == "format");
    pg_lora_adapter* got = nullptr;
    REQUIRE(pg_validation_report_adapter(rep, &got) == PG_OK);
    int64_t steps = 0;
    REQUIRE(pg_lora_adapter_training_record(got, &steps, nullptr, nullptr, nullptr) == PG_OK);
    CHECK(steps == 6);
    pg_lora_adapter_free(got);
    pg_validation_report_free(rep);

    // From files: the same outcome; unsigned (NULL signature path) fails the required signature.
    REQUIRE(pg_lora_validate_file(v, path.c_str(), sig_path.c_str(), &rep) == PG_OK);
    REQUIRE(pg_validation_report_summary(rep, &s) == PG_OK);
    CHECK(s.accepted == 1);
    pg_validation_report_free(rep);
    REQUIRE(pg_lora_validate_file(v, path.c_str(), nullptr, &rep) == PG_OK);
    REQUIRE(pg_validation_report_summary(rep, &s) == PG_OK);
    CHECK(s.accepted == 0);
    CHECK(s.n_failed == 1);
    pg_validation_report_free(rep);
    // Garbage bytes: a report, not an error; the adapter is not available.
    REQUIRE(pg_lora_validate(v, "garbage", 7, nullptr, 0, &rep) == PG_OK);
    REQUIRE(pg_validation_report_summary(rep, &s) == PG_OK);
    CHECK(s.accepted == 0);
    CHECK(std::isnan(s.heldout_adapter_loss));
    CHECK(pg_validation_report_adapter(rep, &got) == PG_ERR_STATE);
    CHECK(got == nullptr);
    pg_validation_report_free(rep);

    // The round: three copies of one upload (each at the median) and garbage (skipped).
    {
        pg_validation_report* round[4] = {};
        for (int i = 0; i < 3; ++i) REQUIRE(pg_lora_validate(v, bytes, n, sig.data(), sig.size(), &round[i]) == PG_OK);
        REQUIRE(pg_lora_validate(v, "garbage", 7, nullptr, 0, &round[3]) == PG_OK);
        REQUIRE(pg_validation_reports_compare_round(v, round, 4) == PG_OK);
        REQUIRE(pg_validation_report_summary(round[0], &s) == PG_OK);
        CHECK(s.n_checks == 14);
        CHECK(s.accepted == 1);
        CHECK(s.round_ratio == Approx(1.0));
        REQUIRE(pg_validation_report_check(round[0], 13, &c) == PG_OK);
        CHECK(std::string(c.name) == "round norm");
        CHECK(c.outcome == PG_CHECK_PASSED);
        REQUIRE(pg_validation_report_check(round[3], 13, &c) == PG_OK);
        CHECK(c.outcome == PG_CHECK_SKIPPED);
        CHECK(pg_validation_reports_compare_round(v, round, 4) == PG_ERR_STATE);
        CHECK_THAT(pg_last_error(), Catch::Contains("already compared"));
        CHECK(pg_validation_reports_compare_round(v, nullptr, 2) == PG_ERR_INVALID_ARGUMENT);
        CHECK(pg_validation_reports_compare_round(nullptr, round, 4) == PG_ERR_INVALID_ARGUMENT);
        pg_validation_report* with_null[2] = {round[0], nullptr};
        CHECK(pg_validation_reports_compare_round(v, with_null, 2) == PG_ERR_INVALID_ARGUMENT);
        for (pg_validation_report* r : round) pg_validation_report_free(r);
    }

    // Bad arguments: statuses with messages, never an abort.
    CHECK(pg_lora_validate_file(v, (path + ".missing").c_str(), nullptr, &rep) == PG_ERR_IO);
    CHECK(rep == nullptr);
    CHECK(pg_lora_validate(nullptr, bytes, n, nullptr, 0, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_validate(v, nullptr, 5, nullptr, 0, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_validator_set_heldout(v, tokens.data(), 1) == PG_ERR_INVALID_ARGUMENT);
    std::vector<int32_t> bad = {0, 1, 9999};
    CHECK(pg_validator_set_heldout(v, bad.data(), bad.size()) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_validator_last_error(v), Catch::Contains("9999"));
    pg_validation_policy wrong = policy;
    wrong.start_tolerance = -1.0f;
    pg_validator* w = nullptr;
    CHECK(pg_validator_create(base, &wrong, &w) == PG_ERR_INVALID_ARGUMENT);
    CHECK(w == nullptr);
    wrong = policy;
    wrong.signature = static_cast<pg_signature_policy>(7);
    CHECK(pg_validator_create(base, &wrong, &w) == PG_ERR_INVALID_ARGUMENT);
    wrong = policy;
    wrong.base_trained = static_cast<pg_base_trained_policy>(3);
    CHECK(pg_validator_create(base, &wrong, &w) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("base_trained"));
    wrong = policy;
    wrong.max_update_ratio = NAN;
    CHECK(pg_validator_create(base, &wrong, &w) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("max_update_ratio"));
    pg_validator_free(nullptr);
    pg_validation_report_free(nullptr);

    pg_validator_free(v);
    pg_trusted_keys_free(trusted);
    pg_signing_key_free(key);
    pg_buffer_free(bytes);
    pg_lora_adapter_free(adapter);
    pg_model_free(base);
}

TEST_CASE("validate: every single-byte change of a signed upload is refused, by a named check", "[coord][validate]") {
    const pg::Model base = tiny_model(1);
    ValidationPolicy p;
    p.n_threads = 1;
    Validator v(base, p);
    TrustedKeys keys;
    keys.add(key_from(1).public_key());
    v.set_trusted_keys(keys);
    LoraConfig cfg;
    cfg.rank = 2;
    Adapter a = Adapter::create(base, cfg);
    a.record().steps = 2;
    a.record().tokens = 64;
    a.record().losses = {4.0f, 3.9f};
    a.record().learning_rates = {1e-3f, 1e-3f};
    Upload u = signed_upload(a, key_from(1));
    REQUIRE(v.validate(u.bytes.data(), u.bytes.size(), &u.signature).accepted);
    for (std::size_t i = 0; i < u.bytes.size(); ++i) {
        u.bytes[i] ^= 0x01;
        const ValidationReport r = v.validate(u.bytes.data(), u.bytes.size(), &u.signature);
        u.bytes[i] ^= 0x01;
        INFO("byte " << i);
        REQUIRE_FALSE(r.accepted);
        REQUIRE(r.checks.size() == std::size(kAllChecks));
        const std::string why = r.first_failure();
        REQUIRE((why.rfind("format: ", 0) == 0 || why.rfind("signature: ", 0) == 0));
    }
    // And of the signature file.
    for (std::size_t i = 0; i < u.signature.size(); ++i) {
        std::string sig = u.signature;
        sig[i] = char(sig[i] ^ 0x01);
        const ValidationReport r = v.validate(u.bytes.data(), u.bytes.size(), &sig);
        INFO("signature byte " << i);
        REQUIRE_FALSE(r.accepted);
        REQUIRE(r.find("signature")->outcome == CheckOutcome::kFailed);
    }
}
