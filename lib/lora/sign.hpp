// Ed25519 signatures of adapters, through libsodium (an audited, well-kept implementation: no
// hand-written cryptography here). A signature travels beside the adapter file, as a small
// JSON file holding the signed manifest, the signer's public key and the signature
// (docs/formats.md, "Adapter signatures"). The manifest binds the exact bytes of the adapter
// file (SHA-256) to what a coordinator checks without trusting the upload: the base
// fingerprint and the training record's summary, and names the key that signed it.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "lora/adapter.hpp"

namespace pg::lora {

using PublicKey = std::array<uint8_t, 32>;

// A public key from the 32 bytes a caller gives.
inline PublicKey public_key_from(const uint8_t* bytes) {
    PublicKey k;
    std::memcpy(k.data(), bytes, k.size());
    return k;
}

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

// Sets libsodium up once (thread-safe); every function here calls it before using libsodium.
void ensure_sodium();
// SHA-256 of n bytes as 64 lower-case hex digits.
std::string sha256_hex(const void* data, std::size_t n);

// The signature file's "format" and "version" members, which a verifier requires.
inline constexpr const char* kSignatureFormat = "phonegpt-adapter-signature";
inline constexpr int kSignatureVersion = 1;

}  // namespace pg::lora
