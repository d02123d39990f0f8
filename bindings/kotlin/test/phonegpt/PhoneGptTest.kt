package phonegpt

import kotlinx.coroutines.GlobalScope
import kotlinx.coroutines.channels.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.AfterClass
import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.BeforeClass
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

/**
 * JUnit4 tests of the Kotlin binding, run by ctest (tests/cmake/kotlin.cmake) with
 * PG_KOTLIN_REFERENCE = the folder kotlin_c_reference wrote in the same ctest run and
 * PG_TEST_TMPDIR = a scratch folder. Everything uses the "tiny" preset: the suite takes seconds.
 */
class PhoneGptTest {
    companion object {
        private val paragraph = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
        val text: String = paragraph.repeat(24)
        lateinit var tokenizer: Tokenizer
        lateinit var ids: IntArray
        val tmp: File = File(System.getenv("PG_TEST_TMPDIR") ?: System.getProperty("java.io.tmpdir"), "kotlin").apply { mkdirs() }

        @BeforeClass @JvmStatic fun setUp() {
            tokenizer = Tokenizer.char(text)
            ids = tokenizer.encode(text)
        }

        @AfterClass @JvmStatic fun tearDown() = tokenizer.close()

        fun tinyConfig(): ModelConfig = ModelConfig.preset("tiny").copy(vocabSize = tokenizer.vocabSize, paddedVocabSize = 0)

        fun tinyModel(seed: Long = 7): Model = Model(tinyConfig(), seed).also { it.tokenizer = tokenizer }

        fun trainConfig(): TrainConfig = TrainConfig.default().copy(batchSize = 4, warmupSteps = 3, totalSteps = 12,
                                                                     nThreads = 2, seed = 99)

        inline fun <reified E : PhoneGptException> assertThrows(status: Status, block: () -> Unit): E {
            try {
                block()
            } catch (e: PhoneGptException) {
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
    }

    // --- library -------------------------------------------------------------------------------

    @Test fun versionsAndSimd() {
        assertEquals(PhoneGpt.headerVersionNumber, PhoneGpt.versionNumber)
        val v = PhoneGpt.versionNumber
        assertEquals("${v / 10000}.${v / 100 % 100}.${v % 100}", PhoneGpt.version)
        assertTrue(PhoneGpt.simdArch, PhoneGpt.simdArch.isNotEmpty())
    }

    @Test fun statusNamesMatchTheLibrary() {
        for (s in Status.values()) {
            assertEquals(PhoneGpt.statusName(s.code), s.statusName)
            assertEquals(s, Status.of(s.code))
            if (s != Status.OK) {
                val e = PhoneGptException.fromStatus(s.code, "m")
                assertEquals(s, e.status)
                assertEquals(s.name.replace("_", "").toLowerCase(),
                             e.javaClass.simpleName.removeSuffix("Exception").toLowerCase())
            }
        }
        assertEquals("PG_ERR_UNKNOWN", PhoneGpt.statusName(99))
        assertNull(Status.of(99))
        assertTrue(PhoneGptException.fromStatus(99, "x") is InternalException)
    }

    @Test fun fieldOrderMatchesTheLibrarysStructList() {
        val kotlin = mapOf("pg_model_config" to ModelConfig.C_FIELDS, "pg_train_config" to TrainConfig.C_FIELDS,
                           "pg_eval_config" to EvalConfig.C_FIELDS, "pg_sample_config" to SampleConfig.C_FIELDS,
                           "pg_step_result" to StepResult.C_FIELDS, "pg_eval_result" to EvalResult.C_FIELDS,
                           "pg_lora_config" to LoraConfig.C_FIELDS)
        for ((struct, fields) in kotlin) assertEquals(struct, Native.structValueFields(struct)?.toList(), fields)
        assertNull(Native.structValueFields("pg_no_such_struct"))
        // the field arrays have exactly that many entries
        assertEquals(ModelConfig.C_FIELDS.size, ModelConfig.default().fields().size)
        assertEquals(TrainConfig.C_FIELDS.size, TrainConfig.default().fields().size)
        assertEquals(EvalConfig.C_FIELDS.size, EvalConfig.default().fields().size)
        assertEquals(SampleConfig.C_FIELDS.size, SampleConfig.default().fields().size)
        assertEquals(LoraConfig.C_FIELDS.size, LoraConfig.default().fields().size)
    }

    @Test fun splitIndexAndReadFile() {
        assertEquals(1_003_854L, PhoneGpt.splitIndex(1_115_394))
        assertEquals(5L, PhoneGpt.splitIndex(10, 0.5))
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { PhoneGpt.splitIndex(10, 1.5) }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { PhoneGpt.splitIndex(-1) }
        val f = File(tmp, "read.txt").apply { writeText("héllo") }
        assertArrayEquals("héllo".toByteArray(), PhoneGpt.readFile(f.path))
        assertThrows<IoException>(Status.IO) { PhoneGpt.readFile(File(tmp, "missing").path) }
    }

    // --- tokenizer -----------------------------------------------------------------------------

    @Test fun tokenizerRoundTrips() {
        Tokenizer.char("héllo wörld").use { t ->
            assertEquals(TokenizerKind.CHAR, t.kind)
            assertEquals(9, t.vocabSize)
            val ids = t.encode("wörld héllo")
            assertEquals(11, ids.size)
            assertEquals(11L, t.encodedLength("wörld héllo"))
            assertEquals("wörld héllo", t.decode(ids))
            assertArrayEquals("wörld".toByteArray(), t.decodeBytes(ids.copyOf(5)))
            // into a direct buffer, from its position
            val out = directIntBuffer(16)
            out.position(2)
            assertEquals(11, t.encode("wörld héllo", out))
            assertEquals(2, out.position())
            for (i in ids.indices) assertEquals(ids[i], out.get(2 + i))
            assertEquals("wörld héllo", t.decode(nativeInts(ids)))
            assertEquals("wörld héllo", t.decode(IntBuffer.wrap(ids)))       // heap buffer
            Tokenizer.fromBytes(t.toBytes()).use { u ->
                assertEquals(t.vocabSize, u.vocabSize)
                assertArrayEquals(ids, u.encode("wörld héllo"))
            }
        }
    }

    @Test fun tokenizerErrors() {
        Tokenizer.char("abc").use { t ->
            val e = assertThrows<TokenizeException>(Status.TOKENIZE) { t.encode("abz") }
            assertTrue(e.message, e.message!!.contains("2"))
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.decode(intArrayOf(0, 7)) }
            assertThrows<BufferTooSmallException>(Status.BUFFER_TOO_SMALL) { t.encode("abcabc", directIntBuffer(3)) }
            val bigEndian = ByteBuffer.allocateDirect(64).order(
                if (ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN) ByteOrder.LITTLE_ENDIAN else ByteOrder.BIG_ENDIAN).asIntBuffer()
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.encode("abc", bigEndian) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.encode("abc", directIntBuffer(8).asReadOnlyBuffer()) }
        }
        assertThrows<FormatException>(Status.FORMAT) { Tokenizer.fromBytes(byteArrayOf(1, 2, 3)) }
        assertThrows<FormatException>(Status.FORMAT) { Tokenizer.fromBytes(ByteArray(0)) }
        assertEquals("", Tokenizer.char("ab").use { it.decode(it.encode("")) })
    }

