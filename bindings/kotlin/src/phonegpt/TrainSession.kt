package phonegpt

import java.nio.IntBuffer
import java.util.concurrent.locks.ReentrantReadWriteLock
import kotlin.coroutines.EmptyCoroutineContext
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.suspendCancellableCoroutine

/** Why [TrainSession.run] returned (pg_train_stop). */
enum class TrainStop(override val code: Int) : CEnum { NONE(0), STEPS(1), TIME(2), CANCELLED(3) }

/** Android's PowerManager thermal status levels, same codes (THERMAL_STATUS_NONE .. SHUTDOWN). */
object ThermalStatus {
    const val NONE = 0
    const val LIGHT = 1
    const val MODERATE = 2
    const val SEVERE = 3
    const val CRITICAL = 4
    const val EMERGENCY = 5
    const val SHUTDOWN = 6
}

/**
 * A training run that survives the operating system (pg_train_session): it steps until the step
 * budget ([TrainSessionConfig.maxSteps], 0 = the schedule's totalSteps), the time budget or
 * [cancel], checkpoints atomically to [checkpoint] every N steps or ms and when it stops, and,
 * created again over the same file after the process was killed, continues the run (bit for bit
 * with the same data and thread count). [adapter] null trains [model]'s weights; an adapter is
 * trained over the frozen model. It keeps the model (and adapter) alive until it is closed.
 *
 * Threads: [run] holds the session's lock and the model's (alone for full training); [cancel],
 * [setConditions], [report] and [coreRates] may be called from any thread during a run.
 */
class TrainSession @JvmOverloads constructor(
    val model: Model,
    val checkpoint: String,
    val adapter: LoraAdapter? = null,
    trainConfig: TrainConfig = TrainConfig.default(),
    config: TrainSessionConfig = TrainSessionConfig.default()
) : NativeHandle(create(model, adapter, trainConfig, config, checkpoint), "TrainSession") {

    // Guards the native handle for the calls made during a run (which holds the main lock):
    // free() takes it alone, so they never see a freed session.
    private val control = ReentrantReadWriteLock()

    private companion object {
        fun create(model: Model, adapter: LoraAdapter?, train: TrainConfig, config: TrainSessionConfig,
                   path: String): Long {
            val t = train.fields()
            val c = config.fields()
            return model.writing { m ->
                val h = if (adapter == null) Native.trainSessionCreate(m, 0L, t, c, path)
                        else adapter.writing { a -> Native.trainSessionCreate(m, a, t, c, path) }
                model.retain()
                adapter?.retain()
                h
            }
        }
    }

    override fun free(handle: Long) {
        control.writeLock().lock()
        try { Native.trainSessionFree(handle) } finally { control.writeLock().unlock() }
        model.releaseReference()
        adapter?.releaseReference()
    }

    /** The training tokens (copied); the same tokens again after a resume. */
    fun setData(tokens: IntArray) = setData(ints(tokens))
    fun setData(tokens: IntBuffer) = setData(ints(tokens, "tokens"))
    private fun setData(r: Ints) = writing { Native.trainSessionSetData(it, r.array, r.buffer, r.offset, r.length) }

    /** Runs until a budget or [cancel]; checkpoints when it stops. */
    fun run(): TrainSessionReport = writing { s ->
        val fields = if (adapter == null) model.writing(allowClosedByUser = true) { Native.trainSessionRun(s) }
                     else model.reading(allowClosedByUser = true) {
                         adapter.writing(allowClosedByUser = true) { Native.trainSessionRun(s) }
                     }
        TrainSessionReport.fromFields(fields, null)
    }

    private inline fun <R> controlled(block: (Long) -> R): R {
        control.readLock().lock()
        try { return block(live(false)) } finally { control.readLock().unlock() }
    }

    /** From any thread: the run stops after its current step, checkpoints and returns CANCELLED. */
    fun cancel() = controlled { Native.trainSessionCancel(it) }

    /** From any thread: the device's battery, charger and thermal status, for the policy. */
    fun setConditions(conditions: DeviceConditions) = controlled { Native.trainSessionSetConditions(it, conditions.fields()) }

    /** Where the session is (any thread). */
    fun report(): TrainSessionReport = controlled { TrainSessionReport.fromFields(Native.trainSessionReport(it), null) }

    /** Tokens per second per core class over the throughput window: (capacity, rate), fastest first (-1: not pinned). */
    fun coreRates(): List<Pair<Int, Double>> = controlled { h ->
        val v = Native.trainSessionCoreRates(h)
        (0 until v.size / 2).map { Pair(v[2 * it].toInt(), Double.fromBits(v[2 * it + 1])) }
    }
}

