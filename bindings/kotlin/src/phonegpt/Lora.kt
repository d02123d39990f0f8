package phonegpt

import java.nio.FloatBuffer

/**
 * The block linears a LoRA adapter can target (pg_lora_target; Hugging Face module names): GPT-2's
 * four for GPT-2 bases, the Llama family's seven for Llama, Qwen2 and Qwen3 bases. An empty set in
 * [LoraConfig.targetModules] is the base family's PEFT default (c_attn; q_proj and v_proj).
 */
enum class LoraTarget(override val bit: Int, val moduleName: String) : CBit {
    ATTN_C_ATTN(1, "attn.c_attn"), ATTN_C_PROJ(2, "attn.c_proj"), MLP_C_FC(4, "mlp.c_fc"), MLP_C_PROJ(8, "mlp.c_proj"),
    Q_PROJ(16, "self_attn.q_proj"), K_PROJ(32, "self_attn.k_proj"), V_PROJ(64, "self_attn.v_proj"),
    O_PROJ(128, "self_attn.o_proj"), GATE_PROJ(256, "mlp.gate_proj"), UP_PROJ(512, "mlp.up_proj"),
    DOWN_PROJ(1024, "mlp.down_proj");

    companion object {
        /** GPT-2's four (PG_LORA_ALL_LINEARS). */
        @JvmStatic val ALL: Set<LoraTarget> = setOf(ATTN_C_ATTN, ATTN_C_PROJ, MLP_C_FC, MLP_C_PROJ)
        /** The Llama family's seven (PG_LORA_LLAMA_ALL_LINEARS). */
        @JvmStatic val LLAMA_ALL: Set<LoraTarget> = values().toSet() - ALL
    }
}

/** Throws [InvalidArgumentException] naming the first bad field (layers against a base are checked at creation). */
fun LoraConfig.validate() = Native.loraConfigValidate(fields(), layers?.toIntArray())

/** An adapter's training record: one loss and one learning rate per step, and the tokens seen. */
class TrainingRecord(val losses: FloatArray, val learningRates: FloatArray, val tokens: Long) {
    val steps: Int get() = losses.size
}

/**
 * A LoRA adapter (pg_lora_adapter) for a base model's geometry: its A and B tensors, which it
 * owns (the base is not kept). Reading shares the adapter's lock; writing tensors holds it alone.
 */
class LoraAdapter internal constructor(handle: Long) : NativeHandle(handle, "LoraAdapter") {
    /** A fresh adapter for [base] (B = 0, so it leaves the base's outputs unchanged). */
    constructor(base: Model, config: LoraConfig = LoraConfig.default()) :
        this(base.reading { Native.loraAdapterCreate(it, config.fields(), config.layers?.toIntArray()) })

    companion object {
        /**
         * Loads an adapter file (docs/formats.md); with [base], also checks that it was made for
         * that base ([GeometryException] naming both sides otherwise).
         */
        @JvmStatic @JvmOverloads fun load(path: String, base: Model? = null): LoraAdapter =
            LoraAdapter(if (base == null) Native.loraAdapterLoad(path, 0) else base.reading { Native.loraAdapterLoad(path, it) })

        /**
         * Reads a PEFT adapter folder (adapter_config.json + adapter_model.safetensors) for
         * [base] (pg_lora_import_peft): geometry from the files, checked against the base
         * ([GeometryException], [FormatException] or [UnsupportedException] naming what differs).
         */
        @JvmStatic fun importPeft(folder: String, base: Model): LoraAdapter =
            LoraAdapter(base.reading { Native.loraImportPeft(folder, it) })

        /** Averages adapters of one base into a new adapter (Coordinator.kt has the details). */
        @JvmStatic @JvmOverloads fun average(adapters: List<LoraAdapter>, weights: DoubleArray? = null,
                                             config: LoraAverageConfig = LoraAverageConfig.defaults()): Average =
            averageAdapters(adapters, weights, config)
    }

    override fun free(handle: Long) = Native.loraAdapterFree(handle)

    /** Saves atomically (the file is read back and compared before this returns). */
    fun save(path: String) = reading { Native.loraAdapterSave(it, path) }

    /**
     * Writes adapter_config.json and adapter_model.safetensors for PEFT into [folder] (which must
     * exist), for a base exported with [Model.export] as safetensors.
     */
    fun exportPeft(folder: String) = reading { Native.loraExportPeft(it, folder) }