    @Test fun closedHandlesThrowAndDoubleCloseIsHarmless() {
        val t = Tokenizer.char("abc")
        t.close()
        t.close()
        assertTrue(t.isClosed)
        assertThrows<StateException>(Status.STATE) { t.encode("a") }
        val m = tinyModel()
        m.close()
        m.close()
        assertThrows<StateException>(Status.STATE) { m.numParams }
        assertThrows<StateException>(Status.STATE) { m.generate(intArrayOf(1)) }
        assertThrows<StateException>(Status.STATE) { Trainer(m) }
        tinyModel().use { live -> assertThrows<StateException>(Status.STATE) { live.tokenizer = t } }
    }

    // --- the shim's own checks, reached the way a Java caller could ---------------------------

    @Test fun theShimRefusesBadArgumentsFromJava() {
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.tokenizerCreateChar(null) }
        assertThrows<StateException>(Status.STATE) { Native.tokenizerVocabSize(0) }
        assertThrows<StateException>(Status.STATE) { Native.modelNumParams(0) }
        assertThrows<StateException>(Status.STATE) { Native.trainerStep(0) }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.modelLoad(null) }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.modelConfigValidate(LongArray(3)) }
        tinyModel().use { m ->
            m.reading { h ->
                // offsets and lengths outside the array, a heap buffer where a direct one is needed
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    Native.evaluate(h, ids, null, 10, ids.size, EvalConfig.default().fields(), null)
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    Native.evaluate(h, null, IntBuffer.allocate(100), 0, 100, EvalConfig.default().fields(), null)
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    Native.evaluate(h, ids, null, -1, 5, EvalConfig.default().fields(), null)
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    Native.evaluate(h, null, directIntBuffer(4), 2, 3, EvalConfig.default().fields(), null)
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    Native.generate(h, intArrayOf(1), null, 0, 1, LongArray(2), null, null, null, null, 0, 0)
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    Native.generate(h, intArrayOf(1), null, 0, 1, SampleConfig.default().fields(), arrayOf<String?>(null) as Array<String>,
                                    null, null, null, 0, 0)
                }
            }
        }
    }

    // --- model ---------------------------------------------------------------------------------

    @Test fun modelConfigs() {
        val d = ModelConfig.default()
        assertEquals(ModelConfig(6, 4, 128, 128, 65, 68, 1e-5f), d)
        assertEquals(1_214_976L, d.numParams)
        d.validate()
        val tiny = ModelConfig.preset("tiny")
        assertEquals(2, tiny.nLayer)
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { ModelConfig.preset("huge") }
        val e = assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { tiny.copy(nHead = 3).validate() }
        assertTrue(e.message, e.message!!.contains("n_head"))
        assertEquals(0L, tiny.copy(nLayer = 0).numParams)
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Model(tiny.copy(nEmbd = 0)) }
        Model.preset("tiny", 3).use { m -> assertEquals(tiny, m.config) }
    }

    @Test fun modelTensorsAndParameters() {
        tinyModel().use { m ->
            val cfg = m.config
            assertEquals(cfg.numParams, m.numParams)
            val names = m.tensorNames
            assertEquals("wte", names[0])
            assertEquals("wpe", names[1])
            assertArrayEquals(longArrayOf(cfg.paddedVocabSize.toLong(), cfg.nEmbd.toLong()), m.tensorShape("wte"))
            val flat = m.flatParameters()
            assertEquals(m.numParams, flat.size.toLong())
            val wte = m.parameter("wte")
            assertArrayEquals(wte, flat.copyOf(wte.size), 0f)
            val buf = directFloatBuffer(wte.size)
            m.readParameter("wte", buf)
            for (i in wte.indices) assertEquals(wte[i], buf.get(i), 0f)
            val flatBuf = directFloatBuffer(flat.size)
            m.readFlatParameters(flatBuf)
            assertEquals(flat[flat.size - 1], flatBuf.get(flat.size - 1), 0f)
            // writes: an array and a direct buffer
            val bias = FloatArray(m.parameter("ln_f.bias").size) { it * 0.5f }
            m.setParameter("ln_f.bias", bias)
            assertArrayEquals(bias, m.parameter("ln_f.bias"), 0f)
            val b2 = directFloatBuffer(bias.size)
            for (i in bias.indices) b2.put(i, -1f)
            m.setParameter("ln_f.bias", b2)
            assertEquals(-1f, m.parameter("ln_f.bias")[0], 0f)
            assertThrows<GeometryException>(Status.GEOMETRY) { m.setParameter("ln_f.bias", FloatArray(3)) }
            assertThrows<GeometryException>(Status.GEOMETRY) { m.readParameter("wte", directFloatBuffer(3)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.parameter("no.such") }
            // the tokenizer is a copy
            val t = m.tokenizer!!
            t.use { assertEquals(tokenizer.vocabSize, it.vocabSize) }
            assertNotNull(m.tokenizer?.use { it.kind })
        }
        Model(tinyConfig()).use { m ->
            assertNull(m.tokenizer)
            assertThrows<StateException>(Status.STATE) { m.generate("First") }
            Tokenizer.char("ab").use { small -> assertThrows<PhoneGptException>(Status.GEOMETRY) { m.tokenizer = small } }
        }
    }

    @Test fun forwardWithArraysAndDirectBuffers() {
        tinyModel().use { m ->
            val b = 2
            val t = 8
            val tokens = ids.copyOf(b * t)
            val targets = ids.copyOfRange(1, b * t + 1)
            val r = m.forward(tokens, b, t, targets, 1)
            assertEquals(b * t * tokenizer.vocabSize, r.logits.size)
            val loss = r.loss!!
            assertTrue(loss > 0)
            assertNull(m.forward(tokens, b, t).loss)
            val logits = directFloatBuffer(r.logits.size)
            val loss2 = m.forward(nativeInts(tokens), b, t, nativeInts(targets), logits, 1)
            assertEquals(loss, loss2, 0f)
            for (i in r.logits.indices step 37) assertEquals(r.logits[i], logits.get(i), 0f)
            assertTrue(m.forward(nativeInts(tokens), b, t, null, logits, 1).isNaN())
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.forward(nativeInts(tokens), b, t, null, null) }
            assertThrows<GeometryException>(Status.GEOMETRY) { m.forward(nativeInts(tokens), b, t, null, directFloatBuffer(5)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.forward(tokens, b, 99, null) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.forward(tokens.copyOf(3), b, t, null) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.forward(IntArray(b * t) { 1000 }, b, t) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.forward(tokens, 0, t) }
        }
    }

    @Test fun saveLoadExportImport() {
        tinyModel().use { m ->
            val want = m.evaluate(ids).meanLoss
            val raw = File(tmp, "m.bin").path
            val zst = File(tmp, "mz.bin").path
            m.save(raw)
            m.save(zst, 3)
            for (p in listOf(raw, zst)) Model.load(p).use { l ->
                assertEquals(want, l.evaluate(ids).meanLoss, 0.0)
                assertNotNull(l.tokenizer?.use { it.vocabSize })
            }
            val llmc = File(tmp, "m.llmc").path
            m.export(llmc, InteropFormat.LLMC)
            Model.importFrom(llmc, InteropFormat.LLMC).use { l ->
                l.tokenizer = tokenizer
                assertEquals(want, l.evaluate(ids).meanLoss, 0.0)
            }
            val st = File(tmp, "st").apply { mkdirs() }
            m.export(File(st, "model.safetensors").path, InteropFormat.SAFETENSORS)
            Model.importFrom(File(st, "model.safetensors").path, InteropFormat.SAFETENSORS).use { l ->
                assertEquals(want, l.evaluate(ids).meanLoss, 1e-6)
            }
            assertThrows<IoException>(Status.IO) { Model.load(File(tmp, "nope.bin").path) }
            assertThrows<IoException>(Status.IO) { m.save(File(tmp, "no/such/dir/m.bin").path) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.save(raw, 99) }
            val bad = File(tmp, "bad.bin").apply { writeBytes(File(raw).readBytes().copyOf(100)) }
            assertThrows<PhoneGptException>(Status.FORMAT) { Model.load(bad.path) }
            val flipped = File(raw).readBytes().also { it[it.size - 9] = (it[it.size - 9] + 1).toByte() }
            File(tmp, "flip.bin").writeBytes(flipped)
            assertThrows<ChecksumException>(Status.CHECKSUM) { Model.load(File(tmp, "flip.bin").path) }
        }
    }

    // --- evaluation ----------------------------------------------------------------------------

    @Test fun evaluateWithProgressAndBuffers() {
        tinyModel().use { m ->
            val calls = AtomicInteger()
            var last = 0L
            val r = m.evaluate(ids, EvalConfig.default().copy(batchSize = 4, nThreads = 1)) { done, total ->
                calls.incrementAndGet(); assertEquals(ids.size - 1L, total); assertTrue(done > last); last = done
            }
            assertEquals(ids.size - 1L, r.nScored)
            assertEquals(ids.size - 1L, last)
            assertTrue(calls.get() >= 2)
            assertEquals(r.meanLoss / Math.log(2.0), r.bitsPerToken, 1e-12)
            assertEquals(r, m.evaluate(nativeInts(ids)))
            val slide = m.evaluate(ids, EvalConfig.default().copy(window = 16, stride = 8))
            assertEquals(ids.size - 1L, slide.nScored)
            val s = m.evaluateSampled(ids, 3, 2, 5, 1)
            assertEquals(3L * 2 * 16, s.nScored)
            assertEquals(s, m.evaluateSampled(nativeInts(ids), 3, 2, 5, 1))
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.evaluate(ids, EvalConfig.default().copy(stride = 99)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.evaluate(intArrayOf(1)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.evaluateSampled(ids, 0, 2) }
        }
    }

    @Test fun evaluationIsCancelledFromAnotherThread() {
        tinyModel().use { m ->
            val long = IntArray(ids.size * 20) { ids[it % ids.size] }
            val cancel = CancellationToken()
            val started = CountDownLatch(1)
            val error = AtomicReference<Throwable>()
            val worker = thread {
                try {
                    m.evaluate(long, EvalConfig.default().copy(batchSize = 1, nThreads = 1), cancel) { _, _ ->
                        started.countDown(); Thread.sleep(2)
                    }
                } catch (e: Throwable) {
                    error.set(e)
                }
            }
            assertTrue(started.await(30, TimeUnit.SECONDS))
            cancel.cancel()
            worker.join(30_000)
            assertTrue("got ${error.get()}", error.get() is CancelledException)
            // still usable
            assertEquals(ids.size - 1L, m.evaluate(ids).nScored)
        }
    }

    @Test fun aThrowingCallbackStopsTheCallAndIsRethrown() {
        tinyModel().use { m ->
            val calls = AtomicInteger()
            try {
                m.evaluate(ids, EvalConfig.default().copy(batchSize = 1)) { _, _ ->
                    calls.incrementAndGet(); throw IllegalStateException("from progress")
                }
                fail("no exception")
            } catch (e: IllegalStateException) {
                assertEquals("from progress", e.message)
            }
            assertEquals(1, calls.get())
            try {
                m.generate(ids.copyOf(4), SampleConfig.default().copy(maxTokens = 20)) { if (it >= 0) throw ArithmeticException("from token") }
                fail("no exception")
            } catch (e: ArithmeticException) {
                assertEquals("from token", e.message)
            }
            // closing the model from its own callback is refused, not a deadlock
            assertThrows<StateException>(Status.STATE) { m.generate(ids.copyOf(4)) { m.close() } }
            assertFalse(m.isClosed)
            assertEquals(ids.size - 1L, m.evaluate(ids).nScored)
        }
    }

    // --- generation ----------------------------------------------------------------------------

    @Test fun generateStreamsAndStops() {
        tinyModel().use { m ->
            val cfg = SampleConfig.default().copy(maxTokens = 24, seed = 3, topK = 5)
            val streamed = ArrayList<Int>()
            val out = m.generate(ids.copyOf(5), cfg) { streamed.add(it) }
            assertEquals(24, out.size)
            assertEquals(out.toList(), streamed)
            assertArrayEquals(out, m.generate(ids.copyOf(5), cfg))            // same seed, same tokens
            // into a direct buffer
            val buf = directIntBuffer(10)
            assertEquals(10, m.generate(nativeInts(ids.copyOf(5)), buf, cfg))
            for (i in 0 until 10) assertEquals(out[i], buf.get(i))
            assertEquals(0, m.generate(nativeInts(ids.copyOf(5)), null, cfg))
            // stopping from the callback is not an error
            val cancel = CancellationToken()
            val few = m.generate(ids.copyOf(5), cfg, cancel) { if (it >= 0 && streamed.size > 0) cancel.cancel() }
            assertEquals(1, few.size)
            // text in, text out, and stop strings
            val textOut = StringBuilder()
            val s = m.generate("First", cfg.copy(maxTokens = 12)) { textOut.append(it) }
            assertEquals(12, s.length)
            assertEquals(s, textOut.toString())
            val greedy = cfg.copy(temperature = 0f, maxTokens = 200, stopStrings = listOf("e"))
            assertTrue(m.generate("First", greedy).let { it.length < 200 && it.endsWith("e") } ||
                       !m.generate("First", greedy.copy(stopStrings = emptyList())).contains("e"))
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.generate(IntArray(0), cfg) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.generate(ids.copyOf(5), cfg.copy(temperature = -1f)) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { m.generate(intArrayOf(9999), cfg) }
        }
    }

    @Test fun generationIsCancelledFromAnotherThread() {
        tinyModel().use { m ->
            generateThenCancelFromAnotherThread { cancel, onToken ->
                m.generate(ids.copyOf(5), SampleConfig.default().copy(maxTokens = 1_000_000, nThreads = 1), cancel, onToken)
            }
        }
    }

    @Test fun coroutineChannelAndSuspendingForms() {
        tinyModel().use { m ->
            val cfg = SampleConfig.default().copy(maxTokens = 16, seed = 11)
            val want = m.generate(ids.copyOf(5), cfg).toList()
            runBlocking {
                assertEquals(want, generateTokens(m, ids.copyOf(5), cfg).toList())
                assertEquals(want, m.generateSuspending(ids.copyOf(5), cfg).toList())
                assertEquals(m.evaluate(ids), m.evaluateSuspending(ids))
                // cancelling the consumer stops the producer
                val channel = generateTokens(m, ids.copyOf(5), cfg.copy(maxTokens = 1_000_000), capacity = 0)
                assertEquals(want[0], channel.receive())
                channel.cancel()
                // a cancelled suspending evaluation
                val long = IntArray(ids.size * 20) { ids[it % ids.size] }
                val job = GlobalScope.launch { m.evaluateSuspending(long, EvalConfig.default().copy(batchSize = 1, nThreads = 1)) }
                Thread.sleep(20)
                job.cancel()
                job.join()
                assertTrue(job.isCancelled)
            }
            assertEquals(want, m.generate(ids.copyOf(5), cfg).toList())  // the model is fine afterwards
        }
    }

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
                assertThrows<GeometryException>(Status.GEOMETRY) { t.readGrad("wte", directFloatBuffer(2)) }
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
            Trainer(m, trainConfig()).use { t -> t.setData(ids); t.train(3); t.save(path, 1) }
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

    // --- LoRA adapters -------------------------------------------------------------------------

    @Test fun loraAdapters() {
        val d = LoraConfig.default()
        assertEquals(8, d.rank)
        assertEquals(setOf(LoraTarget.ATTN_C_ATTN), d.targets)
        assertNull(d.layers)
        d.validate()
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(rank = 0).validate() }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(targets = emptySet()).validate() }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(dropout = 1f).validate() }
        tinyModel().use { m ->
            val cfg = d.copy(rank = 4, alpha = 8f, targets = LoraTarget.ALL, layers = listOf(1))
            LoraAdapter(m, cfg).use { a ->
                assertEquals(cfg, a.config)
                assertEquals(2f, a.scale, 0f)
                val names = a.tensorNames
                assertEquals(8, names.size)                     // 4 targets x (A, B), one layer
                assertEquals("h.1.attn.c_attn.lora_A.weight", names[0])
                assertEquals("h.1.attn.c_attn.lora_B.weight", names[1])
                assertArrayEquals(longArrayOf(4, 16), a.tensorShape(names[0]))
                assertArrayEquals(longArrayOf(48, 4), a.tensorShape(names[1]))
                assertEquals(names.map { numel(a.tensorShape(it)).toLong() }.sum(), a.numParams)
                assertTrue(a.parameter(names[1]).all { it == 0f })   // B starts at zero
                assertTrue(a.parameter(names[0]).any { it != 0f })
                val values = FloatArray(48 * 4) { it * 0.25f }
                a.setParameter(names[1], values)
                assertArrayEquals(values, a.parameter(names[1]), 0f)
                val buf = directFloatBuffer(values.size)
                a.readParameter(names[1], buf)
                assertEquals(values[7], buf.get(7), 0f)
                assertThrows<GeometryException>(Status.GEOMETRY) { a.setParameter(names[1], FloatArray(3)) }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { a.parameter("h.0.attn.c_attn.lora_A.weight") }
            }
            LoraAdapter(m, d.copy(rank = 4, alpha = 8f, useRslora = true)).use { a ->
                assertEquals(4f, a.scale, 0f)
                assertNull(a.config.layers)
                assertEquals(4, a.tensorNames.size)              // c_attn in both layers
            }
            assertThrows<GeometryException>(Status.GEOMETRY) { LoraAdapter(m, d.copy(layers = listOf(5))) }
            assertThrows<GeometryException>(Status.GEOMETRY) { LoraAdapter(m, d.copy(rank = 32)) }
            val closed = LoraAdapter(m)
            closed.close()
            closed.close()
            assertThrows<StateException>(Status.STATE) { closed.scale }
        }
    }

    @Test fun loraMergeAndFiles() {
        tinyModel().use { base ->
            val want = base.evaluate(ids).meanLoss
            LoraAdapter(base, LoraConfig.default().copy(rank = 2, targets = LoraTarget.ALL)).use { a ->
                // A freshly initialised base is refused until this handle allows it.
                assertThrows<StateException>(Status.STATE) { a.checkBase(base) }
                base.allowUntrainedBase(true)
                a.checkBase(base)
                a.merge(base, 1).use { merged -> assertEquals(want, merged.evaluate(ids).meanLoss, 0.0) }  // B = 0
                for (name in a.tensorNames.filter { it.contains("lora_B") })
                    a.setParameter(name, FloatArray(numel(a.tensorShape(name))) { 0.05f })
                val mergedLoss = a.merge(base, 1).use { it.evaluate(ids).meanLoss }
                assertTrue(mergedLoss != want)
                // files: save, load with and without the base, a wrong base, a damaged file
                val path = File(tmp, "adapter.safetensors").path
                a.save(path)
                LoraAdapter.load(path).use { l ->
                    assertEquals(a.config, l.config)
                    for (name in a.tensorNames) assertArrayEquals(a.parameter(name), l.parameter(name), 0f)
                }
                LoraAdapter.load(path, base).use { l -> assertEquals(mergedLoss, l.merge(base, 1).use { it.evaluate(ids).meanLoss }, 0.0) }
                tinyModel(seed = 8).use { other ->
                    assertThrows<GeometryException>(Status.GEOMETRY) { a.checkBase(other) }
                    assertThrows<GeometryException>(Status.GEOMETRY) { LoraAdapter.load(path, other) }
                }
                assertThrows<IoException>(Status.IO) { LoraAdapter.load(File(tmp, "none.safetensors").path) }
                val bytes = File(path).readBytes()
                File(tmp, "cut.safetensors").writeBytes(bytes.copyOf(bytes.size / 2))
                assertThrows<PhoneGptException>(Status.FORMAT) { LoraAdapter.load(File(tmp, "cut.safetensors").path) }
                // in place: merge, a second merge is refused, unmerge restores within rounding
                val w = base.parameter("h.0.attn.c_attn.weight")
                a.mergeInto(base, 1)
                assertEquals(mergedLoss, base.evaluate(ids).meanLoss, 1e-6)
                assertThrows<GeometryException>(Status.GEOMETRY) { a.mergeInto(base, 1) }
                a.unmergeFrom(base, 1)
                val back = base.parameter("h.0.attn.c_attn.weight")
                for (i in w.indices) assertEquals(w[i], back[i], 1e-6f)
            }
        }
    }

    // --- leaks ---------------------------------------------------------------------------------

    /** Thousands of create/use/close cycles leave the process's resident memory flat. */
    @Test fun createCloseCyclesDoNotLeak() {
        val cfg = tinyConfig()
        val tc = trainConfig().copy(nThreads = 1)
        val small = ids.copyOf(200)
        fun cycle() {
            Tokenizer.char(text).use { tok ->
                Model(cfg, 1).use { m ->
                    m.tokenizer = tok
                    m.tokenizer!!.close()
                    m.allowUntrainedBase(true)  // LoRA below trains over this fresh model
                    Trainer(m, tc).use { t -> t.setData(small) }
                    LoraAdapter(m).use { a -> LoraTrainer(m, a, tc).use { t -> t.setData(small) } }
                    m.generate(small.copyOf(3), SampleConfig.default().copy(maxTokens = 2, nThreads = 1))
                    Session(m, SessionConfig(1, 0)).use { s ->
                        s.append(small.copyOf(3))
                        s.generate(SampleConfig.default().copy(maxTokens = 2))
                    }
                }
            }
        }
        repeat(300) { cycle() }
        System.gc()
        val before = rssKiB()
        repeat(3000) { cycle() }
        System.gc()
        val grown = rssKiB() - before
        // One cycle allocates well over 100 KiB natively (weights, AdamW moments, gradients), so
        // a leak of any of them would grow RSS by hundreds of MiB over 3000 cycles.
        assertTrue("RSS grew by $grown KiB over 3000 cycles", grown < 24 * 1024)
    }
}
