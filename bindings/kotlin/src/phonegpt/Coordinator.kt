package phonegpt

// A coordinator's side of federated fine-tuning (docs/federated.md): averaging adapters of one
// base and validating an upload before it is averaged. Signing and verifying are in Signing.kt.

/** pg_lora_average_method (phonegpt.h and docs/federated.md state what each one computes). */
enum class LoraAverageMethod(override val code: Int) : CEnum {
    FEDAVG_FACTORS(0), CAT(1), SVD(2), FROZEN_A(3), TRIMMED_MEAN(4), MEDIAN(5)
}

/** pg_lora_clip_mode: the bound each update's norm is clipped to before averaging. */
enum class LoraClipMode(override val code: Int) : CEnum { NONE(0), MEDIAN(1), BOUND(2) }

/** pg_signature_policy: what a [Validator] does with signatures. */
enum class SignaturePolicy(override val code: Int) : CEnum { REQUIRED(0), OPTIONAL(1), OFF(2) }

/** pg_base_trained_policy: whether the validator's "base trained" check refuses a base that was never trained. */
enum class BaseTrainedPolicy(override val code: Int) : CEnum { REFUSE_UNTRAINED(0), REQUIRE_RECORD(1), OFF(2) }

/** pg_check_outcome. */
enum class CheckOutcome(override val code: Int) : CEnum { PASSED(0), FAILED(1), SKIPPED(2) }

/** An averaged adapter (a new handle: close it) and the report of how exact the average is. */
class Average(val adapter: LoraAdapter, val report: LoraAverageReport)

/**
 * [LoraAdapter.average]: averages [adapters] of one base into a new adapter (pg_lora_average); [weights] null = equal,
 * else one finite weight >= 0 per adapter with a positive sum (e.g. example counts). Different
 * bases, targets or layers, or (for FEDAVG_FACTORS and FROZEN_A) ranks, scales or A factors are a
 * [GeometryException] naming the adapter and both sides.
 */
internal fun averageAdapters(adapters: List<LoraAdapter>, weights: DoubleArray?, config: LoraAverageConfig): Average {
    val fields = config.fields()
    val r = readingAll(adapters) { handles -> Native.loraAverage(handles, weights, fields) }
    return Average(LoraAdapter(r[0]), LoraAverageReport.fromFields(r.copyOfRange(1, r.size), null))
}

/**
 * The phone's differential privacy (pg_lora_adapter_privatize): this adapter's update from
 * [start] (the adapter the round began from) is clipped to config.clipNorm and gets Gaussian
 * noise of std noiseMultiplier * clipNorm, before the adapter is saved and signed.
 */
@JvmOverloads
fun LoraAdapter.privatize(start: LoraAdapter, config: LoraPrivacyConfig = LoraPrivacyConfig.default()): LoraPrivacyReport {
    val fields = config.fields()
    val r = writing { a -> start.reading { s -> Native.loraAdapterPrivatize(a, s, fields) } }
    return LoraPrivacyReport.fromFields(r, null)
}

/** (epsilon, delta)-DP spent and the Renyi order that gave it ([privacyEpsilon]). */
class PrivacyBudget(val epsilon: Double, val order: Double)

/**
 * The privacy a phone has spent after [rounds] rounds of [privatize] at [noiseMultiplier]
 * (pg_privacy_epsilon: the Gaussian mechanism's Renyi DP composed, no subsampling amplification).
 */
fun privacyEpsilon(noiseMultiplier: Double, rounds: Long, delta: Double): PrivacyBudget {
    val r = Native.privacyEpsilon(noiseMultiplier, rounds, delta)
    return PrivacyBudget(r[0], r[1])
}

// Runs [block] with every handle of [handles] under its shared lock, taken once per adapter (one
// may appear twice) in creation order (the lock order).
private fun <R> readingAll(handles: List<LoraAdapter>, block: (LongArray) -> R): R {
    val distinct = handles.distinct().sortedBy { it.lockOrderKey }
    val native = HashMap<LoraAdapter, Long>()
    fun from(i: Int): R =
        if (i == distinct.size) block(LongArray(handles.size) { native.getValue(handles[it]) })
        else distinct[i].reading { h -> native[distinct[i]] = h; from(i + 1) }
    return from(0)
}

/**
 * A coordinator's validator of uploads for one [base] (pg_validator): it holds the trusted keys
 * (copied), the reference loss and the held-out split, both evaluated once when set. It keeps the
 * base's native memory alive until it is closed and reads the base under its shared lock.
 * Setting keys, the reference or the held-out split holds the validator alone; validations share
 * it (several threads may validate at once).
 */
