package phonegpt

import java.io.File
import java.io.FileDescriptor
import java.nio.ByteBuffer
import java.nio.FloatBuffer
import java.nio.IntBuffer

/**
 * A model (pg_model): configuration, weights and its tokenizer. Evaluation, generation, the
 * forward pass, saving and exporting only read it and may run on several threads at once;
 * changing weights or the tokenizer, and a [Trainer]'s steps, hold it alone (see [NativeHandle]).
 */
class Model internal constructor(handle: Long) : EvaluatingHandle(handle, "Model") {
    /** A new model with GPT-2 initialisation from [seed] (same seed, same weights everywhere). */
    @JvmOverloads constructor(config: ModelConfig = ModelConfig.default(), seed: Long = 0) :
        this(Native.modelCreate(config.fields(), seed))

    companion object {
        /** A new model of a named preset ("phonegpt", "tiny"). */
        @JvmStatic @JvmOverloads fun preset(name: String, seed: Long = 0): Model = Model(ModelConfig.preset(name), seed)
        /** Loads a native checkpoint (pg_model_load). */
        @JvmStatic fun load(path: String): Model = Model(Native.modelLoad(path))
        /**
         * Loads with options (pg_model_load_with): [LoadOptions.mapWeights] maps a raw checkpoint
         * saved with the mapping layout ([SaveOptions.alignForMapping] or a 16-bit
         * [SaveOptions.weightStorage]) read-only instead of copying its weights: a frozen base for
         * sessions and LoRA trainers, refusing every writer of its weights with [StateException].
         */
        @JvmStatic fun load(path: String, options: LoadOptions): Model = Model(Native.modelLoadWith(path, options.fields()))
        /** [load] of a [File]. */
        @JvmStatic fun load(file: File): Model = load(file.path)
        @JvmStatic fun load(file: File, options: LoadOptions): Model = load(file.path, options)
        /** Imports an llm.c or safetensors file, or a Hugging Face model folder (pg_model_import). */
        @JvmStatic fun importFrom(path: String, format: InteropFormat): Model = importFrom(path, format, LoadOptions.defaults())
        /** [importFrom] with options: [LoadOptions.weightStorage] reads a Hugging Face folder straight into a
         *  16-bit base (pg_model_import_with). */
        @JvmStatic fun importFrom(path: String, format: InteropFormat, options: LoadOptions): Model =
            Model(Native.modelImport(format.code, path, options.fields()))
        /**
         * Loads a native checkpoint from its bytes (pg_model_load_from_memory: checked exactly as a
         * file is). The VM may copy the array while the library reads it; a direct [ByteBuffer]
         * is read in place.
         */
        @JvmStatic fun load(data: ByteArray): Model = Model(Native.modelLoadFromBytes(data, 0, data.size))
        /**
         * [load] of a buffer's remaining bytes (its position is left unchanged): a direct buffer,
         * a mapped file's included, is read in place, a heap buffer through its array.
         */
        @JvmStatic fun load(data: ByteBuffer): Model = when {
            data.isDirect -> Model(Native.modelLoadFromDirect(data, data.position().toLong(), data.remaining().toLong()))
            data.hasArray() -> Model(Native.modelLoadFromBytes(data.array(), data.arrayOffset() + data.position(), data.remaining()))
            else -> load(ByteArray(data.remaining()).also { data.duplicate().get(it) })  // a read-only heap buffer
        }
        /**
         * Loads the checkpoint in [length] bytes at [offset] of an open file descriptor
         * (pg_model_load_from_fd; [length] < 0: to the end), as Android hands out an asset
         * (AssetFileDescriptor's parcelFileDescriptor.fd, startOffset, length). Read with pread:
         * the descriptor is neither moved nor closed.
         */
        @JvmStatic fun load(fd: Int, offset: Long, length: Long): Model = Model(Native.modelLoadFromFd(fd, offset, length))
        /** [load] of a [FileDescriptor] (AssetFileDescriptor.fileDescriptor, FileInputStream.fd). */
        @JvmStatic fun load(fd: FileDescriptor, offset: Long, length: Long): Model =
            load(Native.fileDescriptorInt(fd), offset, length)
    }

