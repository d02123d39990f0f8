package phonegpt

import java.nio.FloatBuffer
import java.nio.IntBuffer

/** pg_session_config: fixed for a session's life. */
data class SessionConfig(
    /** <= 0: all cores. */
    val nThreads: Int,
    /** Tokens kept when the window slides, 1..nCtx; 0 = nCtx. */
    val slideKeep: Int
) {
    companion object {
        @JvmStatic fun default(): SessionConfig = fromFields(Native.sessionConfigDefault())
        internal val C_FIELDS = listOf("n_threads", "slide_keep")
        internal fun fromFields(f: LongArray) = SessionConfig(f[0].toInt(), f[1].toInt())
    }

    internal fun fields() = longArrayOf(nThreads.toLong(), slideKeep.toLong())
}

/** pg_eval_sampled_config: the options of [Session.evaluateSampled]. */
data class EvalSampledConfig(val nBatches: Int, val batchSize: Int, val seed: Long) {
    companion object {
        @JvmStatic fun default(): EvalSampledConfig = fromFields(Native.evalSampledConfigDefault())
        internal val C_FIELDS = listOf("n_batches", "batch_size", "seed")
        internal fun fromFields(f: LongArray) = EvalSampledConfig(f[0].toInt(), f[1].toInt(), f[2])
    }

    internal fun fields() = longArrayOf(nBatches.toLong(), batchSize.toLong(), seed)
}

/**
 * The mutable inference state over a read-only [model] (pg_session): its own threads, scratch
 * memory, and one sequence with its key/value cache, so that generation continues after what
 * was appended or generated before without recomputing it (a chat app appends each turn).
 * [forward], [evaluate] and [evaluateSampled] reuse the threads and scratch and leave the
 * sequence alone.
 *
 * The session keeps its model's native memory alive until it is closed. Every call holds the
 * session's lock alone (the C API allows one thread at a time on a session: a second thread
 * waits) and the model's lock shared, so a [Trainer] step on the model waits for a running
 * session call and vice versa. After the model's weights change (a trainer step,
 * [Model.setParameter], a merge), call [reset]: the cache holds keys and values of the old
 * weights. A call on the session from inside one of its own callbacks throws [StateException].
 */
class Session private constructor(handle: Long, val model: Model) : NativeHandle(handle, "Session") {
    /** A session over [model] (several sessions may read one model, one per thread). */
    @JvmOverloads constructor(model: Model, config: SessionConfig = SessionConfig.default()) :
        this(create(model, config), model)

    private companion object {
        fun create(model: Model, config: SessionConfig): Long {
            val fields = config.fields()
            return model.writing { m ->
                val s = Native.sessionCreate(m, fields)
                model.retain()
                s
            }
        }
    }

    override fun free(handle: Long) {
        Native.sessionFree(handle)
        model.releaseReference()
    }

    /** Runs [block] with the session (alone) and its model (shared). */
    private inline fun <R> using(block: (Long, Long) -> R): R {
        if (lock.isWriteLockedByCurrentThread)
            throw StateException("Session: cannot be used from inside a callback of its own running call")
        return writing { s -> model.reading(allowClosedByUser = true) { m -> block(s, m) } }
    }

    /** The number of threads the session runs on. */
    val nThreads: Int get() = using { s, _ -> Native.sessionNThreads(s) }

    /** The sequence's length: tokens appended and generated since creation or the last [reset]. */
    val position: Long get() = using { s, _ -> Native.sessionPosition(s) }

    /** The message of the session's last failed call ("" if none). */
    val lastError: String get() = using { s, _ -> Native.sessionLastError(s) }

    // --- calls that leave the sequence alone ----------------------------------------------------

    /** The forward pass on [batch] sequences of [seqLen] tokens, on the session's threads. */
    @JvmOverloads fun forward(tokens: IntArray, batch: Int, seqLen: Int, targets: IntArray? = null): Model.ForwardResult =
        using { s, m ->
            val vocab = ModelConfig.fromFields(Native.modelGetConfig(m)).vocabSize
            val size = batch.toLong() * seqLen * vocab
            if (batch < 1 || seqLen < 1 || size > Int.MAX_VALUE)
                throw InvalidArgumentException("forward: batch $batch x seqLen $seqLen does not give a valid logits array")
            val logits = FloatArray(size.toInt())
            val loss = Native.sessionForward(s, m, tokens, null, 0, targets, null, 0, batch, seqLen, logits, null, 0,
                                             logits.size)
            Model.ForwardResult(logits, if (targets != null) loss else null)
        }

    /** The forward pass on buffers without copies (see [Model.forward]); the mean loss, or NaN without targets. */
    fun forward(tokens: IntBuffer, batch: Int, seqLen: Int, targets: IntBuffer?, logits: FloatBuffer?): Float =
        using { s, m ->
            val t = ints(tokens, "tokens")
            val g = targets?.let { ints(it, "targets") }
            val l = logits?.let { floats(it, "logits", output = true) }
            Native.sessionForward(s, m, t.array, t.buffer, t.offset, g?.array, g?.buffer, g?.offset ?: 0, batch,
                                  seqLen, l?.array, l?.buffer, l?.offset ?: 0, l?.length ?: 0)
        }

