package phonegpt

import org.junit.AfterClass
import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.BeforeClass
import org.junit.Test
import java.io.File

/**
 * Byte-level BPE from Kotlin against npm tiktoken: the real rank files and GPT-2 files exported
 * from the npm peers (PG_BPE_PEERS, tests/cmake/bpe.cmake) and the ids tiktoken gives for the
 * same texts (PG_KOTLIN_BPE_REFERENCE, written by bindings/kotlin/test/bpe_reference.js in the
 * same ctest run).
 */
class BpeTest {
    class Case(val encoding: String, val allSpecial: Boolean, val text: String, val ids: IntArray)

    companion object {
        val peers = File(System.getenv("PG_BPE_PEERS") ?: error("PG_BPE_PEERS is not set"))
        lateinit var cases: List<Case>
        val tokenizers = HashMap<String, Tokenizer>()

        @BeforeClass @JvmStatic fun setUp() {
            val reference = File(System.getenv("PG_KOTLIN_BPE_REFERENCE") ?: error("PG_KOTLIN_BPE_REFERENCE is not set"))
            cases = reference.readLines().filter { it.isNotEmpty() }.map { line ->
                val (encoding, mode, hex, ids) = line.split('\t')
                val bytes = ByteArray(hex.length / 2) { i -> hex.substring(2 * i, 2 * i + 2).toInt(16).toByte() }
                Case(encoding, mode == "all", String(bytes, Charsets.UTF_8),
                     ids.split(' ').filter { it.isNotEmpty() }.map { it.toInt() }.toIntArray())
            }
            assertEquals(24, cases.size)
            for (name in cases.map { it.encoding }.distinct())
                tokenizers[name] = Tokenizer.tiktokenFile(File(peers, "$name.tiktoken").path, name)
        }

        @AfterClass @JvmStatic fun tearDown() = tokenizers.values.forEach { it.close() }

        fun options(c: Case) = if (c.allSpecial) EncodeOptions.ALL_SPECIAL else EncodeOptions.default()
        fun gpt2Cases() = cases.filter { it.encoding == "gpt2" }
    }

    @Test fun tiktokenFilesEncodeAsNpmTiktoken() {
        for (c in cases) {
            val tok = tokenizers.getValue(c.encoding)
            assertEquals(TokenizerKind.BPE, tok.kind)
            assertArrayEquals("${c.encoding} ${c.allSpecial} ${c.text}", c.ids, tok.encode(c.text, options(c)))
            assertEquals(c.ids.size.toLong(), tok.encodedLength(c.text, options(c)))
            assertEquals(c.text, tok.decode(c.ids))
            val out = directIntBuffer(c.ids.size)
            assertEquals(c.ids.size, tok.encode(c.text, out, options(c)))
            for (i in c.ids.indices) assertEquals(c.ids[i], out.get(i))
        }
        assertEquals(50257, tokenizers.getValue("gpt2").vocabSize)
        // the rank files themselves, written back, load to the same tokenizer
        val cl = tokenizers.getValue("cl100k_base")
        Tokenizer.tiktoken(cl.writeFile(TokenizerFile.TIKTOKEN), "cl100k_base").use { again ->
            for (c in cases.filter { it.encoding == "cl100k_base" }) assertArrayEquals(c.ids, again.encode(c.text, options(c)))
        }
    }

    @Test fun gpt2FilesAndTokenizerJsonEncodeAsTiktoken() {
        val encoder = File(peers, "gpt2_encoder.json").path
        val merges = File(peers, "gpt2_vocab.bpe").path
        Tokenizer.gpt2Files(encoder, merges).use { gpt2 ->
            for (c in gpt2Cases().filter { !it.allSpecial }) assertArrayEquals(c.text, c.ids, gpt2.encode(c.text))
            // the files it writes, and a tokenizer.json, read back to the same ids
            Tokenizer.gpt2(gpt2.writeFile(TokenizerFile.GPT2_ENCODER), gpt2.writeFile(TokenizerFile.GPT2_MERGES)).use { t ->
                for (c in gpt2Cases().filter { !it.allSpecial }) assertArrayEquals(c.ids, t.encode(c.text))
            }
        }
        val json = tokenizers.getValue("gpt2").writeFile(TokenizerFile.HF_JSON)
        val file = File(tmp, "tokenizer.json").apply { writeBytes(json) }
        Tokenizer.huggingFaceFile(file.path).use { hf ->
            for (c in gpt2Cases()) assertArrayEquals(c.ids, hf.encode(c.text, options(c)))
            Tokenizer.fromBytes(hf.toBytes()).use { copy ->
                for (c in gpt2Cases()) assertArrayEquals(c.ids, copy.encode(c.text, options(c)))
            }
        }
    }

