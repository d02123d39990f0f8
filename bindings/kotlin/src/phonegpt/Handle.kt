package phonegpt

import java.nio.IntBuffer

import java.io.Closeable
import java.util.concurrent.locks.ReentrantReadWriteLock

/**
 * A native handle: AutoCloseable, through java.io.Closeable so that Kotlin's `use { }` needs only
 * kotlin-stdlib, closing twice is harmless, any call
 * after close throws [StateException], and nothing is left to a finalizer.
 *
 * Threads: every handle has one read/write lock. Calls that only read (a model's evaluation,
 * generation, forward pass, save) share it, so several threads may read one model at once, as
 * the C API allows; calls that write (a trainer step, setting weights or the tokenizer, close)
 * hold it alone, so two threads using one handle wait for each other instead of racing. close()
 * waits for running calls to finish (cancel them first with a [CancellationToken] to stop
 * sooner); calling close() or a writing call from inside a callback of the same handle's running
 * call would wait forever, so it throws [StateException] instead.
 *
 * A trainer keeps its model's native memory alive (a reference count): closing the Model object
 * first makes the Model unusable, and its memory goes when the trainer closes.
 */
abstract class NativeHandle internal constructor(handle: Long, @PublishedApi internal val handleKind: String) : Closeable {
    @PublishedApi internal val lock = ReentrantReadWriteLock()
    @PublishedApi internal var handle: Long = handle
    private var closedByUser = false
    private var references = 1

    /** True once close() has been called. */
    val isClosed: Boolean
        get() {
            lock.readLock().lock()
            try { return closedByUser } finally { lock.readLock().unlock() }
        }

    override fun close() {
        writing(allowClosed = true) { if (!closedByUser) { closedByUser = true; release() } }
    }

    protected abstract fun free(handle: Long)

    @PublishedApi internal fun live(allowClosedByUser: Boolean): Long {
        if (handle == 0L || (closedByUser && !allowClosedByUser)) throw StateException("$handleKind is closed")
        return handle
    }

    /** Runs [block] with the handle under the shared lock. */
    @PublishedApi internal inline fun <R> reading(allowClosedByUser: Boolean = false, block: (Long) -> R): R {
        lock.readLock().lock()
        try { return block(live(allowClosedByUser)) } finally { lock.readLock().unlock() }
    }

    /** Runs [block] with the handle under the exclusive lock. */
    @PublishedApi internal inline fun <R> writing(allowClosedByUser: Boolean = false, allowClosed: Boolean = false,
                                                  block: (Long) -> R): R {
        if (lock.readHoldCount > 0)
            throw StateException("$handleKind: cannot close or modify it from inside a callback of its own running call")
        lock.writeLock().lock()
        try { return block(if (allowClosed) handle else live(allowClosedByUser)) } finally { lock.writeLock().unlock() }
    }

    /** One more owner of the native memory (a trainer borrowing its model). */
    internal fun retain() { writing { references++ } }

    /** Drops an owner; the last one frees the native memory. */
    internal fun releaseReference() { writing(allowClosed = true) { release() } }

    private fun release() {
        if (--references == 0 && handle != 0L) {
            free(handle)
            handle = 0L
        }
    }
}

/**
 * Cancels a running evaluation, generation or training loop from any thread: the library's
 * callback sees it at its next call (after each evaluation batch, each generated token, each
 * training step). A cancelled evaluation throws [CancelledException]; a cancelled generation
 * returns the tokens generated so far (stopping, as in the C API, is not an error); a cancelled
 * [Trainer.train] returns the steps completed. The model and trainer stay consistent and usable.
 */
class CancellationToken {
    @Volatile var isCancelled: Boolean = false
        private set

    fun cancel() { isCancelled = true }
}

/** What the JNI shim calls after each evaluation batch; returns false to stop. */
class ProgressBridge internal constructor(private val listener: ((Long, Long) -> Unit)?,
                                          private val cancel: CancellationToken?) {
    fun onProgress(done: Long, total: Long): Boolean {
        if (cancel != null && cancel.isCancelled) return false
        listener?.invoke(done, total)
        return cancel == null || !cancel.isCancelled
    }
}

/** What the JNI shim calls with each generated token; returns false to stop. */
class TokenBridge internal constructor(private val listener: ((Int) -> Unit)?, private val cancel: CancellationToken?) {
    // The library has already generated `token` (it is in the output either way), so the
    // listener always sees it, even when the cancellation came first: streamed == returned.
    fun onToken(token: Int): Boolean {
        listener?.invoke(token)
        return cancel == null || !cancel.isCancelled
    }
}

/**
 * A handle that evaluates a token split: [Model] (on threads made for the call) and [Session] (on
 * its own threads). [progress] gets (scored, total) positions after each batch; [cancel] stops
 * it from another thread ([CancelledException]); an exception thrown by [progress] stops the
 * evaluation and is re-thrown by evaluate.
 */
abstract class EvaluatingHandle internal constructor(handle: Long, handleKind: String) : NativeHandle(handle, handleKind) {
    /** Whole-split evaluation (pg_evaluate; a session's own threads run it, config.nThreads unread). */
    @JvmOverloads fun evaluate(tokens: IntArray, config: EvalConfig = EvalConfig.default(),
                               cancel: CancellationToken? = null, progress: ((Long, Long) -> Unit)? = null): EvalResult =
        EvalResult.fromFields(evaluateNative(ints(tokens), config, progressBridge(progress, cancel)), null)

    @JvmOverloads fun evaluate(tokens: IntBuffer, config: EvalConfig = EvalConfig.default(),
                               cancel: CancellationToken? = null, progress: ((Long, Long) -> Unit)? = null): EvalResult =
        EvalResult.fromFields(evaluateNative(ints(tokens, "tokens"), config, progressBridge(progress, cancel)), null)

    /** EvalResult.fields() of the evaluation, run under the handle's locks. */
    internal abstract fun evaluateNative(r: Ints, config: EvalConfig, bridge: ProgressBridge?): LongArray
}

internal fun progressBridge(progress: ((Long, Long) -> Unit)?, cancel: CancellationToken?): ProgressBridge? =
    if (progress != null || cancel != null) ProgressBridge(progress, cancel) else null

internal fun tokenBridge(onToken: ((Int) -> Unit)?, cancel: CancellationToken?): TokenBridge? =
    if (onToken != null || cancel != null) TokenBridge(onToken, cancel) else null