    /** The losses and learning rates of the steps that trained it (a copy), and its tokens. */
    val trainingRecord: TrainingRecord
        get() = reading { h ->
            val counts = LongArray(2)
            val f = Native.loraAdapterTrainingRecord(h, counts)
            val n = counts[0].toInt()
            TrainingRecord(f.copyOfRange(0, n), f.copyOfRange(n, 2 * n), counts[1])
        }

    /**
     * The identity of the base it was made for, as the adapter file stores it (JSON: geometry,
     * weights_xxh64, tokenizer, fingerprint, description, provenance; pg_lora_adapter_base_json).
     */
    val baseJson: String get() = reading { String(Native.loraAdapterBaseJson(it), Charsets.UTF_8) }

    /** Throws [GeometryException] naming the difference unless [base] is this adapter's base. */
    fun checkBase(base: Model) = base.reading { m -> reading { a -> Native.loraAdapterCheckBase(a, m) } }

    /** A new model: [base] with W += scale * B A in every adapted linear. */
    @JvmOverloads fun merge(base: Model, nThreads: Int = 0): Model =
        Model(base.reading { m -> reading { a -> Native.loraMerge(m, a, nThreads) } })

    /** Merges into [model] in place (it must be this adapter's base: merging twice is refused). */
    @JvmOverloads fun mergeInto(model: Model, nThreads: Int = 0) =
        model.writing { m -> reading { a -> Native.loraMergeInPlace(m, a, nThreads, false) } }

    /** Undoes [mergeInto] (within fp32 rounding, not bit for bit). */
    @JvmOverloads fun unmergeFrom(model: Model, nThreads: Int = 0) =
        model.writing { m -> reading { a -> Native.loraMergeInPlace(m, a, nThreads, true) } }

    val config: LoraConfig
        get() = reading { h ->
            LoraConfig.fromFields(Native.loraAdapterGetConfig(h), null).copy(layers = Native.loraAdapterGetLayers(h)?.toList())
        }

    /** alpha / rank, or alpha / sqrt(rank) with rsLoRA. */
    val scale: Float get() = reading { Native.loraAdapterScale(it) }
    val numParams: Long get() = reading { Native.loraAdapterNumParams(it) }

    /** "h.0.attn.c_attn.lora_A.weight", "h.0.attn.c_attn.lora_B.weight", ... */
    val tensorNames: List<String>
        get() = reading { h -> (0 until Native.loraAdapterNumTensors(h)).map { Native.loraAdapterTensorName(h, it) } }

    fun tensorShape(name: String): LongArray = reading { h -> Native.loraAdapterTensorShape(h, Native.loraAdapterFindTensor(h, name)) }

    /** A copy of one tensor. */
    fun parameter(name: String): FloatArray = reading { h ->
        val index = Native.loraAdapterFindTensor(h, name)
        val out = FloatArray(numel(Native.loraAdapterTensorShape(h, index)))
        Native.loraAdapterReadTensor(h, index, out, null, 0, out.size)
        out
    }

    fun readParameter(name: String, out: FloatBuffer) = reading { h ->
        val r = floats(out, "readParameter", output = true)
        Native.loraAdapterReadTensor(h, Native.loraAdapterFindTensor(h, name), r.array, r.buffer, r.offset, r.length)
    }

    fun setParameter(name: String, values: FloatArray) = setParameter(name, floats(values))
    fun setParameter(name: String, values: FloatBuffer) = setParameter(name, floats(values, "setParameter"))

    private fun setParameter(name: String, r: Floats) = writing { h ->
        Native.loraAdapterWriteTensor(h, Native.loraAdapterFindTensor(h, name), r.array, r.buffer, r.offset, r.length)
    }
}

/**
 * Trains a [LoraAdapter] over a frozen [base] (pg_lora_trainer): a step is [Trainer.step]'s with
 * the base's weights fixed and only the adapter's A and B updated (only B with freezeA). It
 * keeps the base's and the adapter's native memory alive until it is closed. A step holds this
 * trainer's and the adapter's locks alone and the base's shared (the base is never written), so
 * other threads may evaluate the base meanwhile; the adapter waits. Same configuration, data,
 * seed and nThreads give the same bits.
 */
