// The JNI overhead benchmark: training steps and generated tokens through the Kotlin binding
// (Trainer.step, Model.generate from a direct buffer, with and without a token lambda) against
// the same C API calls made from C (bench_jni_c.c, loaded into this JVM), interleaved block by
// block in one process and one thread, alternating which side goes first. Prints one JSON object
// per configuration with the medians and the median of the per-block ratios, of wall time and of
// the process's CPU time.
// Usage: BenchJniKt PRESET BATCH STEPS_PER_BLOCK BLOCKS TOKENS THREADS
import phonegpt.Model
import phonegpt.ModelConfig
import phonegpt.SampleConfig
import phonegpt.TrainConfig
import phonegpt.Trainer
import phonegpt.directIntBuffer

external fun cSetup(preset: String, batch: Int, threads: Int, nData: Int): Long
external fun cSteps(handle: Long, steps: Int): Double
external fun cGenerate(handle: Long, tokens: Int, stream: Boolean, seed: Long): Double
external fun cStepCount(handle: Long, calls: Int): Double
external fun cUpcalls(sink: Any, calls: Int): Double
external fun cFree(handle: Long)

/** What phonegpt.TokenBridge does per token: a cancellation check and the user's lambda. */
class Sink(private val listener: (Int) -> Unit) {
    @Volatile var cancelled = false
    fun onToken(token: Int): Boolean {
        if (cancelled) return false
        listener(token)
        return !cancelled
    }
}

external fun cCpuNs(): Long

// The process's CPU time (every thread: the library's pool, the JVM's), in ms: a loaded machine
// stretches wall time, much less the CPU time a step needs.
private fun cpuMs(): Double = cCpuNs() / 1e6

private fun median(v: List<Double>): Double {
    val s = v.sorted()
    return if (s.size % 2 == 1) s[s.size / 2] else 0.5 * (s[s.size / 2 - 1] + s[s.size / 2])
}

