package phonegpt

import org.junit.AfterClass
import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.BeforeClass
import org.junit.Test
import java.io.File

/**
 * A coordinator's calls: averaging adapters by every method (exactness against the mean update
 * computed here from the factors), and validating uploads (signed, unsigned, tampered, hostile
 * bytes) with the report's checks, JSON and adapter. One base, trained a few steps so that the
 * provenance rule lets adapters train over it.
 */
class CoordinatorTest {
    companion object {
        lateinit var base: Model
        private val seed = ByteArray(32) { (it * 7 + 1).toByte() }

        @BeforeClass @JvmStatic fun setUp() {
            base = tinyModel(3)
            Trainer(base, trainConfig()).use { t -> t.setData(ids); t.train(2) }
        }

        @AfterClass @JvmStatic fun tearDown() = base.close()

        /** An adapter of [base] trained [steps] steps from [initSeed]. */
        fun trained(initSeed: Long, steps: Int = 3, config: LoraConfig = LoraConfig.default().copy(rank = 2)): LoraAdapter {
            val a = LoraAdapter(base, config.copy(initSeed = initSeed))
            LoraTrainer(base, a, trainConfig().copy(seed = initSeed, lrMax = 1e-2f)).use { t -> t.setData(ids); t.train(steps) }
            return a
        }

        /** scale * B A of the first adapted linear, [out, in] row-major, in double. */
        fun update(a: LoraAdapter): DoubleArray {
            val names = a.tensorNames
            val aName = names.first { it.endsWith("lora_A.weight") }
            val bName = names.first { it.endsWith("lora_B.weight") }
            val (r, inDim) = a.tensorShape(aName).let { Pair(it[0].toInt(), it[1].toInt()) }
            val out = a.tensorShape(bName)[0].toInt()
            val fa = a.parameter(aName)
            val fb = a.parameter(bName)
            return DoubleArray(out * inDim) { k ->
                val i = k / inDim
                val j = k % inDim
                var s = 0.0
                for (q in 0 until r) s += fb[i * r + q].toDouble() * fa[q * inDim + j]
                s * a.scale
            }
        }

        fun relativeError(x: DoubleArray, y: DoubleArray): Double {
            var num = 0.0
            var den = 0.0
            for (i in x.indices) { num += (x[i] - y[i]) * (x[i] - y[i]); den += y[i] * y[i] }
            return Math.sqrt(num / den)
        }
    }

