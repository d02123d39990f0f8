package phonegpt

import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File
import java.security.MessageDigest

/**
 * Adapter signatures from Kotlin: the key of RFC 8032's first Ed25519 test vector, key ids
 * against the JDK's SHA-256, and sign / verify of a real adapter file with tampering.
 */
class SigningTest {
    private fun hex(s: String) = ByteArray(s.length / 2) { i -> s.substring(2 * i, 2 * i + 2).toInt(16).toByte() }
    private fun hexOf(b: ByteArray) = b.joinToString("") { String.format("%02x", it) }

    // RFC 8032, section 7.1, TEST 1
    private val seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    private val public = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")

    @Test fun keysMatchRfc8032AndTheirIdsSha256() {
        SigningKey.fromSeed(seed).use { k ->
            assertArrayEquals(public, k.publicKey)
            val sha = MessageDigest.getInstance("SHA-256").digest(public)
            assertEquals(hexOf(sha.copyOf(8)), k.keyId)
            val file = File(tmp, "signing.key")
            k.save(file.path)
            SigningKey.load(file.path).use { assertArrayEquals(public, it.publicKey) }
        }
        SigningKey.generate().use { a -> SigningKey.generate().use { b -> assertTrue(!a.publicKey.contentEquals(b.publicKey)) } }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { SigningKey.fromSeed(ByteArray(31)) }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { SigningKey.keyIdOf(ByteArray(0)) }
        assertThrows<IoException>(Status.IO) { SigningKey.load(File(tmp, "no_such.key").path) }
        val k = SigningKey.generate()
        k.close()
        k.close()
        assertThrows<StateException>(Status.STATE) { k.publicKey }
    }

    @Test fun signedAdaptersVerifyAndTamperingIsNamed() {
        val cfg = ModelConfig.preset("tiny").copy(vocabSize = 65, paddedVocabSize = 0)
        Model(cfg, 2).use { m ->
            LoraAdapter(m).use { adapter ->
                val file = File(tmp, "signed.adapter")
                adapter.save(file.path)
                val bytes = file.readBytes()
                SigningKey.fromSeed(seed).use { key ->
                    val signature = key.sign(adapter, bytes)
                    assertTrue(signature, signature.contains(key.keyId))
                    TrustedKeys().use { trusted ->
                        assertNotNull(trusted.verify(adapter, bytes, signature))        // key not trusted yet
                        trusted.add(key.publicKey)
                        assertNull(trusted.verify(adapter, bytes, signature))
                        val tampered = bytes.copyOf().also { it[it.size - 1] = (it[it.size - 1] + 1).toByte() }
                        val reason = trusted.verify(adapter, tampered, signature)
                        assertNotNull(reason)
                        assertTrue(reason!!, reason.contains(":"))
                        assertNotNull(trusted.verify(adapter, bytes, signature.replace(key.keyId, "0000000000000000")))
                        assertNotNull(trusted.verify(adapter, bytes, "{"))
                        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { trusted.add(ByteArray(5)) }
                    }
                }
            }
        }
    }
}
