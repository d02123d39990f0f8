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

/** Native memory: thousands of create/use/close cycles. */
class LeakTest {
    // --- leaks ---------------------------------------------------------------------------------

    /** Thousands of create/use/close cycles leave the process's resident memory flat. */
    @Test fun createCloseCyclesDoNotLeak() {
        val cfg = tinyConfig()
        val tc = trainConfig().copy(nThreads = 1)
        val small = ids.copyOf(200)
        fun cycle() {
            Tokenizer.char(text).use { tok ->
                Model(cfg, 1).use { m ->
                    m.setTokenizer(tok)
                    m.tokenizer!!.vocabSize
                    m.allowUntrainedBase(true)  // LoRA below trains over this fresh model
                    Trainer(m, tc).use { t -> t.setData(small) }
                    LoraAdapter(m).use { a -> LoraTrainer(m, a, tc).use { t -> t.setData(small) } }
                    m.generate(small.copyOf(3), SampleConfig.default().copy(maxTokens = 2, nThreads = 1))
                    Session(m, SessionConfig(1, 0, Arithmetic.EXACT)).use { s ->
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
