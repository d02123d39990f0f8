package phonegpt

// The option structs as immutable data classes. Start from default() or preset() and change
// fields with copy(...): the defaults come from the library's *_default() functions, so they are
// never duplicated here. Fields cross the JNI boundary as long arrays in the struct's field order
// (floats as their raw bits); bindings/kotlin/jni/phonegpt_jni.cpp reads the same order. Each
// class's C_FIELDS names that order; the JUnit suite checks it against the library's one list of
// struct fields (lib/core/c_struct_fields.def), so a C field added without its Kotlin side fails.

/** pg_model_config. */
data class ModelConfig(
    val nLayer: Int, val nHead: Int, val nEmbd: Int, val nCtx: Int, val vocabSize: Int,
    /** 0 = vocabSize rounded up to a multiple of 4. */
    val paddedVocabSize: Int,
    val layernormEps: Float
) {
    companion object {
        /** The PhoneGPT preset (pg_model_config_default). */
        @JvmStatic fun default(): ModelConfig = fromFields(Native.modelConfigDefault())
        /** "phonegpt" or "tiny"; another name is an [InvalidArgumentException]. */
        @JvmStatic fun preset(name: String): ModelConfig = fromFields(Native.modelConfigPreset(name))
        internal val C_FIELDS = listOf("n_layer", "n_head", "n_embd", "n_ctx", "vocab_size", "padded_vocab_size",
                                       "layernorm_eps")
        internal fun fromFields(f: LongArray) = ModelConfig(f[0].toInt(), f[1].toInt(), f[2].toInt(), f[3].toInt(),
                                                            f[4].toInt(), f[5].toInt(), Float.fromBits(f[6].toInt()))
    }

    internal fun fields() = longArrayOf(nLayer.toLong(), nHead.toLong(), nEmbd.toLong(), nCtx.toLong(),
                                        vocabSize.toLong(), paddedVocabSize.toLong(), layernormEps.toRawBits().toLong())

    /** Throws [InvalidArgumentException] naming the first bad field. */
    fun validate() = Native.modelConfigValidate(fields())

    /** Parameters of a model with this configuration (0 if it is invalid). */
    val numParams: Long get() = Native.modelConfigNumParams(fields())
}

enum class LrSchedule(val code: Int) { CONSTANT(0), COSINE(1), LINEAR(2) }

/** pg_optimizer: AdamW everywhere, or Muon on the blocks' 2-D linear weights (phonegpt.h). */
enum class Optimizer(val code: Int) { ADAMW(0), MUON(1) }

/** pg_train_config (phonegpt.h documents every field and its valid range). */
data class TrainConfig(
    val batchSize: Int, val seqLen: Int, val gradAccumSteps: Int, val schedule: LrSchedule,
    val lrMax: Float, val lrMin: Float, val warmupSteps: Int, val totalSteps: Long,
    val beta1: Float, val beta2: Float, val eps: Float, val weightDecay: Float, val decayEmbeddings: Boolean,
    val gradClip: Float, val dropout: Float, val seed: Long, val nThreads: Int, val recomputeActivations: Boolean,
    val optimizer: Optimizer = Optimizer.ADAMW, val muonMomentum: Float = 0.95f, val muonLrScale: Float = 1.0f
) {
    companion object {
        @JvmStatic fun default(): TrainConfig = fromFields(Native.trainConfigDefault())
        internal val C_FIELDS = listOf("batch_size", "seq_len", "grad_accum_steps", "schedule", "lr_max", "lr_min",
                                       "warmup_steps", "total_steps", "beta1", "beta2", "eps", "weight_decay",
                                       "decay_embeddings", "grad_clip", "dropout", "seed", "n_threads",
                                       "recompute_activations", "optimizer", "muon_momentum", "muon_lr_scale")

        internal fun fromFields(f: LongArray): TrainConfig {
            fun float(i: Int) = Float.fromBits(f[i].toInt())
            val schedule = LrSchedule.values().firstOrNull { it.code.toLong() == f[3] }
                ?: throw InternalException("unknown schedule ${f[3]}")
            val optimizer = Optimizer.values().firstOrNull { it.code.toLong() == f[18] }
                ?: throw InternalException("unknown optimizer ${f[18]}")
            return TrainConfig(f[0].toInt(), f[1].toInt(), f[2].toInt(), schedule, float(4), float(5), f[6].toInt(),
                               f[7], float(8), float(9), float(10), float(11), f[12] != 0L, float(13), float(14),
                               f[15], f[16].toInt(), f[17] != 0L, optimizer, float(19), float(20))
        }
    }

    internal fun fields(): LongArray {
        fun bits(x: Float) = x.toRawBits().toLong()
        return longArrayOf(batchSize.toLong(), seqLen.toLong(), gradAccumSteps.toLong(), schedule.code.toLong(),
                           bits(lrMax), bits(lrMin), warmupSteps.toLong(), totalSteps, bits(beta1), bits(beta2),
                           bits(eps), bits(weightDecay), if (decayEmbeddings) 1 else 0, bits(gradClip), bits(dropout),
                           seed, nThreads.toLong(), if (recomputeActivations) 1 else 0, optimizer.code.toLong(),
                           bits(muonMomentum), bits(muonLrScale))
    }
}

