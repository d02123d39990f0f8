// Adapter signatures (lib/lora/sign): Ed25519 through libsodium. One changed byte anywhere (the
// adapter's bytes or the signature file) is refused, a valid signature by an untrusted key is
// refused, a signature copied onto another adapter is refused, and keys round-trip.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "phonegpt/phonegpt_coordinator.h"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "coordinator/verify.hpp"
#include "model/params.hpp"
#include "test_support.hpp"

using namespace pg::lora;

namespace {

pg::Model tiny_model(uint64_t seed) {
    pg::Model m(pg::model_preset("tiny"));
    pg::init_gpt2_params(m.config(), m.params(), seed);
    return m;
}

// A trained-looking adapter and its file's bytes (the adapter file format).
struct Upload {
    Adapter adapter;
    std::vector<uint8_t> bytes;
};

Upload make_upload(const pg::Model& base, uint64_t init_seed) {
    LoraConfig cfg;
    cfg.init_seed = init_seed;
    Adapter a = Adapter::create(base, cfg);
    for (int64_t i = 0; i < a.num_params(); ++i) a.params()[i] += 0.001f * float(i % 7);
    a.record().steps = 3;
    a.record().tokens = 3 * 64;
    a.record().seed = init_seed;
    a.record().losses = {4.2f, 4.0f, 3.9f};
    a.record().learning_rates = {1e-3f, 1e-3f, 1e-3f};
    pg::io::VectorSink sink;
    write_adapter(a, sink);
    return {std::move(a), std::move(sink.bytes)};
}

SigningKey key_from(uint8_t fill) {
    std::array<uint8_t, 32> seed;
    seed.fill(fill);
    return SigningKey::from_seed(seed);
}

Verification verify(const std::string& sig, const Upload& u, const TrustedKeys& trusted) {
    return verify_adapter_signature(sig, u.bytes.data(), u.bytes.size(), u.adapter.base(), u.adapter.record(), trusted);
}

bool failed(const Verification& v, const std::string& check) {
    for (const auto& c : v.checks)
        if (c.name == check) return !c.passed;
    FAIL("no check named " << check);
    return false;
}

}  // namespace

TEST_CASE("signatures: a signed adapter verifies, and every check is named", "[coord][sign]") {
    const pg::Model base = tiny_model(1);
    const Upload u = make_upload(base, 7);
    const SigningKey key = key_from(1);
    TrustedKeys trusted;
    trusted.add(key.public_key());
    const std::string sig = sign_adapter(key, u.bytes.data(), u.bytes.size(), u.adapter.base(), u.adapter.record());
    const Verification v = verify(sig, u, trusted);
    INFO(v.first_failure());
    CHECK(v.valid);
    CHECK(v.key_id == key.key_id());
    CHECK(v.key_id.size() == 16);
    CHECK(v.checks.size() == 7);
    // The same key signs the same manifest the same way (Ed25519 is deterministic).
    CHECK(sign_adapter(key, u.bytes.data(), u.bytes.size(), u.adapter.base(), u.adapter.record()) == sig);
}

TEST_CASE("signatures: one changed byte anywhere is refused", "[coord][sign]") {
    const pg::Model base = tiny_model(1);
    Upload u = make_upload(base, 7);
    const SigningKey key = key_from(1);
    TrustedKeys trusted;
    trusted.add(key.public_key());
    const std::string sig = sign_adapter(key, u.bytes.data(), u.bytes.size(), u.adapter.base(), u.adapter.record());

    SECTION("in the adapter's bytes") {
        for (std::size_t at = 0; at < u.bytes.size(); at += 61) {
            u.bytes[at] ^= 0x01;
            const Verification v = verify(sig, u, trusted);
            CHECK_FALSE(v.valid);
            CHECK(failed(v, "adapter bytes"));
            u.bytes[at] ^= 0x01;
        }
        u.bytes.back() ^= 0x80;
        CHECK(failed(verify(sig, u, trusted), "adapter bytes"));
    }
    SECTION("in the signature file, at every offset") {
        for (std::size_t at = 0; at < sig.size(); ++at) {
            std::string bad = sig;
            bad[at] = char(bad[at] ^ 0x01);
            const Verification v = verify(bad, u, trusted);
            INFO("offset " << at << ": " << sig.substr(at, 12));
            CHECK_FALSE(v.valid);
        }
    }
    SECTION("in what the adapter says about its training or base") {
        Upload other = make_upload(base, 7);
        other.adapter.record().losses.back() = 3.5f;  // a prettier trajectory than was signed
        CHECK(failed(verify(sig, other, trusted), "training record"));
        const pg::Model base2 = tiny_model(2);
        const Upload moved = make_upload(base2, 7);  // same bytes? no: other base's identity
        Upload same_bytes{Adapter(u.adapter.config(), moved.adapter.base()), u.bytes};
        same_bytes.adapter.record() = u.adapter.record();
        CHECK(failed(verify(sig, same_bytes, trusted), "base fingerprint"));
    }
}

