package phonegpt

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.ReceiveChannel
import kotlinx.coroutines.channels.SendChannel
import kotlinx.coroutines.channels.produce
import kotlinx.coroutines.isActive
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext

// The kotlinx-coroutines forms. They use only what kotlinx-coroutines 1.0 (Debian's, which this
// is compiled and tested against) and every later version have: produce, runBlocking + send,
// withContext (no sendBlocking, an error since 1.6, and no trySendBlocking, which 1.0 lacks).
// Only this file needs kotlinx-coroutines-core on the class path; the rest of the binding does
// not load it. A Flow is `generateTokens(...).consumeAsFlow()` with kotlinx-coroutines 1.3+.

/** Buffered tokens or pieces of text between the generating thread and the consumer. */
const val STREAM_CAPACITY = 64

// Sends from a library callback (a thread that is not a coroutine): waits while the channel is
// full; a cancelled channel throws CancellationException, which stops the generation.
private fun <T> SendChannel<T>.sendFromCallback(value: T) = runBlocking { send(value) }

// A channel fed by [generate] on Dispatchers.Default, through the callback it is given.
private fun <T> CoroutineScope.producing(capacity: Int, generate: ((T) -> Unit) -> Unit): ReceiveChannel<T> =
    produce(Dispatchers.Default, capacity) { generate { value -> channel.sendFromCallback(value) } }

/**
 * Generates on [Dispatchers.Default] and sends each token to the returned channel as it is made,
 * buffering at most [capacity] (the generation waits for a slow consumer). Cancelling the channel
 * (or the scope) stops generation at the next token; an error of the library closes the channel
 * with its exception.
 */
@JvmOverloads
fun CoroutineScope.generateTokens(model: Model, prompt: IntArray, config: SampleConfig = SampleConfig.defaults(),
                                  capacity: Int = STREAM_CAPACITY): ReceiveChannel<Int> =
    producing<Int>(capacity) { send -> model.generate(prompt, config, null, send) }

/** [generateTokens] continuing [session]'s sequence ([Session.generate]). */
@JvmOverloads
fun CoroutineScope.generateTokens(session: Session, config: SampleConfig = SampleConfig.defaults(),
                                  capacity: Int = STREAM_CAPACITY): ReceiveChannel<Int> =
    producing<Int>(capacity) { send -> session.generate(config, null, send) }

/** The text form of [generateTokens]: pieces of complete UTF-8 text ([Model.generate] with a String prompt). */
@JvmOverloads
fun CoroutineScope.generateText(model: Model, prompt: String, config: SampleConfig = SampleConfig.defaults(),
                                capacity: Int = STREAM_CAPACITY): ReceiveChannel<String> =
    producing<String>(capacity) { send -> model.generate(prompt, config, null, send) }

/** The text form of [generateTokens] on a session ([Session.generateText]). */
@JvmOverloads
fun CoroutineScope.generateText(session: Session, config: SampleConfig = SampleConfig.defaults(),
                                capacity: Int = STREAM_CAPACITY): ReceiveChannel<String> =
    producing<String>(capacity) { send -> session.generateText(config, null, send) }

// Runs a generation on Dispatchers.Default that stops when the coroutine is cancelled.
private suspend fun <R> generating(run: (CancellationToken, (Any) -> Unit) -> R): R =
    withContext(Dispatchers.Default) {
        val cancel = CancellationToken()
        val out = run(cancel) { if (!isActive) cancel.cancel() }
        if (!isActive) throw kotlinx.coroutines.CancellationException("generation cancelled")
        out
    }

/** [Model.generate] as a suspending call on [Dispatchers.Default]; cancelling the coroutine stops it. */
suspend fun Model.generateSuspending(prompt: IntArray, config: SampleConfig = SampleConfig.defaults()): IntArray =
    generating { cancel, check -> generate(prompt, config, cancel) { check(it) } }

/** [Session.generate] as a suspending call on [Dispatchers.Default]; cancelling the coroutine stops it. */
suspend fun Session.generateSuspending(config: SampleConfig = SampleConfig.defaults()): IntArray =
    generating { cancel, check -> generate(config, cancel) { check(it) } }

/** [Session.generateText] as a suspending call on [Dispatchers.Default]; cancelling the coroutine stops it. */
suspend fun Session.generateTextSuspending(config: SampleConfig = SampleConfig.defaults()): String =
    generating { cancel, check -> generateText(config, cancel) { check(it) } }

/**
 * [EvaluatingHandle.evaluate] (a [Model] or a [Session]) as a suspending call on
 * [Dispatchers.Default]; cancelling the coroutine stops it at the next batch and ends it with a
 * CancellationException (as coroutines expect), not a [CancelledException].
 */
suspend fun EvaluatingHandle.evaluateSuspending(tokens: IntArray, config: EvalConfig = EvalConfig.defaults(),
                                                progress: ((Long, Long) -> Unit)? = null): EvalResult =
    withContext(Dispatchers.Default) {
        val cancel = CancellationToken()
        try {
            evaluate(tokens, config, cancel) { done, total ->
                if (!isActive) cancel.cancel() else progress?.invoke(done, total)
            }
        } catch (e: CancelledException) {
            if (isActive) throw e
            throw kotlinx.coroutines.CancellationException("evaluation cancelled")
        }
    }
