// The Kotlin binding as a Java app sees it: compiled with javac against phonegpt.jar (ctest
// kotlin_java_api) and run. Every public class of the binding is used here at least once and every
// public method of the hand-written classes called (check_java_coverage.cmake checks both against
// the jar), with the Java names of what Kotlin spells with keywords: Tokenizer.characterLevel,
// XxxConfig.defaults(), ModelConfig.preset.
// Exits 1 with the failed check's message.
import java.io.File;
import java.io.FileInputStream;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import kotlin.Unit;
import kotlin.ranges.IntRange;
import phonegpt.*;

public final class JavaApiTest {
    private static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    private interface Call { void run() throws Exception; }

    // Runs call and checks that it threw `kind` (also a PhoneGptError of `status`).
    private static void throwsTyped(Class<? extends RuntimeException> kind, Status status, Call call) throws Exception {
        try {
            call.run();
        } catch (RuntimeException e) {
            check(kind.isInstance(e), "wanted " + kind.getSimpleName() + ", got " + e);
            check(e instanceof PhoneGptError && ((PhoneGptError) e).getStatus() == status, "status of " + e);
            check(((PhoneGptError) e).getStatusName().equals(status.getStatusName()), "status name of " + e);
            return;
        }
        throw new AssertionError("no " + kind.getSimpleName());
    }