/** The training memory plan (pg_train_memory_plan, pg_train_memory_max_batch). */
object MemoryPlanner {
    /** The predicted peak of training [model] (lora null) or an adapter over it held in [storage]. */
    @JvmStatic @JvmOverloads fun plan(model: ModelConfig, train: TrainConfig, lora: LoraConfig? = null,
                                      storage: WeightStorage = WeightStorage.FP32, nDataTokens: Long = 0): MemoryPlan =
        MemoryPlan.fromFields(Native.trainMemoryPlan(model.fields(), storage.code, lora?.fields(),
                                                     lora?.layers?.toIntArray(), train.fields(), nDataTokens, -1), null)

    /** The plan of the largest batch that fits [budgetBytes] ([OutOfMemoryException] with the figures otherwise). */
    @JvmStatic @JvmOverloads fun maxBatch(model: ModelConfig, train: TrainConfig, budgetBytes: Long,
                                          lora: LoraConfig? = null, storage: WeightStorage = WeightStorage.FP32,
                                          nDataTokens: Long = 0): MemoryPlan {
        if (budgetBytes < 0) throw InvalidArgumentException("maxBatch: budgetBytes $budgetBytes is negative")
        return MemoryPlan.fromFields(Native.trainMemoryPlan(model.fields(), storage.code, lora?.fields(),
                                                            lora?.layers?.toIntArray(), train.fields(), nDataTokens,
                                                            budgetBytes), null)
    }
}

/**
 * What a WorkManager `CoroutineWorker` does with a [TrainSession] (docs/android.md has the worker):
 * each [doWork] opens the session over the checkpoint (resuming it), trains for one window
 * (the session config's timeBudgetMs) under the device's conditions, and says whether the run
 * is complete ([WindowOutcome.DONE]: Result.success()) or needs another window
 * ([WindowOutcome.AGAIN]: Result.retry()). Cancelling the coroutine (WorkManager stopping the
 * worker) cancels the session, which checkpoints; a process killed outright resumes from the
 * last checkpoint. Plain Kotlin: it runs the same on the JVM and on a phone.
 */
class SessionWorkerLogic(
    private val checkpoint: String,
    private val openModel: () -> Model,
    private val tokens: () -> IntArray,
    private val trainConfig: TrainConfig,
    private val sessionConfig: TrainSessionConfig,
    private val conditions: () -> DeviceConditions = { DeviceConditions.default() },
    private val openAdapter: ((Model) -> LoraAdapter)? = null
) {
    enum class WindowOutcome { DONE, AGAIN }

    /** The last window's report (null before one ran). */
    @Volatile var lastReport: TrainSessionReport? = null
        private set

    @Volatile private var current: TrainSession? = null

    /**
     * New conditions for the window in progress (a PowerManager thermal listener, a battery
     * broadcast), from any thread; the next window reads [conditions] again. Nothing when no
     * window runs.
     */
    fun setConditions(c: DeviceConditions) {
        try { current?.setConditions(c) } catch (e: StateException) { Unit }  // the window just ended
    }

    /** One training window; cancellation of the calling coroutine stops it after the current step. */
    suspend fun doWork(): WindowOutcome {
        val model = openModel()
        val adapter = openAdapter?.invoke(model)
        try {
            TrainSession(model, checkpoint, adapter, trainConfig, sessionConfig).use { session ->
                session.setData(tokens())
                session.setConditions(conditions())
                current = session
                val report = try { runCancellable(session) } finally { current = null }
                lastReport = report
                return if (report.stop == TrainStop.STEPS) WindowOutcome.DONE else WindowOutcome.AGAIN
            }
        } finally {
            adapter?.close()
            model.close()
        }
    }

    private suspend fun runCancellable(session: TrainSession): TrainSessionReport =
        suspendCancellableCoroutine { cont ->
            cont.invokeOnCancellation { session.cancel() }
            Dispatchers.Default.dispatch(EmptyCoroutineContext, Runnable {
                cont.resumeWith(runCatching { session.run() })
            })
        }
}
