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

/** The library-wide calls, tokenizers, closed handles and the shim's own argument checks. */
class LibraryTest {
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
                assertEquals(s, (e as PhoneGptError).status)
                // the JDK's own classes for a bad argument and a bad state, one base for the rest
                when (s) {
                    Status.STATE -> assertTrue(e is IllegalStateException)
                    Status.INVALID_ARGUMENT -> assertTrue(e is IllegalArgumentException)
                    else -> assertTrue(e is PhoneGptException)
                }
                assertEquals(s.name.replace("_", "").toLowerCase(),
                             e.javaClass.simpleName.removeSuffix("Exception").toLowerCase())
            }
        }
        assertEquals("PG_ERR_UNKNOWN", PhoneGpt.statusName(99))
        assertNull(Status.of(99))
        assertTrue(PhoneGptException.fromStatus(99, "x") is InternalException)
    }

    /**
     * The data classes (CStructs.kt) and the shim (struct_jni.hpp) come from the one field list,
     * lib/core/c_struct_fields.def: each options class's default() is the library's defaults,
     * fields() of it is read back as the same struct, and a value outside its C type is refused
     * naming the struct and the field.
     */
    @Test fun generatedStructsMatchTheLibrary() {
        val defaults = mapOf(
            "pg_model_config" to ModelConfig.default().fields(), "pg_train_config" to TrainConfig.default().fields(),
            "pg_save_options" to SaveOptions.default().fields(), "pg_load_options" to LoadOptions.default().fields(),
            "pg_eval_config" to EvalConfig.default().fields(),
            "pg_sample_config" to SampleConfig.default().fields(), "pg_session_config" to SessionConfig.default().fields(),
            "pg_eval_sampled_config" to EvalSampledConfig.default().fields(),
            "pg_encode_options" to EncodeOptions.default().fields(),
            "pg_bpe_train_options" to BpeTrainOptions.default().fields(), "pg_lora_config" to LoraConfig.default().fields(),
            "pg_data_filter_config" to DataFilterConfig.default().fields(),
            "pg_lora_average_config" to LoraAverageConfig.default().fields(),
            "pg_validation_policy" to ValidationPolicy.default().fields())
        for ((name, fields) in defaults) assertArrayEquals(name, Native.structDefault(name), fields)
        // phonegpt.h's documented defaults, through the generated names and types
        assertEquals(ModelConfig(6, 4, 128, 128, 65, 68, 1e-5f, NormKind.LAYERNORM, false, PositionKind.LEARNED, 10000f, 0f,
                                 1f, 4f, 8192, 0, 0, true, true, MlpKind.GELU, 0, true), ModelConfig.default())
        val t = TrainConfig.default()
        assertEquals(listOf<Any>(32, 0, 1, LrSchedule.COSINE, 1e-3f, 1e-4f, 100, 5000L, false, 1337L),
                     listOf<Any>(t.batchSize, t.seqLen, t.gradAccumSteps, t.schedule, t.lrMax, t.lrMin, t.warmupSteps,
                                 t.totalSteps, t.decayEmbeddings, t.seed))
        assertEquals(LoraConfig(8, 8f, false, 0f, emptySet(), null, 1337L, false), LoraConfig.default())
        assertEquals(SignaturePolicy.REQUIRED, ValidationPolicy.default().signature)
        assertEquals(BaseTrainedPolicy.REFUSE_UNTRAINED, ValidationPolicy.default().baseTrained)
        assertEquals(LoraAverageMethod.FEDAVG_FACTORS, LoraAverageConfig.default().method)
        // a negative float crosses as its (sign-extended) bits and reaches the library's check
        tinyModel().use { m ->
            val e = assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Trainer(m, trainConfig().copy(lrMin = -1f)) }
            assertTrue(e.message, e.message!!.contains("lr_min"))
        }
        val big = ModelConfig.default().fields().also { it[0] = 1L shl 40 }
        val e = assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.modelConfigValidate(big) }
        assertTrue(e.message, e.message!!.contains("pg_model_config.n_layer"))
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.structDefault("pg_step_result") }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.structDefault("pg_no_such_struct") }
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
        tinyModel().use { live -> assertThrows<StateException>(Status.STATE) { live.setTokenizer(t) } }
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
}
