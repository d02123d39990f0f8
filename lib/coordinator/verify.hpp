// Verifying adapter signatures: the coordinator's half of lora/sign.hpp (the phone signs its
// upload; the coordinator checks the signature file against the keys it trusts and against
// what the adapter itself says). Its own file so that the phone library carries no verifier.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lora/sign.hpp"

namespace pg::lora {

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
