package phonegpt

import java.io.File
import java.io.FileDescriptor
import java.nio.ByteBuffer
import java.nio.IntBuffer

enum class TokenizerKind(val code: Int) { CHAR(1), BPE(2) }

/** The files a BPE tokenizer can be written as (pg_tokenizer_file). */
enum class TokenizerFile(val code: Int) {
    /** A .tiktoken rank file (tokenizers on tiktoken's pre-split rules only). */
    TIKTOKEN(1),
    /** GPT-2's encoder.json (the gpt2 pattern only). */
    GPT2_ENCODER(2),
    /** GPT-2's vocab.bpe (the gpt2 pattern only). */
    GPT2_MERGES(3),
    /** A Hugging Face tokenizer.json. */
    HF_JSON(4)
}

/** The pre-split patterns a BPE tokenizer can be trained with (pg_bpe_pattern). */
enum class BpePattern(override val code: Int) : CEnum { GPT2(1), CL100K(2), O200K(3) }

/**
 * A tokenizer handle (pg_tokenizer): a character tokenizer, or byte-level BPE (GPT-2, cl100k,
 * o200k) loaded from a tiktoken rank file, GPT-2's encoder.json + vocab.bpe or a Hugging Face
 * tokenizer.json. Malformed files are a [FormatException], files asking for something the
 * library does not do an [UnsupportedException]; the message names the line, entry or field.
 * One thread at a time: every call holds its lock alone.
 */
class Tokenizer internal constructor(handle: Long) : NativeHandle(handle, "Tokenizer") {
    companion object {
        /** A character tokenizer whose vocabulary is the sorted set of the text's code points. */
        @JvmStatic fun characterLevel(text: String): Tokenizer =
            Tokenizer(Native.tokenizerCreateChar(text.toByteArray(Charsets.UTF_8)))
        /** [characterLevel] (Kotlin's short name; `char` is a keyword in Java). */
        @JvmSynthetic fun char(text: String): Tokenizer = characterLevel(text)
        /** A tokenizer restored from [toBytes]' output. */
        @JvmStatic fun fromBytes(data: ByteArray): Tokenizer = Tokenizer(Native.tokenizerDeserialize(data))
        /** [fromBytes] of a buffer's remaining bytes (its position is left unchanged). */
        @JvmStatic fun fromBytes(data: ByteBuffer): Tokenizer =
            fromBytes(ByteArray(data.remaining()).also { data.duplicate().get(it) })
        /** [fromBytes] of a file's contents (an unreadable file is an [IoException]). */
        @JvmStatic fun fromFile(file: File): Tokenizer = fromBytes(PhoneGpt.readFile(file.path))
        /**
         * [fromBytes] of [length] bytes at [offset] of an open file descriptor, as Android's
         * AssetFileDescriptor (fileDescriptor, startOffset, length) or a ParcelFileDescriptor
         * (offset 0) hand them out; [length] < 0 reads to the end. The descriptor stays open.
         */
        @JvmStatic fun fromFileDescriptor(fd: FileDescriptor, offset: Long, length: Long): Tokenizer =
            fromBytes(PhoneGpt.readFileDescriptor(fd, offset, length))

        /**
         * BPE from a tiktoken rank file's contents and its [encoding]: "gpt2", "r50k_base",
         * "p50k_base", "cl100k_base", "o200k_base" (which also give the encoding's special
         * tokens), or the exact regex of one of their pre-tokenizers. Ids are ranks.
         */
        @JvmStatic fun tiktoken(ranks: ByteArray, encoding: String): Tokenizer =
            Tokenizer(Native.tokenizerCreateTiktoken(ranks, encoding))
        /** [tiktoken] from a file (read here: an unreadable file is an [IoException]). */
        @JvmStatic fun tiktokenFile(path: String, encoding: String): Tokenizer = tiktoken(PhoneGpt.readFile(path), encoding)

        /** BPE from GPT-2's encoder.json and vocab.bpe (a.k.a. vocab.json and merges.txt). */
        @JvmStatic fun gpt2(encoderJson: ByteArray, vocabBpe: ByteArray): Tokenizer =
            Tokenizer(Native.tokenizerCreateGpt2(encoderJson, vocabBpe))
        @JvmStatic fun gpt2Files(encoderJsonPath: String, vocabBpePath: String): Tokenizer =
            gpt2(PhoneGpt.readFile(encoderJsonPath), PhoneGpt.readFile(vocabBpePath))

        /**
         * BPE from a Hugging Face tokenizer.json (model BPE, a ByteLevel pre-tokenizer on one of
         * tiktoken's patterns, ByteLevel decoder); its added_tokens are the special tokens.
         */
        @JvmStatic fun huggingFace(tokenizerJson: ByteArray): Tokenizer = Tokenizer(Native.tokenizerCreateHf(tokenizerJson))
        @JvmStatic fun huggingFaceFile(path: String): Tokenizer = huggingFace(PhoneGpt.readFile(path))

        /**
         * Trains a byte-level BPE tokenizer of at most [vocabSize] tokens (special tokens, the 256
         * bytes, the merges) on [texts] (pg_bpe_train: Hugging Face BpeTrainer's merges).
         * [progress] gets (tokens so far, vocabSize) after each merge; [cancel] stops it from any
         * thread ([CancelledException]); an exception thrown by [progress] is re-thrown here.
         */
        @JvmStatic @JvmOverloads fun trainBpe(texts: List<String>, vocabSize: Int,
                                              options: BpeTrainOptions = BpeTrainOptions.default(),
                                              cancel: CancellationToken? = null,
                                              progress: ((Long, Long) -> Unit)? = null): Tokenizer =
            trainBpeBytes(texts.map { it.toByteArray(Charsets.UTF_8) }, vocabSize, options, cancel, progress)

        /** [trainBpe] on texts given as bytes (any bytes). */
        @JvmStatic @JvmOverloads fun trainBpeBytes(texts: List<ByteArray>, vocabSize: Int,
                                                   options: BpeTrainOptions = BpeTrainOptions.default(),
                                                   cancel: CancellationToken? = null,
                                                   progress: ((Long, Long) -> Unit)? = null): Tokenizer {
            val bridge = progressBridge(progress, cancel)
            return Tokenizer(Native.tokenizerTrainBpe(texts.toTypedArray(), vocabSize, options.fields(),
                                                      options.specialTokens.toTypedArray(), bridge))
        }
    }

