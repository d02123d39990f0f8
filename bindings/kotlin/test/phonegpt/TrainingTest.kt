package phonegpt

import kotlinx.coroutines.GlobalScope
import kotlinx.coroutines.channels.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Test
import java.io.File
import java.nio.ByteBuffer
import java.nio.ByteOrder
import java.nio.IntBuffer
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference
import kotlin.concurrent.thread

/** Training: bit-for-bit equality with the C API, the trainer's calls and errors, save/resume, threads and locking. */
class TrainingTest {
    // --- training ------------------------------------------------------------------------------

    /** The same calls as kotlin_c_reference (bindings/kotlin/test/c_reference.c), compared bit for bit. */
    @Test fun trainingMatchesTheCApiBitForBit() {
        val dir = File(System.getenv("PG_KOTLIN_REFERENCE") ?: error("PG_KOTLIN_REFERENCE is not set"))
        val refText = File(dir, "text.txt").readText()
        assertEquals(text, refText)
        val lines = File(dir, "reference.txt").readLines().map { it.split(" ") }
        fun hex32(s: String) = java.lang.Long.parseLong(s, 16).toInt()
        val steps = lines.filter { it[0] == "step" }
        assertEquals(12, steps.size)
        tinyModel().use { m ->
            Trainer(m, trainConfig()).use { t ->
                t.setData(nativeInts(ids))
                val results = t.train(steps.size)
                for ((i, r) in results.withIndex()) {
                    assertEquals("loss of step ${i + 1}", hex32(steps[i][1]), r.loss.toRawBits())
                    assertEquals("lr of step ${i + 1}", hex32(steps[i][2]), r.lr.toRawBits())
                    assertEquals("grad norm of step ${i + 1}", hex32(steps[i][3]), r.gradNorm.toRawBits())
                    assertEquals(i + 1L, r.step)
                }
            }
            val eval = lines.first { it[0] == "eval" }
            val r = m.evaluate(ids, EvalConfig.default().copy(nThreads = 2))
            assertEquals(java.lang.Long.parseUnsignedLong(eval[1], 16), r.meanLoss.toRawBits())
            assertEquals(eval[2].toLong(), r.nScored)
            val gen = lines.first { it[0] == "generate" }.drop(1).map { it.toInt() }
            assertEquals(gen, m.generate(ids.copyOf(5), SampleConfig.default().copy(temperature = 0.8f, topK = 10,
                                                                                     seed = 5, maxTokens = 32)).toList())

            // LoRA: a fresh adapter over the trained model, the same configuration
            val loraSteps = lines.filter { it[0] == "lora" }
            assertEquals(12, loraSteps.size)
            val before = m.flatParameters()
            LoraAdapter(m).use { adapter ->
                LoraTrainer(m, adapter, trainConfig()).use { t ->
                    t.setData(ids)
                    for (i in loraSteps.indices) {
                        val r = t.step()
                        assertEquals("LoRA loss of step ${i + 1}", hex32(loraSteps[i][1]), r.loss.toRawBits())
                        assertEquals("LoRA lr of step ${i + 1}", hex32(loraSteps[i][2]), r.lr.toRawBits())
                        assertEquals("LoRA grad norm of step ${i + 1}", hex32(loraSteps[i][3]), r.gradNorm.toRawBits())
                    }
                }
            }
            assertArrayEquals(before, m.flatParameters(), 0f)            // the base is never written
        }
    }