/** pg_eval_config without its callback (progress and cancellation are arguments of evaluate). */
data class EvalConfig(val window: Int, val stride: Int, val batchSize: Int, val nThreads: Int) {
    companion object {
        @JvmStatic fun default(): EvalConfig = Native.evalConfigDefault().let { EvalConfig(it[0], it[1], it[2], it[3]) }
        internal val C_FIELDS = listOf("window", "stride", "batch_size", "n_threads")
    }

    internal fun fields() = intArrayOf(window, stride, batchSize, nThreads)
}

/** pg_sample_config without its callback (streaming and cancellation are arguments of generate). */
data class SampleConfig(
    /** 0 = greedy. */
    val temperature: Float, val topK: Int, val topP: Float, val seed: Long, val maxTokens: Int, val nThreads: Int,
    val stopStrings: List<String>, val slideKeep: Int
) {
    companion object {
        internal val C_FIELDS = listOf("temperature", "top_k", "top_p", "seed", "max_tokens", "n_threads", "slide_keep")
        @JvmStatic fun default(): SampleConfig = Native.sampleConfigDefault().let {
            SampleConfig(Float.fromBits(it[0].toInt()), it[1].toInt(), Float.fromBits(it[2].toInt()), it[3],
                         it[4].toInt(), it[5].toInt(), emptyList(), it[6].toInt())
        }
    }

    internal fun fields() = longArrayOf(temperature.toRawBits().toLong(), topK.toLong(), topP.toRawBits().toLong(),
                                        seed, maxTokens.toLong(), nThreads.toLong(), slideKeep.toLong())
}

/** pg_step_result. */
data class StepResult(val step: Long, val loss: Float, val lr: Float, val gradNorm: Float, val tokens: Long) {
    internal companion object {
        val C_FIELDS = listOf("step", "loss", "lr", "grad_norm", "tokens")
        fun fromFields(f: LongArray) = StepResult(f[0], Float.fromBits(f[1].toInt()), Float.fromBits(f[2].toInt()),
                                                  Float.fromBits(f[3].toInt()), f[4])
    }
}

/** pg_eval_result. */
data class EvalResult(val meanLoss: Double, val bitsPerToken: Double, val nScored: Long, val nWindows: Long) {
    internal companion object {
        val C_FIELDS = listOf("mean_loss", "bits_per_token", "n_scored", "n_windows")
        fun fromFields(f: DoubleArray) = EvalResult(f[0], f[1], f[2].toLong(), f[3].toLong())
    }
}

/** pg_interop_format. */
enum class InteropFormat(val code: Int) { LLMC(1), SAFETENSORS(2) }