    override fun free(handle: Long) = Native.tokenizerFree(handle)

    val kind: TokenizerKind
        get() = writing { h -> Native.tokenizerKind(h) }.let { code ->
            TokenizerKind.values().firstOrNull { it.code == code } ?: throw InternalException("unknown tokenizer kind $code")
        }

    val vocabSize: Int get() = writing { Native.tokenizerVocabSize(it) }

    /** The id of the special token [text] ("<|endoftext|>"); [InvalidArgumentException] if there is none. */
    fun specialId(text: String): Int = writing { Native.tokenizerSpecialId(it, text) }

    /**
     * The ids of [text]; special tokens are recognised as [options] says (by default they are
     * text). A character outside a character tokenizer's vocabulary is a [TokenizeException].
     */
    @JvmOverloads fun encode(text: String, options: EncodeOptions = EncodeOptions.default()): IntArray =
        encode(text.toByteArray(Charsets.UTF_8), options)

    /** The ids of raw bytes (BPE encodes any byte string, invalid UTF-8 too). */
    @JvmOverloads fun encode(bytes: ByteArray, options: EncodeOptions = EncodeOptions.default()): IntArray = writing { h ->
        val n = encodeNative(h, bytes, options, null)
        if (n > Int.MAX_VALUE) throw UnsupportedException("encode: $n ids do not fit a Java array")
        val ids = IntArray(n.toInt())
        encodeNative(h, bytes, options, ints(ids))
        ids
    }

