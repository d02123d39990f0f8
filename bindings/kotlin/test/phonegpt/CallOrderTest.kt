package phonegpt

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Test
import java.util.Collections
import java.util.Random
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger
import kotlin.concurrent.thread

/**
 * Random call orders on every handle kind from several threads and from inside callbacks
 * (generation and evaluation listeners, training steps, a data filter rule): close, closeWhenIdle,
 * attach, detach, generate, evaluate, train, filter, tokenizer calls, in an order drawn from a
 * seeded generator (PG_CALL_ORDER_SEED, default 41; the threads' interleaving adds its own). The
 * assertions are docs/android.md's promises: the JVM survives (kotlin_junit_asan runs this under
 * ASan+UBSan, where a use after free stops the JVM), every failure is one of the library's typed
 * exceptions, no two threads deadlock, and the state getters answer at once. About 2.5 s.
 */
class CallOrderTest {
    private val seed = System.getenv("PG_CALL_ORDER_SEED")?.toLong() ?: 41L
    private val rounds = 10
    private val roundMs = 250L
    private val threads = 3

    private val thrown = ConcurrentHashMap<String, AtomicInteger>()
    private val untyped = Collections.synchronizedList(ArrayList<Throwable>())
    private val ops = AtomicInteger()

    /** The handles of one round: all made over one tiny model. */
    private inner class World {
        val tok = Tokenizer.characterLevel(text)
        val model = Model(tinyConfig(), 3).also { it.setTokenizer(tok); it.allowUntrainedBase(true) }
        val adapter = LoraAdapter(model)
        val sessions = List(2) { Session(model, SessionConfig(1, 0, Arithmetic.EXACT)).also { s -> s.append(ids.copyOf(4)) } }
        val trainer = Trainer(model, trainConfig().copy(nThreads = 1)).also { it.setData(ids) }
        val loraTrainer = LoraTrainer(model, adapter, trainConfig().copy(nThreads = 1)).also { it.setData(ids) }
        // The rule runs the thread's current callback action (the filter's own callback).
        val ruleAction = ThreadLocal<(() -> Unit)?>()
        val filter = DataFilter(DataFilterConfig.default()) { _ -> ruleAction.get()?.invoke(); emptyList() }
        val stream = tok.stream()
        val all: List<NativeHandle> = listOf(tok, model, adapter, sessions[0], sessions[1], trainer, loraTrainer, filter, stream)

        fun closeAll() = all.forEach { it.close() }
    }

    private val three = SampleConfig.default().copy(maxTokens = 3, nThreads = 1)
    private val evalTokens = ids.copyOf(160)
    private val evalConfig = EvalConfig.default().copy(batchSize = 1, nThreads = 1)

    // One random operation; [cb] is what its callbacks run (null: none).
    private fun op(w: World, r: Random, cb: (() -> Unit)?) {
        val s = w.sessions[r.nextInt(2)]
        val listener = { if (cb != null) cb() }
        when (r.nextInt(22)) {
            0 -> s.append(ids.copyOf(1 + r.nextInt(4)))
            1 -> s.generate(three) { listener() }
            2 -> s.generateText(three) { listener() }
            3 -> s.evaluate(evalTokens, evalConfig) { _, _ -> listener() }
            4 -> s.attachAdapter(w.adapter)
            5 -> s.detachAdapter()
            6 -> s.reset()
            7 -> w.model.generate(ids.copyOf(3), three) { listener() }
            8 -> w.model.evaluate(evalTokens, evalConfig) { _, _ -> listener() }
            9 -> w.trainer.train(1) { listener() }
            10 -> w.loraTrainer.train(1) { listener() }
            11 -> { w.ruleAction.set(cb); try { w.filter.apply("mail a@example.com") } finally { w.ruleAction.set(null) } }
            12 -> w.stream.push(ids[r.nextInt(ids.size)])
            13 -> w.tok.encode("First Citizen")
            14 -> w.model.tokenizer?.vocabSize
            15 -> w.model.setTokenizer(w.tok)
            16 -> w.adapter.checkBase(w.model)
            17 -> { s.isClosed; s.position; s.adapter; w.trainer.stepCount; w.model.isClosed }
            18 -> w.model.generate("First", three) { listener() }
            // Rarer than the rest, or the round's handles would all be closed at once.
            19 -> if (r.nextInt(400) == 0) w.all[r.nextInt(w.all.size)].closeWhenIdle()
            20 -> if (r.nextInt(400) == 0) w.all[r.nextInt(w.all.size)].close()
            else -> Session(w.model, SessionConfig(1, 0, Arithmetic.EXACT)).use { it.append(ids.copyOf(2)); it.generate(three) { listener() } }
        }
    }