    override fun free(handle: Long) {
        dropOwnTokenizer()
        Native.modelFree(handle)
    }

    /**
     * Saves atomically (options.compressionLevel: 0 = raw, 1..19 = zstd; weightStorage -1 = as
     * held, or a [WeightStorage] code for a 16-bit base file; alignForMapping: mappable).
     */
    @JvmOverloads fun save(path: String, options: SaveOptions = SaveOptions.default()) =
        reading { Native.modelSave(it, path, options.fields()) }

    fun export(path: String, format: InteropFormat) = reading { Native.modelExport(it, format.code, path) }

    val config: ModelConfig get() = reading { ModelConfig.fromFields(Native.modelGetConfig(it), null) }
    val numParams: Long get() = reading { Native.modelNumParams(it) }
    /** True when the weights are a read-only file mapping (pg_model_weights_mapped). */
    val weightsMapped: Boolean get() = reading { Native.modelWeightsMapped(it) }

    /** Where the weights come from (pg_model_provenance; saved and loaded with the model). */
    val provenance: Provenance get() = reading { Provenance.fromFields(Native.modelProvenance(it)) }

    /**
     * LoRA training on this model and adapter validation against it refuse a model that was
     * initialised and never trained ([StateException]: its weights are random) unless this is
     * true (pg_model_allow_untrained_base; this handle only, never saved).
     */
    fun allowUntrainedBase(allow: Boolean) = reading { Native.modelAllowUntrainedBase(it, allow) }

    /**
     * Holds the token embedding and the block linears in 16 bits (pg_model_set_weight_storage):
     * half their bytes, for a frozen base (LoRA training, sessions, evaluation). One way: training,
     * saving and merging need fp32 weights and then throw [StateException].
     */
    fun setWeightStorage(storage: WeightStorage) = writing { Native.modelSetWeightStorage(it, storage.code) }

    /** How the weights are held, and the bytes they take (pg_model_weight_storage). */
    val weightStorage: Pair<WeightStorage, Long>
        get() = reading { h -> Native.modelWeightStorage(h).let { Pair(cEnum<WeightStorage>(it[0]), it[1]) } }

    // The Tokenizer the getter hands out: one copy of the model's, made at the first read and
    // dropped when the tokenizer is replaced or the model closes (guarded by tokenizerGuard).
    private var ownTokenizer: Tokenizer? = null
    private val tokenizerGuard = Any()

    /**
     * The model's tokenizer, or null if it has none: the same [Tokenizer] object at every read
     * (a copy of the model's, owned by the model: it closes when the model closes or the
     * tokenizer is replaced; closing it yourself is harmless, the next read makes a new one).
     */
    val tokenizer: Tokenizer? get() = ownTokenizer("tokenizer")

    internal fun ownTokenizer(what: String): Tokenizer? = reading(allowClosedByUser = what != "tokenizer") { h ->
        synchronized(tokenizerGuard) {
            ownTokenizer?.let { if (!it.isClosed) return@reading it }
            val t = Native.modelGetTokenizer(h)
            (if (t == 0L) null else Tokenizer(t)).also { ownTokenizer = it }
        }
    }

    /** Stores a copy of [tokenizer] as the model's (its vocabulary must equal the model's). */
    fun setTokenizer(tokenizer: Tokenizer) = writing { h ->
        tokenizer.writing { t -> Native.modelSetTokenizer(h, t) }
        dropOwnTokenizer()
    }

    private fun dropOwnTokenizer() = synchronized(tokenizerGuard) {
        ownTokenizer?.closeWhenIdle()
        ownTokenizer = null
    }

    /** Tensor names in the model's order ("wte", "wpe", "h.0.ln_1.weight", ...). */
    val tensorNames: List<String>
        get() = reading { h -> (0 until Native.modelNumTensors(h)).map { Native.modelTensorName(h, it) } }

    fun tensorShape(name: String): LongArray = reading { h -> Native.modelTensorShape(h, Native.modelFindTensor(h, name)) }

    /** A copy of one tensor's weights. */
    fun parameter(name: String): FloatArray = reading(true) { h ->
        val index = Native.modelFindTensor(h, name)
        val out = FloatArray(numel(Native.modelTensorShape(h, index)))
        Native.modelReadTensor(h, index, out, null, 0, out.size)
        out
    }