    /** Encodes into [out] from its position; returns the number of ids written ([BufferTooSmallException] if they do not fit). */
    @JvmOverloads fun encode(text: String, out: IntBuffer, options: EncodeOptions = EncodeOptions.default()): Int = writing { h ->
        encodeNative(h, text.toByteArray(Charsets.UTF_8), options, ints(out, "encode output", output = true)).toInt()
    }

    /** How many ids [text] encodes to. */
    @JvmOverloads fun encodedLength(text: String, options: EncodeOptions = EncodeOptions.default()): Long =
        writing { encodeNative(it, text.toByteArray(Charsets.UTF_8), options, null) }

    private fun encodeNative(h: Long, bytes: ByteArray, options: EncodeOptions, out: Ints?): Long =
        Native.tokenizerEncode(h, bytes, options.fields(), options.allowedSpecial.toTypedArray(), out?.array,
                               out?.buffer, out?.offset ?: 0, out?.length ?: 0)

    /** The text of the ids (bytes that are not valid UTF-8 become U+FFFD: use [decodeBytes] for the bytes). */
    fun decode(ids: IntArray): String = String(decodeBytes(ids), Charsets.UTF_8)
    fun decode(ids: IntBuffer): String = String(decodeBytes(ints(ids, "ids")), Charsets.UTF_8)
    /** The UTF-8 bytes of the ids (a BPE token may end inside a character). */
    fun decodeBytes(ids: IntArray): ByteArray = decodeBytes(ints(ids))

    private fun decodeBytes(r: Ints): ByteArray = writing { Native.tokenizerDecode(it, r.array, r.buffer, r.offset, r.length) }

    /** The serialised tokenizer (docs/tokenizer-format.md). */
    fun toBytes(): ByteArray = writing { Native.tokenizerSerialize(it) }

    /** A BPE tokenizer as [file]'s contents; a format that cannot express it is an [UnsupportedException]. */
    fun writeFile(file: TokenizerFile): ByteArray = writing { Native.tokenizerWriteFile(it, file.code) }

    /** A streaming decoder over this tokenizer (close it; it keeps the tokenizer's memory alive). */
    fun stream(): TokenStream = TokenStream(this)

    /**
     * Text generation through this tokenizer: runs [generate] with a token callback that gives
     * [onText] each piece of text as it becomes complete UTF-8 (none if [onText] is null), and
     * returns the text of the ids [generate] returns.
     */
    internal fun generateText(onText: ((String) -> Unit)?, generate: (((Int) -> Unit)?) -> IntArray): String {
        if (onText == null) return decode(generate(null))
        return stream().use { s ->
            val ids = generate { id -> s.push(id).let { if (it.isNotEmpty()) onText(it) } }
            s.finish().let { if (it.isNotEmpty()) onText(it) }
            decode(ids)
        }
    }
}

/**
 * A streaming decoder for generated tokens (pg_token_stream): [push] gives the text each token
 * completed, holding the first bytes of a character split across tokens until the next push;
 * bytes that can never become valid UTF-8 come out as U+FFFD. [finish] gives what is still held
 * and empties the stream for a new text. It keeps its tokenizer's native memory alive.
 */
class TokenStream internal constructor(val tokenizer: Tokenizer) :
    NativeHandle(create(tokenizer), "TokenStream") {
    private companion object {
        fun create(tokenizer: Tokenizer): Long = tokenizer.writing { t ->
            val s = Native.tokenStreamCreate(t)
            tokenizer.retain()
            s
        }
    }

    override fun free(handle: Long) {
        Native.tokenStreamFree(handle)
        tokenizer.releaseReference()
    }

    private inline fun <R> using(block: (Long) -> R): R =
        writing { s -> tokenizer.writing(allowClosedByUser = true) { block(s) } }

    /** Adds one token; the newly complete text ("" while a character is unfinished). */
    fun push(id: Int): String = String(using { Native.tokenStreamPush(it, id) }, Charsets.UTF_8)

    /** The text still held (an unfinished character becomes U+FFFD); the stream is then empty. */
    fun finish(): String = String(using { Native.tokenStreamFinish(it) }, Charsets.UTF_8)
}
