package phonegpt

/** What the data filter removes (pg_pii_kind); [bit] is its bit in DataFilterConfig.kinds. */
enum class PiiKind(val code: Int) : CBit {
    EMAIL(0), PHONE(1), PAYMENT_CARD(2), IBAN(3), IPV4(4), IPV6(5), CUSTOM(6);

    override val bit: Int get() = 1 shl code

    /** The library's name: "email", "phone", "payment_card", ... (pg_pii_kind_name). */
    val cName: String get() = Native.piiKindName(code)
}

/** One removed range of the input: UTF-8 bytes [begin, end). */
data class PiiSpan(val begin: Long, val end: Long, val kind: PiiKind)

/**
 * What the shim calls with the text of each apply (its UTF-8 bytes) for the app's own rule;
 * returns the spans as (begin, end) byte offsets.
 */
class RuleBridge internal constructor(private val rule: (String) -> List<IntRange>) {
    fun spans(bytes: ByteArray): LongArray {
        val text = String(bytes, Charsets.UTF_8)
        // UTF-8 offset of every UTF-16 index (a surrogate pair's 4 bytes count at its first unit).
        val offsets = LongArray(text.length + 1)
        for (i in text.indices) {
            val c = text[i]
            offsets[i + 1] = offsets[i] + when {
                c.toInt() < 0x80 -> 1
                c.toInt() < 0x800 -> 2
                Character.isHighSurrogate(c) -> 4
                Character.isLowSurrogate(c) -> 0
                else -> 3
            }
        }
        val ranges = rule(text)
        val out = LongArray(2 * ranges.size)
        for ((k, r) in ranges.withIndex()) {
            if (r.first < 0 || r.last + 1 > text.length || r.first > r.last + 1)
                throw InvalidArgumentException("DataFilter rule: the range $r is outside the text's ${text.length} characters")
            out[2 * k] = offsets[r.first]
            out[2 * k + 1] = offsets[r.last + 1]
        }
        return out
    }
}

/**
 * Removes personal data (e-mail addresses, phone numbers, payment cards, IBANs, IP addresses)
 * from training text before it is used (pg_data_filter). The policy per kind: a kind in
 * [DataFilterConfig.kinds] is acted on (else kept), written as a typed placeholder ("<EMAIL>",
 * ...) if it is in [DataFilterConfig.placeholderKinds], else as [DataFilterConfig.replacement];
 * [DataFilterConfig.regions] ("DE,GB") says how the app's national phone numbers are written.
 * [customRule], if given, is the app's
 * own rule: it gets the text of each [apply] (before the built-in detectors) and returns the
 * character ranges to remove (`begin until end`, PiiKind.CUSTOM spans). An exception it throws
 * stops the apply and is re-thrown by it; the filter stays usable. One thread at a time: every
 * call holds its lock alone.
 */
class DataFilter private constructor(handles: LongArray) : NativeHandle(handles[0], "DataFilter") {
    private val rule = handles[1]

    @JvmOverloads constructor(config: DataFilterConfig = DataFilterConfig.default(),
                              customRule: ((String) -> List<IntRange>)? = null) :
        this(Native.dataFilterCreate(config.fields(), config.replacement.toByteArray(Charsets.UTF_8),
                                     config.regions.toByteArray(Charsets.UTF_8), customRule?.let { RuleBridge(it) }))

    /** The filtered text, the spans removed from the input (sorted by begin) and the report. */
    class Result(val text: String, val spans: List<PiiSpan>, val report: DataFilterReport)

    override fun free(handle: Long) = Native.dataFilterFree(handle, rule)

    /** Filters [text] (invalid UTF-8 in [bytes] form is an [InvalidArgumentException] with the offset). */
    fun apply(text: String): Result = apply(text.toByteArray(Charsets.UTF_8))

    fun apply(bytes: ByteArray): Result = writing { h ->
        val report = DataFilterReport.fromFields(Native.dataFilterApply(h, rule, bytes), null)
        val s = Native.dataFilterSpans(h)
        val spans = (0 until s.size / 3).map { i ->
            PiiSpan(s[3 * i], s[3 * i + 1], PiiKind.values().firstOrNull { it.code.toLong() == s[3 * i + 2] }
                ?: throw InternalException("unknown PII kind ${s[3 * i + 2]}"))
        }
        Result(String(Native.dataFilterOutput(h), Charsets.UTF_8), spans, report)
    }
}
