package phonegpt

import java.nio.FloatBuffer
import java.nio.IntBuffer

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
 *
 * A [LoraAdapter] attached with [attachAdapter] makes every pass compute base + adapter (as the
 * merged model would, within fp32 rounding) while the model is never written, so sessions of one
 * base can each have their own adapter. The session keeps the attached adapter alive and holds
 * its lock shared during each call, so a [LoraTrainer] step on it waits (train it detached, or
 * [reset] after training: the cache holds keys and values of the old factors).
 */
class Session private constructor(handle: Long, val model: Model) : EvaluatingHandle(handle, "Session") {
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

    // The attached adapter (written under the session's lock, read by the [adapter] getter).
    @Volatile private var attached: LoraAdapter? = null
    // Snapshots of the session's state after its last call: the getters never wait for a call.
    @Volatile private var positionNow = 0L
    @Volatile private var lastErrorNow = ""

    private val nThreadsAtCreation = writing { s -> Native.sessionNThreads(s) }

    /** The number of threads the session runs on (fixed at creation). */
    val nThreads: Int get() = open(nThreadsAtCreation)

    override fun free(handle: Long) {
        Native.sessionFree(handle)
        attached?.releaseReference()
        attached = null
        model.releaseReference()
    }

    /** Runs [block] with the session (alone), its model and its attached adapter (shared). */
    private inline fun <R> using(block: (Long, Long) -> R): R = writing { s ->
        try {
            model.reading(allowClosedByUser = true) { m ->
                val a = attached
                if (a == null) block(s, m) else a.reading(allowClosedByUser = true) { block(s, m) }
            }
        } catch (e: RuntimeException) {
            if (e is PhoneGptError) lastErrorNow = e.message ?: ""
            throw e
        } finally {
            positionNow = Native.sessionPosition(s)
        }
    }

    // --- adapters ------------------------------------------------------------------------------

    /**
     * Attaches [adapter] (it must be the model's: [GeometryException] naming both sides
     * otherwise), replacing an attached one; the sequence stays and is recomputed with the new
     * weights at the next [logits] or [generate].
     */
    fun attachAdapter(adapter: LoraAdapter) = writing { s ->
        // The check reads the model's weights: under its shared lock, so that no merge or
        // weight write on another thread runs beneath it (the C API's rule for a const model).
        model.reading(allowClosedByUser = true) {
            adapter.reading { a -> Native.sessionAttachAdapter(s, a); adapter.retain() }
        }
        attached?.releaseReference()
        attached = adapter
    }

    /** Detaches the attached adapter (nothing happens without one). */
    fun detachAdapter() = writing { s ->
        Native.sessionDetachAdapter(s)
        attached?.releaseReference()
        attached = null
    }

    /** The attached adapter, or null (never waits for a running call). */
    val adapter: LoraAdapter? get() = open(attached)

    /**
     * The sequence's length: tokens appended and generated since creation or the last [reset],
     * as of the end of the session's last call (never waits: during a generation it does not yet
     * count the tokens being generated).
     */
    val position: Long get() = open(positionNow)

    /** The message of the session's last failed call ("" if none; never waits). */
    val lastError: String get() = open(lastErrorNow)

    // --- calls that leave the sequence alone ----------------------------------------------------

    /** The forward pass on [batch] sequences of [seqLen] tokens, on the session's threads. */
    @JvmOverloads fun forward(tokens: IntArray, batch: Int, seqLen: Int, targets: IntArray? = null): Model.ForwardResult =
        using { s, m ->
            val logits = logitsFor(m, batch, seqLen)
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

    override fun evaluateNative(r: Ints, config: EvalConfig, bridge: ProgressBridge?): LongArray = using { s, _ ->
        Native.sessionEvaluate(s, r.array, r.buffer, r.offset, r.length, config.fields(), bridge)
    }

    /** nanoGPT-style estimate over random windows (pg_session_evaluate_sampled). */
    @JvmOverloads fun evaluateSampled(tokens: IntArray, config: EvalSampledConfig = EvalSampledConfig.default()): EvalResult =
        evaluateSampled(ints(tokens), config)

    @JvmOverloads fun evaluateSampled(tokens: IntBuffer, config: EvalSampledConfig = EvalSampledConfig.default()): EvalResult =
        evaluateSampled(ints(tokens, "tokens"), config)

    private fun evaluateSampled(r: Ints, config: EvalSampledConfig): EvalResult = using { s, _ ->
        EvalResult.fromFields(Native.sessionEvaluateSampled(s, r.array, r.buffer, r.offset, r.length, config.fields()), null)
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
        val out = FloatArray(ModelConfig.fromFields(Native.modelGetConfig(m), null).vocabSize)
        Native.sessionLogits(s, out, null, 0, out.size)
        out
    }

    /** The logits into [out] from its position (remaining() >= vocabSize). */
    fun logits(out: FloatBuffer) = using { s, m ->
        val r = floats(out, "logits", output = true)
        val vocab = ModelConfig.fromFields(Native.modelGetConfig(m), null).vocabSize
        if (r.length < vocab) throw BufferTooSmallException("logits: the buffer holds ${r.length} floats, vocabSize is $vocab")
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
            val bridge = tokenBridge(onToken, cancel)
            Native.sessionGenerate(s, config.fields(), config.stopStrings.toTypedArray(), bridge, out?.array,
                                   out?.buffer, out?.offset ?: 0, out?.length ?: 0)
        }

    private inline fun <R> withTokenizer(what: String, block: (Tokenizer) -> R): R =
        block(model.ownTokenizer(what) ?: throw StateException("Session.$what: the model has no tokenizer"))
}
