package phonegpt

import java.nio.FloatBuffer
import java.nio.IntBuffer

/**
 * What the full and the LoRA trainer share: training data and optimizer steps (sampled, on a
 * caller's batch, or a loop with progress and cancellation). Every call holds the trainer's lock
 * alone; a step also holds the locks its subclass names ([stepping]).
 */
abstract class TrainerBase internal constructor(handle: Long, handleKind: String) : NativeHandle(handle, handleKind) {
    internal abstract fun nativeSetData(h: Long, r: Ints)
    internal abstract fun nativeStep(h: Long): LongArray
    internal abstract fun nativeStepBatch(h: Long, i: Ints, g: Ints, batch: Int, seqLen: Int): LongArray
    internal abstract fun nativeComputeGradients(h: Long, i: Ints, g: Ints, batch: Int, seqLen: Int): Float
    /** Runs [block] with the trainer's handle and the locks a step needs. */
    internal abstract fun <R> stepping(block: (Long) -> R): R
    internal open fun afterStep(h: Long) {}

    /** The training tokens (copied by the library). */
    fun setData(tokens: IntArray) = setData(ints(tokens))
    fun setData(tokens: IntBuffer) = setData(ints(tokens, "tokens"))
    private fun setData(r: Ints) = writing { nativeSetData(it, r) }

    /** One optimizer step on batches drawn from the data ([StateException] without data). */
    fun step(): StepResult = stepping { StepResult.fromFields(nativeStep(it), null) }

    /** One step on a given batch: inputs and targets of batch*seqLen ids (a target of -1 is not scored). */
    fun stepBatch(inputs: IntArray, targets: IntArray, batch: Int, seqLen: Int): StepResult =
        stepBatch(ints(inputs), ints(targets), batch, seqLen)

    fun stepBatch(inputs: IntBuffer, targets: IntBuffer, batch: Int, seqLen: Int): StepResult =
        stepBatch(ints(inputs, "inputs"), ints(targets, "targets"), batch, seqLen)

    private fun stepBatch(i: Ints, g: Ints, batch: Int, seqLen: Int): StepResult =
        stepping { StepResult.fromFields(nativeStepBatch(it, i, g, batch, seqLen), null) }

    /**
     * Forward and backward only, no update and nothing recorded: returns the batch's mean loss
     * and leaves the gradients for `grad` (every weight's for [Trainer], dA and dB for [LoraTrainer]).
     */
    fun computeGradients(inputs: IntArray, targets: IntArray, batch: Int, seqLen: Int): Float =
        computeGradients(ints(inputs), ints(targets), batch, seqLen)

    fun computeGradients(inputs: IntBuffer, targets: IntBuffer, batch: Int, seqLen: Int): Float =
        computeGradients(ints(inputs, "inputs"), ints(targets, "targets"), batch, seqLen)

    private fun computeGradients(i: Ints, g: Ints, batch: Int, seqLen: Int): Float =
        stepping { nativeComputeGradients(it, i, g, batch, seqLen) }

    /**
     * Runs [steps] steps, calling [onStep] after each (outside any lock: it may evaluate the
     * model). [cancel] (from any thread or from [onStep]) stops after the current step; returns
     * the steps done. An exception from [onStep] propagates after its step.
     */
    @JvmOverloads fun train(steps: Int, cancel: CancellationToken? = null,
                            onStep: ((StepResult) -> Unit)? = null): List<StepResult> {
        val results = ArrayList<StepResult>(maxOf(steps, 0))
        for (i in 0 until steps) {
            if (cancel != null && cancel.isCancelled) break
            val r = step()
            results.add(r)
            onStep?.invoke(r)
        }
        return results
    }
}

/**
 * The training state of a model (pg_trainer). It keeps its [model]'s native memory alive until
 * it is closed. Every call holds the trainer's lock alone; steps also hold the model's lock
 * alone (a step writes the weights), so evaluating the model on another thread waits for the
 * step and vice versa.
 */