TEST_CASE("signatures: untrusted keys and copied signatures are refused", "[coord][sign]") {
    const pg::Model base = tiny_model(1);
    const Upload u = make_upload(base, 7);
    const SigningKey phone = key_from(1), stranger = key_from(2);
    TrustedKeys trusted;
    trusted.add(phone.public_key());

    const std::string by_stranger =
        sign_adapter(stranger, u.bytes.data(), u.bytes.size(), u.adapter.base(), u.adapter.record());
    const Verification v = verify(by_stranger, u, trusted);
    CHECK_FALSE(v.valid);
    CHECK(failed(v, "trusted key"));
    CHECK_FALSE(failed(v, "signature"));  // a valid signature, by a key nobody trusts
    CHECK(v.first_failure().find(stranger.key_id()) != std::string::npos);

    // A genuine signature of one adapter, presented with another.
    const Upload other = make_upload(base, 8);
    const std::string sig_u = sign_adapter(phone, u.bytes.data(), u.bytes.size(), u.adapter.base(), u.adapter.record());
    const Verification copied = verify(sig_u, other, trusted);
    CHECK_FALSE(copied.valid);
    CHECK(failed(copied, "adapter bytes"));
    CHECK_FALSE(failed(copied, "signature"));

    // Rewriting the manifest to match the other adapter breaks the signature.
    const std::string forged_hash = verify_adapter_signature(
        sign_adapter(phone, other.bytes.data(), other.bytes.size(), other.adapter.base(), other.adapter.record()),
        other.bytes.data(), other.bytes.size(), other.adapter.base(), other.adapter.record(), trusted).valid ? "ok" : "";
    CHECK(forged_hash == "ok");
    std::string forged = sig_u;
    const Manifest mu = make_manifest(u.bytes.data(), u.bytes.size(), u.adapter.base(), u.adapter.record(), phone.key_id());
    const Manifest mo = make_manifest(other.bytes.data(), other.bytes.size(), other.adapter.base(), other.adapter.record(), phone.key_id());
    forged.replace(forged.find(mu.adapter_sha256), 64, mo.adapter_sha256);
    const Verification f = verify(forged, other, trusted);
    CHECK_FALSE(f.valid);
    CHECK(failed(f, "signature"));
    CHECK_FALSE(failed(f, "adapter bytes"));
}

TEST_CASE("signatures: garbage is refused with every check named, never thrown", "[coord][sign]") {
    const pg::Model base = tiny_model(1);
    const Upload u = make_upload(base, 7);
    TrustedKeys trusted;
    for (const std::string bad : {std::string(), std::string("{}"), std::string("not json"), std::string("\xff\xfe"),
                                  std::string("{\"format\":\"phonegpt-adapter-signature\",\"version\":2}")}) {
        const Verification v = verify(bad, u, trusted);
        CHECK_FALSE(v.valid);
        CHECK(v.checks.size() == 7);
        CHECK(failed(v, "signature file"));
    }
}

TEST_CASE("signatures: key files round-trip with mode 0600; a bad key file is refused", "[coord][sign]") {
    const std::string path = pg_test::tmp_dir() + "/coord_sign_key.ed25519";
    const SigningKey k = SigningKey::generate();
    k.save(path);
    struct stat st;
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    const SigningKey back = SigningKey::load(path);
    CHECK(back.public_key() == k.public_key());
    CHECK(back.sign("m") == k.sign("m"));
    CHECK(SigningKey::generate().public_key() != k.public_key());

    const std::string bad = pg_test::tmp_dir() + "/coord_sign_bad.ed25519";
    {
        std::FILE* f = std::fopen(bad.c_str(), "wb");
        std::fputs("phonegpt-ed25519-secret-key v1\nXYZ\n", f);
        std::fclose(f);
    }
    CHECK_THROWS_WITH(SigningKey::load(bad), Catch::Contains("is not a phonegpt Ed25519 key file"));
    CHECK_THROWS_AS(SigningKey::load(pg_test::tmp_dir() + "/no_such_key"), pg::Error);
}

