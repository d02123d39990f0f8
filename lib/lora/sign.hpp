// Ed25519 signatures of adapters, through libsodium (an audited, well-kept implementation: no
// hand-written cryptography here). A signature travels beside the adapter file, as a small
// JSON file holding the signed manifest, the signer's public key and the signature
// (docs/formats.md, "Adapter signatures"). The manifest binds the exact bytes of the adapter
// file (SHA-256) to what a coordinator checks without trusting the upload: the base
// fingerprint and the training record's summary, and names the key that signed it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lora/adapter.hpp"

namespace pg::lora {

using PublicKey = std::array<uint8_t, 32>;

// An Ed25519 key pair. The secret half never leaves this object except through save().
class SigningKey {
public:
    static SigningKey generate();
    static SigningKey from_seed(const std::array<uint8_t, 32>& seed);
    // The key file: "phonegpt-ed25519-secret-key v1\n" + the 32-byte seed in hex + "\n",
    // written atomically with mode 0600.
    void save(const std::string& path) const;
    static SigningKey load(const std::string& path);
    const PublicKey& public_key() const { return public_; }
    std::string key_id() const;
    // Ed25519 signature of `message`.
    std::array<uint8_t, 64> sign(const std::string& message) const;
    ~SigningKey();
    SigningKey(const SigningKey&);
    SigningKey& operator=(const SigningKey&);

private:
    SigningKey() = default;
    std::array<uint8_t, 64> secret_{};  // libsodium's seed || public key
    PublicKey public_{};
};

// The key id: the first 8 bytes of SHA-256(public key), 16 lower-case hex digits.
std::string key_id_of(const PublicKey& key);

// What is signed. Everything a coordinator compares with the adapter it loaded.
struct Manifest {
    std::string adapter_sha256;  // 64 hex digits of the adapter file's bytes
    uint64_t adapter_bytes = 0;
    uint64_t base_fingerprint = 0;
    int64_t steps = 0;
    int64_t tokens = 0;
    uint64_t seed = 0;
    float first_loss = 0.0f;     // the record's first and last losses (0 when no steps)
    float last_loss = 0.0f;
    std::string key_id;
};

Manifest make_manifest(const void* file_bytes, std::size_t n, const BaseIdentity& base,
                       const TrainingRecord& record, const std::string& key_id);
// The exact bytes that are signed: a domain-separation line, then the manifest as compact JSON
// with its keys in a fixed order.
std::string canonical_manifest(const Manifest& m);

// The signature file's text for `file_bytes` (the adapter file) signed by `key`.
std::string sign_adapter(const SigningKey& key, const void* file_bytes, std::size_t n,
                         const BaseIdentity& base, const TrainingRecord& record);

// The public keys a coordinator accepts, by key id.
class TrustedKeys {
public:
    void add(const PublicKey& key) { keys_[key_id_of(key)] = key; }
    const PublicKey* find(const std::string& key_id) const;
    std::size_t size() const { return keys_.size(); }

private:
    std::map<std::string, PublicKey> keys_;
};

// One outcome of a verification: which check, whether it passed, why not.
struct SignatureCheck {
    std::string name;    // "signature file", "trusted key", "signature", "adapter bytes", ...
    bool passed = false;
    std::string detail;
};

struct Verification {
    bool valid = false;  // every check passed
    std::string key_id;  // of the signer named in the file ("" when unreadable)
    std::vector<SignatureCheck> checks;
    std::string first_failure() const;  // "check: detail" of the first failed check, or ""
};

// Verifies a signature file against the adapter's bytes and what the adapter itself says
// (base fingerprint, training record). Runs every check it can; never throws on bad input.
Verification verify_adapter_signature(const std::string& signature_text, const void* file_bytes,
                                      std::size_t n, const BaseIdentity& base,
                                      const TrainingRecord& record, const TrustedKeys& trusted);

}  // namespace pg::lora
