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

/** LoRA adapters: configurations, tensors, files, merging, training and its checkpoints, PEFT export. */
class LoraTest {
    // --- LoRA adapters -------------------------------------------------------------------------

    @Test fun loraAdapters() {
        val d = LoraConfig.default()
        assertEquals(8, d.rank)
        assertEquals(setOf(LoraTarget.ATTN_C_ATTN), d.targetModules)
        assertNull(d.layers)
        d.validate()
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(rank = 0).validate() }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(targetModules = emptySet()).validate() }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(dropout = 1f).validate() }
        tinyModel().use { m ->
            val cfg = d.copy(rank = 4, alpha = 8f, targetModules = LoraTarget.ALL, layers = listOf(1))
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
            LoraAdapter(base, LoraConfig.default().copy(rank = 2, targetModules = LoraTarget.ALL)).use { a ->
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
}