    /**
     * Whole-split evaluation on the session's threads (config.nThreads is not read); progress,
     * cancellation and a throwing callback behave as in [Model.evaluate].
     */
    @JvmOverloads fun evaluate(tokens: IntArray, config: EvalConfig = EvalConfig.default(),
                               cancel: CancellationToken? = null, progress: ((Long, Long) -> Unit)? = null): EvalResult =
        evaluate(ints(tokens), config, cancel, progress)

    @JvmOverloads fun evaluate(tokens: IntBuffer, config: EvalConfig = EvalConfig.default(),
                               cancel: CancellationToken? = null, progress: ((Long, Long) -> Unit)? = null): EvalResult =
        evaluate(ints(tokens, "tokens"), config, cancel, progress)

    private fun evaluate(r: Ints, config: EvalConfig, cancel: CancellationToken?,
                         progress: ((Long, Long) -> Unit)?): EvalResult = using { s, _ ->
        val bridge = if (progress != null || cancel != null) ProgressBridge(progress, cancel) else null
        EvalResult.fromFields(Native.sessionEvaluate(s, r.array, r.buffer, r.offset, r.length, config.fields(), bridge))
    }

    /** nanoGPT-style estimate over random windows (pg_session_evaluate_sampled). */
    @JvmOverloads fun evaluateSampled(tokens: IntArray, config: EvalSampledConfig = EvalSampledConfig.default()): EvalResult =
        evaluateSampled(ints(tokens), config)

    @JvmOverloads fun evaluateSampled(tokens: IntBuffer, config: EvalSampledConfig = EvalSampledConfig.default()): EvalResult =
        evaluateSampled(ints(tokens, "tokens"), config)

    private fun evaluateSampled(r: Ints, config: EvalSampledConfig): EvalResult = using { s, _ ->
        EvalResult.fromFields(Native.sessionEvaluateSampled(s, r.array, r.buffer, r.offset, r.length, config.fields()))
    }

    // --- the sequence -------------------------------------------------------------------------

    /** Appends tokens (ids in [0, vocabSize)); they are computed when logits are next needed. */
    fun append(tokens: IntArray) = append(ints(tokens))
    fun append(tokens: IntBuffer) = append(ints(tokens, "tokens"))
    private fun append(r: Ints) = using { s, _ -> Native.sessionAppend(s, r.array, r.buffer, r.offset, r.length) }

    /** Appends [text] encoded by the model's tokenizer ([StateException] without one). */
    fun append(text: String) = withTokenizer("append") { append(it.encode(text)) }

    /** The vocabSize logits for the token after the sequence ([StateException] if it is empty). */
    fun logits(): FloatArray = using { s, m ->
        val out = FloatArray(ModelConfig.fromFields(Native.modelGetConfig(m)).vocabSize)
        Native.sessionLogits(s, out, null, 0, out.size)
        out
    }

    /** The logits into [out] from its position (remaining() >= vocabSize). */
    fun logits(out: FloatBuffer) = using { s, _ ->
        val r = floats(out, "logits", output = true)
        Native.sessionLogits(s, r.array, r.buffer, r.offset, r.length)
    }

    /** Empties the sequence (the threads and scratch stay). */
    fun reset() = using { s, _ -> Native.sessionReset(s) }

    /**
     * Generates up to config.maxTokens tokens after the sequence ([StateException] if it is
     * empty) and appends them to it, so a later [append] + generate continues without
     * recomputing. config.nThreads is not read; config.slideKeep, if not 0, applies to this call.
     * Streaming, cancellation and a throwing [onToken] behave as in [Model.generate].
     */
    @JvmOverloads fun generate(config: SampleConfig = SampleConfig.default(), cancel: CancellationToken? = null,
                               onToken: ((Int) -> Unit)? = null): IntArray {
        val out = IntArray(maxOf(config.maxTokens, 0))
        val n = generate(config, cancel, onToken, ints(out))
        return if (n == out.size) out else out.copyOf(n)
    }

    /** Generation into [out] (the first remaining() tokens; null = streaming only); returns how many were written. */
    @JvmOverloads fun generate(out: IntBuffer?, config: SampleConfig = SampleConfig.default(),
                               cancel: CancellationToken? = null, onToken: ((Int) -> Unit)? = null): Int =
        generate(config, cancel, onToken, out?.let { ints(it, "output", output = true) })

    /** [generate] decoded by the model's tokenizer; [onText] streams the text as it becomes complete UTF-8. */
    @JvmOverloads fun generateText(config: SampleConfig = SampleConfig.default(), cancel: CancellationToken? = null,
                                   onText: ((String) -> Unit)? = null): String = withTokenizer("generateText") { t ->
        t.generateText(onText) { onToken -> generate(config, cancel, onToken) }
    }

    private fun generate(config: SampleConfig, cancel: CancellationToken?, onToken: ((Int) -> Unit)?, out: Ints?): Int =
        using { s, _ ->
            val bridge = if (onToken != null || cancel != null) TokenBridge(onToken, cancel) else null
            Native.sessionGenerate(s, config.fields(), config.stopStrings.toTypedArray(), bridge, out?.array,
                                   out?.buffer, out?.offset ?: 0, out?.length ?: 0)
        }

    private inline fun <R> withTokenizer(what: String, block: (Tokenizer) -> R): R {
        val tok = model.reading(allowClosedByUser = true) { m -> Native.modelGetTokenizer(m) }
            .let { if (it == 0L) throw StateException("Session.$what: the model has no tokenizer") else Tokenizer(it) }
        return tok.use(block)
    }
}
