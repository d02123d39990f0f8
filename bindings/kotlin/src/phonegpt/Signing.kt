package phonegpt

/**
 * An Ed25519 signing key (pg_signing_key, libsodium) that signs adapter files for a
 * coordinator. A key file holds the seed in hex and is written atomically with mode 0600.
 */
class SigningKey private constructor(handle: Long) : NativeHandle(handle, "SigningKey") {
    companion object {
        /** A new random key. */
        @JvmStatic fun generate(): SigningKey = SigningKey(Native.signingKeyGenerate())
        /** The key of a 32-byte seed (the same seed, the same key). */
        @JvmStatic fun fromSeed(seed: ByteArray): SigningKey = SigningKey(Native.signingKeyFromSeed(seed))
        @JvmStatic fun load(path: String): SigningKey = SigningKey(Native.signingKeyLoad(path))
        /** The first 8 bytes of SHA-256(public key) as 16 lower-case hex digits. */
        @JvmStatic fun keyIdOf(publicKey: ByteArray): String = Native.keyId(publicKey)
    }

    override fun free(handle: Long) = Native.signingKeyFree(handle)

    fun save(path: String) = writing { Native.signingKeySave(it, path) }

    /** The 32-byte public key. */
    val publicKey: ByteArray get() = writing { Native.signingKeyPublic(it) }
    val keyId: String get() = keyIdOf(publicKey)

    /**
     * The signature file's text (JSON, docs/formats.md "Adapter signatures") for the adapter
     * file [fileBytes] (its exact bytes) holding [adapter].
     */
    fun sign(adapter: LoraAdapter, fileBytes: ByteArray): String = writing { k ->
        adapter.reading { a -> String(Native.loraAdapterSign(k, a, fileBytes), Charsets.UTF_8) }
    }
}

/** The public keys a coordinator accepts (pg_trusted_keys). */
class TrustedKeys : NativeHandle(Native.trustedKeysCreate(), "TrustedKeys") {
    override fun free(handle: Long) = Native.trustedKeysFree(handle)

    fun add(publicKey: ByteArray) = writing { Native.trustedKeysAdd(it, publicKey) }

    /**
     * Verifies [signature] for the adapter file [fileBytes] holding [adapter]: every check runs;
     * returns null when all passed, else the first failed check as "check: detail". A malformed
     * argument (not a failed check) throws.
     */
    fun verify(adapter: LoraAdapter, fileBytes: ByteArray, signature: String): String? = writing { t ->
        adapter.reading { a -> Native.loraSignatureVerify(t, a, fileBytes, signature.toByteArray(Charsets.UTF_8)) }
    }
}
