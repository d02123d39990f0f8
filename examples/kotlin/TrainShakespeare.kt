// Trains the PhoneGPT model on Tiny Shakespeare from the JVM through the Kotlin binding, with a
// progress line, then scores the whole validation split and samples a continuation.
//
//   java -Djava.library.path=build/bindings/kotlin \
//        -cp build/bindings/kotlin/phonegpt-example.jar:build/bindings/kotlin/phonegpt.jar:/usr/share/java/kotlin-stdlib.jar \
//        TrainShakespeareKt [--text FILE] [--steps 300] [--batch 16] [--preset phonegpt] [--threads 0]
//                           [--eval-every 100] [--tokens 300] [--save model.bin]
//
// The text defaults to $PG_DATA_PATH, else ../shared/data/tinyshakespeare.txt.
import phonegpt.CancellationToken
import phonegpt.EvalConfig
import phonegpt.Model
import phonegpt.ModelConfig
import phonegpt.PhoneGpt
import phonegpt.PhoneGptError
import phonegpt.SampleConfig
import phonegpt.Tokenizer
import phonegpt.TrainConfig
import phonegpt.Trainer
import java.io.File
import kotlin.system.exitProcess

private fun usage(message: String): Nothing {
    System.err.println("TrainShakespeare: $message")
    exitProcess(2)
}

fun main(args: Array<String>) {
    val options = HashMap<String, String>()
    var i = 0
    while (i < args.size) {
        val key = args[i]
        if (!key.startsWith("--") || i + 1 >= args.size) usage("expected --option value, got '$key'")
        options[key.removePrefix("--")] = args[i + 1]
        i += 2
    }
    fun int(name: String, default: Int) = options[name]?.let { it.toIntOrNull() ?: usage("--$name: not a number: $it") } ?: default
    val known = setOf("text", "steps", "batch", "preset", "threads", "eval-every", "tokens", "save")
    options.keys.firstOrNull { it !in known }?.let { usage("unknown option --$it") }

    val textPath = options["text"] ?: System.getenv("PG_DATA_PATH") ?: "../shared/data/tinyshakespeare.txt"
    val steps = int("steps", 300)
    val threads = int("threads", 0)
    val evalEvery = int("eval-every", 100)
    try {
        run(textPath, steps, int("batch", 16), options["preset"] ?: "phonegpt", threads, evalEvery,
            int("tokens", 300), options["save"])
    } catch (e: RuntimeException) {
        if (e !is PhoneGptError) throw e   // StateException and InvalidArgumentException are PhoneGptErrors too
        System.err.println("TrainShakespeare: ${e.statusName}: ${e.message}")
        exitProcess(1)
    }
}

private fun run(textPath: String, steps: Int, batch: Int, preset: String, threads: Int, evalEvery: Int,
                sampleTokens: Int, savePath: String?) {
    if (!File(textPath).exists()) {
        System.err.println("TrainShakespeare: no text at $textPath (give --text or PG_DATA_PATH)")
        exitProcess(1)
    }
    val text = String(PhoneGpt.readFile(textPath), Charsets.UTF_8)
    println("libphonegpt ${PhoneGpt.version} (${PhoneGpt.simdArch}); ${text.length} characters from $textPath")

    Tokenizer.char(text).use { tokenizer ->
        val ids = tokenizer.encode(text)
        val nTrain = PhoneGpt.splitIndex(ids.size.toLong()).toInt()
        val train = ids.copyOfRange(0, nTrain)
        val validation = ids.copyOfRange(nTrain, ids.size)
        val config = ModelConfig.preset(preset).copy(vocabSize = tokenizer.vocabSize, paddedVocabSize = 0)
        Model(config, seed = 20261105).use { model ->
            model.setTokenizer(tokenizer)
            println("model: ${config.nLayer} layers, ${config.nHead} heads, width ${config.nEmbd}, " +
                    "context ${config.nCtx}, vocab ${config.vocabSize}: ${model.numParams} parameters")
            val trainConfig = TrainConfig.default().copy(batchSize = batch, totalSteps = steps.toLong(),
                                                         warmupSteps = minOf(100, maxOf(1, steps / 10)), nThreads = threads)
            Trainer(model, trainConfig).use { trainer ->
                trainer.setData(train)
                // Ctrl-C stops after the current step (the run and the model stay consistent).
                val cancel = CancellationToken()
                Runtime.getRuntime().addShutdownHook(Thread { cancel.cancel() })
                val started = System.nanoTime()
                trainer.train(steps, cancel) { r ->
                    val ms = (System.nanoTime() - started) / 1e6 / r.step
                    print("\rstep %d/%d  loss %.4f  lr %.2e  |g| %.3f  %.1f ms/step   ".format(
                        r.step, steps, r.loss, r.lr, r.gradNorm, ms))
                    if (evalEvery > 0 && r.step % evalEvery == 0L && r.step < steps) {
                        val v = model.evaluateSampled(validation, 4, batch, seed = 1, nThreads = threads)
                        println("\nstep ${r.step}: validation estimate %.4f".format(v.meanLoss))
                    }
                }
                println()
            }
            val eval = model.evaluate(validation, EvalConfig.default().copy(nThreads = threads)) { done, total ->
                print("\revaluating %d/%d positions".format(done, total))
            }
            println("\nvalidation loss (whole split, ${eval.nScored} positions in ${eval.nWindows} windows): " +
                    "%.4f (%.4f bits per character)".format(eval.meanLoss, eval.bitsPerToken))
            savePath?.let { model.save(it); println("saved $it") }
            println("sample:")
            val sample = model.generate("ROMEO:", SampleConfig.default().copy(maxTokens = sampleTokens, topK = 40,
                                                                               nThreads = threads)) { print(it) }
            println()
            check(sample.isNotEmpty())
        }
    }
}
