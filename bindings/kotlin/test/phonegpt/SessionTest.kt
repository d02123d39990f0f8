package phonegpt

import org.junit.AfterClass
import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.BeforeClass
import org.junit.Test
import java.util.concurrent.atomic.AtomicInteger
import kotlin.concurrent.thread

/**
 * The session handle (Session.kt over pg_session_*), compared with the model-level calls, which
 * run on a session made for the call: Model.generate = append + generate on a fresh session, a continued
 * conversation = the whole conversation given at once, forward and evaluation = the model's.
 * The tiny preset (n_ctx 16) after a few training steps, so that outputs depend on the weights
 * and 40 generated tokens slide the window.
 */
class SessionTest {
    companion object {
        private val text = phonegpt.text
        lateinit var tokenizer: Tokenizer
        lateinit var model: Model
        lateinit var ids: IntArray

        @BeforeClass @JvmStatic fun setUp() {
            tokenizer = Tokenizer.char(text)
            ids = tokenizer.encode(text)
            model = Model(ModelConfig.preset("tiny").copy(vocabSize = tokenizer.vocabSize, paddedVocabSize = 0), 5)
            model.setTokenizer(tokenizer)
            Trainer(model, TrainConfig.default().copy(batchSize = 4, lrMax = 3e-3f, warmupSteps = 0, totalSteps = 10,
                                                      nThreads = 1, seed = 7)).use { t ->
                t.setData(ids)
                repeat(10) { t.step() }
            }
        }

        @AfterClass @JvmStatic fun tearDown() {
            model.close()
            tokenizer.close()
        }

        fun greedy(n: Int) = SampleConfig.default().copy(temperature = 0f, maxTokens = n, nThreads = 1)
        fun session(threads: Int = 1) = Session(model, SessionConfig.default().copy(nThreads = threads))
    }

    @Test fun configsComeFromTheLibrary() {
        assertEquals(SessionConfig(0, 0, Arithmetic.EXACT), SessionConfig.default())
        assertEquals(EvalSampledConfig(20, 8, 1337), EvalSampledConfig.default())
        session(2).use { assertEquals(2, it.nThreads) }
    }

    @Test fun generateOnAFreshSessionIsOneShotGenerate() {
        val prompt = ids.copyOfRange(3, 10)
        for (threads in listOf(1, 2)) {
            // temperature 1 with top-k: sampled, and 7 + 40 tokens slide the 16-token window
            val cfg = SampleConfig.default().copy(maxTokens = 40, nThreads = threads, slideKeep = 9, topK = 8, seed = 21)
            val direct = model.generate(prompt, cfg)
            assertEquals(40, direct.size)
            session(threads).use { s ->
                s.append(prompt)
                assertEquals(7L, s.position)
                val streamed = ArrayList<Int>()
                assertArrayEquals(direct, s.generate(cfg) { streamed.add(it) })
                assertEquals(direct.toList(), streamed)
                assertEquals(47L, s.position)
            }
        }
    }

    @Test fun continuingGenerationDoesNotRerunAndEqualsOneShot() {
        val prompt = ids.copyOfRange(20, 25)
        val turn = ids.copyOfRange(40, 43)
        session().use { s ->
            s.append(nativeInts(prompt))               // a direct buffer, read in place
            val first = s.generate(greedy(4))
            // generating 4 and then 3 more continues the same sequence: one-shot generation of 7
            val more = s.generate(greedy(3))
            assertArrayEquals(model.generate(prompt, greedy(7)), first + more)
            // a new turn appended after the answer: the same as the whole conversation at once
            s.append(turn)
            val second = s.generate(greedy(3))
            val whole = prompt + first + more + turn
            assertArrayEquals(model.generate(whole, greedy(3)), second)
            assertEquals((whole.size + 3).toLong(), s.position)

            // the logits after the sequence equal the last row of a forward pass over the window
            val seq = whole + second
            val window = seq.copyOfRange(seq.size - 16, seq.size)
            val vocab = tokenizer.vocabSize
            val full = model.forward(window, 1, 16).logits
            val logits = s.logits()
            val direct = directFloatBuffer(vocab)
            s.logits(direct)
            for (v in 0 until vocab) {
                assertEquals(full[15 * vocab + v], logits[v], 1e-4f)
                assertEquals(logits[v], direct.get(v), 0f)
            }

            // reset: an empty sequence, then the same answer to the same prompt
            s.reset()
            assertEquals(0L, s.position)
            s.append(prompt)
            assertArrayEquals(first, s.generate(greedy(4)))
        }
    }