class LoraTrainer private constructor(handle: Long, val base: Model, val adapter: LoraAdapter,
                                      private val ownsAdapter: Boolean) : TrainerBase(handle, "LoraTrainer") {
    /** A trainer of [adapter], which must be [base]'s ([GeometryException] otherwise). */
    @JvmOverloads constructor(base: Model, adapter: LoraAdapter, config: TrainConfig = TrainConfig.default()) :
        this(create(base, adapter, config), base, adapter, false)

    companion object {
        private fun create(base: Model, adapter: LoraAdapter, config: TrainConfig): Long {
            val fields = config.fields()
            return base.writing { m ->
                adapter.writing { a ->
                    val t = Native.loraTrainerCreate(m, a, fields)
                    base.retain()
                    adapter.retain()
                    t
                }
            }
        }

        /**
         * Resumes a checkpoint written by [save] against [base] (checked as [LoraAdapter.load]
         * with a base): a new adapter and a trainer over it, which owns the adapter (closing the
         * trainer closes it). After [setData] with the same tokens the run continues bit for bit.
         * A plain adapter file is a [StateException] (it has no training state).
         */
        @JvmStatic fun resume(path: String, base: Model): LoraTrainer {
            val handles = base.reading { m -> Native.loraTrainerResume(path, m).also { base.retain() } }
            val adapter = LoraAdapter(handles[0])
            adapter.retain()
            return LoraTrainer(handles[1], base, adapter, true)
        }
    }

    override fun free(handle: Long) {
        Native.loraTrainerFree(handle)
        adapter.releaseReference()
        base.releaseReference()
        if (ownsAdapter) adapter.closeWhenIdle()
    }

    override fun nativeSetData(h: Long, r: Ints) = Native.loraTrainerSetData(h, r.array, r.buffer, r.offset, r.length)
    override fun nativeStep(h: Long): LongArray = Native.loraTrainerStep(h)
    override fun nativeStepBatch(h: Long, i: Ints, g: Ints, batch: Int, seqLen: Int): LongArray =
        Native.loraTrainerStepBatch(h, i.array, i.buffer, i.offset, g.array, g.buffer, g.offset, batch, seqLen)
    override fun <R> stepping(block: (Long) -> R): R = writing { t ->
        try {
            base.reading(allowClosedByUser = true) { adapter.writing(allowClosedByUser = true) { block(t) } }
        } finally {
            afterStep(t)
        }
    }

    /** The configuration it runs (seq_len 0 resolved to n_ctx), as [Trainer.config]. */
    val config: TrainConfig get() = writing { TrainConfig.fromFields(Native.loraTrainerGetConfig(it), null) }

    /** The optimizer steps taken (as of the last finished step: never waits for a running one). */
    val stepCount: Long get() = open(stepCountNow)

    // Updated after every step, so that [stepCount] is a snapshot.
    @Volatile private var stepCountNow: Long = writing { Native.loraTrainerStepCount(it) }

    override fun afterStep(h: Long) { stepCountNow = Native.loraTrainerStepCount(h) }

    /** The learning rate the schedule gives at [step]. */
    fun lrAt(step: Long): Float = writing { Native.loraTrainerLrAt(it, step) }

    /** The threads the steps run on (nThreads with <= 0 resolved to this machine's cores). */
    val threads: Int get() = writing { Native.loraTrainerThreads(it) }

    /** Runs the later steps on [nThreads] (<= 0: all cores), as [Trainer.setThreads]. */
    fun setThreads(nThreads: Int) = writing { Native.loraTrainerSetThreads(it, nThreads) }

    override fun nativeComputeGradients(h: Long, i: Ints, g: Ints, batch: Int, seqLen: Int): Float =
        Native.loraTrainerComputeGradients(h, i.array, i.buffer, i.offset, g.array, g.buffer, g.offset, batch, seqLen)

    /** A copy of one adapter tensor's gradient (as left by the last step or [computeGradients]). */
    fun grad(name: String): FloatArray = writing { t ->
        adapter.reading(allowClosedByUser = true) { a ->
            val index = Native.loraAdapterFindTensor(a, name)
            val out = FloatArray(numel(Native.loraAdapterTensorShape(a, index)))
            Native.loraTrainerReadGrad(t, index, out, null, 0, out.size)
            out
        }
    }

    /**
     * Saves the adapter and the whole run's state (step, moments, sampler, dropout stream,
     * configuration) atomically, so that [resume] continues bit for bit.
     */
    fun save(path: String) = writing { t -> adapter.reading(allowClosedByUser = true) { Native.loraTrainerSave(t, path) } }
}