    @Test fun averagingByEveryMethod() {
        trained(11).use { a ->
            trained(12).use { b ->
                val ua = update(a)
                val ub = update(b)
                val weights = doubleArrayOf(3.0, 1.0)
                val mean = DoubleArray(ua.size) { 0.75 * ua[it] + 0.25 * ub[it] }
                // CAT stacks the factors: exact, ranks add up
                LoraAdapter.average(listOf(a, b), weights, LoraAverageConfig.default().copy(method = LoraAverageMethod.CAT, svdRank = 0)).let { avg ->
                    avg.adapter.use { c ->
                        assertEquals(4, avg.report.rank)
                        assertEquals(4, c.config.rank)
                        assertTrue("${avg.report}", avg.report.relativeError < 1e-5)
                        assertTrue(relativeError(update(c), mean) < 1e-5)
                        assertEquals(0.0, avg.report.svdResidual, 0.0)
                    }
                }
                // FedAvg of the factors is not the mean update: the report says by how much
                LoraAdapter.average(listOf(a, b), weights).let { avg ->
                    avg.adapter.use { c ->
                        assertEquals(2, avg.report.rank)
                        val err = relativeError(update(c), mean)
                        assertTrue("${avg.report}", avg.report.relativeError > 1e-4)
                        assertTrue("$err vs ${avg.report}", err > 1e-4)
                        // the first factors averaged separately, as the method says
                        val name = c.tensorNames.first { it.endsWith("lora_A.weight") }
                        val fa = a.parameter(name)
                        val fb = b.parameter(name)
                        val fc = c.parameter(name)
                        for (i in fc.indices) assertEquals(0.75 * fa[i] + 0.25 * fb[i], fc[i].toDouble(), 1e-6)
                    }
                }
                // SVD re-compresses the exact mean to the asked rank: rank 4 holds it exactly
                LoraAdapter.average(listOf(a, b), weights, LoraAverageConfig.default().copy(method = LoraAverageMethod.SVD, svdRank = 4)).let { avg ->
                    avg.adapter.use { c ->
                        assertEquals(4, avg.report.rank)
                        assertTrue("${avg.report}", avg.report.svdResidual < 1e-4)
                        assertTrue(relativeError(update(c), mean) < 1e-4)
                    }
                }
                // FROZEN_A needs freeze_a adapters; these are not
                assertThrows<GeometryException>(Status.GEOMETRY) {
                    LoraAdapter.average(listOf(a, b), null, LoraAverageConfig.default().copy(method = LoraAverageMethod.FROZEN_A, svdRank = 0))
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    LoraAdapter.average(listOf(a, b), doubleArrayOf(1.0))                  // one weight for two
                }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { LoraAdapter.average(emptyList()) }
            }
        }
        // FFA-LoRA: the same frozen A, only B trained; averaging B is exact
        val ffa = LoraConfig.default().copy(rank = 2, freezeA = true)
        trained(21, config = ffa.copy(initSeed = 21)).use { a ->
            LoraAdapter(base, ffa.copy(initSeed = 21)).use { b ->
                LoraTrainer(base, b, trainConfig().copy(seed = 5, lrMax = 1e-2f)).use { t -> t.setData(ids); t.train(3) }
                LoraAdapter.average(listOf(a, b), null, LoraAverageConfig.default().copy(method = LoraAverageMethod.FROZEN_A, svdRank = 0)).let { avg ->
                    avg.adapter.use { c ->
                        val mean = DoubleArray(update(a).size) { 0.5 * update(a)[it] + 0.5 * update(b)[it] }
                        assertTrue("${avg.report}", avg.report.relativeError < 1e-5)
                        assertTrue(relativeError(update(c), mean) < 1e-5)
                    }
                }
            }
        }
        // a rank mismatch under FedAvg names both sides
        trained(31).use { a ->
            trained(32, config = LoraConfig.default().copy(rank = 4)).use { b ->
                val e = assertThrows<GeometryException>(Status.GEOMETRY) { LoraAdapter.average(listOf(a, b)) }
                assertTrue(e.message!!, e.message!!.contains("rank"))
            }
        }
    }

