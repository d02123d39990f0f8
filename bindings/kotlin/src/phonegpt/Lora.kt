package phonegpt

import java.nio.FloatBuffer
import java.nio.IntBuffer

/** The block linears a LoRA adapter can target (pg_lora_target; Hugging Face GPT-2 names). */
enum class LoraTarget(val bit: Int, val moduleName: String) {
    ATTN_C_ATTN(1, "attn.c_attn"), ATTN_C_PROJ(2, "attn.c_proj"), MLP_C_FC(4, "mlp.c_fc"), MLP_C_PROJ(8, "mlp.c_proj");

    companion object {
        @JvmStatic val ALL: Set<LoraTarget> = values().toSet()
        internal fun bits(targets: Set<LoraTarget>): Long = targets.fold(0L) { a, t -> a or t.bit.toLong() }
        internal fun of(bits: Long): Set<LoraTarget> = values().filter { bits and it.bit.toLong() != 0L }.toSet()
    }
}

/** pg_lora_config (phonegpt.h documents every field; PEFT's semantics). */
data class LoraConfig(
    val rank: Int, val alpha: Float, val useRslora: Boolean, val dropout: Float, val targets: Set<LoraTarget>,
    /** The layers to adapt; null = every layer. */
    val layers: List<Int>?,
    val initSeed: Long,
    /** FFA-LoRA: A keeps its initialisation, only B trains. */
    val freezeA: Boolean
) {
    companion object {
        @JvmStatic fun default(): LoraConfig = fromFields(Native.loraConfigDefault(), null)
        /** The order of fields() (the layer list travels separately). */
        internal val C_FIELDS = listOf("rank", "alpha", "use_rslora", "dropout", "target_modules", "init_seed", "freeze_a")

        internal fun fromFields(f: LongArray, layers: IntArray?) = LoraConfig(
            f[0].toInt(), Float.fromBits(f[1].toInt()), f[2] != 0L, Float.fromBits(f[3].toInt()), LoraTarget.of(f[4]),
            layers?.toList()?.takeIf { it.isNotEmpty() }, f[5], f[6] != 0L)
    }

    internal fun fields() = longArrayOf(rank.toLong(), alpha.toRawBits().toLong(), if (useRslora) 1 else 0,
                                        dropout.toRawBits().toLong(), LoraTarget.bits(targets), initSeed,
                                        if (freezeA) 1 else 0)

    internal fun layerArray(): IntArray? = layers?.toIntArray()

    /** Throws [InvalidArgumentException] naming the first bad field (layers against a base are checked at creation). */
    fun validate() = Native.loraConfigValidate(fields(), layerArray())
}

/**
 * A LoRA adapter (pg_lora_adapter) for a base model's geometry: its A and B tensors, which it
 * owns (the base is not kept). Reading shares the adapter's lock; writing tensors holds it alone.
 */
class LoraAdapter internal constructor(handle: Long) : NativeHandle(handle, "LoraAdapter") {
    /** A fresh adapter for [base] (B = 0, so it leaves the base's outputs unchanged). */
    constructor(base: Model, config: LoraConfig = LoraConfig.default()) :
        this(base.reading { Native.loraAdapterCreate(it, config.fields(), config.layerArray()) })

    companion object {
        /**
         * Loads an adapter file (docs/formats.md); with [base], also checks that it was made for
         * that base ([GeometryException] naming both sides otherwise).
         */
        @JvmStatic @JvmOverloads fun load(path: String, base: Model? = null): LoraAdapter =
            LoraAdapter(if (base == null) Native.loraAdapterLoad(path, 0) else base.reading { Native.loraAdapterLoad(path, it) })
    }

    override fun free(handle: Long) = Native.loraAdapterFree(handle)

    /** Saves atomically (the file is read back and compared before this returns). */
    fun save(path: String) = reading { Native.loraAdapterSave(it, path) }

    /** Throws [GeometryException] naming the difference unless [base] is this adapter's base. */
    fun checkBase(base: Model) = reading { a -> base.reading { m -> Native.loraAdapterCheckBase(a, m) } }

    /** A new model: [base] with W += scale * B A in every adapted linear. */
    @JvmOverloads fun merge(base: Model, nThreads: Int = 0): Model =
        Model(reading { a -> base.reading { m -> Native.loraMerge(m, a, nThreads) } })

    /** Merges into [model] in place (it must be this adapter's base: merging twice is refused). */
    @JvmOverloads fun mergeInto(model: Model, nThreads: Int = 0) =
        reading { a -> model.writing { m -> Native.loraMergeInPlace(m, a, nThreads, false) } }

    /** Undoes [mergeInto] (within fp32 rounding, not bit for bit). */
    @JvmOverloads fun unmergeFrom(model: Model, nThreads: Int = 0) =
        reading { a -> model.writing { m -> Native.loraMergeInPlace(m, a, nThreads, true) } }

    val config: LoraConfig get() = reading { LoraConfig.fromFields(Native.loraAdapterGetConfig(it), Native.loraAdapterGetLayers(it)) }

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
class LoraTrainer private constructor(handle: Long, val base: Model, val adapter: LoraAdapter) :
    NativeHandle(handle, "LoraTrainer") {
    /** A trainer of [adapter], which must be [base]'s ([GeometryException] otherwise). */
    @JvmOverloads constructor(base: Model, adapter: LoraAdapter, config: TrainConfig = TrainConfig.default()) :
        this(create(base, adapter, config), base, adapter)

    private companion object {
        fun create(base: Model, adapter: LoraAdapter, config: TrainConfig): Long {
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
    }

    override fun free(handle: Long) {
        Native.loraTrainerFree(handle)
        adapter.releaseReference()
        base.releaseReference()
    }

    private inline fun <R> stepping(block: (Long) -> R): R = writing { t ->
        base.reading(allowClosedByUser = true) { adapter.writing(allowClosedByUser = true) { block(t) } }
    }

    /** The training tokens (copied by the library). */
    fun setData(tokens: IntArray) = setData(ints(tokens))
    fun setData(tokens: IntBuffer) = setData(ints(tokens, "tokens"))
    private fun setData(r: Ints) = writing { Native.loraTrainerSetData(it, r.array, r.buffer, r.offset, r.length) }

    /** One optimizer step on batches drawn from the data ([StateException] without data). */
    fun step(): StepResult = stepping { StepResult.fromFields(Native.loraTrainerStep(it)) }

    /** One step on a given batch: inputs and targets of batch*seqLen ids (a target of -1 is not scored). */
    fun stepBatch(inputs: IntArray, targets: IntArray, batch: Int, seqLen: Int): StepResult =
        stepBatch(ints(inputs), ints(targets), batch, seqLen)

    fun stepBatch(inputs: IntBuffer, targets: IntBuffer, batch: Int, seqLen: Int): StepResult =
        stepBatch(ints(inputs, "inputs"), ints(targets, "targets"), batch, seqLen)

    private fun stepBatch(i: Ints, g: Ints, batch: Int, seqLen: Int): StepResult = stepping { h ->
        StepResult.fromFields(Native.loraTrainerStepBatch(h, i.array, i.buffer, i.offset, g.array, g.buffer, g.offset,
                                                          batch, seqLen))
    }
}