TEST_CASE("signatures: the C API", "[coord][sign][capi]") {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* base = nullptr;
    REQUIRE(pg_model_create(&mc, 3, &base) == PG_OK);
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    pg_lora_adapter* ad = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &lc, &ad) == PG_OK);
    const std::string file = "the adapter file's bytes";

    uint8_t seed[32] = {7};
    pg_signing_key* key = nullptr;
    REQUIRE(pg_signing_key_from_seed(seed, &key) == PG_OK);
    uint8_t pub[32];
    REQUIRE(pg_signing_key_public(key, pub) == PG_OK);
    char id[17];
    REQUIRE(pg_key_id(pub, id) == PG_OK);
    CHECK(std::strlen(id) == 16);

    size_t len = 0;
    CHECK(pg_lora_adapter_sign(key, ad, file.data(), file.size(), nullptr, 0, &len) == PG_ERR_BUFFER_TOO_SMALL);
    std::string sig(len + 1, '\0');
    REQUIRE(pg_lora_adapter_sign(key, ad, file.data(), file.size(), &sig[0], sig.size(), &len) == PG_OK);
    sig.resize(len);
    CHECK(sig.find(id) != std::string::npos);

    pg_trusted_keys* trusted = nullptr;
    REQUIRE(pg_trusted_keys_create(&trusted) == PG_OK);
    int32_t valid = -1;
    char reason[256];
    REQUIRE(pg_lora_signature_verify(trusted, ad, file.data(), file.size(), sig.data(), sig.size(), &valid, reason,
                                     sizeof reason) == PG_OK);
    CHECK(valid == 0);
    CHECK_THAT(std::string(reason), Catch::StartsWith("trusted key: key " + std::string(id)));
    REQUIRE(pg_trusted_keys_add(trusted, pub) == PG_OK);
    REQUIRE(pg_lora_signature_verify(trusted, ad, file.data(), file.size(), sig.data(), sig.size(), &valid, reason,
                                     sizeof reason) == PG_OK);
    CHECK(valid == 1);
    CHECK(std::string(reason).empty());
    std::string changed = file;
    changed[3] = 'X';
    REQUIRE(pg_lora_signature_verify(trusted, ad, changed.data(), changed.size(), sig.data(), sig.size(), &valid,
                                     reason, 8) == PG_OK);
    CHECK(valid == 0);
    CHECK(std::string(reason) == "adapter");  // cut to fit 8 bytes with the NUL

    const std::string path = pg_test::tmp_dir() + "/coord_capi_key.ed25519";
    REQUIRE(pg_signing_key_save(key, path.c_str()) == PG_OK);
    pg_signing_key* back = nullptr;
    REQUIRE(pg_signing_key_load(path.c_str(), &back) == PG_OK);
    uint8_t pub2[32];
    REQUIRE(pg_signing_key_public(back, pub2) == PG_OK);
    CHECK(std::memcmp(pub, pub2, 32) == 0);
    CHECK(pg_signing_key_load((pg_test::tmp_dir() + "/none").c_str(), &back) == PG_ERR_IO);
    CHECK(back == nullptr);
    CHECK(pg_lora_signature_verify(nullptr, ad, file.data(), file.size(), sig.data(), sig.size(), &valid, nullptr, 0) ==
          PG_ERR_INVALID_ARGUMENT);
    pg_signing_key* gen = nullptr;
    REQUIRE(pg_signing_key_generate(&gen) == PG_OK);
    pg_signing_key_free(gen);
    pg_signing_key_free(key);
    pg_signing_key_free(nullptr);
    pg_trusted_keys_free(trusted);
    pg_trusted_keys_free(nullptr);
    pg_lora_adapter_free(ad);
    pg_model_free(base);
}