class Trainer private constructor(handle: Long, val model: Model, private val ownsModel: Boolean) :
    TrainerBase(handle, "Trainer") {

    /** A trainer for [model] with [config] (start from TrainConfig.default()). */
    @JvmOverloads constructor(model: Model, config: TrainConfig = TrainConfig.default()) :
        this(create(model, config), model, false)

    companion object {
        private fun create(model: Model, config: TrainConfig): Long {
            val fields = config.fields()
            return model.writing { h ->
                val t = Native.trainerCreate(h, fields)
                model.retain()
                t
            }
        }

        /**
         * Resumes a checkpoint written by [save]: a new model and trainer; the trainer owns the
         * model (closing the trainer closes it). Give it its data again before stepping.
         */
        @JvmStatic fun resume(path: String): Trainer {
            val handles = Native.trainerResume(path)
            val model = Model(handles[0])
            model.retain()
            return Trainer(handles[1], model, true)
        }
    }

    override fun free(handle: Long) {
        Native.trainerFree(handle)
        model.releaseReference()
        if (ownsModel) model.closeWhenIdle()
    }

    val config: TrainConfig get() = writing { TrainConfig.fromFields(Native.trainerGetConfig(it), null) }

    override fun nativeSetData(h: Long, r: Ints) = Native.trainerSetData(h, r.array, r.buffer, r.offset, r.length)
    override fun nativeStep(h: Long): LongArray = Native.trainerStep(h)
    override fun nativeStepBatch(h: Long, i: Ints, g: Ints, batch: Int, seqLen: Int): LongArray =
        Native.trainerStepBatch(h, i.array, i.buffer, i.offset, g.array, g.buffer, g.offset, batch, seqLen)
    override fun <R> stepping(block: (Long) -> R): R =
        writing { t -> try { model.writing(allowClosedByUser = true) { block(t) } } finally { afterStep(t) } }

    override fun nativeComputeGradients(h: Long, i: Ints, g: Ints, batch: Int, seqLen: Int): Float =
        Native.trainerComputeGradients(h, i.array, i.buffer, i.offset, g.array, g.buffer, g.offset, batch, seqLen)

    /** A copy of one tensor's gradient (as left by the last step or computeGradients). */
    fun grad(name: String): FloatArray = writing { h ->
        val (index, n) = model.tensorIndex(name)
        val out = FloatArray(n)
        Native.trainerReadGrad(h, index, out, null, 0, n)
        out
    }

    /** Copies one tensor's gradient into [out] (remaining() must equal the tensor's size). */
    fun readGrad(name: String, out: FloatBuffer) = writing { h ->
        val (index, n) = model.tensorIndex(name)
        val r = floats(out, "readGrad", output = true)
        if (r.length < n) throw BufferTooSmallException("readGrad: $name has $n floats, the buffer holds ${r.length}")
        if (r.length != n) throw GeometryException("readGrad: $name has $n floats, the buffer holds ${r.length}")
        Native.trainerReadGrad(h, index, r.array, r.buffer, r.offset, r.length)
    }

    /** The optimizer steps taken (as of the last finished step: never waits for a running one). */
    val stepCount: Long get() = open(stepCountNow)

    // Updated after every step, so that [stepCount] is a snapshot.
    @Volatile private var stepCountNow: Long = writing { Native.trainerStepCount(it) }

    override fun afterStep(h: Long) { stepCountNow = Native.trainerStepCount(h) }

    /** The learning rate the schedule gives at [step]. */
    fun lrAt(step: Long): Float = writing { Native.trainerLrAt(it, step) }

    /** The threads the steps run on (nThreads with <= 0 resolved to this machine's cores). */
    val threads: Int get() = writing { Native.trainerThreads(it) }

    /**
     * Runs the later steps on [nThreads] (<= 0: all cores), e.g. to continue on the cores a busy
     * phone has free; config and the next [save] record it. Results then match the unchanged
     * run only up to float rounding (the kernels split their work by thread count).
     */
    fun setThreads(nThreads: Int) = writing { Native.trainerSetThreads(it, nThreads) }

    /** Saves the model and the whole training state, so that [resume] continues bit for bit. */
    @JvmOverloads fun save(path: String, options: SaveOptions = SaveOptions.default()) =
        writing { Native.trainerSave(it, path, options.fields()) }
}
