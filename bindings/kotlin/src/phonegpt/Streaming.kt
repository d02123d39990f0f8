package phonegpt

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.channels.ReceiveChannel
import kotlinx.coroutines.channels.produce
import kotlinx.coroutines.channels.sendBlocking
import kotlinx.coroutines.isActive
import kotlinx.coroutines.withContext

// The kotlinx-coroutines forms (Debian's libkotlinx-coroutines-java 1.0.1: channels, no Flow).
// Only this file needs kotlinx-coroutines-core on the class path; the rest of the binding does
// not load it.

/**
 * Generates on [Dispatchers.IO] and sends each token to the returned channel as it is made.
 * Cancelling the channel (or the scope) stops generation at the next token; an error of the
 * library closes the channel with its [PhoneGptException].
 */
fun CoroutineScope.generateTokens(model: Model, prompt: IntArray, config: SampleConfig = SampleConfig.default(),
                                  capacity: Int = Channel.UNLIMITED): ReceiveChannel<Int> =
    produce(Dispatchers.IO, capacity) {
        // sendBlocking throws CancellationException once the channel is cancelled: the shim
        // stops the library and re-throws it, which ends this producer as cancelled.
        model.generate(prompt, config) { token -> channel.sendBlocking(token) }
    }

/** [Model.generate] as a suspending call on [Dispatchers.Default]; cancelling the coroutine stops it. */
suspend fun Model.generateSuspending(prompt: IntArray, config: SampleConfig = SampleConfig.default()): IntArray =
    withContext(Dispatchers.Default) {
        val cancel = CancellationToken()
        val out = generate(prompt, config, cancel) { if (!isActive) cancel.cancel() }
        if (!isActive) throw kotlinx.coroutines.CancellationException("generation cancelled")
        out
    }

/**
 * [Model.evaluate] as a suspending call on [Dispatchers.Default]; cancelling the coroutine stops
 * it at the next batch and ends it with a CancellationException (as coroutines expect), not a
 * [CancelledException].
 */
suspend fun Model.evaluateSuspending(tokens: IntArray, config: EvalConfig = EvalConfig.default(),
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
