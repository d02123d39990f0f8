package phonegpt

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Test
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import kotlin.concurrent.thread

// docs/android.md's promises about callbacks and state queries, one by one: a call on a handle
// from inside a callback of a running call that uses it is refused with a StateException naming
// that handle before any native work (the handle stays usable), closeWhenIdle never waits, and
// the state getters never wait for a running call.
class CallbackTest {
    private val three = SampleConfig.default().copy(maxTokens = 3, nThreads = 1)

    // Runs [call], whose callback runs [inner] once; returns what [inner] threw (it must throw).
    private fun refusedInside(call: (() -> Unit) -> Unit, inner: () -> Unit): StateException {
        var caught: Throwable? = null
        call { if (caught == null) caught = runCatching(inner).exceptionOrNull() ?: AssertionError("not refused") }
        val e = caught
        assertTrue("$e", e is StateException)
        return e as StateException
    }

    private fun assertNames(kind: String, e: StateException) =
        assertTrue(e.message, e.message!!.startsWith("$kind.") && e.message!!.contains("inside a callback"))

    @Test fun aHandleCannotBeClosedOrChangedFromItsOwnCallback() {
        tinyModel().use { m ->
            m.allowUntrainedBase(true)
            LoraAdapter(m).use { a ->
                Session(m, SessionConfig(1, 0, Arithmetic.EXACT)).use { s ->
                    s.append(ids.copyOf(4))
                    val gen = { cb: () -> Unit -> s.generate(three) { cb() }; Unit }
                    assertNames("Session", refusedInside(gen) { s.close() })
                    assertNames("Session", refusedInside(gen) { s.attachAdapter(a) })
                    assertNames("Session", refusedInside(gen) { s.detachAdapter() })
                    assertNames("Session", refusedInside(gen) { s.generate(three) })
                    assertNames("Model", refusedInside(gen) { m.close() })
                    assertNames("Model", refusedInside(gen) { m.setTokenizer(tokenizer) })
                    val eval = { cb: () -> Unit -> s.evaluate(ids.copyOf(200), progress = { _, _ -> cb() }); Unit }
                    assertNames("Session", refusedInside(eval) { s.close() })
                    s.attachAdapter(a)
                    assertNames("LoraAdapter", refusedInside(gen) { a.close() })
                    assertFalse(s.isClosed || a.isClosed)
                    s.generate(three)                                  // still usable
                }
                val mgen = { cb: () -> Unit -> m.generate(ids.copyOf(3), three) { cb() }; Unit }
                assertNames("Model", refusedInside(mgen) { m.close() })
                assertNames("Model", refusedInside(mgen) { m.generate(ids.copyOf(3), three) })
                val meval = { cb: () -> Unit -> m.evaluate(ids.copyOf(200), progress = { _, _ -> cb() }); Unit }
                assertNames("Model", refusedInside(meval) { m.close() })
                // a trainer step of the model from inside the model's own generation
                Trainer(m, trainConfig().copy(nThreads = 1)).use { t ->
                    t.setData(ids)
                    assertNames("Model", refusedInside(mgen) { t.step() })
                }
                assertFalse(m.isClosed)
                m.generate(ids.copyOf(3), three)
            }
        }
    }

    @Test fun closingAnotherHandleFromACallbackIsSafe() {
        tinyModel().use { m ->
            val s = Session(m, SessionConfig(1, 0, Arithmetic.EXACT))
            s.append(ids.copyOf(4))
            // the session is not in use: it closes; its reference on the model goes at once
            m.generate(ids.copyOf(3), three) { s.close() }
            assertTrue(s.isClosed)
            assertThrows<StateException>(Status.STATE) { s.append(intArrayOf(1)) }
            // closeWhenIdle from inside the model's own call: refused calls afterwards, freed when the call ends
            var now = true
            m.generate(ids.copyOf(3), three) { now = m.closeWhenIdle() }
            assertFalse(now)
            assertTrue(m.isClosed)
            assertEquals(0L, m.handle)
            assertThrows<StateException>(Status.STATE) { m.numParams }
        }
    }

    @Test fun trainersAndFiltersRefuseTheirOwnCallbacks() {
        tinyModel().use { m ->
            m.allowUntrainedBase(true)
            val t = Trainer(m, trainConfig().copy(nThreads = 1))
            t.setData(ids)
            // train's onStep runs outside the trainer's lock: close works there, the next step is refused
            val e = assertThrows<StateException>(Status.STATE) { t.train(3) { t.close() } }
            assertTrue(e.message, e.message!!.startsWith("Trainer is closed"))
            LoraAdapter(m).use { a ->
                val lt = LoraTrainer(m, a, trainConfig().copy(nThreads = 1))
                lt.setData(ids)
                val le = assertThrows<StateException>(Status.STATE) { lt.train(3) { lt.close() } }
                assertTrue(le.message, le.message!!.startsWith("LoraTrainer is closed"))
                assertFalse(a.isClosed)
            }
        }
        var self: DataFilter? = null
        var inner: Throwable? = null
        DataFilter(DataFilterConfig.default()) { _ -> inner = runCatching { self!!.close() }.exceptionOrNull(); emptyList() }.use { f ->
            self = f
            f.apply("write to a@example.com")
            assertTrue("$inner", inner is StateException)
            assertNames("DataFilter", inner as StateException)
            assertFalse(f.isClosed)
            assertFalse(f.apply("write to a@example.com").text.contains("a@example.com"))
        }
    }

    @Test fun stateQueriesDoNotWaitForARunningCall() {
        tinyModel().use { m ->
            Session(m, SessionConfig(1, 0, Arithmetic.EXACT)).use { s ->
                s.append(ids.copyOf(4))
                val inside = CountDownLatch(1)
                val release = CountDownLatch(1)
                val worker = thread { s.generate(three) { inside.countDown(); release.await(30, TimeUnit.SECONDS) } }
                assertTrue(inside.await(30, TimeUnit.SECONDS))
                val start = System.nanoTime()
                assertFalse(s.isClosed)
                assertEquals(4L, s.position)           // as of the last finished call
                assertEquals(1, s.nThreads)
                assertEquals(null, s.adapter)
                assertEquals("", s.lastError)
                assertFalse(m.isClosed)
                // a model busy in a session: closeWhenIdle returns at once, the session keeps it
                val elapsedMs = (System.nanoTime() - start) / 1_000_000
                release.countDown()
                worker.join(30_000)
                assertTrue("the getters waited $elapsedMs ms", elapsedMs < 1000)
                assertEquals(7L, s.position)
            }
        }
        // Model.closeWhenIdle during another thread's evaluation: no wait, freed when it ends
        val m = tinyModel()
        val inside = CountDownLatch(1)
        val release = CountDownLatch(1)
        var result: EvalResult? = null
        val worker = thread {
            result = m.evaluate(ids.copyOf(400), EvalConfig.default().copy(batchSize = 1),
                                progress = { _, _ -> inside.countDown(); release.await(30, TimeUnit.SECONDS) })
        }
        assertTrue(inside.await(30, TimeUnit.SECONDS))
        assertFalse(m.closeWhenIdle())
        assertTrue(m.isClosed)
        assertThrows<StateException>(Status.STATE) { m.numParams }
        release.countDown()
        worker.join(30_000)
        assertTrue(result!!.nScored > 0)
        assertEquals(0L, m.handle)
    }
}