    @Test fun forwardAndEvaluationAreTheModelsAndLeaveTheSequenceAlone() {
        session(2).use { s ->
            s.append(ids.copyOf(6))
            val tokens = ids.copyOfRange(0, 32)
            val targets = ids.copyOfRange(1, 33)
            val mine = s.forward(tokens, 2, 16, targets)
            val theirs = model.forward(tokens, 2, 16, targets, nThreads = 2)
            assertArrayEquals(theirs.logits, mine.logits, 0f)
            assertEquals(theirs.loss!!, mine.loss!!, 0f)
            // direct buffers, no targets: NaN loss, logits in place
            val logits = directFloatBuffer(mine.logits.size)
            assertTrue(s.forward(nativeInts(tokens), 2, 16, null, logits).isNaN())
            for (i in mine.logits.indices step 97) assertEquals(mine.logits[i], logits.get(i), 0f)

            val cfg = EvalConfig.default().copy(batchSize = 4, nThreads = 2)
            val progress = ArrayList<Long>()
            assertEquals(model.evaluate(ids, cfg), s.evaluate(ids, cfg) { done, _ -> progress.add(done) })
            assertTrue(progress.isNotEmpty() && progress.last() == ids.size - 1L)
            assertEquals(model.evaluate(ids, cfg), s.evaluate(nativeInts(ids), cfg))
            val sampled = EvalSampledConfig(3, 2, 99)
            assertEquals(model.evaluateSampled(ids, 3, 2, 99, 2), s.evaluateSampled(ids, sampled))
            assertEquals(6L, s.position)
            val cfg5 = greedy(5).copy(nThreads = 2)
            assertArrayEquals(model.generate(ids.copyOf(6), cfg5), s.generate(cfg5))
        }
    }

    @Test fun textThroughTheModelsTokenizer() {
        session().use { s ->
            s.append("First Citizen:\n")
            val streamed = StringBuilder()
            val out = s.generateText(greedy(10)) { streamed.append(it) }
            assertEquals(10, out.length)
            assertEquals(out, streamed.toString())
            assertEquals(out, model.generate("First Citizen:\n", greedy(10)))
        }
    }

    @Test fun streamingStopsAndCallbackErrors() {
        session().use { s ->
            s.append(ids.copyOf(5))
            // cancelling from the callback keeps the tokens so far, in the output and the sequence
            val cancel = CancellationToken()
            val few = s.generate(greedy(20), cancel) { cancel.cancel() }
            assertEquals(1, few.size)
            assertEquals(6L, s.position)
            // a direct output buffer, and streaming only
            val buf = directIntBuffer(4)
            assertEquals(4, s.generate(buf, greedy(6)))
            assertEquals(12L, s.position)
            val count = AtomicInteger()
            assertEquals(0, s.generate(null, greedy(3)) { count.incrementAndGet() })
            assertEquals(3, count.get())
            // a throwing callback stops generation and is re-thrown; the session stays usable
            try {
                s.generate(greedy(10)) { throw IllegalStateException("from the callback") }
                throw AssertionError("not re-thrown")
            } catch (e: IllegalStateException) {
                assertEquals("from the callback", e.message)
            }
            // using the session from its own callback is refused, not a crash
            var inner: Throwable? = null
            s.generate(greedy(2)) { if (inner == null) inner = runCatching { s.reset() }.exceptionOrNull() }
            assertTrue("$inner", inner is StateException)
            val before = s.position
            s.append(intArrayOf(1))
            assertEquals(before + 1, s.position)
        }
    }

