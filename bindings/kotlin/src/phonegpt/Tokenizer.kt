package phonegpt

import java.nio.IntBuffer

enum class TokenizerKind(val code: Int) { CHAR(1), BPE(2) }

/** A tokenizer handle (pg_tokenizer). One thread at a time: every call holds its lock alone. */
class Tokenizer internal constructor(handle: Long) : NativeHandle(handle, "Tokenizer") {
    companion object {
        /** A character tokenizer whose vocabulary is the sorted set of the text's code points. */
        @JvmStatic fun char(text: String): Tokenizer = Tokenizer(Native.tokenizerCreateChar(text.toByteArray(Charsets.UTF_8)))
        /** A tokenizer restored from [toBytes]' output. */
        @JvmStatic fun fromBytes(data: ByteArray): Tokenizer = Tokenizer(Native.tokenizerDeserialize(data))
    }

    override fun free(handle: Long) = Native.tokenizerFree(handle)

    val kind: TokenizerKind
        get() = writing { h -> Native.tokenizerKind(h) }.let { code ->
            TokenizerKind.values().firstOrNull { it.code == code } ?: throw InternalException("unknown tokenizer kind $code")
        }

    val vocabSize: Int get() = writing { Native.tokenizerVocabSize(it) }

    /** The ids of [text]; a character outside the vocabulary is a [TokenizeException]. */
    fun encode(text: String): IntArray = writing { h ->
        val bytes = text.toByteArray(Charsets.UTF_8)
        val n = Native.tokenizerEncode(h, bytes, null, null, 0, 0)
        if (n > Int.MAX_VALUE) throw UnsupportedException("encode: $n ids do not fit a Java array")
        val ids = IntArray(n.toInt())
        Native.tokenizerEncode(h, bytes, ids, null, 0, ids.size)
        ids
    }

    /** Encodes into [out] from its position; returns the number of ids written ([BufferTooSmallException] if they do not fit). */
    fun encode(text: String, out: IntBuffer): Int = writing { h ->
        val r = ints(out, "encode output", output = true)
        Native.tokenizerEncode(h, text.toByteArray(Charsets.UTF_8), r.array, r.buffer, r.offset, r.length).toInt()
    }

    /** How many ids [text] encodes to. */
    fun encodedLength(text: String): Long = writing { Native.tokenizerEncode(it, text.toByteArray(Charsets.UTF_8), null, null, 0, 0) }

    fun decode(ids: IntArray): String = String(decodeBytes(ids), Charsets.UTF_8)
    fun decode(ids: IntBuffer): String = String(decodeBytes(ints(ids, "ids")), Charsets.UTF_8)
    /** The UTF-8 bytes of the ids (a BPE token may end inside a character). */
    fun decodeBytes(ids: IntArray): ByteArray = decodeBytes(ints(ids))

    private fun decodeBytes(r: Ints): ByteArray = writing { Native.tokenizerDecode(it, r.array, r.buffer, r.offset, r.length) }

    /** The serialised tokenizer (docs/tokenizer-format.md). */
    fun toBytes(): ByteArray = writing { Native.tokenizerSerialize(it) }
}