    public static void main(String[] args) throws Exception {
        File tmp = new File(args.length > 0 ? args[0] : System.getProperty("java.io.tmpdir"), "java_api");
        check(tmp.isDirectory() || tmp.mkdirs(), "scratch folder " + tmp);
        String text = String.join("", Collections.nCopies(30, "First Citizen:\nBefore we proceed any further, hear me speak.\n\n"));

        // Library-wide calls, statuses and the exception classes.
        check(PhoneGpt.getVersionNumber() == PhoneGpt.getHeaderVersionNumber(), "version " + PhoneGpt.getVersion());
        check(!PhoneGpt.getSimdArch().isEmpty(), "simd");
        check(PhoneGpt.statusName(Status.IO.getCode()).equals("PG_ERR_IO"), "status name");
        check(Status.of(10) == Status.STATE, "Status.of");
        check(PhoneGpt.splitIndex(10) == 9L && PhoneGpt.splitIndex(10, 0.5) == 5L, "splitIndex");
        check(PhoneGptException.fromStatus(10, "m") instanceof IllegalStateException, "StateException is an IllegalStateException");
        check(PhoneGptException.fromStatus(1, "m") instanceof IllegalArgumentException, "InvalidArgumentException");
        Class<?>[] others = {OutOfMemoryException.class, IoException.class, FormatException.class, VersionException.class,
                             ChecksumException.class, GeometryException.class, TokenizeException.class, CancelledException.class,
                             BufferTooSmallException.class, UnsupportedException.class, InternalException.class, NotFiniteException.class};
        for (Class<?> c : others) check(PhoneGptException.class.isAssignableFrom(c), c.getName());
        throwsTyped(IoException.class, Status.IO, () -> PhoneGpt.readFile(new File(tmp, "missing").getPath()));

        // Configurations: Java names for the defaults and the preset.
        ModelConfig tinyPreset = ModelConfig.preset("tiny");
        throwsTyped(InvalidArgumentException.class, Status.INVALID_ARGUMENT, () -> ModelConfig.preset("no such"));
        Configs.validate(tinyPreset);
        check(Configs.getNumParams(tinyPreset) > 0, "numParams");
        check(ModelConfig.defaults().equals(ModelConfig.preset("phonegpt")), "ModelConfig.defaults");
        check(EncodeOptions.ALL_SPECIAL.getAllowAllSpecial(), "ALL_SPECIAL");
        TrainConfig d = TrainConfig.defaults();
        TrainConfig tc = new TrainConfig(4, d.getSeqLen(), d.getGradAccumSteps(), d.getSchedule(), d.getLrMax(), d.getLrMin(), 3,
                                         12L, d.getBeta1(), d.getBeta2(), d.getEps(), d.getWeightDecay(), d.getDecayEmbeddings(),
                                         d.getGradClip(), d.getDropout(), 99L, 1, d.getRecomputeActivations(), d.getOptimizer(),
                                         d.getMuonMomentum(), d.getMuonLrScale(), d.getDropoutRampSteps(), d.getArithmetic());

        // The enumerations and the other option structs, by name.
        check(BpePattern.GPT2.getCode() == 1 && InteropFormat.LLMC.getCode() == 1 && TokenizerFile.HF_JSON.getCode() == 4, "enums");
        check(LoraAverageMethod.values().length == 6 && LoraAverageMethod.MEDIAN.getCode() == 5 && SignaturePolicy.OFF.getCode() == 2 && BaseTrainedPolicy.OFF.getCode() == 2,
              "coordinator enums");
        check(WeightStorage.FP32.getCode() == 0 && Optimizer.ADAMW.getCode() == 0, "storage, optimizer");
        CEnum schedule = LrSchedule.COSINE;
        CBit email = PiiKind.EMAIL;
        check(schedule.getCode() == 1 && email.getBit() == 1, "CEnum, CBit");
        check(EvalSampledConfig.defaults() != null && LoadOptions.defaults() != null && LoraAverageConfig.defaults() != null
              && BpeTrainOptions.defaults() != null, "defaults()");

        // Byte-level BPE: trained here, written as each file format and loaded back from it.
        List<String> lines = Arrays.asList(text.split("\n"));
        BpeTrainOptions bo = BpeTrainOptions.defaults();
        BpeTrainOptions withEot = new BpeTrainOptions(bo.getMinFrequency(), bo.getPattern(),
                                                      Collections.singletonList("<|endoftext|>"), bo.getNThreads());
        String gpt2Regex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
        try (Tokenizer bpe = Tokenizer.trainBpe(lines, 300, withEot);
             Tokenizer plain = Tokenizer.trainBpe(lines, 290);
             Tokenizer fromBytes = Tokenizer.trainBpeBytes(Collections.singletonList(text.getBytes(StandardCharsets.UTF_8)), 280)) {
            check(bpe.specialId("<|endoftext|>") == 0 && fromBytes.getVocabSize() <= 280, "trainBpe, specialId");
            check(new String(bpe.decodeBytes(bpe.encode("First Citizen")), StandardCharsets.UTF_8).equals("First Citizen"), "decodeBytes");
            byte[] hf = bpe.writeFile(TokenizerFile.HF_JSON);
            File hfFile = new File(tmp, "tokenizer.json");
            Files.write(hfFile.toPath(), hf);
            File enc = new File(tmp, "encoder.json"), merges = new File(tmp, "vocab.bpe"), ranks = new File(tmp, "t.tiktoken");
            Files.write(enc.toPath(), plain.writeFile(TokenizerFile.GPT2_ENCODER));
            Files.write(merges.toPath(), plain.writeFile(TokenizerFile.GPT2_MERGES));
            // A tiktoken rank file: the 256 bytes, then "Fi" (a trained tokenizer merges by a list,
            // which tiktoken's ranks cannot express).
            StringBuilder rankText = new StringBuilder();
            for (int b = 0; b < 256; ++b)
                rankText.append(java.util.Base64.getEncoder().encodeToString(new byte[] {(byte) b})).append(' ').append(b).append('\n');
            rankText.append(java.util.Base64.getEncoder().encodeToString("Fi".getBytes(StandardCharsets.UTF_8))).append(" 256\n");
            Files.write(ranks.toPath(), rankText.toString().getBytes(StandardCharsets.UTF_8));
            int[] want = plain.encode(text);
            try (Tokenizer a = Tokenizer.huggingFace(hf); Tokenizer b = Tokenizer.huggingFaceFile(hfFile.getPath());
                 Tokenizer c = Tokenizer.gpt2(Files.readAllBytes(enc.toPath()), Files.readAllBytes(merges.toPath()));
                 Tokenizer e = Tokenizer.gpt2Files(enc.getPath(), merges.getPath());
                 Tokenizer f = Tokenizer.tiktoken(Files.readAllBytes(ranks.toPath()), gpt2Regex);
                 Tokenizer g = Tokenizer.tiktokenFile(ranks.getPath(), gpt2Regex)) {
                check(Arrays.equals(a.encode(text), bpe.encode(text)) && Arrays.equals(b.encode(text), bpe.encode(text)), "HF files");
                check(Arrays.equals(c.encode(text), want) && Arrays.equals(e.encode(text), want), "GPT-2 files");
                int[] first = {256, 'r', 's', 't'};
                check(Arrays.equals(f.encode("First"), first) && Arrays.equals(g.encode("First"), first), "tiktoken files");
            }
        }

        try (Tokenizer tok = Tokenizer.characterLevel(text)) {
            check(tok.getKind() == TokenizerKind.CHAR, "kind");
            File packed = new File(tmp, "packed.bin");
            Files.write(packed.toPath(), tok.toBytes());
            try (Tokenizer t1 = Tokenizer.fromFile(packed); FileInputStream in = new FileInputStream(packed);
                 Tokenizer t2 = Tokenizer.fromFileDescriptor(in.getFD(), 0, -1)) {
                check(t1.getVocabSize() == tok.getVocabSize() && t2.getVocabSize() == tok.getVocabSize(), "tokenizer files");
                check(PhoneGpt.readFileDescriptor(in.getFD(), 1, 2).length == 2, "readFileDescriptor");
            }
            int[] ids = tok.encode(text);
            check(tok.decode(ids).equals(text), "round trip");
            check(tok.encodedLength("First") == 5L, "encodedLength");
            IntBuffer out = directIntBuffer(3);
            throwsTyped(BufferTooSmallException.class, Status.BUFFER_TOO_SMALL, () -> tok.encode("First", out));
            try (Tokenizer copy = Tokenizer.fromBytes(tok.toBytes()); TokenStream stream = copy.stream()) {
                check(stream.push(ids[0]).equals("F") && stream.finish().isEmpty(), "stream");
            }
            ModelConfig cfg = withVocab(tinyPreset, tok.getVocabSize());
            try (Model model = new Model(cfg, 7)) {
                model.setTokenizer(tok);
                check(model.getTokenizer() == model.getTokenizer(), "one tokenizer object per model");
                model.allowUntrainedBase(true);
                Provenance provenance = model.getProvenance();
                check(provenance.getKind() == ProvenanceKind.INITIALISED, "provenance");
                NativeHandle handle = model;
                EvaluatingHandle evaluating = model;
                check(!handle.isClosed() && evaluating == model, "handle types");
                check(model.getTensorNames().contains("wte") && model.tensorShape("wte").length == 2, "tensors");
                float[] bias = model.parameter("ln_f.bias");
                model.setParameter("ln_f.bias", bias);
                FloatBuffer small = directFloatBuffer(3);
                throwsTyped(BufferTooSmallException.class, Status.BUFFER_TOO_SMALL, () -> model.readParameter("wte", small));
                Model.ForwardResult fr = model.forward(Arrays.copyOf(ids, 8), 1, 8, Arrays.copyOfRange(ids, 1, 9));
                check(fr.getLoss() != null && fr.getLogits().length == 8 * tok.getVocabSize(), "forward");
                EvalResult er = model.evaluate(ids, EvalConfig.defaults(), null, (done, total) -> Unit.INSTANCE);
                check(er.getNScored() > 0, "evaluate");
                SampleConfig sd = SampleConfig.defaults();
                SampleConfig greedy = new SampleConfig(sd.getTemperature(), sd.getTopK(), sd.getTopP(), sd.getSeed(), 5, 1,
                                                       sd.getStopStrings(), sd.getSlideKeep());
                CancellationToken cancel = new CancellationToken();
                int[] gen = model.generate(Arrays.copyOf(ids, 3), greedy, cancel, t -> Unit.INSTANCE);
                check(gen.length == 5 && !cancel.isCancelled(), "generate");
                cancel.cancel();
                check(cancel.isCancelled(), "cancel");
                check(model.generate("First", greedy).length() > 0, "generate text");
                throwsTyped(InvalidArgumentException.class, Status.INVALID_ARGUMENT, () -> model.generate(new int[0]));
                // a call from inside the model's own callback is refused, naming the model
                java.io.Closeable self = model;
                model.generate(Arrays.copyOf(ids, 3), greedy, null, t -> {
                    try { self.close(); throw new AssertionError("close was not refused"); }
                    catch (StateException e) { check(e.getMessage().startsWith("Model."), e.getMessage()); }
                    catch (java.io.IOException e) { throw new AssertionError(e); }
                    return Unit.INSTANCE;
                });
                String path = new File(tmp, "m.bin").getPath();
                model.save(path, SaveOptions.defaults());
                try (Model loaded = Model.load(new File(path))) { check(loaded.getNumParams() == model.getNumParams(), "load"); }
                byte[] file = Files.readAllBytes(new File(path).toPath());
                ByteBuffer direct = ByteBuffer.allocateDirect(file.length).put(file);
                direct.flip();
                try (Model a = Model.load(file); Model b = Model.load(direct); FileInputStream in = new FileInputStream(path);
                     Model c = Model.load(in.getFD(), 0, file.length)) {
                    check(a.getNumParams() == b.getNumParams() && c.getNumParams() == model.getNumParams(), "load from memory, fd");
                }
                check(model.getConfig().getVocabSize() == cfg.getVocabSize() && !model.getWeightsMapped(), "config, mapped");
                float[] flat = model.flatParameters();
                FloatBuffer flatOut = directFloatBuffer(flat.length);
                model.readFlatParameters(flatOut);
                check(flatOut.get(flat.length - 1) == flat[flat.length - 1], "flat parameters");
                check(model.evaluateSampled(ids, 2, 2).getNScored() > 0, "evaluateSampled");
                String llmc = new File(tmp, "m.llmc").getPath();
                model.export(llmc, InteropFormat.LLMC);
                try (Model imported = Model.importFrom(llmc, InteropFormat.LLMC)) { check(imported.getNumParams() == model.getNumParams(), "import"); }
                String hfFolder = new File(tmp, "hf").getPath();
                model.export(hfFolder, InteropFormat.HF_FOLDER);
                try (Model imported = Model.importFrom(hfFolder, InteropFormat.HF_FOLDER, LoadOptions.defaults())) {
                    check(imported.getNumParams() == model.getNumParams(), "import an HF folder");
                }
                check(provenance.getInitSeed() == 7L && provenance.getTokens() == 0L, "provenance fields");

                try (Session s = new Session(model, new SessionConfig(1, SessionConfig.defaults().getSlideKeep(), Arithmetic.EXACT))) {
                    s.append("First");
                    check(s.generate(greedy).length == 5 && s.getPosition() == 10L, "session");
                    check(s.logits().length == tok.getVocabSize(), "logits");
                    s.reset();
                    check(s.getNThreads() == 1 && s.getAdapter() == null && s.getLastError().isEmpty(), "session state");
                    s.append("First");
                    check(s.getModel() == model && !s.generateText(greedy).isEmpty(), "session text");
                    check(s.evaluateSampled(ids).getNScored() > 0, "session evaluateSampled");
                    try (LoraAdapter a = new LoraAdapter(model, LoraConfig.defaults())) {
                        s.attachAdapter(a);
                        check(s.getAdapter() == a, "attached");
                        s.detachAdapter();
                        String loraCheckpoint = new File(tmp, "lora_trainer.bin").getPath();
                        try (LoraTrainer lt = new LoraTrainer(model, a, tc)) {
                            lt.setData(ids);
                            check(lt.train(2).size() == 2 && lt.getBase() == model, "LoRA steps");
                            check(lt.getStepCount() == 2L && lt.getConfig().getBatchSize() == tc.getBatchSize()
                                  && lt.lrAt(0) >= 0f, "LoRA trainer state");
                            lt.setThreads(1);
                            check(lt.getThreads() == 1, "LoRA threads");
                            TrainingRecord record = a.getTrainingRecord();
                            check(record.getSteps() == 2 && record.getLosses().length == 2 && record.getLearningRates().length == 2
                                  && record.getTokens() > 0, "record");
                            lt.save(loraCheckpoint);
                        }
                        try (LoraTrainer resumed = LoraTrainer.resume(loraCheckpoint, model)) { check(resumed.getBase() == model, "LoRA resume"); }
                        // the default targets (none: the base family's PEFT default) resolved to GPT-2's c_attn
                        check(LoraConfig.defaults().getTargetModules().isEmpty()
                              && a.getConfig().getTargetModules().equals(java.util.Collections.singleton(LoraTarget.ATTN_C_ATTN))
                              && a.getConfig().getRank() == LoraConfig.defaults().getRank() && a.getScale() > 0 && a.getBaseJson().startsWith("{"), "adapter");
                        File peftFolder = new File(tmp, "peft");
                        check(peftFolder.isDirectory() || peftFolder.mkdirs(), "PEFT folder");
                        String peft = peftFolder.getPath();
                        a.exportPeft(peft);
                        try (LoraAdapter back = LoraAdapter.importPeft(peft, model)) { check(back.getNumParams() == a.getNumParams(), "PEFT"); }
                        try (Model copy = Model.load(path)) {  // in place on a copy: unmerging rounds
                            a.mergeInto(copy);
                            a.unmergeFrom(copy);
                        }
                        check(LoraTarget.ATTN_C_ATTN.getModuleName().length() > 0, "module name");
                        a.checkBase(model);
                        try (Model merged = a.merge(model)) { check(merged.getNumParams() == model.getNumParams(), "merge"); }
                        try (SigningKey key = SigningKey.fromSeed(new byte[32]); TrustedKeys keys = new TrustedKeys()) {
                            String adapterPath = new File(tmp, "a.bin").getPath();
                            a.save(adapterPath);
                            byte[] bytes = PhoneGpt.readFile(adapterPath);
                            String signature = key.sign(a, bytes);
                            keys.add(key.getPublicKey());
                            check(keys.verify(a, bytes, signature) == null, "signature");
                            check(SigningKey.keyIdOf(key.getPublicKey()).equals(key.getKeyId()), "key id");
                        }
                        List<LoraAdapter> two = Arrays.asList(a, a);
                        Average avg = LoraAdapter.average(two);
                        try (LoraAdapter mean = avg.getAdapter()) {
                            check(mean.getNumParams() == a.getNumParams(), "average");
                            // the phone's differential privacy: the update from `a` clipped and noised
                            LoraPrivacyConfig pc = LoraPrivacyConfig.defaults();
                            LoraPrivacyReport pr = CoordinatorKt.privatize(mean, a, pc);
                            check(pc.getClipNorm() > 0 && pr.getNoiseStddev() >= 0, "privatize");
                            PrivacyBudget budget = CoordinatorKt.privacyEpsilon(1.0, 10, 1e-5);
                            check(budget.getEpsilon() > 0 && budget.getOrder() > 1, "privacy epsilon");
                        }
                        check(LoraClipMode.MEDIAN.getCode() == 1, "clip modes");
                        check(avg.getReport() instanceof LoraAverageReport, "average report");
                        check(LoraTarget.getALL().size() == 4, "targets");
                        check(LoraTarget.getLLAMA_ALL().size() == 7 && LoraTarget.getLLAMA_ALL().contains(LoraTarget.Q_PROJ), "llama targets");
                    }
                }
                try (Trainer t = new Trainer(model, tc)) {
                    TrainerBase base = t;
                    base.setData(ids);
                    StepResult r = t.step();
                    check(r.getStep() == 1L && t.getStepCount() == 1L, "step");
                    check(t.grad("wte").length > 0 && t.getThreads() == 1 && t.lrAt(0) >= 0f, "trainer");
                    int[] in8 = Arrays.copyOf(ids, 8), out8 = Arrays.copyOfRange(ids, 1, 9);
                    check(base.computeGradients(in8, out8, 1, 8) > 0f, "computeGradients");
                    FloatBuffer grad = directFloatBuffer(t.grad("wte").length);
                    t.readGrad("wte", grad);
                    check(base.stepBatch(in8, out8, 1, 8).getStep() == 2L, "stepBatch");
                    t.setThreads(2);
                    check(t.getModel() == model && t.getConfig().getBatchSize() == tc.getBatchSize() && t.getThreads() == 2, "trainer state");
                    String trainerCheckpoint = new File(tmp, "trainer.bin").getPath();
                    t.save(trainerCheckpoint);
                    try (Trainer resumed = Trainer.resume(trainerCheckpoint)) { check(resumed.getStepCount() == 2L, "resume"); }
                }
                try (Validator v = new Validator(model, ValidationPolicy.defaults())) {
                    v.setHeldout(Arrays.copyOf(ids, 200));
                    v.setReference(Arrays.copyOf(ids, 200));
                    try (TrustedKeys none = new TrustedKeys()) { v.setTrustedKeys(none); }
                    check(v.getBase() == model, "validator base");
                    File garbage = new File(tmp, "garbage_adapter.bin");
                    Files.write(garbage.toPath(), new byte[8]);
                    try (ValidationReport fromFile = v.validateFile(garbage.getPath())) {
                        check(!fromFile.getAccepted(), "validateFile");
                        throwsTyped(StateException.class, Status.STATE, fromFile::adapter);
                        v.compareRound(Collections.singletonList(fromFile));
                    }
                    try (ValidationReport report = v.validate(new byte[8])) {
                        check(!report.getAccepted() && !report.getChecks().isEmpty(), "validation");
                        ValidationSummary summary = report.getSummary();
                        ValidationCheck first = report.getChecks().get(0);
                        check(summary.getNChecks() > 0 && first.getOutcome() == CheckOutcome.FAILED && report.json().startsWith("{"),
                              "report");
                    }
                }
                // closeWhenIdle: no running call here, so it frees now
                check(model.closeWhenIdle() && model.isClosed(), "closeWhenIdle");
                throwsTyped(StateException.class, Status.STATE, model::getNumParams);
            }
        }

        // Architectures (the Llama-family presets), the memory plan, a training session and its worker
        ModelConfig tinyLlama = ModelConfig.preset("tiny-llama");
        check(tinyLlama.getNorm() == NormKind.RMSNORM && tinyLlama.getPositions() == PositionKind.ROTARY
              && tinyLlama.getMlp() == MlpKind.SWIGLU, "architecture fields");
        ModelConfig tinyGpt = ModelConfig.preset("tiny");
        MemoryPlan plan = MemoryPlanner.plan(tinyGpt, TrainConfig.defaults());
        check(plan.getPeakBytes() > 0 && plan.getBatchSize() > 0, "memory plan");
        check(MemoryPlanner.maxBatch(tinyGpt, TrainConfig.defaults(), 1L << 30).getBatchSize() > 0, "maxBatch");
        try (Model frozen = new Model(tinyGpt, 3)) {
            frozen.setWeightStorage(WeightStorage.FP16);
            check(frozen.getWeightStorage().getFirst() == WeightStorage.FP16, "weight storage");
        }
        TrainSessionConfig sd = TrainSessionConfig.defaults();
        TrainSessionConfig sc = new TrainSessionConfig(2L, 0L, 0L, 0L, 0L, sd.getThroughputWindowMs(), sd.getThrottleThermal(),
                                                       sd.getThrottleThreads(), sd.getThrottleSleepMs(), sd.getPauseThermal(),
                                                       sd.getBatteryFloorPercent(), false);
        DeviceConditions conditions = DeviceConditions.defaults();
        check(conditions.getThermalStatus() == ThermalStatus.NONE, "thermal status");
        File checkpoint = File.createTempFile("java_train_session", ".pgc");
        check(checkpoint.delete(), "fresh checkpoint path");
        try (Tokenizer tok = Tokenizer.characterLevel(text);
             Model m = new Model(withVocab(tinyGpt, tok.getVocabSize()), 5);
             TrainSession session = new TrainSession(m, checkpoint.getPath(), null, TrainConfig.defaults(), sc)) {
            session.setData(tok.encode(text));
            session.setConditions(conditions);
            TrainSessionReport report = session.run();
            check(report.getStop() == TrainStop.STEPS && report.getStep() == 2L, "training session");
            check(session.report().getStep() == 2L && session.coreRates() != null && session.getModel() == m
                  && session.getCheckpoint().equals(checkpoint.getPath()), "training session state");
            session.cancel();
        }
        SessionWorkerLogic worker = new SessionWorkerLogic(checkpoint.getPath(), () -> new Model(tinyGpt, 5),
                                                           () -> new int[0], TrainConfig.defaults(), sc,
                                                           () -> conditions, null);
        worker.setConditions(conditions);  // no window running: nothing to tell
        check(worker.getLastReport() == null, "worker before a window");
        check(checkpoint.delete(), "checkpoint written");

        try (DataFilter f = new DataFilter(DataFilterConfig.defaults(), t -> Collections.<IntRange>emptyList())) {
            DataFilter.Result r = f.apply("mail a@example.com");
            PiiSpan span = r.getSpans().get(0);
            check(!r.getText().contains("a@example.com") && span.getKind() == PiiKind.EMAIL, "filter");
            check(span.getEnd() - span.getBegin() == 13 && !PiiKind.EMAIL.getCName().isEmpty(), "span");
            check(r.getReport() instanceof DataFilterReport, "filter report");
        }
        System.out.println("JavaApiTest: all checks passed");
    }

    // A preset with another vocabulary. Java sees the generated data class's whole constructor:
    // every field of pg_model_config, in the header's order.
    private static ModelConfig withVocab(ModelConfig p, int vocab) {
        return new ModelConfig(p.getNLayer(), p.getNHead(), p.getNEmbd(), p.getNCtx(), vocab, 0, p.getLayernormEps(),
                               p.getNorm(), p.getQkNorm(), p.getPositions(), p.getRopeTheta(), p.getRopeScalingFactor(),
                               p.getRopeLowFreqFactor(), p.getRopeHighFreqFactor(), p.getRopeOriginalMaxPositions(),
                               p.getNKvHead(), p.getHeadDim(), p.getQkvBias(), p.getLinearBias(), p.getMlp(),
                               p.getMlpHidden(), p.getTiedHead());
    }

    private static IntBuffer directIntBuffer(int n) { return BulkKt.directIntBuffer(n); }
    private static FloatBuffer directFloatBuffer(int n) { return BulkKt.directFloatBuffer(n); }
}