class Validator private constructor(handle: Long, val base: Model) : NativeHandle(handle, "Validator") {
    @JvmOverloads constructor(base: Model, policy: ValidationPolicy = ValidationPolicy.default()) :
        this(create(base, policy), base)

    private companion object {
        fun create(base: Model, policy: ValidationPolicy): Long {
            val fields = policy.fields()
            return base.reading { m -> Native.validatorCreate(m, fields).also { base.retain() } }
        }
    }

    override fun free(handle: Long) {
        Native.validatorFree(handle)
        base.releaseReference()
    }

    /** Replaces the trusted keys with a copy of [keys]. */
    fun setTrustedKeys(keys: TrustedKeys) = writing { v -> keys.reading { k -> Native.validatorSetTrustedKeys(v, k) } }

    /**
     * Where a trajectory must start: the loss of the base (with [resumedFrom], the adapter the
     * round started from) on [tokens] (>= 2) of the adapter's kind of data, evaluated now.
     */
    @JvmOverloads fun setReference(tokens: IntArray, resumedFrom: LoraAdapter? = null) = writing { v ->
        base.reading(allowClosedByUser = true) {
            val r = ints(tokens)
            if (resumedFrom == null) Native.validatorSetReference(v, 0, r.array, r.buffer, r.offset, r.length)
            else resumedFrom.reading { a -> Native.validatorSetReference(v, a, r.array, r.buffer, r.offset, r.length) }
        }
    }

    /** The coordinator's held-out split (>= 2 tokens): the base is evaluated on it now, each upload when validated. */
    fun setHeldout(tokens: IntArray) = writing { v ->
        base.reading(allowClosedByUser = true) {
            val r = ints(tokens)
            Native.validatorSetHeldout(v, r.array, r.buffer, r.offset, r.length)
        }
    }

    /**
     * Validates an upload: the adapter file's [bytes] and its signature file's text ([signature]
     * null = unsigned). Every check runs; the report says whether it is accepted (hostile bytes
     * are a report, not an exception).
     */
    @JvmOverloads fun validate(bytes: ByteArray, signature: String? = null): ValidationReport = reading { v ->
        base.reading(allowClosedByUser = true) {
            ValidationReport(Native.loraValidate(v, bytes, signature?.toByteArray(Charsets.UTF_8)))
        }
    }

    /**
     * Once the round's uploads are validated: adds the "round norm" check to each of [reports]
     * (its update norm over the round's median) and updates their acceptance
     * (pg_validation_reports_compare_round). A report compared before is a [StateException].
     */
    fun compareRound(reports: List<ValidationReport>) = reading { v ->
        val out = LongArray(reports.size)
        fun from(i: Int): Unit = if (i == reports.size) Native.validationReportsCompareRound(v, out)
                                 else reports[i].writing { r -> out[i] = r; from(i + 1) }
        from(0)
    }

    /** The same from files ([signaturePath] null = unsigned); an unreadable file is an [IoException]. */
    @JvmOverloads fun validateFile(adapterPath: String, signaturePath: String? = null): ValidationReport = reading { v ->
        base.reading(allowClosedByUser = true) { ValidationReport(Native.loraValidateFile(v, adapterPath, signaturePath)) }
    }
}

/**
 * The report of one validation (pg_validation_report): the summary, every check in order
 * ("format", "geometry", "base weights", ..., "held-out evaluation"), the JSON form, and the
 * adapter that was validated (average exactly this one).
 */
class ValidationReport internal constructor(handle: Long) : NativeHandle(handle, "ValidationReport") {
    override fun free(handle: Long) = Native.validationReportFree(handle)

    val summary: ValidationSummary get() = reading { summaryOf(it) }

    private fun summaryOf(r: Long): ValidationSummary {
        val (v, t) = Native.validationReportSummary(r)
        @Suppress("UNCHECKED_CAST")
        return ValidationSummary.fromFields(v as LongArray, t as Array<String>)
    }

    val accepted: Boolean get() = summary.accepted

    val checks: List<ValidationCheck>
        get() = reading { r ->
            (0 until summaryOf(r).nChecks).map { i ->
                val (v, t) = Native.validationReportCheck(r, i)
                ValidationCheck.fromFields(v as LongArray, t as Array<String>)
            }
        }

    /** The report as JSON (docs/federated.md). */
    fun json(): String = reading { String(Native.validationReportJson(it), Charsets.UTF_8) }

    /** A new handle on the adapter the upload holds ([StateException] when the file did not load). */
    fun adapter(): LoraAdapter = reading { LoraAdapter(Native.validationReportAdapter(it)) }
}