    @Test fun specialTokensAreRecognisedOnlyWhenAllowed() {
        val cl = tokenizers.getValue("cl100k_base")
        val eot = cl.specialId("<|endoftext|>")
        val text = "a<|endoftext|>b<|fim_prefix|>"
        val onlyEot = cl.encode(text, EncodeOptions.default().copy(allowedSpecial = listOf("<|endoftext|>")))
        assertArrayEquals(cl.encode("a") + intArrayOf(eot) + cl.encode("b<|fim_prefix|>"), onlyEot)
        val all = cl.encode(text, EncodeOptions.ALL_SPECIAL)
        assertArrayEquals(cl.encode("a") + intArrayOf(eot) + cl.encode("b") + intArrayOf(cl.specialId("<|fim_prefix|>")), all)
        assertEquals(text, cl.decode(all))
        assertTrue(eot !in cl.encode(text))                                 // ordinary text by default
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { cl.specialId("<|nope|>") }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
            cl.encode(text, EncodeOptions.default().copy(allowedSpecial = listOf("<|nope|>")))
        }
        // raw bytes: BPE encodes any byte string and decodes back exactly
        val bytes = byteArrayOf(0x80.toByte(), 'x'.toByte(), 0xff.toByte(), 0xe2.toByte(), 0x82.toByte())
        assertArrayEquals(bytes, cl.decodeBytes(cl.encode(bytes)))
    }

    @Test fun theStreamingDecoderJoinsSplitCharacters() {
        val cl = tokenizers.getValue("cl100k_base")
        val c = cases.first { it.encoding == "cl100k_base" && it.text.startsWith("Unicode") && !it.allSpecial }
        cl.stream().use { s ->
            val pieces = c.ids.map { s.push(it) }
            assertTrue("no token ended inside a character", pieces.any { it.isEmpty() })
            assertEquals(c.text, pieces.joinToString("") + s.finish())
            // a character left unfinished at the end, and a byte that is never valid: U+FFFD each
            val unfinished = cl.encode(byteArrayOf(0xe2.toByte()))
            assertEquals(1, unfinished.size)
            assertEquals("", s.push(unfinished[0]))
            assertEquals("\uFFFD", s.finish())
            assertEquals("x\uFFFD", cl.encode(byteArrayOf('x'.toByte(), 0xff.toByte())).joinToString("") { s.push(it) } + s.finish())
            assertEquals("", s.finish())
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { s.push(-1) }
        }
        // a stream keeps its tokenizer's memory alive; closed handles throw
        val tok = Tokenizer.tiktokenFile(File(peers, "gpt2.tiktoken").path, "gpt2")
        val hello = tok.encode("Hello")
        val s = tok.stream()
        tok.close()
        assertEquals("Hello", hello.joinToString("") { s.push(it) })
        s.close()
        s.close()
        assertThrows<StateException>(Status.STATE) { s.push(1) }
        assertThrows<StateException>(Status.STATE) { tok.stream() }
    }

    @Test fun generatedTextStreamsWholeCharacters() {
        val gpt2 = tokenizers.getValue("gpt2")
        val config = ModelConfig.preset("tiny").copy(vocabSize = gpt2.vocabSize, paddedVocabSize = 0)
        Model(config, 4).use { m ->
            m.setTokenizer(gpt2)
            val streamed = StringBuilder()
            val out = m.generate("Hello", SampleConfig.default().copy(maxTokens = 24, seed = 5)) { streamed.append(it) }
            assertEquals(out, streamed.toString())
            Session(m).use { s ->
                s.append("Hello")
                val again = StringBuilder()
                assertEquals(out, s.generateText(SampleConfig.default().copy(maxTokens = 24, seed = 5)) { again.append(it) })
                assertEquals(out, again.toString())
            }
        }
    }

    @Test fun trainedMergesEqualHuggingFaceBpeTrainers() {
        val dir = File(System.getenv("PG_KOTLIN_BPE_REFERENCE")).parentFile
        val input = File(dir, "train_input.txt").readText()
        // HF trains on a file line by line, each line with its '\n': so do we
        val lines = Regex("[^\n]*\n|[^\n]+$").findAll(input).map { it.value }.toList()
        assertEquals(input, lines.joinToString(""))
        val options = BpeTrainOptions.default().copy(minFrequency = 0, nThreads = 1)
        assertEquals(BpeTrainOptions(2, BpePattern.GPT2, emptyList(), 0), BpeTrainOptions.default())
        val progress = ArrayList<Long>()
        Tokenizer.trainBpe(lines, 30000, options) { done, total -> assertEquals(30000L, total); progress.add(done) }.use { ours ->
            Tokenizer.huggingFaceFile(File(dir, "hf_trained.json").path).use { hf ->
                // HF's default trainer stopped when pairs ran out (its vocabulary is far below
                // 30000), so both merge lists are complete: equal, merge for merge
                assertTrue(hf.vocabSize < 30000)
                val hfMerges = String(hf.writeFile(TokenizerFile.GPT2_MERGES), Charsets.UTF_8)
                val ourMerges = String(ours.writeFile(TokenizerFile.GPT2_MERGES), Charsets.UTF_8)
                assertTrue(hfMerges.lines().size > 150)
                assertEquals(hfMerges, ourMerges)
                assertEquals(256 + hfMerges.lines().count { it.isNotEmpty() && !it.startsWith("#") }, ours.vocabSize)
            }
            assertEquals(ours.vocabSize.toLong(), progress.last())
            assertTrue(progress.zipWithNext().all { (a, b) -> a < b })
            assertEquals(input, ours.decode(ours.encode(input)))
            // the result does not depend on the threads
            Tokenizer.trainBpe(lines, 30000, options.copy(nThreads = 2)).use { assertArrayEquals(ours.toBytes(), it.toBytes()) }
        }
        // special tokens get ids 0.. in order
        Tokenizer.trainBpe(lines, 300, options.copy(specialTokens = listOf("<|endoftext|>", "<|pad|>"))).use { t ->
            assertEquals(0, t.specialId("<|endoftext|>"))
            assertEquals(1, t.specialId("<|pad|>"))
            assertEquals(300, t.vocabSize)
        }
        // cancelled from the progress callback, a throwing callback, bad arguments
        val cancel = CancellationToken()
        assertThrows<CancelledException>(Status.CANCELLED) {
            Tokenizer.trainBpe(lines, 30000, options, cancel) { _, _ -> cancel.cancel() }
        }
        try {
            Tokenizer.trainBpe(lines, 30000, options) { _, _ -> throw IllegalStateException("stop") }
            throw AssertionError("not re-thrown")
        } catch (e: IllegalStateException) {
            assertEquals("stop", e.message)
        }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Tokenizer.trainBpe(lines, 100, options) }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
            Tokenizer.trainBpe(lines, 1000, options.copy(minFrequency = -1))
        }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.tokenizerTrainBpe(null, 1000, options.fields(), null, null) }
    }

    @Test fun badFilesAreRefusedNamingWhatIsWrong() {
        assertThrows<FormatException>(Status.FORMAT) { Tokenizer.tiktoken("not base64 at all\n".toByteArray(), "gpt2") }
        assertThrows<FormatException>(Status.FORMAT) { Tokenizer.huggingFace("{".toByteArray()) }
        assertThrows<FormatException>(Status.FORMAT) { Tokenizer.gpt2("{}".toByteArray(), "#version: 0.2\nx\n".toByteArray()) }
        val e = try {
            Tokenizer.tiktokenFile(File(peers, "gpt2.tiktoken").path, "no_such_encoding"); null
        } catch (e: PhoneGptException) { e }
        assertTrue("$e", e != null && e.message!!.contains("no_such_encoding"))
        assertThrows<IoException>(Status.IO) { Tokenizer.tiktokenFile(File(peers, "missing.tiktoken").path, "gpt2") }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { tokenizers.getValue("gpt2").decode(intArrayOf(60000)) }
        Tokenizer.char("abc").use { t ->
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.writeFile(TokenizerFile.HF_JSON) }
            assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { t.specialId("<|endoftext|>") }
        }
        // what the shim checks itself
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.tokenizerCreateTiktoken(null, "gpt2") }
        assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) { Native.tokenizerCreateGpt2(ByteArray(0), null) }
        assertThrows<StateException>(Status.STATE) { Native.tokenStreamPush(0, 1) }
    }
}
