package phonegpt

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import java.io.File
import java.nio.IntBuffer
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference
import kotlin.concurrent.thread

// What the JUnit4 classes of the Kotlin binding share. ctest (tests/cmake/kotlin.cmake) runs them
// with PG_KOTLIN_REFERENCE = the folder kotlin_c_reference wrote in the same ctest run and
// PG_TEST_TMPDIR = a scratch folder. Everything uses the "tiny" preset: the suite takes seconds.

private val paragraph = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
val text: String = paragraph.repeat(24)
/** A character tokenizer of [text] and its ids, shared by the test classes (the JVM's exit frees it). */
val tokenizer: Tokenizer by lazy { Tokenizer.char(text) }
val ids: IntArray by lazy { tokenizer.encode(text) }
val tmp: File = File(System.getenv("PG_TEST_TMPDIR") ?: System.getProperty("java.io.tmpdir"), "kotlin").apply { mkdirs() }

fun tinyConfig(): ModelConfig = ModelConfig.preset("tiny").copy(vocabSize = tokenizer.vocabSize, paddedVocabSize = 0)

fun tinyModel(seed: Long = 7): Model = Model(tinyConfig(), seed).also { it.setTokenizer(tokenizer) }

fun trainConfig(): TrainConfig = TrainConfig.default().copy(batchSize = 4, warmupSteps = 3, totalSteps = 12,
                                                             nThreads = 2, seed = 99)

inline fun <reified E : RuntimeException> assertThrows(status: Status, block: () -> Unit): E {
    try {
        block()
    } catch (e: RuntimeException) {
        if (e !is PhoneGptError) throw e
        assertTrue("wanted ${E::class.java.simpleName}, got $e", e is E)
        assertEquals(status, e.status)
        assertEquals(status.statusName, e.statusName)
        assertTrue("an empty message: $e", e.message!!.isNotEmpty())
        return e as E
    }
    fail("no ${E::class.java.simpleName} thrown")
    throw AssertionError()
}

fun nativeInts(values: IntArray): IntBuffer {
    val b = directIntBuffer(values.size)
    b.put(values).flip()
    return b
}

/**
 * Runs [generate] (asked for a million tokens) on a worker thread, cancels it from this one
 * once it has streamed a token, and checks that it stopped early with every streamed token
 * returned. Returns the tokens.
 */
fun generateThenCancelFromAnotherThread(generate: (CancellationToken, (Int) -> Unit) -> IntArray): IntArray {
    val cancel = CancellationToken()
    val started = CountDownLatch(1)
    val count = AtomicInteger()
    val result = AtomicReference<IntArray>()
    val worker = thread { result.set(generate(cancel) { count.incrementAndGet(); started.countDown() }) }
    assertTrue(started.await(30, TimeUnit.SECONDS))
    cancel.cancel()
    worker.join(30_000)
    assertFalse(worker.isAlive)
    assertTrue(result.get().size in 1 until 1_000_000)
    assertEquals(count.get(), result.get().size)
    return result.get()
}

fun rssKiB(): Long = File("/proc/self/status").readLines().first { it.startsWith("VmRSS:") }
    .split(Regex("\\s+"))[1].toLong()