    @Test fun generationIsCancelledFromAnotherThread() {
        session().use { s ->
            s.append(ids.copyOf(5))
            val out = generateThenCancelFromAnotherThread { cancel, onToken ->
                s.generate(SampleConfig.default().copy(maxTokens = 1_000_000), cancel, onToken)
            }
            assertEquals(5L + out.size, s.position)
        }
    }

    @Test fun twoThreadsOnOneSessionAreSerialised() {
        session().use { s ->
            s.append(ids.copyOf(4))
            val workers = (0 until 2).map { thread { repeat(20) { s.append(intArrayOf(1)); s.generate(greedy(2)) } } }
            workers.forEach { it.join(60_000) }
            assertEquals(4L + 2 * 20 * 3, s.position)
        }
    }

    @Test fun errorsNameWhatIsWrong() {
        session().use { s ->
            assertThrows<StateException>(Status.STATE) { s.generate(greedy(3)) }      // empty sequence
            assertThrows<StateException>(Status.STATE) { s.logits() }
            val e = assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { s.append(intArrayOf(9999)) }
            assertEquals(e.message, s.lastError)
            assertEquals(0L, s.position)                                              // nothing appended
            s.append(ids.copyOf(3))
            assertThrows<BufferTooSmallException>(Status.BUFFER_TOO_SMALL) { s.logits(directFloatBuffer(3)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { s.generate(greedy(3).copy(temperature = -1f)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { s.forward(ids.copyOf(4), 0, 4) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { s.forward(ids.copyOf(4), 1, 8) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { s.evaluateSampled(ids, EvalSampledConfig(0, 2, 1)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                s.evaluate(ids, EvalConfig.default().copy(window = 99))
            }
            // the shim checks what Kotlin passes too
            s.reading { h ->
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.sessionAppend(h, null, null, 0, 1) }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    Native.sessionGenerate(h, LongArray(3), null, null, null, null, 0, 0)
                }
                assertThrows<StateException>(Status.STATE) { Native.sessionReset(0) }
            }
            assertEquals(3L, s.position)
        }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
            Session(model, SessionConfig(1, 99, Arithmetic.EXACT))                                    // slideKeep > nCtx
        }
        assertThrows<StateException>(Status.STATE) { Native.sessionCreate(0, LongArray(2)) }
    }

    @Test fun closingAndTheModelsLifetime() {
        val m = Model(model.config, 3)
        val s = Session(m, SessionConfig(1, 0, Arithmetic.EXACT))
        m.close()                                       // the session keeps the native model alive
        assertThrows<StateException>(Status.STATE) { m.numParams }
        s.append(intArrayOf(1, 2, 3))
        assertEquals(5, s.generate(greedy(5)).size)
        s.close()
        s.close()                                       // harmless
        assertTrue(s.isClosed)
        assertThrows<StateException>(Status.STATE) { s.position }
        assertThrows<StateException>(Status.STATE) { s.append(intArrayOf(1)) }
        assertThrows<StateException>(Status.STATE) { Session(m) }                   // a closed model
    }

    @Test fun aSessionSeesNewWeightsAfterReset() {
        Model(model.config, 9).use { m ->
            Session(m, SessionConfig(1, 0, Arithmetic.EXACT)).use { s ->
                val prompt = ids.copyOf(6)
                s.append(prompt)
                s.generate(greedy(1))
                Trainer(m, TrainConfig.default().copy(batchSize = 2, lrMax = 1e-2f, warmupSteps = 0, nThreads = 1)).use { t ->
                    t.setData(ids)
                    repeat(3) { t.step() }
                }
                s.reset()
                s.append(prompt)
                assertArrayEquals(m.generate(prompt, greedy(6)), s.generate(greedy(6)))
            }
        }
    }
}