    @Test fun validationOfSignedUnsignedTamperedAndHostileUploads() {
        trained(41, steps = 4).use { adapter ->
            val file = File(tmp, "upload.adapter")
            adapter.save(file.path)
            val bytes = file.readBytes()
            SigningKey.fromSeed(seed).use { key ->
                val signature = key.sign(adapter, bytes)
                val sigFile = File(tmp, "upload.adapter.sig").apply { writeText(signature) }
                TrustedKeys().use { trusted ->
                    trusted.add(key.publicKey)
                    Validator(base).use { v ->
                        v.setTrustedKeys(trusted)
                        v.setHeldout(ids.copyOfRange(ids.size / 2, ids.size))
                        v.setReference(ids.copyOf(200))
                        // a signed upload from a trusted key: every check runs, in the documented order
                        v.validate(bytes, signature).use { r ->
                            val names = r.checks.map { it.name }
                            assertEquals(listOf("format", "geometry", "base weights", "tokenizer", "base trained", "signature",
                                                "trajectory present", "trajectory finite", "trajectory length",
                                                "trajectory start", "trajectory not diverging", "update norm",
                                                "held-out evaluation"),
                                         names)
                            val s = r.summary
                            assertEquals(13, s.nChecks)
                            assertTrue(s.updateRatio < ValidationPolicy.default().maxUpdateRatio)
                            assertEquals(key.keyId, s.keyId)
                            assertEquals(4L, s.steps)
                            assertEquals(CheckOutcome.PASSED, r.checks.first { it.name == "signature" }.outcome)
                            assertFalse(s.heldoutBaseLoss.isNaN())
                            assertFalse(s.referenceLoss.isNaN())
                            assertTrue(r.json(), s.accepted)
                            assertEquals(0, s.nFailed)
                            assertTrue(r.json(), r.json().contains("\"accepted\""))
                            r.adapter().use { got ->
                                for (n in adapter.tensorNames) assertArrayEquals(adapter.parameter(n), got.parameter(n), 0f)
                                assertArrayEquals(adapter.trainingRecord.losses, got.trainingRecord.losses, 0f)
                            }
                        }
                        // the round: three equal uploads, each at the round's median
                        val round = List(3) { v.validate(bytes, signature) }
                        v.compareRound(round)
                        for (r in round) {
                            assertEquals(CheckOutcome.PASSED, r.checks.first { it.name == "round norm" }.outcome)
                            assertEquals(1.0, r.summary.roundRatio, 1e-9)
                        }
                        assertThrows<StateException>(Status.STATE) { v.compareRound(round) }
                        round.forEach { it.close() }
                        // the same from files
                        v.validateFile(file.path, sigFile.path).use { r -> assertEquals(key.keyId, r.summary.keyId) }
                        // unsigned: the default policy requires a signature
                        v.validate(bytes).use { r ->
                            assertFalse(r.accepted)
                            assertEquals(CheckOutcome.FAILED, r.checks.first { it.name == "signature" }.outcome)
                        }
                        // tampered bytes fail the signature check, with a message
                        val tampered = bytes.copyOf().also { it[it.size - 1] = (it[it.size - 1] + 1).toByte() }
                        v.validate(tampered, signature).use { r ->
                            assertFalse(r.accepted)
                            assertTrue(r.checks.any { it.outcome == CheckOutcome.FAILED && it.message.isNotEmpty() })
                        }
                        // hostile bytes are a report, not an exception; there is no adapter in it
                        v.validate(ByteArray(100) { it.toByte() }, signature).use { r ->
                            assertFalse(r.accepted)
                            assertEquals(CheckOutcome.FAILED, r.checks[0].outcome)
                            assertThrows<StateException>(Status.STATE) { r.adapter() }
                        }
                        assertThrows<IoException>(Status.IO) { v.validateFile(File(tmp, "no_such.adapter").path) }
                        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { v.setHeldout(intArrayOf(1)) }
                    }
                    // signatures off: skipped, not failed
                    Validator(base, ValidationPolicy.default().copy(signature = SignaturePolicy.OFF)).use { v ->
                        v.validate(bytes).use { r ->
                            assertEquals(CheckOutcome.SKIPPED, r.checks.first { it.name == "signature" }.outcome)
                        }
                    }
                }
            }
        }
        // a closed report, a validator whose base is closed first
        val m = tinyModel(4)
        m.allowUntrainedBase(true)
        val v = Validator(m)
        m.close()
        val r = v.validate(ByteArray(8))
        v.close()
        assertFalse(r.accepted)
        r.close()
        r.close()
        assertThrows<StateException>(Status.STATE) { r.summary }
        assertThrows<StateException>(Status.STATE) { v.validate(ByteArray(8)) }
    }

    @Test fun privacyClipsNoisesAndAccounts() {
        val start = LoraAdapter(base, LoraConfig.default().copy(rank = 2, initSeed = 5))
        trained(5).use { a ->
            val before = a.parameter(a.tensorNames.last())
            val rep = a.privatize(start, LoraPrivacyConfig.default().copy(clipNorm = 1e-3, noiseMultiplier = 0.5, seed = 9))
            assertTrue(rep.clipped)
            assertEquals(5e-4, rep.noiseStddev, 1e-12)
            assertTrue(rep.noised > 0)
            assertFalse(before.contentEquals(a.parameter(a.tensorNames.last())))
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                a.privatize(start, LoraPrivacyConfig.default().copy(clipNorm = 0.0))
            }
        }
        start.close()
        val b = privacyEpsilon(1.0, 1, 1e-5)
        assertEquals(0.5 + 2 * Math.sqrt(0.5 * Math.log(1e5)), b.epsilon, 1e-9)
        assertTrue(privacyEpsilon(1.0, 4, 1e-5).epsilon > b.epsilon)
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { privacyEpsilon(0.0, 1, 1e-5) }
    }
}
