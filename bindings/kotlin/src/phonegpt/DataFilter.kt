package phonegpt

/** What the data filter removes (pg_pii_kind). */
enum class PiiKind(val code: Int) { EMAIL(0), PHONE(1), PAYMENT_CARD(2), IBAN(3), IPV4(4), IPV6(5), CUSTOM(6) }

/** pg_data_filter_config without the custom rule (docs/federated.md states each detector's rule). */
data class DataFilterConfig(
    /** The built-in detectors that run (default: all). */
    val kinds: Set<PiiKind>,
    /** UTF-8 written in place of every removed span; "" (default): the span is removed. */
    val replacement: String
) {
    companion object {
        @JvmStatic fun default(): DataFilterConfig = Native.dataFilterKindsDefault().let { bits ->
            DataFilterConfig(PiiKind.values().filter { bits and (1 shl it.code) != 0 }.toSet(), "")
        }
        internal val C_FIELDS = listOf("kinds")
    }

    internal fun kindBits(): Int = kinds.fold(0) { a, k -> a or (1 shl k.code) }
}

/** One removed range of the input: UTF-8 bytes [begin, end). */
data class PiiSpan(val begin: Long, val end: Long, val kind: PiiKind)

/** pg_data_filter_report: what one [DataFilter.apply] removed, counts and sizes only. */
data class DataFilterReport(
    val bytesIn: Long, val bytesOut: Long, val bytesRemoved: Long, val nSpans: Long, val nEmail: Long,
    val nPhone: Long, val nPaymentCard: Long, val nIban: Long, val nIpv4: Long, val nIpv6: Long, val nCustom: Long
) {
    internal companion object {
        val C_FIELDS = listOf("bytes_in", "bytes_out", "bytes_removed", "n_spans", "n_email", "n_phone",
                              "n_payment_card", "n_iban", "n_ipv4", "n_ipv6", "n_custom")
        fun fromFields(f: LongArray) = DataFilterReport(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10])
    }
}

/**
 * Removes personal data (e-mail addresses, phone numbers, payment cards, IBANs, IP addresses)
 * from training text before it is used (pg_data_filter). One thread at a time: every call holds
 * its lock alone.
 */
class DataFilter @JvmOverloads constructor(config: DataFilterConfig = DataFilterConfig.default()) :
    NativeHandle(Native.dataFilterCreate(config.kindBits(), config.replacement.toByteArray(Charsets.UTF_8)), "DataFilter") {

    /** The filtered text, the spans removed from the input (sorted by begin) and the report. */
    class Result(val text: String, val spans: List<PiiSpan>, val report: DataFilterReport)

    override fun free(handle: Long) = Native.dataFilterFree(handle)

    /** Filters [text] (invalid UTF-8 in [bytes] form is an [InvalidArgumentException] with the offset). */
    fun apply(text: String): Result = apply(text.toByteArray(Charsets.UTF_8))

    fun apply(bytes: ByteArray): Result = writing { h ->
        val report = DataFilterReport.fromFields(Native.dataFilterApply(h, bytes))
        val s = Native.dataFilterSpans(h)
        val spans = (0 until s.size / 3).map { i ->
            PiiSpan(s[3 * i], s[3 * i + 1], PiiKind.values().firstOrNull { it.code.toLong() == s[3 * i + 2] }
                ?: throw InternalException("unknown PII kind ${s[3 * i + 2]}"))
        }
        Result(String(Native.dataFilterOutput(h), Charsets.UTF_8), spans, report)
    }
}