    /** Copies one tensor's weights into [out] (from its position; remaining() must equal the tensor's size). */
    fun readParameter(name: String, out: FloatBuffer) = reading { h ->
        val r = floats(out, "readParameter", output = true)
        Native.modelReadTensor(h, Native.modelFindTensor(h, name), r.array, r.buffer, r.offset, r.length)
    }

    /** Replaces one tensor's weights (the sizes must be equal). */
    fun setParameter(name: String, values: FloatArray) = setParameter(name, floats(values))
    fun setParameter(name: String, values: FloatBuffer) = setParameter(name, floats(values, "setParameter"))

    private fun setParameter(name: String, r: Floats) = writing { h ->
        Native.modelWriteTensor(h, Native.modelFindTensor(h, name), r.array, r.buffer, r.offset, r.length)
    }

    /** All weights in one array (numParams floats, llm.c's order). */
    fun flatParameters(): FloatArray = reading { h ->
        val n = Native.modelNumParams(h)
        if (n > Int.MAX_VALUE) throw UnsupportedException("flatParameters: $n floats do not fit a Java array")
        val out = FloatArray(n.toInt())
        Native.modelReadParams(h, out, null, 0, out.size)
        out
    }

    fun readFlatParameters(out: FloatBuffer) = reading { h ->
        val r = floats(out, "readFlatParameters", output = true)
        Native.modelReadParams(h, r.array, r.buffer, r.offset, r.length)
    }

    /** Logits [batch, seqLen, vocabSize] and, with targets, the mean loss. */
    class ForwardResult(val logits: FloatArray, val loss: Float?)

    /** The forward pass on [batch] sequences of [seqLen] tokens (arrays of batch*seqLen ids). */
    @JvmOverloads fun forward(tokens: IntArray, batch: Int, seqLen: Int, targets: IntArray? = null,
                              nThreads: Int = 0): ForwardResult = reading { h ->
        val logits = logitsFor(h, batch, seqLen)
        val loss = Native.modelForward(h, tokens, null, 0, targets, null, 0, batch, seqLen, logits, null, 0,
                                       logits.size, nThreads)
        ForwardResult(logits, if (targets != null) loss else null)
    }

    /**
     * The forward pass on direct buffers, without copies: tokens (and targets, may be null) hold
     * batch*seqLen ids from their position; logits (may be null) receive batch*seqLen*vocabSize
     * floats at its position. Returns the mean loss, or NaN without targets.
     */
    @JvmOverloads fun forward(tokens: IntBuffer, batch: Int, seqLen: Int, targets: IntBuffer?, logits: FloatBuffer?,
                              nThreads: Int = 0): Float = reading { h ->
        val t = ints(tokens, "tokens")
        val g = targets?.let { ints(it, "targets") }
        val l = logits?.let { floats(it, "logits", output = true) }
        Native.modelForward(h, t.array, t.buffer, t.offset, g?.array, g?.buffer, g?.offset ?: 0, batch, seqLen,
                            l?.array, l?.buffer, l?.offset ?: 0, l?.length ?: 0, nThreads)
    }

    override fun evaluateNative(r: Ints, config: EvalConfig, bridge: ProgressBridge?): LongArray = reading { h ->
        Native.evaluate(h, r.array, r.buffer, r.offset, r.length, config.fields(), bridge)
    }

    /** nanoGPT-style estimate over random windows (pg_session_evaluate_sampled on a session made for the call). */
    @JvmOverloads fun evaluateSampled(tokens: IntArray, nBatches: Int, batchSize: Int, seed: Long = 1337,
                                      nThreads: Int = 0): EvalResult = evaluateSampled(ints(tokens), nBatches, batchSize, seed, nThreads)

    @JvmOverloads fun evaluateSampled(tokens: IntBuffer, nBatches: Int, batchSize: Int, seed: Long = 1337,
                                      nThreads: Int = 0): EvalResult =
        evaluateSampled(ints(tokens, "tokens"), nBatches, batchSize, seed, nThreads)

    private fun evaluateSampled(r: Ints, nBatches: Int, batchSize: Int, seed: Long, nThreads: Int): EvalResult = reading { h ->
        EvalResult.fromFields(Native.evaluateSampled(h, r.array, r.buffer, r.offset, r.length, nBatches, batchSize,
                                                     seed, nThreads), null)
    }