fun main(args: Array<String>) {
    require(args.size == 6) { "usage: BenchJniKt PRESET BATCH STEPS_PER_BLOCK BLOCKS TOKENS THREADS" }
    System.loadLibrary("bench_jni_c")
    val preset = args[0]
    val batch = args[1].toInt()
    val steps = args[2].toInt()
    val blocks = args[3].toInt()
    val tokens = args[4].toInt()
    val threads = args[5].toInt()
    val nData = 200000
    val mc = ModelConfig.preset(preset)
    val c = cSetup(preset, batch, threads, nData)
    Model(mc, 1).use { model ->
        Trainer(model, TrainConfig.default().copy(batchSize = batch, nThreads = threads)).use { trainer ->
            trainer.setData(IntArray(nData) { i -> ((i.toLong() * 7919 + i / 13) % mc.vocabSize).toInt() })
            fun kSteps(): Double {
                val t0 = System.nanoTime()
                repeat(steps) { trainer.step() }
                return (System.nanoTime() - t0) / 1e6 / steps
            }
            val prompt = directIntBuffer(4).apply { put(intArrayOf(1, 2, 3, 4)); flip() }
            var streamed = 0L
            fun kGenerate(stream: Boolean, seed: Long): Double {
                val cfg = SampleConfig.default().copy(maxTokens = tokens, nThreads = threads, slideKeep = mc.nCtx / 2, seed = seed)
                val t0 = System.nanoTime()
                if (stream) model.generate(prompt, null, cfg) { streamed++ } else model.generate(prompt, null, cfg)
                return (System.nanoTime() - t0) / 1e3 / tokens
            }
            // warm-up: JIT, caches, the allocator
            repeat(2) { cSteps(c, 1); kSteps() }
            cGenerate(c, tokens, true, 0); kGenerate(true, 0)

            val cStep = ArrayList<Double>(); val kStep = ArrayList<Double>(); val stepRatio = ArrayList<Double>()
            val stepCpuRatio = ArrayList<Double>()
            // CPU ms per step of one side's block
            fun cpuOf(block: () -> Double): Pair<Double, Double> { val t0 = cpuMs(); val w = block(); return Pair(w, (cpuMs() - t0) / steps) }
            val cTok = ArrayList<Double>(); val kTok = ArrayList<Double>()
            val cStream = ArrayList<Double>(); val kStream = ArrayList<Double>(); val streamDiff = ArrayList<Double>()
            // The binding's fixed cost per call: the cheapest trainer call, a million times each side.
            val calls = 1_000_000
            fun kStepCount(): Double {
                var sum = 0L
                val t0 = System.nanoTime()
                repeat(calls) { sum += trainer.stepCount }
                return if (sum < 0) 0.0 else (System.nanoTime() - t0).toDouble() / calls
            }
            kStepCount(); cStepCount(c, calls)
            val callDiff = ArrayList<Double>()
            val cCall = ArrayList<Double>(); val kCall = ArrayList<Double>()
            repeat(5) { val x = cStepCount(c, calls); val y = kStepCount(); cCall.add(x); kCall.add(y); callDiff.add(y - x) }

            var sunk = 0L
            val sink = Sink { sunk += it }
            cUpcalls(sink, calls)
            val upcall = ArrayList<Double>()
            repeat(5) { upcall.add(cUpcalls(sink, calls)) }

            for (b in 0 until blocks) {
                val cFirst = b % 2 == 0
                val (cs, ks) = if (cFirst) { val x = cpuOf { cSteps(c, steps) }; Pair(x, cpuOf { kSteps() }) }
                               else { val y = cpuOf { kSteps() }; Pair(cpuOf { cSteps(c, steps) }, y) }
                cStep.add(cs.first); kStep.add(ks.first); stepRatio.add(ks.first / cs.first)
                stepCpuRatio.add(ks.second / cs.second)
                val seed = b.toLong()
                val (ct, kt) = if (cFirst) { val x = cGenerate(c, tokens, false, seed); Pair(x, kGenerate(false, seed)) }
                               else { val y = kGenerate(false, seed); Pair(cGenerate(c, tokens, false, seed), y) }
                cTok.add(ct); kTok.add(kt)
                val (cst, kst) = if (cFirst) { val x = cGenerate(c, tokens, true, seed); Pair(x, kGenerate(true, seed)) }
                                 else { val y = kGenerate(true, seed); Pair(cGenerate(c, tokens, true, seed), y) }
                cStream.add(cst); kStream.add(kst); streamDiff.add(kst - cst)
            }
            println(("{\"preset\": \"$preset\", \"batch\": $batch, \"threads\": $threads, \"blocks\": $blocks, " +
                     "\"steps_per_block\": $steps, \"tokens\": $tokens, " +
                     "\"c_ms_per_step\": %.4f, \"kotlin_ms_per_step\": %.4f, \"step_ratio_median\": %.4f, " +
                     "\"step_cpu_ratio_median\": %.4f, " +
                     "\"c_us_per_token\": %.3f, \"kotlin_us_per_token\": %.3f, " +
                     "\"c_us_per_token_streamed\": %.3f, \"kotlin_us_per_token_streamed\": %.3f, " +
                     "\"streaming_overhead_us_per_token_median\": %.3f, \"streamed\": %d, " +
                     "\"c_ns_per_step_count_call\": %.1f, \"kotlin_ns_per_step_count_call\": %.1f, " +
                     "\"binding_ns_per_call_median\": %.1f, \"upcall_ns_per_token_median\": %.1f}").format(
                median(cStep), median(kStep), median(stepRatio), median(stepCpuRatio), median(cTok), median(kTok),
                median(cStream), median(kStream), median(streamDiff), streamed, median(cCall), median(kCall),
                median(callDiff), median(upcall)))
        }
    }
    cFree(c)
}