    // Runs [block]; a failure must be typed (PhoneGptError). Callbacks rethrow sometimes, so that
    // exceptions from inside callbacks travel out through the shim too.
    private fun guarded(block: () -> Unit) {
        ops.incrementAndGet()
        try {
            block()
        } catch (e: Throwable) {
            if (e is PhoneGptError) thrown.computeIfAbsent(e.javaClass.simpleName) { AtomicInteger() }.incrementAndGet()
            else untyped.add(e)
        }
    }

    private fun worker(w: World, r: Random, until: Long) {
        while (System.nanoTime() < until) guarded {
            val inner: (() -> Unit)? = if (r.nextInt(3) == 0) null else {
                var used = false
                val callback: () -> Unit = {
                    if (!used && r.nextInt(2) == 0) {
                        used = true
                        var rethrow: Throwable? = null
                        try { op(w, r, null) } catch (e: Throwable) {
                            if (e is PhoneGptError) {
                                thrown.computeIfAbsent("inner " + e.javaClass.simpleName) { AtomicInteger() }.incrementAndGet()
                                if (r.nextInt(2) == 0) rethrow = e
                            } else untyped.add(e)
                        }
                        rethrow?.let { throw it }
                    }
                }
                callback
            }
            op(w, r, inner)
        }
    }

    // A getter of a closed handle throws StateException (at once, like any other).
    private fun query(getter: () -> Any?) {
        try { getter() } catch (e: StateException) { }
    }

    @Test fun randomCallOrdersNeverCrashAndAlwaysThrowTypedExceptions() {
        val master = Random(seed)
        val start = System.nanoTime()
        repeat(rounds) { round ->
            val w = World()
            val until = System.nanoTime() + roundMs * 1_000_000
            val workers = (0 until threads).map { i ->
                val r = Random(master.nextLong())
                thread(name = "call-order-$round-$i") { worker(w, r, until) }
            }
            // The state getters answer while the workers run (they never wait for a call).
            while (System.nanoTime() < until) {
                val t0 = System.nanoTime()
                w.all.forEach { it.isClosed }
                w.sessions.forEach { s -> query { s.position }; query { s.adapter }; query { s.lastError } }
                query { w.trainer.stepCount }
                assertTrue("state getters waited", System.nanoTime() - t0 < 200_000_000L)
                Thread.sleep(5)
            }
            workers.forEach { it.join(60_000) }
            assertFalse("a worker is stuck (deadlock?) with seed $seed", workers.any { it.isAlive })
            w.closeAll()
            w.all.forEach { assertTrue(it.isClosed) }
        }
        val seconds = (System.nanoTime() - start) / 1e9
        println("CallOrderTest seed $seed: ${ops.get()} operations in %.1f s; typed exceptions: $thrown".format(seconds))
        assertEquals("untyped exceptions (seed $seed): $untyped", 0, untyped.size)
        // The runs reached the refusals this test is about.
        assertTrue("$thrown", (thrown["StateException"]?.get() ?: 0) + (thrown["inner StateException"]?.get() ?: 0) > 0)
        assertTrue("$thrown", (thrown["inner StateException"]?.get() ?: 0) > 0)
    }
}
