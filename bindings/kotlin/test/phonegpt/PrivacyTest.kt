package phonegpt

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Test

/**
 * The data filter (DataFilter.kt over pg_data_filter_*): the filtered text must be the input
 * with exactly the reported spans cut out (or replaced), the report must agree with the spans,
 * and the canonical examples of each detector (RFC 2606 e-mail, the Visa test card, the IBAN
 * registry's GB example, documentation IP ranges) must be found.
 */
class PrivacyTest {
    private val text = "Write to alice@example.com or call +44 20 7946 0958. Card 4111 1111 1111 1111, " +
        "IBAN GB82WEST12345698765432, host 192.0.2.10 and 2001:db8::1. Ünïcödé stays."

    private fun cut(input: ByteArray, spans: List<PiiSpan>, replacement: String): String {
        val out = java.io.ByteArrayOutputStream()
        var at = 0
        for (s in spans) {
            out.write(input, at, s.begin.toInt() - at)
            out.write(replacement.toByteArray(Charsets.UTF_8))
            at = s.end.toInt()
        }
        out.write(input, at, input.size - at)
        return String(out.toByteArray(), Charsets.UTF_8)
    }

    @Test fun everyDetectorFiresAndTheOutputIsTheInputWithoutTheSpans() {
        val bytes = text.toByteArray(Charsets.UTF_8)
        for (replacement in listOf("", "[removed]")) {
            DataFilter(DataFilterConfig.default().copy(replacement = replacement)).use { f ->
                val r = f.apply(text)
                assertEquals(PiiKind.values().toSet() - PiiKind.CUSTOM, r.spans.map { it.kind }.toSet())
                assertEquals(cut(bytes, r.spans, replacement), r.text)
                val email = r.spans.single { it.kind == PiiKind.EMAIL }
                assertEquals("alice@example.com", String(bytes.copyOfRange(email.begin.toInt(), email.end.toInt())))
                for (secret in listOf("alice@", "4111", "GB82", "192.0.2.10", "2001:db8")) assertFalse(secret, secret in r.text)
                assertTrue("Ünïcödé stays." in r.text)
                assertTrue(r.spans.zipWithNext().all { (a, b) -> a.end <= b.begin })
                val rep = r.report
                assertEquals(bytes.size.toLong(), rep.bytesIn)
                assertEquals(r.text.toByteArray().size.toLong(), rep.bytesOut)
                assertEquals(r.spans.sumBy { (it.end - it.begin).toInt() }.toLong(), rep.bytesRemoved)
                assertEquals(r.spans.size.toLong(), rep.nSpans)
                fun n(k: PiiKind) = r.spans.count { it.kind == k }.toLong()
                assertEquals(listOf(n(PiiKind.EMAIL), n(PiiKind.PHONE), n(PiiKind.PAYMENT_CARD), n(PiiKind.IBAN),
                                    n(PiiKind.IPV4), n(PiiKind.IPV6), 0L),
                             listOf(rep.nEmail, rep.nPhone, rep.nPaymentCard, rep.nIban, rep.nIpv4, rep.nIpv6, rep.nCustom))
                // the next apply replaces the last one's results
                val clean = f.apply("nothing personal here")
                assertEquals("nothing personal here", clean.text)
                assertTrue(clean.spans.isEmpty())
            }
        }
    }

    @Test fun onlyTheChosenDetectorsRun() {
        DataFilter(DataFilterConfig.default().copy(kinds = setOf(PiiKind.EMAIL))).use { f ->
            val r = f.apply(text)
            assertEquals(listOf(PiiKind.EMAIL), r.spans.map { it.kind })
            assertTrue("4111 1111 1111 1111" in r.text)
            assertFalse("alice@example.com" in r.text)
        }
        assertEquals(PiiKind.values().toSet() - PiiKind.CUSTOM, DataFilterConfig.default().kinds)
    }

    @Test fun badInputIsRefusedAndNothingIsKept() {
        DataFilter().use { f ->
            f.apply("mail bob@example.org")
            val e = assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                f.apply(byteArrayOf('a'.toByte(), 0xff.toByte(), 'b'.toByte()))
            }
            assertTrue(e.message!!, e.message!!.contains("1"))                 // the byte offset
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                f.reading { h -> Native.dataFilterApply(h, 0, null) }
            }
        }
        val f = DataFilter()
        f.close()
        f.close()
        assertThrows<StateException>(Status.STATE) { f.apply("x") }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.dataFilterCreate(longArrayOf(1L shl 9), ByteArray(0), ByteArray(0), null) }
    }

    /** The policy per kind (kept, placeholder, removed) and the region hint for national numbers. */
    @Test fun policyPerKindAndRegions() {
        val text = "mail jane@example.com, call 612 345 678 or +49 30 1234567, ip 192.0.2.1"
        val config = DataFilterConfig.default().copy(kinds = PiiKind.values().toSet() - PiiKind.CUSTOM - PiiKind.IPV4,
                                                     placeholderKinds = setOf(PiiKind.EMAIL, PiiKind.PHONE))
        DataFilter(config).use { f ->
            assertEquals("mail <EMAIL>, call 612 345 678 or <PHONE>, ip 192.0.2.1", f.apply(text).text)
        }
        DataFilter(config.copy(regions = "ES")).use { f ->
            assertEquals("mail <EMAIL>, call <PHONE> or <PHONE>, ip 192.0.2.1", f.apply(text).text)
        }
        val e = assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { DataFilter(config.copy(regions = "XX")) }
        assertTrue(e.message!!, e.message!!.contains("unknown region"))
    }

    /**
     * The app's own rule as a Kotlin lambda: its character ranges become CUSTOM spans at the right
     * UTF-8 bytes (multi-byte characters and a surrogate pair before them); a bad range, or a rule
     * that throws, fails the apply with a clear exception and leaves the filter usable.
     */
    @Test fun aCustomRuleLambda() {
        val text = "héllo 😀 secret-42 and bob@example.org"
        val rule = { t: String -> Regex("secret-[0-9]+").findAll(t).map { it.range.first until it.range.last + 1 }.toList() }
        DataFilter(DataFilterConfig.default(), rule).use { f ->
            val r = f.apply(text)
            assertEquals("héllo 😀  and ", r.text)
            assertEquals(listOf(PiiKind.CUSTOM, PiiKind.EMAIL), r.spans.map { it.kind })
            val prefix = "héllo 😀 ".toByteArray(Charsets.UTF_8).size.toLong()
            assertEquals(PiiSpan(prefix, prefix + "secret-42".length, PiiKind.CUSTOM), r.spans[0])
            assertEquals(1L, r.report.nCustom)
            assertEquals("custom", PiiKind.CUSTOM.cName)
            assertEquals("email", PiiKind.EMAIL.cName)
        }
        var calls = 0
        DataFilter(DataFilterConfig.default(), { t ->
            calls++
            if (t.contains("boom")) throw IllegalStateException("the rule failed on purpose")
            if (t.contains("bad")) listOf(0 until t.length + 5) else emptyList()
        }).use { f ->
            val e = try { f.apply("boom"); null } catch (e: IllegalStateException) { e }
            assertEquals("the rule failed on purpose", e!!.message)
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { f.apply("bad") }
            assertEquals("fine", f.apply("fine").text)                    // still usable
            assertEquals(3, calls)
        }
    }
}