    /**
     * Generates up to config.maxTokens tokens after [prompt] and returns them; [onToken] sees each
     * one as it is made (streaming). [cancel], from any thread or from [onToken], stops generation
     * early (not an error: the tokens so far are returned). An exception thrown by [onToken] stops
     * generation and is re-thrown here.
     */
    @JvmOverloads fun generate(prompt: IntArray, config: SampleConfig = SampleConfig.default(),
                               cancel: CancellationToken? = null, onToken: ((Int) -> Unit)? = null): IntArray {
        val out = IntArray(maxOf(config.maxTokens, 0))
        val n = generate(ints(prompt), config, cancel, onToken, ints(out))
        return if (n == out.size) out else out.copyOf(n)
    }

    /** Generation from a direct buffer prompt into [out] (the first remaining() tokens); returns how many were written. */
    @JvmOverloads fun generate(prompt: IntBuffer, out: IntBuffer?, config: SampleConfig = SampleConfig.default(),
                               cancel: CancellationToken? = null, onToken: ((Int) -> Unit)? = null): Int =
        generate(ints(prompt, "prompt"), config, cancel, onToken, out?.let { ints(it, "output", output = true) })

    /**
     * Text in, text out through the model's tokenizer ([StateException] without one). [onText]
     * streams the text as it becomes complete UTF-8 (a BPE token may end inside a character).
     */
    @JvmOverloads fun generate(prompt: String, config: SampleConfig = SampleConfig.default(),
                               cancel: CancellationToken? = null, onText: ((String) -> Unit)? = null): String {
        val t = ownTokenizer("generate") ?: throw StateException("Model.generate(String): the model has no tokenizer")
        return t.generateText(onText) { onToken -> generate(t.encode(prompt), config, cancel, onToken) }
    }

    private fun generate(prompt: Ints, config: SampleConfig, cancel: CancellationToken?, onToken: ((Int) -> Unit)?,
                         out: Ints?): Int = reading { h ->
        val bridge = tokenBridge(onToken, cancel)
        Native.generate(h, prompt.array, prompt.buffer, prompt.offset, prompt.length, config.fields(),
                        config.stopStrings.toTypedArray(), bridge, out?.array, out?.buffer, out?.offset ?: 0,
                        out?.length ?: 0)
    }

    internal fun tensorIndex(name: String): Pair<Int, Int> = reading(true) { h ->
        val index = Native.modelFindTensor(h, name)
        Pair(index, numel(Native.modelTensorShape(h, index)))
    }
}

/** pg_provenance_kind. */
enum class ProvenanceKind(override val code: Int) : CEnum { UNKNOWN(0), INITIALISED(1), TRAINED(2) }

/**
 * Where a model's weights come from: INITIALISED from [initSeed] and never trained, TRAINED for
 * [steps] optimizer steps over [tokens] tokens, or UNKNOWN (a checkpoint older than format 1.1,
 * an imported model). [initSeed] is null when not recorded.
 */
data class Provenance(val kind: ProvenanceKind, val initSeed: Long?, val steps: Long, val tokens: Long) {
    internal companion object {
        fun fromFields(f: LongArray) = Provenance(cEnum(f[0]), if (f[1] != 0L) f[2] else null, f[3], f[4])
    }
}

/** A logits array for a forward pass of batch x seqLen tokens over the model [m]'s vocabulary. */
internal fun logitsFor(m: Long, batch: Int, seqLen: Int): FloatArray {
    val size = batch.toLong() * seqLen * ModelConfig.fromFields(Native.modelGetConfig(m), null).vocabSize
    if (batch < 1 || seqLen < 1 || size > Int.MAX_VALUE)
        throw InvalidArgumentException("forward: batch $batch x seqLen $seqLen does not give a valid logits array")
    return FloatArray(size.toInt())
}

internal fun numel(shape: LongArray): Int {
    val n = shape.fold(1L) { a, b -> a * b }
    if (n > Int.MAX_VALUE) throw UnsupportedException("a tensor of $n floats does not fit a Java array")
    return n.toInt()
}
