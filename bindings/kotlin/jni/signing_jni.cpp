// The signing natives (pg_signing_key_*, pg_trusted_keys_*, pg_lora_adapter_sign,
// pg_lora_signature_verify; Kotlin: Signing.kt): Ed25519 keys, adapter signature files and
// their verification by a coordinator. Keys cross as 32-byte arrays.
#include "jni_support.hpp"

namespace pg_jni {
namespace {

constexpr jsize kKeyBytes = 32;

// A 32-byte key or seed from Java.
bool get_key(JNIEnv* env, jbyteArray a, const char* what, uint8_t out[kKeyBytes]) {
    if (!a || env->GetArrayLength(a) != kKeyBytes) {
        throw_invalid(env, std::string(what) + " must be 32 bytes");
        return false;
    }
    env->GetByteArrayRegion(a, 0, kKeyBytes, reinterpret_cast<jbyte*>(out));
    return !env->ExceptionCheck();
}

pg_signing_key* key_of(JNIEnv* env, jlong h) { return handle_of<pg_signing_key>(env, h, "SigningKey"); }

jlong n_signing_key_generate(JNIEnv* env, jclass) {
    pg_signing_key* k = nullptr;
    return failed(env, pg_signing_key_generate(&k)) ? 0 : to_handle(k);
}

jlong n_signing_key_from_seed(JNIEnv* env, jclass, jbyteArray jseed) {
    uint8_t seed[kKeyBytes];
    pg_signing_key* k = nullptr;
    if (!get_key(env, jseed, "seed", seed) || failed(env, pg_signing_key_from_seed(seed, &k))) return 0;
    return to_handle(k);
}

void n_signing_key_save(JNIEnv* env, jclass, jlong h, jstring jpath) {
    auto* k = key_of(env, h);
    std::string path;
    if (k && get_string(env, jpath, "path", &path)) failed(env, pg_signing_key_save(k, path.c_str()));
}

jlong n_signing_key_load(JNIEnv* env, jclass, jstring jpath) {
    std::string path;
    pg_signing_key* k = nullptr;
    if (!get_string(env, jpath, "path", &path) || failed(env, pg_signing_key_load(path.c_str(), &k))) return 0;
    return to_handle(k);
}

jbyteArray n_signing_key_public(JNIEnv* env, jclass, jlong h) {
    auto* k = key_of(env, h);
    uint8_t pub[kKeyBytes];
    if (!k || failed(env, pg_signing_key_public(k, pub))) return nullptr;
    return new_bytes(env, pub, kKeyBytes);
}

void n_signing_key_free(JNIEnv*, jclass, jlong h) { pg_signing_key_free(reinterpret_cast<pg_signing_key*>(intptr_t(h))); }

jstring n_key_id(JNIEnv* env, jclass, jbyteArray jpub) {
    uint8_t pub[kKeyBytes];
    char id[17];
    if (!get_key(env, jpub, "public key", pub) || failed(env, pg_key_id(pub, id))) return nullptr;
    return env->NewStringUTF(id);
}

// The signature file's text (UTF-8 JSON) for the adapter file `jfile` holding `adapter`.
jbyteArray n_lora_adapter_sign(JNIEnv* env, jclass, jlong key, jlong adapter, jbyteArray jfile) {
    auto* k = key_of(env, key);
    auto* a = k ? handle_of<pg_lora_adapter>(env, adapter, "LoraAdapter") : nullptr;
    std::vector<char> file;
    if (!a || !get_bytes(env, jfile, "adapter file bytes", &file)) return nullptr;
    return filled_bytes(env, [&](char* sig, size_t cap, size_t* len) {
        return pg_lora_adapter_sign(k, a, bytes_of(file), file.size(), sig, cap, len);
    });
}

jlong n_trusted_keys_create(JNIEnv* env, jclass) {
    pg_trusted_keys* t = nullptr;
    return failed(env, pg_trusted_keys_create(&t)) ? 0 : to_handle(t);
}

void n_trusted_keys_add(JNIEnv* env, jclass, jlong h, jbyteArray jpub) {
    auto* t = handle_of<pg_trusted_keys>(env, h, "TrustedKeys");
    uint8_t pub[kKeyBytes];
    if (t && get_key(env, jpub, "public key", pub)) failed(env, pg_trusted_keys_add(t, pub));
}

void n_trusted_keys_free(JNIEnv*, jclass, jlong h) { pg_trusted_keys_free(reinterpret_cast<pg_trusted_keys*>(intptr_t(h))); }

// Returns null when every check passed, else the first failed check's "check: detail".
jstring n_lora_signature_verify(JNIEnv* env, jclass, jlong trusted, jlong adapter, jbyteArray jfile,
                                jbyteArray jsignature) {
    auto* t = handle_of<pg_trusted_keys>(env, trusted, "TrustedKeys");
    auto* a = t ? handle_of<pg_lora_adapter>(env, adapter, "LoraAdapter") : nullptr;
    std::vector<char> file, signature;
    if (!a || !get_bytes(env, jfile, "adapter file bytes", &file) || !get_bytes(env, jsignature, "signature", &signature))
        return nullptr;
    int32_t valid = 0;
    char reason[512] = {0};
    if (failed(env, pg_lora_signature_verify(t, a, bytes_of(file), file.size(), bytes_of(signature), signature.size(),
                                             &valid, reason, sizeof reason)))
        return nullptr;
    return valid ? nullptr : env->NewStringUTF(reason);
}

const JNINativeMethod kSigningNatives[] = {
    PG_NATIVE("signingKeyGenerate", "()J", n_signing_key_generate),
    PG_NATIVE("signingKeyFromSeed", "([B)J", n_signing_key_from_seed),
    PG_NATIVE("signingKeySave", "(JLjava/lang/String;)V", n_signing_key_save),
    PG_NATIVE("signingKeyLoad", "(Ljava/lang/String;)J", n_signing_key_load),
    PG_NATIVE("signingKeyPublic", "(J)[B", n_signing_key_public),
    PG_NATIVE("signingKeyFree", "(J)V", n_signing_key_free),
    PG_NATIVE("keyId", "([B)Ljava/lang/String;", n_key_id),
    PG_NATIVE("loraAdapterSign", "(JJ[B)[B", n_lora_adapter_sign),
    PG_NATIVE("trustedKeysCreate", "()J", n_trusted_keys_create),
    PG_NATIVE("trustedKeysAdd", "(J[B)V", n_trusted_keys_add),
    PG_NATIVE("trustedKeysFree", "(J)V", n_trusted_keys_free),
    PG_NATIVE("loraSignatureVerify", "(JJ[B[B)Ljava/lang/String;", n_lora_signature_verify),
};

}  // namespace

bool register_signing_natives(JNIEnv* env, jclass natives) { return register_natives(env, natives, kSigningNatives); }

}  // namespace pg_jni
