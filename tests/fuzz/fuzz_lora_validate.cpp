// libFuzzer target: the whole validation path of an upload (pg::lora::Validator::validate, what
// pg_lora_validate runs): the adapter file reader, the base checks, the signature parser and
// verifier, the trajectory checks, the update norm, the held-out evaluation, and the round's
// comparison of update norms (Validator::compare_round, over three copies of the report). An input is an upload: two
// bytes (little-endian) giving the signature's length k (0xFFFF = unsigned), then k bytes of
// signature file, then the adapter file. Any input must give a complete report (every check
// named), never a crash, a sanitizer report or an unbounded allocation; an accepted upload has
// passed format and signature. The seed corpus (tests/fuzz/corpus/lora_validate) holds a valid
// signed upload for this target's base, written by this file built with
// -DPG_FUZZ_WRITE_SEED (see tests/cmake/fuzz_coord.cmake).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "phonegpt/phonegpt_coordinator.h"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "lora/adapter_file.hpp"
#include "lora/sign.hpp"
#include "coordinator/validate.hpp"
#include "model/params.hpp"

namespace {

constexpr std::size_t kNumChecks = 13;  // then compare_round adds "round norm"

// The coordinator's side: a tiny base (fixed seed), one trusted key, short reference and
// held-out splits so each input runs in well under a millisecond.
struct Fixture {
    pg::Model base{pg::model_preset("tiny")};
    std::vector<int32_t> tokens;
    pg::lora::SigningKey key = pg::lora::SigningKey::from_seed({7});
    std::unique_ptr<pg::lora::Validator> validator;
    Fixture() {
        pg::init_gpt2_params(base.config(), base.params(), 1);
        for (int i = 0; i < 40; ++i) tokens.push_back(i * 5 % base.config().vocab_size);
        pg::lora::ValidationPolicy policy;
        policy.n_threads = 1;
        validator = std::make_unique<pg::lora::Validator>(base, policy);
        pg::lora::TrustedKeys keys;
        keys.add(key.public_key());
        validator->set_trusted_keys(keys);
        validator->set_reference(nullptr, tokens.data(), tokens.size());
        validator->set_heldout(tokens.data(), tokens.size());
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t k = std::size_t(data[0]) | std::size_t(data[1]) << 8;
    const bool unsigned_upload = k == 0xFFFF;
    const std::size_t sig_len = unsigned_upload ? 0 : std::min(k, size - 2);
    const std::string signature(reinterpret_cast<const char*>(data + 2), sig_len);
    const uint8_t* file = data + 2 + sig_len;
    const std::size_t n = size - 2 - sig_len;
    const pg::lora::ValidationReport r =
        fixture().validator->validate(file, n, unsigned_upload ? nullptr : &signature);
    if (r.checks.size() != kNumChecks) std::abort();
    if (r.accepted && (r.checks[0].outcome != pg::lora::CheckOutcome::kPassed || !r.adapter)) std::abort();
    (void)r.json();
    pg::lora::ValidationReport a = r, b = r, c = r;
    fixture().validator->compare_round({&a, &b, &c});
    for (const auto* x : {&a, &b, &c})
        if (x->checks.size() != kNumChecks + 1 || (x->accepted && !r.accepted)) std::abort();
    return 0;
}

#ifdef PG_FUZZ_WRITE_SEED
// Writes the seed corpus: a valid signed upload of a really trained-looking adapter (its record
// starts at the base's reference loss), the same unsigned, and a signed one whose record holds a
// NaN loss (format 1.2's "nan" strings, so the fuzzer reaches that reader and the trajectory
// checks).
int main(int argc, char** argv) {
    if (argc != 2) return 2;
    Fixture& f = fixture();
    pg::lora::LoraConfig cfg;
    cfg.rank = 2;
    pg::lora::Adapter a = pg::lora::Adapter::create(f.base, cfg);
    const pg::lora::ValidationReport probe = f.validator->validate(nullptr, 0, nullptr);
    const float start = float(probe.reference_loss);
    a.record().steps = 4;
    a.record().tokens = 4 * 64;
    a.record().losses = {start, start - 0.01f, start - 0.02f, start - 0.03f};
    a.record().learning_rates = {1e-3f, 1e-3f, 1e-3f, 1e-3f};
    auto write = [&](const char* name, std::size_t k, const std::string& s, const pg::io::VectorSink& sink) {
        std::string bytes;
        bytes.push_back(char(k & 0xFF));
        bytes.push_back(char(k >> 8));
        bytes += s;
        bytes.append(reinterpret_cast<const char*>(sink.bytes.data()), sink.bytes.size());
        const pg::lora::ValidationReport r = f.validator->validate(
            sink.bytes.data(), sink.bytes.size(), k == 0xFFFF ? nullptr : &s);
        std::printf("%s: %s %s\n", name, r.accepted ? "accepted" : "refused", r.first_failure().c_str());
        pg::io::write_file_atomically(std::string(argv[1]) + "/" + name, bytes.data(), bytes.size());
    };
    auto signed_file = [&](const pg::lora::Adapter& adapter, pg::io::VectorSink& sink) {
        pg::lora::write_adapter(adapter, sink);
        return pg::lora::sign_adapter(f.key, sink.bytes.data(), sink.bytes.size(), adapter.base(), adapter.record());
    };
    pg::io::VectorSink plain, diverged;
    const std::string sig = signed_file(a, plain);
    write("signed", sig.size(), sig, plain);
    write("unsigned", 0xFFFF, "", plain);
    a.record().losses[2] = std::nanf("");
    const std::string nan_sig = signed_file(a, diverged);
    write("nan_record", nan_sig.size(), nan_sig, diverged);
    return 0;
}
#endif