    @Test fun loraTrainerApiAndErrors() {
        tinyModel().use { m ->
            m.allowUntrainedBase(true)  // a fresh model: LoRA refuses a never-trained base otherwise
            LoraAdapter(m, LoraConfig.default().copy(rank = 2, freezeA = true)).use { adapter ->
                val nameA = adapter.tensorNames.first { it.contains("lora_A") }
                val nameB = adapter.tensorNames.first { it.contains("lora_B") }
                val a0 = adapter.parameter(nameA)
                assertTrue(adapter.parameter(nameB).all { it == 0f })
                LoraTrainer(m, adapter, trainConfig()).use { t ->
                    assertThrows<StateException>(Status.STATE) { t.step() }                 // no data yet
                    val r = t.stepBatch(ids.copyOf(32), ids.copyOfRange(1, 33), 2, 16)
                    assertEquals(1L, r.step)
                    assertEquals(32L, r.tokens)
                    assertEquals(r.loss, m.forward(ids.copyOf(32), 2, 16, ids.copyOfRange(1, 33), 1).loss!!, 1e-5f)
                    t.setData(nativeInts(ids))
                    assertEquals(2L, t.step().step)
                    // freezeA: A keeps its initialisation, only B trains
                    assertArrayEquals(a0, adapter.parameter(nameA), 0f)
                    assertTrue(adapter.parameter(nameB).any { it != 0f })
                    assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.stepBatch(ids.copyOf(4), ids.copyOf(4), 2, 16) }
                    assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.setData(intArrayOf(9999, 1, 2)) }
                    // closing the adapter first: its memory stays until the trainer closes
                    adapter.close()
                    assertEquals(3L, t.step().step)
                }
                assertThrows<StateException>(Status.STATE) { adapter.numParams }
            }
            LoraAdapter(m).use { adapter ->
                LoraAdapter(m).use { other ->
                    val t = LoraTrainer(m, other)
                    t.close()
                    t.close()
                    assertThrows<StateException>(Status.STATE) { t.step() }
                }
                Model(tinyConfig().copy(nEmbd = 32), 1).use { wrong ->
                    assertThrows<GeometryException>(Status.GEOMETRY) { LoraTrainer(wrong, adapter) }
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    LoraTrainer(m, adapter, trainConfig().copy(batchSize = 0))
                }
            }
        }
    }

    @Test fun trainerApi() {
        tinyModel().use { m ->
            val cfg = trainConfig()
            Trainer(m, cfg).use { t ->
                assertEquals(cfg.copy(seqLen = 16), t.config)      // seq_len 0 becomes n_ctx
                assertThrows<StateException>(Status.STATE) { t.step() }   // no data yet
                t.setData(ids)
                val r = t.step()
                assertEquals(1L, r.step)
                assertEquals(4L * 16, r.tokens)
                assertEquals(1L, t.stepCount)
                assertEquals(t.lrAt(0), r.lr, 0f)
                assertEquals(cfg.lrMin, t.lrAt(1000), 0f)
                val wte = t.grad("wte")
                assertEquals(m.parameter("wte").size, wte.size)
                val gb = directFloatBuffer(wte.size)
                t.readGrad("wte", gb)
                assertEquals(wte[5], gb.get(5), 0f)
                val inputs = ids.copyOf(32)
                val targets = ids.copyOfRange(1, 33)
                val loss = t.computeGradients(inputs, targets, 2, 16)
                assertEquals(loss, m.forward(inputs, 2, 16, targets, 1).loss!!, 1e-5f)
                assertEquals(loss, t.computeGradients(nativeInts(inputs), nativeInts(targets), 2, 16), 0f)
                assertEquals(1L, t.stepCount)
                val s = t.stepBatch(inputs, targets, 2, 16)
                assertEquals(2L, s.step)
                assertEquals(3L, t.stepBatch(nativeInts(inputs), nativeInts(targets), 2, 16).step)
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.stepBatch(inputs, IntArray(32) { -1 }, 2, 16) }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.stepBatch(inputs, targets, 2, 17) }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.setData(intArrayOf(1, 2)) }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.grad("nope") }
                assertThrows<BufferTooSmallException>(Status.BUFFER_TOO_SMALL) { t.readGrad("wte", directFloatBuffer(2)) }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.lrAt(-1) }
                // train() with a listener and cancellation
                val cancel = CancellationToken()
                val seen = ArrayList<Long>()
                val done = t.train(50, cancel) { seen.add(it.step); if (seen.size == 4) cancel.cancel() }
                assertEquals(4, done.size)
                assertEquals(listOf(4L, 5L, 6L, 7L), seen)
            }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Trainer(m, trainConfig().copy(batchSize = 0)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Trainer(m, trainConfig().copy(beta1 = 1f)) }
        }
    }

    @Test fun aDivergedModelIsRefusedWithNotFinite() {
        tinyModel().use { m ->
            Trainer(m, trainConfig()).use { t ->
                t.setData(ids)
                t.step()
                val w = m.parameter("ln_f.weight")
                m.setParameter("ln_f.weight", FloatArray(w.size) { Float.NaN })
                assertThrows<NotFiniteException>(Status.NOT_FINITE) { t.step() }
                assertEquals(1L, t.stepCount)                       // the refused step changed nothing
                assertThrows<NotFiniteException>(Status.NOT_FINITE) { m.evaluate(ids) }
                m.setParameter("ln_f.weight", w)
                assertEquals(2L, t.step().step)
            }
        }
    }

    @Test fun trainerSaveAndResumeContinueBitForBit() {
        val path = File(tmp, "trainer.bin").path
        val straight = tinyModel().use { m -> Trainer(m, trainConfig()).use { t -> t.setData(ids); t.train(6) } }
        tinyModel().use { m ->
            Trainer(m, trainConfig()).use { t -> t.setData(ids); t.train(3); t.save(path, SaveOptions.default().copy(compressionLevel = 1)) }
        }
        val resumed = Trainer.resume(path)
        resumed.use { t ->
            assertEquals(3L, t.stepCount)
            t.setData(ids)
            assertEquals(straight.drop(3), t.train(3))
            assertEquals(ids.size - 1L, t.model.evaluate(ids).nScored)
        }
        assertTrue(resumed.model.isClosed)
        assertThrows<IoException>(Status.IO) { Trainer.resume(File(tmp, "none.bin").path) }
    }

    @Test fun aTrainerKeepsItsModelAlive() {
        val m = tinyModel()
        val t = Trainer(m, trainConfig())
        m.close()
        assertThrows<StateException>(Status.STATE) { m.numParams }
        t.setData(ids)
        assertEquals(1L, t.step().step)          // the native model is still there
        assertEquals(m.parameter("wte").size, t.grad("wte").size).let { }  // internal reads still work
        t.close()
        t.close()
        assertThrows<StateException>(Status.STATE) { t.step() }
    }

    @Test fun twoThreadsOnOneTrainerAreSerialised() {
        tinyModel().use { m ->
            Trainer(m, trainConfig()).use { t ->
                t.setData(ids)
                val errors = AtomicReference<Throwable>()
                val workers = (0 until 2).map {
                    thread {
                        try { repeat(5) { t.step(); m.evaluate(ids.copyOf(64)) } } catch (e: Throwable) { errors.set(e) }
                    }
                }
                workers.forEach { it.join() }
                assertNull(errors.get())
                assertEquals(10L, t.stepCount)
            }
        }
    }

    @Test fun closeWaitsForARunningCallOnAnotherThread() {
        val m = tinyModel()
        val started = CountDownLatch(1)
        val result = AtomicReference<Any>()
        val worker = thread {
            result.set(try { m.generate(ids.copyOf(5), SampleConfig.default().copy(maxTokens = 300, nThreads = 1)) { started.countDown(); Thread.sleep(1) } }
                       catch (e: Throwable) { e })
        }
        assertTrue(started.await(30, TimeUnit.SECONDS))
        m.close()                                      // waits for the generation
        worker.join()
        assertEquals(300, (result.get() as IntArray).size)
        assertThrows<StateException>(Status.STATE) { m.generate(ids.copyOf(5)) }
    }

    /** pg_trainer_n_threads / set_threads: the count is resolved, changeable, recorded, and bad counts refused. */
    @Test fun trainerThreads() {
        tinyModel().use { m ->
            Trainer(m, trainConfig().copy(nThreads = 2)).use { t ->
                assertEquals(2, t.threads)
                t.setData(ids)
                t.step()
                t.setThreads(1)
                assertEquals(1, t.threads)
                assertEquals(1, t.config.nThreads)
                t.step()
                assertEquals(2L, t.stepCount)
                t.setThreads(0)
                assertEquals(Runtime.getRuntime().availableProcessors(), t.threads)
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.setThreads(5000) }
            }
        }
    }

    /** Trainer.train (full and LoRA) stops after the current step when cancelled from another thread. */
    @Test fun trainingIsCancelledFromAnotherThread() {
        tinyModel().use { m ->
            Trainer(m, trainConfig().copy(nThreads = 1)).use { t ->
                t.setData(ids)
                val cancel = CancellationToken()
                val started = CountDownLatch(1)
                val result = AtomicReference<List<StepResult>>()
                val worker = thread { result.set(t.train(1_000_000, cancel) { started.countDown() }) }
                assertTrue(started.await(30, TimeUnit.SECONDS))
                cancel.cancel()
                worker.join(30_000)
                assertFalse(worker.isAlive)
                val done = result.get()
                assertTrue(done.size in 1 until 1_000_000)
                assertEquals(done.size.toLong(), t.stepCount)              // consistent and usable
                assertEquals(done.size + 1L, t.step().step)
            }
        }
    }
}
