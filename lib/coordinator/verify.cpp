// Signature verification: libsodium's Ed25519 (crypto_sign_verify_detached) over the
// manifest lora/sign.cpp writes.
#include "coordinator/verify.hpp"

#include <sodium.h>

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/hex.hpp"
#include "core/json.hpp"

namespace pg::lora {
namespace {

// A loss in a message, spelt as the manifest spells it (JsonObject::flt_or_token): the shortest
// decimal that reads back exactly, or "nan" / "inf" / "-inf" as strings (a NaN trajectory must
// still be signable so that a coordinator can refuse it by name).
std::string loss_json(float v) {
    const char* token = io::nonfinite_token(v);
    return token ? io::json_quote(token) : io::json_float(v);
}

float loss_from_json(const io::JsonValue& v, const std::string& what) {
    if (v.is_string()) {
        const std::string& s = v.as_string(what);
        float token = 0.0f;
        if (io::parse_nonfinite_token(s, &token)) return token;
        throw Error(PG_ERR_FORMAT, what + " is the string \"" + s + "\", not a number, \"nan\" or \"inf\"");
    }
    return static_cast<float>(v.as_double(what));
}

bool same_float(float a, float b) {
    uint32_t x, y;
    std::memcpy(&x, &a, 4), std::memcpy(&y, &b, 4);
    return x == y || (std::isnan(a) && std::isnan(b));
}

struct ParsedSignature {
    Manifest manifest;
    PublicKey public_key{};
    std::array<uint8_t, 64> signature{};
};

// Strict: exactly the members this version writes, each of its type.
ParsedSignature parse_signature(const std::string& text) {
    const io::JsonValue root = io::parse_json(text.data(), text.size(), "adapter signature");
    const auto& members = root.as_object("adapter signature");
    auto get = [](const io::JsonValue& obj, const std::string& key, const std::string& where) -> const io::JsonValue& {
        const io::JsonValue* v = obj.find(key);
        require(v != nullptr, PG_ERR_FORMAT, where + " has no \"" + key + "\"");
        return *v;
    };
    require(members.size() == 5, PG_ERR_FORMAT,
            "adapter signature has " + std::to_string(members.size()) + " members, expected 5 "
            "(format, version, manifest, public_key, signature)");
    require(get(root, "format", "adapter signature").as_string("format") == kSignatureFormat, PG_ERR_FORMAT,
            std::string("adapter signature: format is not \"") + kSignatureFormat + "\"");
    const uint64_t version = get(root, "version", "adapter signature").as_u64("version");
    require(version <= uint64_t(kSignatureVersion), PG_ERR_VERSION,
            "adapter signature version " + std::to_string(version) + " is newer than this library reads (" +
                std::to_string(kSignatureVersion) + ")");
    require(version == uint64_t(kSignatureVersion), PG_ERR_FORMAT, "adapter signature version 0 does not exist");
    ParsedSignature p;
    require(io::hex_decode(get(root, "public_key", "adapter signature").as_string("public_key"), p.public_key.data(), 32),
            PG_ERR_FORMAT, "adapter signature: public_key is not 64 lower-case hex digits");
    require(io::hex_decode(get(root, "signature", "adapter signature").as_string("signature"), p.signature.data(), 64),
            PG_ERR_FORMAT, "adapter signature: signature is not 128 lower-case hex digits");
    const io::JsonValue& m = get(root, "manifest", "adapter signature");
    require(m.as_object("manifest").size() == 9, PG_ERR_FORMAT, "adapter signature: manifest does not have its 9 members");
    Manifest& mf = p.manifest;
    mf.adapter_sha256 = get(m, "adapter_sha256", "manifest").as_string("manifest.adapter_sha256");
    uint8_t digest[32];
    require(io::hex_decode(mf.adapter_sha256, digest, 32), PG_ERR_FORMAT, "manifest.adapter_sha256 is not 64 lower-case hex digits");
    mf.adapter_bytes = get(m, "adapter_bytes", "manifest").as_u64("manifest.adapter_bytes");
    mf.base_fingerprint = io::parse_hex64(get(m, "base_fingerprint", "manifest").as_string("manifest.base_fingerprint"),
                                          "manifest.base_fingerprint");
    mf.steps = static_cast<int64_t>(get(m, "steps", "manifest").as_u64("manifest.steps"));
    mf.tokens = static_cast<int64_t>(get(m, "tokens", "manifest").as_u64("manifest.tokens"));
    mf.seed = get(m, "seed", "manifest").as_u64("manifest.seed");
    mf.first_loss = loss_from_json(get(m, "first_loss", "manifest"), "manifest.first_loss");
    mf.last_loss = loss_from_json(get(m, "last_loss", "manifest"), "manifest.last_loss");
    mf.key_id = get(m, "key_id", "manifest").as_string("manifest.key_id");
    return p;
}

}  // namespace

const PublicKey* TrustedKeys::find(const std::string& key_id) const {
    auto it = keys_.find(key_id);
    return it == keys_.end() ? nullptr : &it->second;
}

std::string Verification::first_failure() const {
    for (const auto& c : checks)
        if (!c.passed) return c.name + ": " + c.detail;
    return "";
}

Verification verify_adapter_signature(const std::string& signature_text, const void* file_bytes,
                                      std::size_t n, const BaseIdentity& base,
                                      const TrainingRecord& record, const TrustedKeys& trusted) {
    Verification v;
    auto check = [&](const char* name, bool passed, std::string detail) {
        v.checks.push_back({name, passed, passed ? std::string() : std::move(detail)});
    };
    static const char* kLater[] = {"key id", "trusted key", "signature", "adapter bytes", "base fingerprint",
                                   "training record"};
    ParsedSignature p;
    try {
        p = parse_signature(signature_text);
        check("signature file", true, "");
    } catch (const std::exception& e) {
        check("signature file", false, e.what());
        for (const char* name : kLater) check(name, false, "not checked: the signature file is unreadable");
        return v;
    }
    const Manifest& m = p.manifest;
    v.key_id = m.key_id;
    check("key id", key_id_of(p.public_key) == m.key_id,
          "the manifest names key " + m.key_id + " but the public key's id is " + key_id_of(p.public_key));
    const PublicKey* known = trusted.find(key_id_of(p.public_key));
    check("trusted key", known != nullptr && *known == p.public_key,
          "key " + key_id_of(p.public_key) + " is not among the " + std::to_string(trusted.size()) + " trusted keys");
    ensure_sodium();
    const std::string canonical = canonical_manifest(m);
    const bool sig_ok = crypto_sign_verify_detached(p.signature.data(), reinterpret_cast<const unsigned char*>(canonical.data()),
                                                    canonical.size(), p.public_key.data()) == 0;
    check("signature", sig_ok, "the Ed25519 signature does not verify over the manifest with key " + key_id_of(p.public_key));
    const std::string digest = sha256_hex(file_bytes, n);
    check("adapter bytes", digest == m.adapter_sha256 && n == m.adapter_bytes,
          "the adapter's " + std::to_string(n) + " bytes hash to " + digest + ", the manifest signed " +
              std::to_string(m.adapter_bytes) + " bytes hashing to " + m.adapter_sha256);
    check("base fingerprint", base.fingerprint() == m.base_fingerprint,
          "the adapter's base fingerprint is " + io::hex64(base.fingerprint()) + ", the manifest signed " +
              io::hex64(m.base_fingerprint));
    const Manifest own = make_manifest(nullptr, 0, base, record, m.key_id);
    const bool record_ok = own.steps == m.steps && own.tokens == m.tokens && own.seed == m.seed &&
                           same_float(own.first_loss, m.first_loss) && same_float(own.last_loss, m.last_loss);
    check("training record", record_ok,
          "the adapter records " + std::to_string(own.steps) + " steps, " + std::to_string(own.tokens) +
              " tokens, losses " + loss_json(own.first_loss) + " .. " + loss_json(own.last_loss) +
              "; the manifest signed " + std::to_string(m.steps) + " steps, " + std::to_string(m.tokens) +
              " tokens, losses " + loss_json(m.first_loss) + " .. " + loss_json(m.last_loss));
    v.valid = true;
    for (const auto& c : v.checks) v.valid = v.valid && c.passed;
    return v;
}

}  // namespace pg::lora
