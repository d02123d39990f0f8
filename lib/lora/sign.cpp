// Adapter signatures: libsodium's Ed25519 (crypto_sign_*) and SHA-256 (crypto_hash_sha256).
#include "lora/sign.hpp"

#include <sodium.h>

#include <cmath>
#include <cstring>
#include <sys/stat.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/hex.hpp"
#include "core/json.hpp"

namespace pg::lora {
namespace {

constexpr const char* kDomain = "phonegpt adapter manifest v1\n";
constexpr const char* kKeyFileHeader = "phonegpt-ed25519-secret-key v1\n";

}  // namespace

void ensure_sodium() {
    static const int ok = sodium_init();  // thread-safe, idempotent
    require(ok >= 0, PG_ERR_INTERNAL, "libsodium failed to initialise");
}

std::string sha256_hex(const void* data, std::size_t n) {
    ensure_sodium();
    uint8_t h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, static_cast<const unsigned char*>(data), n);
    return io::hex_encode(h, sizeof h);
}

std::string key_id_of(const PublicKey& key) {
    ensure_sodium();
    uint8_t h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, key.data(), key.size());
    return io::hex_encode(h, 8);
}

// ---- keys ----------------------------------------------------------------------------------

SigningKey SigningKey::generate() {
    ensure_sodium();
    SigningKey k;
    crypto_sign_keypair(k.public_.data(), k.secret_.data());
    return k;
}

SigningKey SigningKey::from_seed(const std::array<uint8_t, 32>& seed) {
    ensure_sodium();
    SigningKey k;
    crypto_sign_seed_keypair(k.public_.data(), k.secret_.data(), seed.data());
    return k;
}

SigningKey::~SigningKey() { sodium_memzero(secret_.data(), secret_.size()); }
SigningKey::SigningKey(const SigningKey&) = default;
SigningKey& SigningKey::operator=(const SigningKey&) = default;

void SigningKey::save(const std::string& path) const {
    uint8_t seed[32];
    crypto_sign_ed25519_sk_to_seed(seed, secret_.data());
    std::string text = std::string(kKeyFileHeader) + io::hex_encode(seed, 32) + "\n";
    sodium_memzero(seed, sizeof seed);
    io::write_file_atomically(path, text.data(), text.size());
    sodium_memzero(&text[0], text.size());
    if (::chmod(path.c_str(), 0600) != 0)
        throw Error(PG_ERR_IO, "signing key " + path + ": chmod 0600 failed: " + std::strerror(errno));
}

SigningKey SigningKey::load(const std::string& path) {
    const std::vector<uint8_t> bytes = io::read_small_file(path, 4096);
    std::string text(bytes.begin(), bytes.end());
    const std::string header = kKeyFileHeader;
    std::array<uint8_t, 32> seed{};
    const bool ok = text.size() == header.size() + 65 && text.compare(0, header.size(), header) == 0 &&
                    text.back() == '\n' && io::hex_decode(text.substr(header.size(), 64), seed.data(), 32);
    sodium_memzero(&text[0], text.size());
    require(ok, PG_ERR_FORMAT, "signing key " + path + " is not a phonegpt Ed25519 key file (\"" +
                                   header.substr(0, header.size() - 1) + "\" then 64 hex digits)");
    SigningKey k = from_seed(seed);
    sodium_memzero(seed.data(), seed.size());
    return k;
}

std::string SigningKey::key_id() const { return key_id_of(public_); }

std::array<uint8_t, 64> SigningKey::sign(const std::string& message) const {
    ensure_sodium();
    std::array<uint8_t, 64> sig{};
    crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(message.data()),
                         message.size(), secret_.data());
    return sig;
}

// ---- manifests and signature files ---------------------------------------------------------

Manifest make_manifest(const void* file_bytes, std::size_t n, const BaseIdentity& base,
                       const TrainingRecord& record, const std::string& key_id) {
    Manifest m;
    m.adapter_sha256 = sha256_hex(file_bytes, n);
    m.adapter_bytes = n;
    m.base_fingerprint = base.fingerprint();
    m.steps = record.steps;
    m.tokens = record.tokens;
    m.seed = record.seed;
    if (!record.losses.empty()) m.first_loss = record.losses.front(), m.last_loss = record.losses.back();
    m.key_id = key_id;
    return m;
}

namespace {

// The manifest as compact JSON, its nine members in this order: the signed bytes after kDomain.
io::JsonObject manifest_json(const Manifest& m) {
    io::JsonObject o;
    o.str("adapter_sha256", m.adapter_sha256)
        .unsigned_integer("adapter_bytes", m.adapter_bytes)
        .str("base_fingerprint", io::hex64(m.base_fingerprint))
        .integer("steps", m.steps)
        .integer("tokens", m.tokens)
        .unsigned_integer("seed", m.seed)
        .flt_or_token("first_loss", m.first_loss)
        .flt_or_token("last_loss", m.last_loss)
        .str("key_id", m.key_id);
    return o;
}

}  // namespace

std::string canonical_manifest(const Manifest& m) { return kDomain + manifest_json(m).text(); }

std::string sign_adapter(const SigningKey& key, const void* file_bytes, std::size_t n,
                         const BaseIdentity& base, const TrainingRecord& record) {
    const Manifest m = make_manifest(file_bytes, n, base, record, key.key_id());
    const auto sig = key.sign(canonical_manifest(m));
    io::JsonObject file;
    file.str("format", kSignatureFormat)
        .integer("version", kSignatureVersion)
        .object("manifest", manifest_json(m))
        .str("public_key", io::hex_encode(key.public_key().data(), 32))
        .str("signature", io::hex_encode(sig.data(), 64));
    return file.text() + "\n";
}

}  // namespace pg::lora
