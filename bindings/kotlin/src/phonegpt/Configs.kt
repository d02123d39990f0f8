@file:JvmName("Configs")
package phonegpt

// The option and result structs (ModelConfig, TrainConfig, EvalConfig, SampleConfig, StepResult,
// EvalResult, SessionConfig, LoraConfig, ValidationPolicy, ...) are immutable data classes
// generated at build time from lib/core/c_struct_fields.def (CStructs.kt, written by
// bindings/kotlin/gen/kotlin_structs.cpp): one property per C field, named as the field in
// camelCase. Start from defaults() (the library's *_default(); default() in Kotlin) and change
// fields with copy(...).
// This file has what the generated classes use: the enumerations behind PG_ENUM fields, the bit
// sets, and the calls on the configurations.

/** A C enumeration in Kotlin: [code] is its C value. */
interface CEnum {
    val code: Int
}

/** One bit of a C bit mask. */
interface CBit {
    val bit: Int
}

internal inline fun <reified E> cEnum(code: Long): E where E : Enum<E>, E : CEnum =
    enumValues<E>().firstOrNull { it.code.toLong() == code }
        ?: throw InternalException("the library returned ${E::class.java.simpleName} code $code, which this binding does not know")

internal fun cBits(set: Set<CBit>): Long = set.fold(0L) { a, b -> a or (b.bit.toLong() and 0xffffffffL) }

internal inline fun <reified E> cBitSet(bits: Long): Set<E> where E : Enum<E>, E : CBit =
    enumValues<E>().filter { bits and it.bit.toLong() != 0L }.toSet()

/** pg_lr_schedule. */
enum class LrSchedule(override val code: Int) : CEnum { CONSTANT(0), COSINE(1), LINEAR(2) }

/**
 * pg_weight_storage: how a model holds its embedding and block linears (Q8_0 / Q4_0: blocks of 32
 * int8 / 4-bit codes with an fp16 scale). FP16_ARITHMETIC and BF16_ARITHMETIC are the deprecated
 * spellings of FP16 / BF16 storage with [Arithmetic.FP16] / [Arithmetic.BF16] as the model's
 * default: choose the arithmetic on SessionConfig / TrainConfig instead.
 */
enum class WeightStorage(override val code: Int) : CEnum {
    FP32(0), FP16(1), BF16(2),
    @Deprecated("use FP16 and SessionConfig(arithmetic = Arithmetic.FP16)") FP16_ARITHMETIC(3),
    @Deprecated("use BF16 and SessionConfig/TrainConfig(arithmetic = Arithmetic.BF16)") BF16_ARITHMETIC(4),
    Q8_0(5), Q4_0(6)
}

/** pg_arithmetic: how a session's or trainer's passes multiply by a frozen base (phonegpt.h). */
enum class Arithmetic(override val code: Int) : CEnum { EXACT(0), FP16(1), BF16(2), INT8(3) }

/** pg_optimizer: AdamW everywhere, or Muon on the blocks' 2-D linear weights (phonegpt.h). */
enum class Optimizer(override val code: Int) : CEnum { ADAMW(0), MUON(1) }

/** pg_norm_kind: LayerNorm with weight and bias (GPT-2), or RMSNorm with a weight only (Llama, Qwen). */
enum class NormKind(override val code: Int) : CEnum { LAYERNORM(0), RMSNORM(1) }

/** pg_position_kind: a learned position table (GPT-2), or rotary positions (RoPE). */
enum class PositionKind(override val code: Int) : CEnum { LEARNED(0), ROTARY(1) }

/** pg_mlp_kind: GELU MLP (GPT-2), or SwiGLU down(silu(gate(x)) * up(x)). */
enum class MlpKind(override val code: Int) : CEnum { GELU(0), SWIGLU(1) }

/** pg_interop_format. */
enum class InteropFormat(val code: Int) { LLMC(1), SAFETENSORS(2), HF_FOLDER(3) }

/** Throws [InvalidArgumentException] naming the first bad field. */
fun ModelConfig.validate() = Native.modelConfigValidate(fields())

/** Parameters of a model with this configuration (0 if it is invalid). */
val ModelConfig.numParams: Long get() = Native.modelConfigNumParams(fields())
