package phonegpt

import java.nio.IntBuffer

import java.io.Closeable
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantReadWriteLock

/**
 * A native handle: AutoCloseable, through java.io.Closeable so that Kotlin's `use { }` needs only
 * kotlin-stdlib, closing twice is harmless, any call after close throws [StateException], and
 * nothing is left to a finalizer.
 *
 * Threads: every handle has one read/write lock. Calls that only read (a model's evaluation,
 * generation, forward pass, save) share it, so several threads may read one model at once, as
 * the C API allows; calls that write (a trainer step, setting weights or the tokenizer, close)
 * hold it alone, so two threads using one handle wait for each other instead of racing.
 *
 * Callbacks: a call on a handle from inside a callback of a running call that holds that handle
 * (a token or progress listener, a training step's, a data filter rule) is refused with
 * [StateException] naming the handle before any native work: the lock is never taken twice by
 * one thread. [isClosed] and the state snapshots of the subclasses never wait for a running call.
 *
 * Closing: close() waits for running calls on other threads to finish (cancel them first with a
 * [CancellationToken] to stop sooner). [closeWhenIdle] never waits: new calls are refused at
 * once and the native memory goes when the last running call returns.
 *
 * A trainer, session, validator or token stream keeps what it borrows alive (a reference count):
 * closing the borrowed handle first makes it unusable, and its memory goes when the last
 * borrower closes.
 */
abstract class NativeHandle internal constructor(handle: Long, @PublishedApi internal val handleKind: String) : Closeable {
    @PublishedApi internal val lock = ReentrantReadWriteLock()
    @PublishedApi @Volatile internal var handle: Long = handle
        private set
    @Volatile private var closedByUser = false
    private val references = AtomicInteger(1)
    // Set when the last reference went while a call was running: that call's end frees it.
    @Volatile private var freePending = false
    // Where this handle's lock comes in the one order every call takes locks in (see LockOrder).
    private val orderKey = LockOrder.key(handleKind)
    internal val lockOrderKey: Long get() = orderKey

    /** True once close() or [closeWhenIdle] has been called (never waits for a running call). */
    val isClosed: Boolean get() = closedByUser

    /** Waits for running calls on other threads, then frees the native memory (unless borrowed). */
    override fun close() {
        refuseReentry("close")
        acquire(lock.writeLock())
        try { markClosed() } finally { unlockWrite() }
    }

    /**
     * Closes without waiting: later calls throw [StateException] at once, and the native memory is
     * freed as soon as no call is running (by the thread whose call ends last). Returns true if it
     * was freed (or handed to a borrower) now, false if a running call will free it. Safe from any
     * thread and from inside any callback, including one of this handle's own running call.
     */
    fun closeWhenIdle(): Boolean {
        markClosed()
        return !freePending
    }

    private fun markClosed() {
        synchronized(this) {
            if (closedByUser) return
            closedByUser = true
        }
        dropReference()
    }

    protected abstract fun free(handle: Long)

    /** For the state snapshots: throws [StateException] once closed, without waiting for any call. */
    internal fun <T> open(value: T): T {
        if (closedByUser) throw StateException("$handleKind is closed")
        return value
    }

    @PublishedApi internal fun live(allowClosedByUser: Boolean): Long {
        val h = handle
        if (h == 0L || (closedByUser && !allowClosedByUser)) throw StateException("$handleKind is closed")
        return h
    }

    /** Refuses a call from a thread already inside a call on this handle (a callback of its own call). */
    @PublishedApi internal fun refuseReentry(what: String) {
        if (lock.isWriteLockedByCurrentThread || lock.readHoldCount > 0)
            throw StateException("$handleKind.$what: called from inside a callback of a running call that uses this " +
                                 "$handleKind (refused before any native work)")
    }

    // Takes [l] in the lock order: a thread that already holds a lock at or after this one's place
    // (only inside a callback) does not wait, it is refused, so no two threads can deadlock.
    private fun acquire(l: java.util.concurrent.locks.Lock) {
        val held = LockOrder.held.get()
        var last = -1L
        for (k in held) if (k > last) last = k
        if (last >= orderKey) {
            if (!l.tryLock())
                throw StateException("$handleKind: in use on another thread, and a call from inside a callback " +
                                     "cannot wait for it (refused: waiting could deadlock)")
        } else {
            l.lock()
        }
        held.add(orderKey)
    }

    private fun released() {
        val held = LockOrder.held.get()
        held.removeAt(held.lastIndexOf(orderKey))
    }

    @PublishedApi internal fun lockRead() { refuseReentry("call"); acquire(lock.readLock()) }
    @PublishedApi internal fun lockWrite() { refuseReentry("call"); acquire(lock.writeLock()) }

    /** Runs [block] with the handle under the shared lock. */
    @PublishedApi internal inline fun <R> reading(allowClosedByUser: Boolean = false, block: (Long) -> R): R {
        lockRead()
        try { return block(live(allowClosedByUser)) } finally { unlockRead() }
    }

    /** Runs [block] with the handle under the exclusive lock. */
    @PublishedApi internal inline fun <R> writing(allowClosedByUser: Boolean = false, block: (Long) -> R): R {
        lockWrite()
        try { return block(live(allowClosedByUser)) } finally { unlockWrite() }
    }

    @PublishedApi internal fun unlockRead() {
        released()
        lock.readLock().unlock()
        if (freePending) freeIfIdle()
    }

    @PublishedApi internal fun unlockWrite() {
        released()
        if (freePending) freeNow()
        lock.writeLock().unlock()
        if (freePending) freeIfIdle()
    }

    /** One more owner of the native memory; the caller holds this handle's lock (it is live). */
    internal fun retain() { references.incrementAndGet() }

    /** Drops an owner; the last one frees the native memory (now, or when the running calls end). */
    internal fun releaseReference() = dropReference()

    private fun dropReference() {
        if (references.decrementAndGet() != 0) return
        freePending = true
        freeIfIdle()
    }

    // Frees the native memory if no call holds the lock; otherwise the last call to end does.
    private fun freeIfIdle() {
        // This thread's own call (or close) ends later and frees it then, not under the call.
        if (lock.readHoldCount > 0 || lock.isWriteLockedByCurrentThread) return
        if (!lock.writeLock().tryLock()) return
        try { freeNow() } finally { lock.writeLock().unlock() }
    }

    // Under the write lock.
    private fun freeNow() {
        if (!freePending) return
        freePending = false
        val h = handle
        handle = 0L
        if (h != 0L) free(h)
    }
}

/**
 * The one order in which a thread takes handle locks: owners (sessions first, then trainers and
 * validators, then keys, filters and reports), models, adapters, token streams, tokenizers; handles
 * of one kind by creation. Every call of the binding takes its locks in this order; a call from
 * inside a callback that would take one against it is refused instead of waiting.
 */
internal object LockOrder {
    private val created = AtomicLong()
    val held: ThreadLocal<ArrayList<Long>> = object : ThreadLocal<ArrayList<Long>>() {
        override fun initialValue() = ArrayList<Long>()
    }

    private fun rank(kind: String): Long = when (kind) {
        "Session" -> 0
        "SigningKey", "TrustedKeys", "DataFilter", "ValidationReport" -> 2
        "Model" -> 3
        "LoraAdapter" -> 4
        "TokenStream" -> 5
        "Tokenizer" -> 6
        else -> 1   // Trainer, LoraTrainer, Validator and any other owner of a model or an adapter
    }

    fun key(kind: String): Long = (rank(kind) shl 48) or created.incrementAndGet()
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
    /** Whole-split evaluation (pg_session_evaluate: the session's own threads run it, config.nThreads unread). */
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
