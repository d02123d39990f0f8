package phonegpt

import kotlinx.coroutines.GlobalScope
import kotlinx.coroutines.channels.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Test
import java.io.File
import java.nio.ByteBuffer
import java.nio.ByteOrder
import java.nio.IntBuffer
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference
import kotlin.concurrent.thread

/** LoRA adapters: configurations, tensors, files, merging, training and its checkpoints, PEFT export. */
class LoraTest {
    // --- LoRA adapters -------------------------------------------------------------------------

    @Test fun loraAdapters() {
        val d = LoraConfig.default()
        assertEquals(8, d.rank)
        assertEquals(emptySet<LoraTarget>(), d.targetModules)  // the base family's PEFT default
        assertNull(d.layers)
        d.validate()
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(rank = 0).validate() }
        // A Llama-family base: q_proj and v_proj by default, each its own A and B; GPT-2's names refused.
        Model(ModelConfig.preset("tiny-llama"), 3).use { llama ->
            LoraAdapter(llama, d.copy(rank = 2)).use { a ->
                assertEquals(setOf(LoraTarget.Q_PROJ, LoraTarget.V_PROJ), a.config.targetModules)
                assertEquals("model.layers.0.self_attn.q_proj.lora_A.weight", a.tensorNames[0])
                assertArrayEquals(longArrayOf(16, 2), a.tensorShape("model.layers.0.self_attn.v_proj.lora_B.weight"))
            }
            val refused = assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                LoraAdapter(llama, d.copy(targetModules = LoraTarget.ALL))
            }
            assertTrue(refused.message, refused.message!!.contains("q_proj, k_proj, v_proj"))
        }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { d.copy(dropout = 1f).validate() }
        tinyModel().use { m ->
            val cfg = d.copy(rank = 4, alpha = 8f, targetModules = LoraTarget.ALL, layers = listOf(1))
            LoraAdapter(m, cfg).use { a ->
                assertEquals(cfg, a.config)
                assertEquals(2f, a.scale, 0f)
                val names = a.tensorNames
                assertEquals(8, names.size)                     // 4 targets x (A, B), one layer
                assertEquals("h.1.attn.c_attn.lora_A.weight", names[0])
                assertEquals("h.1.attn.c_attn.lora_B.weight", names[1])
                assertArrayEquals(longArrayOf(4, 16), a.tensorShape(names[0]))
                assertArrayEquals(longArrayOf(48, 4), a.tensorShape(names[1]))
                assertEquals(names.map { numel(a.tensorShape(it)).toLong() }.sum(), a.numParams)
                assertTrue(a.parameter(names[1]).all { it == 0f })   // B starts at zero
                assertTrue(a.parameter(names[0]).any { it != 0f })
                val values = FloatArray(48 * 4) { it * 0.25f }
                a.setParameter(names[1], values)
                assertArrayEquals(values, a.parameter(names[1]), 0f)
                val buf = directFloatBuffer(values.size)
                a.readParameter(names[1], buf)
                assertEquals(values[7], buf.get(7), 0f)
                assertThrows<GeometryException>(Status.GEOMETRY) { a.setParameter(names[1], FloatArray(3)) }
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { a.parameter("h.0.attn.c_attn.lora_A.weight") }
            }
            LoraAdapter(m, d.copy(rank = 4, alpha = 8f, useRslora = true)).use { a ->
                assertEquals(4f, a.scale, 0f)
                assertNull(a.config.layers)
                assertEquals(4, a.tensorNames.size)              // c_attn in both layers
            }
            assertThrows<GeometryException>(Status.GEOMETRY) { LoraAdapter(m, d.copy(layers = listOf(5))) }
            assertThrows<GeometryException>(Status.GEOMETRY) { LoraAdapter(m, d.copy(rank = 32)) }
            val closed = LoraAdapter(m)
            closed.close()
            closed.close()
            assertThrows<StateException>(Status.STATE) { closed.scale }
        }
    }

    @Test fun loraMergeAndFiles() {
        tinyModel().use { base ->
            val want = base.evaluate(ids).meanLoss
            LoraAdapter(base, LoraConfig.default().copy(rank = 2, targetModules = LoraTarget.ALL)).use { a ->
                // A freshly initialised base is refused until this handle allows it.
                assertThrows<StateException>(Status.STATE) { a.checkBase(base) }
                base.allowUntrainedBase(true)
                a.checkBase(base)
                a.merge(base, 1).use { merged -> assertEquals(want, merged.evaluate(ids).meanLoss, 0.0) }  // B = 0
                for (name in a.tensorNames.filter { it.contains("lora_B") })
                    a.setParameter(name, FloatArray(numel(a.tensorShape(name))) { 0.05f })
                val mergedLoss = a.merge(base, 1).use { it.evaluate(ids).meanLoss }
                assertTrue(mergedLoss != want)
                // files: save, load with and without the base, a wrong base, a damaged file
                val path = File(tmp, "adapter.safetensors").path
                a.save(path)
                LoraAdapter.load(path).use { l ->
                    assertEquals(a.config, l.config)
                    for (name in a.tensorNames) assertArrayEquals(a.parameter(name), l.parameter(name), 0f)
                }
                LoraAdapter.load(path, base).use { l -> assertEquals(mergedLoss, l.merge(base, 1).use { it.evaluate(ids).meanLoss }, 0.0) }
                tinyModel(seed = 8).use { other ->
                    assertThrows<GeometryException>(Status.GEOMETRY) { a.checkBase(other) }
                    assertThrows<GeometryException>(Status.GEOMETRY) { LoraAdapter.load(path, other) }
                }
                assertThrows<IoException>(Status.IO) { LoraAdapter.load(File(tmp, "none.safetensors").path) }
                val bytes = File(path).readBytes()
                File(tmp, "cut.safetensors").writeBytes(bytes.copyOf(bytes.size / 2))
                assertThrows<PhoneGptException>(Status.FORMAT) { LoraAdapter.load(File(tmp, "cut.safetensors").path) }
                // in place: merge, a second merge is refused, unmerge restores within rounding
                val w = base.parameter("h.0.attn.c_attn.weight")
                a.mergeInto(base, 1)
                assertEquals(mergedLoss, base.evaluate(ids).meanLoss, 1e-6)
                assertThrows<GeometryException>(Status.GEOMETRY) { a.mergeInto(base, 1) }
                a.unmergeFrom(base, 1)
                val back = base.parameter("h.0.attn.c_attn.weight")
                for (i in w.indices) assertEquals(w[i], back[i], 1e-6f)
            }
        }
    }

    /** A base trained a few steps (adapters are refused over a never-trained one). */
    private fun trainedBase(): Model = tinyModel(9).also { m -> Trainer(m, trainConfig()).use { t -> t.setData(ids); t.train(2) } }

    @Test fun trainingRecordAndPeftExport() {
        trainedBase().use { base ->
            LoraAdapter(base, LoraConfig.default().copy(rank = 2)).use { a ->
                assertEquals(0, a.trainingRecord.steps)
                val results = LoraTrainer(base, a, trainConfig()).use { t ->
                    t.setData(ids)
                    val r = t.train(4)
                    // The full Trainer's getters, over pg_lora_trainer_*: the C values of the run.
                    assertEquals(4L, t.stepCount)
                    assertEquals(trainConfig().batchSize, t.config.batchSize)
                    assertArrayEquals(r.map { it.lr }.toFloatArray(), (0 until 4).map { t.lrAt(it.toLong()) }.toFloatArray(), 0f)
                    t.setThreads(1)
                    assertEquals(1, t.threads)
                    r
                }
                val record = a.trainingRecord
                assertEquals(4, record.steps)
                assertArrayEquals(results.map { it.loss }.toFloatArray(), record.losses, 0f)
                assertArrayEquals(results.map { it.lr }.toFloatArray(), record.learningRates, 0f)
                assertEquals(results.map { it.tokens }.sum(), record.tokens)
                val folder = File(tmp, "peft").apply { deleteRecursively(); mkdirs() }
                a.exportPeft(folder.path)
                val config = File(folder, "adapter_config.json").readText()
                assertTrue(config, config.contains("\"peft_type\"") && config.contains("LORA"))
                assertTrue(File(folder, "adapter_model.safetensors").length() > 0)
                assertThrows<IoException>(Status.IO) { a.exportPeft(File(tmp, "no_such_folder").path) }
            }
        }
    }

    /** N steps straight equal k steps, save, resume, N - k steps, bit for bit. */
    @Test fun loraTrainerCheckpointsResumeBitForBit() {
        trainedBase().use { base ->
            val cfg = LoraConfig.default().copy(rank = 2, targetModules = LoraTarget.ALL)
            val straight = LoraAdapter(base, cfg).use { a ->
                LoraTrainer(base, a, trainConfig()).use { t -> t.setData(ids); t.train(6).map { it.loss } }
            }
            val path = File(tmp, "lora.ckpt").path
            val first = LoraAdapter(base, cfg).use { a ->
                LoraTrainer(base, a, trainConfig()).use { t -> t.setData(ids); val r = t.train(2); t.save(path); r.map { it.loss } }
            }
            val rest = LoraTrainer.resume(path, base).use { t ->
                assertEquals(2, t.adapter.trainingRecord.steps)
                t.setData(ids)
                t.train(4).map { it.loss }
            }
            assertEquals(straight, first + rest)
            // a plain adapter file has no training state; a wrong base is refused
            LoraAdapter(base, cfg).use { a ->
                val plain = File(tmp, "plain.adapter").path
                a.save(plain)
                assertThrows<StateException>(Status.STATE) { LoraTrainer.resume(plain, base) }
            }
            tinyModel(10).use { other ->
                other.allowUntrainedBase(true)
                assertThrows<GeometryException>(Status.GEOMETRY) { LoraTrainer.resume(path, other) }
            }
        }
    }

    /** A session with an adapter computes what the merged model does; others of the base are unaffected. */
    @Test fun sessionAdapters() {
        trainedBase().use { base ->
            LoraAdapter(base, LoraConfig.default().copy(rank = 2, targetModules = LoraTarget.ALL)).use { a ->
                LoraTrainer(base, a, trainConfig().copy(lrMax = 1e-2f)).use { t -> t.setData(ids); t.train(3) }
                val prompt = ids.copyOf(8)
                val merged = a.merge(base, 1).use { m -> Session(m, SessionConfig(1, 0, Arithmetic.EXACT)).use { s -> s.append(prompt); s.logits() } }
                val plain = Session(base, SessionConfig(1, 0, Arithmetic.EXACT)).use { s -> s.append(prompt); s.logits() }
                Session(base, SessionConfig(1, 0, Arithmetic.EXACT)).use { s ->
                    assertEquals(null, s.adapter)
                    s.append(prompt)
                    s.attachAdapter(a)
                    assertTrue(s.adapter === a)
                    val withAdapter = s.logits()
                    val scale = merged.map { Math.abs(it) }.max()!!
                    for (i in merged.indices) assertEquals(merged[i], withAdapter[i], 1e-5f * scale)
                    assertTrue(withAdapter.indices.any { withAdapter[it] != plain[it] })
                    s.detachAdapter()
                    s.detachAdapter()                                   // nothing attached: nothing happens
                    assertEquals(null, s.adapter)
                    assertArrayEquals(plain, s.logits(), 1e-6f * scale)
                    // another base's adapter names both sides; the attached one outlives its close()
                    tinyModel(12).use { other ->
                        other.allowUntrainedBase(true)
                        LoraAdapter(other, LoraConfig.default().copy(rank = 4)).use { wrong ->
                            assertThrows<GeometryException>(Status.GEOMETRY) { s.attachAdapter(wrong) }
                        }
                    }
                    s.attachAdapter(a)
                }
            }
            // closing the adapter while attached: the session keeps it alive
            val a = LoraAdapter(base, LoraConfig.default().copy(rank = 2))
            Session(base, SessionConfig(1, 0, Arithmetic.EXACT)).use { s ->
                s.attachAdapter(a)
                a.close()
                s.append(ids.copyOf(4))
                assertEquals(tinyConfig().vocabSize, s.logits().size)
            }
        }
    }

    // --- PEFT import, the base's JSON, the gradient readout, a mapped 16-bit base ---------------

    /** Export then import gives the same adapter; the base's JSON names its identity; dA and dB match finite differences. */
    @Test fun peftImportBaseJsonAndGradients() {
        trainedBase().use { base ->
            val cfg = LoraConfig.default().copy(rank = 2, targetModules = LoraTarget.ALL)
            LoraAdapter(base, cfg).use { a ->
                LoraTrainer(base, a, trainConfig()).use { t -> t.setData(ids); t.train(3) }
                val folder = File(tmp, "peft-import").apply { deleteRecursively(); mkdirs() }
                a.exportPeft(folder.path)
                LoraAdapter.importPeft(folder.path, base).use { b ->
                    assertEquals(a.tensorNames, b.tensorNames)
                    for (n in a.tensorNames) assertArrayEquals(n, a.parameter(n), b.parameter(n), 0f)
                    assertEquals(a.config, b.config)
                    assertEquals(a.baseJson, b.baseJson)
                }
                assertThrows<IoException>(Status.IO) { LoraAdapter.importPeft(File(tmp, "no_such_peft").path, base) }
                val json = a.baseJson
                assertTrue(json, json.startsWith("{") && json.contains("\"weights_xxh64\"") && json.contains("\"fingerprint\""))
                assertTrue(json, json.contains("\"trained\""))  // the base's provenance

                val b = 4
                val t = 8
                val inputs = ids.copyOf(b * t)
                val targets = ids.copyOfRange(1, b * t + 1)
                LoraTrainer(base, a, trainConfig().copy(dropout = 0f)).use { tr ->
                    val loss = tr.computeGradients(inputs, targets, b, t)
                    assertTrue("$loss", loss > 0f)
                    val name = "h.1.mlp.c_fc.lora_B.weight"
                    val g = tr.grad(name)
                    assertEquals(numel(a.tensorShape(name)), g.size)
                    val w = a.parameter(name)
                    val i = g.indices.maxBy { Math.abs(g[it]) }!!
                    assertTrue("gradient ${g[i]}", Math.abs(g[i]) > 1e-5f)
                    val h = 1e-2f
                    fun lossWith(v: Float): Float {
                        a.setParameter(name, w.copyOf().also { it[i] = v })
                        return tr.computeGradients(inputs, targets, b, t)
                    }
                    val fd = (lossWith(w[i] + h) - lossWith(w[i] - h)) / (2 * h)
                    a.setParameter(name, w)
                    assertEquals(g[i], fd, 2e-2f * Math.abs(g[i]) + 1e-4f)
                    // computing gradients recorded nothing
                    assertEquals(3, a.trainingRecord.steps)
                    assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { tr.grad("h.9.attn.c_attn.lora_A.weight") }
                }
            }
        }
    }

    /** A base saved in fp16 and mapped read-only trains an adapter exactly as its loaded copy does, and refuses writers. */
    @Test fun mappedFp16Base() {
        trainedBase().use { base ->
            val path = File(tmp, "base16.pgck").path
            base.save(path, SaveOptions.default().copy(weightStorage = WeightStorage.FP16.code))
            Model.load(path, LoadOptions.default().copy(mapWeights = true)).use { mapped ->
                Model.load(path).use { copied ->
                    assertTrue(mapped.weightsMapped)
                    assertFalse(copied.weightsMapped)
                    assertEquals(WeightStorage.FP16, mapped.weightStorage.first)
                    assertEquals(WeightStorage.FP16, copied.weightStorage.first)
                    val cfg = LoraConfig.default().copy(rank = 2)
                    fun run(m: Model) = LoraAdapter(m, cfg).use { a ->
                        Pair(LoraTrainer(m, a, trainConfig()).use { t -> t.setData(ids); t.train(3).map { it.loss } }, a.baseJson)
                    }
                    val (mappedLosses, mappedJson) = run(mapped)
                    val (copiedLosses, copiedJson) = run(copied)
                    assertEquals(copiedLosses, mappedLosses)
                    assertEquals(copiedJson, mappedJson)
                    LoraAdapter(base, cfg).use { a -> assertEquals(a.baseJson, mappedJson) }  // the fp32 base's identity
                    val e = assertThrows<StateException>(Status.STATE) { Trainer(mapped, trainConfig()).close() }
                    assertTrue(e.message!!, e.message!!.contains("memory-mapped"))
                }
            }
            val plain = File(tmp, "base32.pgck").path
            base.save(plain)
            assertThrows<UnsupportedException>(Status.UNSUPPORTED) {
                Model.load(plain, LoadOptions.default().copy(mapWeights = true)).close()
            }
        }
    }
}
