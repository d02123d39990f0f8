package phonegpt

import java.io.FileDescriptor
import java.nio.ByteBuffer
import java.nio.FloatBuffer
import java.nio.IntBuffer

/**
 * The JNI shim's functions (each file of bindings/kotlin/jni registers its own with
 * RegisterNatives from JNI_OnLoad; a signature that does not match fails the load).
 * Handles are the C pointers as Long; the public classes own them and serialise their use.
 * Bulk arguments come as (array, buffer, offset, length) with exactly one of array/buffer set.
 */
internal object Native {
    init {
        // -Dphonegpt.jni.library=/path/libphonegpt_jni.so loads that file; otherwise the usual
        // search (java.library.path on the JVM, the APK's lib/<abi>/ on Android).
        val path = System.getProperty("phonegpt.jni.library")
        if (path != null && path.isNotEmpty()) System.load(path) else System.loadLibrary("phonegpt_jni")
    }

    @JvmStatic external fun versionNumber(): Int
    @JvmStatic external fun headerVersionNumber(): Int
    @JvmStatic external fun versionString(): String
    @JvmStatic external fun simdArch(): String
    @JvmStatic external fun statusName(status: Int): String
    @JvmStatic external fun lastError(): String
    /** The defaults of an options struct named as in lib/core/c_struct_fields.def (its generated class's fields()). */
    @JvmStatic external fun structDefault(struct: String?): LongArray
    @JvmStatic external fun piiKindName(kind: Int): String
    @JvmStatic external fun splitIndex(n: Long, trainFraction: Double): Long
    @JvmStatic external fun fileDescriptorInt(fd: FileDescriptor?): Int
    @JvmStatic external fun readFile(path: String?): ByteArray

    // Tokenizer.kt (bindings/kotlin/jni/tokenizer_jni.cpp)
    @JvmStatic external fun tokenizerCreateChar(text: ByteArray?): Long
    @JvmStatic external fun tokenizerDeserialize(data: ByteArray?): Long
    @JvmStatic external fun tokenizerCreateTiktoken(ranks: ByteArray?, encoding: String?): Long
    @JvmStatic external fun tokenizerCreateGpt2(encoderJson: ByteArray?, vocabBpe: ByteArray?): Long
    @JvmStatic external fun tokenizerCreateHf(tokenizerJson: ByteArray?): Long
    @JvmStatic external fun tokenizerTrainBpe(texts: Array<ByteArray>?, vocabSize: Int, options: LongArray?,
                                              specialTokens: Array<String>?, progress: ProgressBridge?): Long
    @JvmStatic external fun tokenizerFree(handle: Long)
    @JvmStatic external fun tokenizerKind(handle: Long): Int
    @JvmStatic external fun tokenizerVocabSize(handle: Long): Int
    @JvmStatic external fun tokenizerSpecialId(handle: Long, text: String?): Int
    /** Sizes only when out and outBuffer are null; allowedSpecial null = none. */
    @JvmStatic external fun tokenizerEncode(handle: Long, text: ByteArray?, options: LongArray?,
                                            allowedSpecial: Array<String>?, out: IntArray?, outBuffer: IntBuffer?,
                                            offset: Int, capacity: Int): Long
    @JvmStatic external fun tokenizerDecode(handle: Long, ids: IntArray?, idsBuffer: IntBuffer?, offset: Int,
                                            length: Int): ByteArray
    @JvmStatic external fun tokenizerSerialize(handle: Long): ByteArray
    @JvmStatic external fun tokenizerWriteFile(handle: Long, file: Int): ByteArray
    @JvmStatic external fun tokenStreamCreate(tokenizer: Long): Long
    @JvmStatic external fun tokenStreamFree(handle: Long)
    @JvmStatic external fun tokenStreamPush(handle: Long, id: Int): ByteArray
    @JvmStatic external fun tokenStreamFinish(handle: Long): ByteArray

    @JvmStatic external fun modelConfigPreset(name: String?): LongArray
    @JvmStatic external fun modelConfigValidate(fields: LongArray?)
    @JvmStatic external fun modelConfigNumParams(fields: LongArray?): Long

    @JvmStatic external fun modelCreate(config: LongArray?, seed: Long): Long
    @JvmStatic external fun modelFree(handle: Long)
    @JvmStatic external fun modelGetConfig(handle: Long): LongArray
    @JvmStatic external fun modelNumParams(handle: Long): Long
    /** {kind, hasInitSeed, initSeed, steps, tokens}. */
    @JvmStatic external fun modelProvenance(handle: Long): LongArray
    @JvmStatic external fun modelAllowUntrainedBase(handle: Long, allow: Boolean)
    @JvmStatic external fun modelSetWeightStorage(handle: Long, storage: Int)
    @JvmStatic external fun modelWeightStorage(handle: Long): LongArray
    @JvmStatic external fun modelSetTokenizer(handle: Long, tokenizer: Long)
    @JvmStatic external fun modelGetTokenizer(handle: Long): Long
    @JvmStatic external fun modelNumTensors(handle: Long): Int
    @JvmStatic external fun modelTensorName(handle: Long, index: Int): String
    @JvmStatic external fun modelTensorShape(handle: Long, index: Int): LongArray
    @JvmStatic external fun modelFindTensor(handle: Long, name: String?): Int
    @JvmStatic external fun modelReadTensor(handle: Long, index: Int, out: FloatArray?, outBuffer: FloatBuffer?,
                                            offset: Int, length: Int)
    @JvmStatic external fun modelWriteTensor(handle: Long, index: Int, src: FloatArray?, srcBuffer: FloatBuffer?,
                                             offset: Int, length: Int)
    @JvmStatic external fun modelReadParams(handle: Long, out: FloatArray?, outBuffer: FloatBuffer?, offset: Int,
                                            length: Int)
    @JvmStatic external fun modelForward(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, tokensOffset: Int,
                                         targets: IntArray?, targetsBuffer: IntBuffer?, targetsOffset: Int,
                                         batch: Int, seqLen: Int, logits: FloatArray?, logitsBuffer: FloatBuffer?,
                                         logitsOffset: Int, logitsLength: Int, nThreads: Int): Float
    @JvmStatic external fun modelSave(handle: Long, path: String?, options: LongArray?)
    @JvmStatic external fun modelLoad(path: String?): Long
    @JvmStatic external fun modelLoadWith(path: String?, options: LongArray?): Long
    @JvmStatic external fun modelLoadFromBytes(data: ByteArray?, offset: Int, length: Int): Long
    @JvmStatic external fun modelLoadFromDirect(data: ByteBuffer?, position: Long, length: Long): Long
    @JvmStatic external fun modelLoadFromFd(fd: Int, offset: Long, length: Long): Long
    @JvmStatic external fun modelWeightsMapped(handle: Long): Boolean
    @JvmStatic external fun modelExport(handle: Long, format: Int, path: String?)
    @JvmStatic external fun modelImport(format: Int, path: String?, options: LongArray?): Long

    @JvmStatic external fun evaluate(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                     length: Int, config: LongArray?, progress: ProgressBridge?): LongArray
    @JvmStatic external fun evaluateSampled(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                            length: Int, nBatches: Int, batchSize: Int, seed: Long,
                                            nThreads: Int): LongArray
    @JvmStatic external fun generate(handle: Long, prompt: IntArray?, promptBuffer: IntBuffer?, promptOffset: Int,
                                     promptLength: Int, config: LongArray?, stopStrings: Array<String>?,
                                     onToken: TokenBridge?, out: IntArray?, outBuffer: IntBuffer?, outOffset: Int,
                                     capacity: Int): Int

    @JvmStatic external fun trainerCreate(model: Long, config: LongArray?): Long
    @JvmStatic external fun trainerFree(handle: Long)
    @JvmStatic external fun trainerGetConfig(handle: Long): LongArray
    @JvmStatic external fun trainerSetData(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                           length: Int)
    @JvmStatic external fun trainerStep(handle: Long): LongArray
    @JvmStatic external fun trainerStepBatch(handle: Long, inputs: IntArray?, inputsBuffer: IntBuffer?,
                                             inputsOffset: Int, targets: IntArray?, targetsBuffer: IntBuffer?,
                                             targetsOffset: Int, batch: Int, seqLen: Int): LongArray
    @JvmStatic external fun trainerComputeGradients(handle: Long, inputs: IntArray?, inputsBuffer: IntBuffer?,
                                                    inputsOffset: Int, targets: IntArray?, targetsBuffer: IntBuffer?,
                                                    targetsOffset: Int, batch: Int, seqLen: Int): Float
    @JvmStatic external fun trainerReadGrad(handle: Long, index: Int, out: FloatArray?, outBuffer: FloatBuffer?,
                                            offset: Int, length: Int)
    @JvmStatic external fun trainerStepCount(handle: Long): Long
    @JvmStatic external fun trainerLrAt(handle: Long, step: Long): Float
    @JvmStatic external fun trainerThreads(handle: Long): Int
    @JvmStatic external fun trainerSetThreads(handle: Long, nThreads: Int)
    @JvmStatic external fun trainerSave(handle: Long, path: String?, options: LongArray?)
    @JvmStatic external fun trainerResume(path: String?): LongArray

    @JvmStatic external fun loraConfigValidate(fields: LongArray?, layers: IntArray?)
    @JvmStatic external fun loraAdapterCreate(model: Long, fields: LongArray?, layers: IntArray?): Long
    @JvmStatic external fun loraAdapterFree(handle: Long)
    @JvmStatic external fun loraAdapterGetConfig(handle: Long): LongArray
    @JvmStatic external fun loraAdapterGetLayers(handle: Long): IntArray?
    @JvmStatic external fun loraAdapterScale(handle: Long): Float
    @JvmStatic external fun loraAdapterNumParams(handle: Long): Long
    /** Writes {steps, tokens} into counts; returns the losses then the learning rates. */
    @JvmStatic external fun loraAdapterTrainingRecord(handle: Long, counts: LongArray?): FloatArray
    @JvmStatic external fun loraExportPeft(handle: Long, folder: String?)
    @JvmStatic external fun loraAdapterNumTensors(handle: Long): Int
    @JvmStatic external fun loraAdapterTensorName(handle: Long, index: Int): String
    @JvmStatic external fun loraAdapterTensorShape(handle: Long, index: Int): LongArray
    @JvmStatic external fun loraAdapterFindTensor(handle: Long, name: String?): Int
    @JvmStatic external fun loraAdapterReadTensor(handle: Long, index: Int, out: FloatArray?, outBuffer: FloatBuffer?,
                                                  offset: Int, length: Int)
    @JvmStatic external fun loraAdapterWriteTensor(handle: Long, index: Int, src: FloatArray?, srcBuffer: FloatBuffer?,
                                                   offset: Int, length: Int)
    @JvmStatic external fun loraMerge(model: Long, adapter: Long, nThreads: Int): Long
    @JvmStatic external fun loraMergeInPlace(model: Long, adapter: Long, nThreads: Int, unmerge: Boolean)
    @JvmStatic external fun loraAdapterSave(handle: Long, path: String?)
    @JvmStatic external fun loraAdapterLoad(path: String?, base: Long): Long
    @JvmStatic external fun loraAdapterCheckBase(handle: Long, base: Long)
    @JvmStatic external fun loraImportPeft(folder: String?, base: Long): Long
    @JvmStatic external fun loraAdapterBaseJson(handle: Long): ByteArray

    // Session.kt (bindings/kotlin/jni/session_jni.cpp)
    @JvmStatic external fun sessionCreate(model: Long, config: LongArray?): Long
    @JvmStatic external fun sessionFree(handle: Long)
    @JvmStatic external fun sessionLastError(handle: Long): String
    @JvmStatic external fun sessionNThreads(handle: Long): Int
    @JvmStatic external fun sessionForward(handle: Long, model: Long, tokens: IntArray?, tokensBuffer: IntBuffer?,
                                           tokensOffset: Int, targets: IntArray?, targetsBuffer: IntBuffer?,
                                           targetsOffset: Int, batch: Int, seqLen: Int, logits: FloatArray?,
                                           logitsBuffer: FloatBuffer?, logitsOffset: Int, logitsLength: Int): Float
    @JvmStatic external fun sessionEvaluate(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                            length: Int, config: LongArray?, progress: ProgressBridge?): LongArray
    @JvmStatic external fun sessionEvaluateSampled(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?,
                                                   offset: Int, length: Int, config: LongArray?): LongArray
    @JvmStatic external fun sessionAppend(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                          length: Int)
    @JvmStatic external fun sessionLogits(handle: Long, out: FloatArray?, outBuffer: FloatBuffer?, offset: Int,
                                          length: Int)
    @JvmStatic external fun sessionReset(handle: Long)
    @JvmStatic external fun sessionPosition(handle: Long): Long
    @JvmStatic external fun sessionGenerate(handle: Long, config: LongArray?, stopStrings: Array<String>?,
                                            onToken: TokenBridge?, out: IntArray?, outBuffer: IntBuffer?,
                                            outOffset: Int, capacity: Int): Int
    @JvmStatic external fun sessionAttachAdapter(handle: Long, adapter: Long)
    @JvmStatic external fun sessionDetachAdapter(handle: Long)
    /** The attached adapter's handle, or 0. */
    @JvmStatic external fun sessionAdapter(handle: Long): Long

    // LoraTrainer in Lora.kt (bindings/kotlin/jni/lora_jni.cpp)
    @JvmStatic external fun loraTrainerCreate(base: Long, adapter: Long, config: LongArray?): Long
    @JvmStatic external fun loraTrainerFree(handle: Long)
    @JvmStatic external fun loraTrainerSetData(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                               length: Int)
    @JvmStatic external fun loraTrainerStep(handle: Long): LongArray
    @JvmStatic external fun loraTrainerStepBatch(handle: Long, inputs: IntArray?, inputsBuffer: IntBuffer?,
                                                 inputsOffset: Int, targets: IntArray?, targetsBuffer: IntBuffer?,
                                                 targetsOffset: Int, batch: Int, seqLen: Int): LongArray
    @JvmStatic external fun loraTrainerComputeGradients(handle: Long, inputs: IntArray?, inputsBuffer: IntBuffer?,
                                                        inputsOffset: Int, targets: IntArray?, targetsBuffer: IntBuffer?,
                                                        targetsOffset: Int, batch: Int, seqLen: Int): Float
    @JvmStatic external fun loraTrainerReadGrad(handle: Long, index: Int, out: FloatArray?, outBuffer: FloatBuffer?,
                                                offset: Int, length: Int)
    @JvmStatic external fun loraTrainerGetConfig(handle: Long): LongArray
    @JvmStatic external fun loraTrainerStepCount(handle: Long): Long
    @JvmStatic external fun loraTrainerLrAt(handle: Long, step: Long): Float
    @JvmStatic external fun loraTrainerThreads(handle: Long): Int
    @JvmStatic external fun loraTrainerSetThreads(handle: Long, nThreads: Int)
    @JvmStatic external fun loraTrainerSave(handle: Long, path: String?)
    /** {adapter handle, trainer handle}. */
    @JvmStatic external fun loraTrainerResume(path: String?, base: Long): LongArray

    // Coordinator.kt (bindings/kotlin/jni/coordinator_jni.cpp)
    /** {the averaged adapter's handle, LoraAverageReport.fields()...}. */
    @JvmStatic external fun loraAverage(adapters: LongArray?, weights: DoubleArray?, config: LongArray?): LongArray
    @JvmStatic external fun validatorCreate(base: Long, policy: LongArray?): Long
    @JvmStatic external fun validatorFree(handle: Long)
    @JvmStatic external fun validatorSetTrustedKeys(handle: Long, keys: Long)
    @JvmStatic external fun validatorSetReference(handle: Long, resumedFrom: Long, tokens: IntArray?,
                                                  tokensBuffer: IntBuffer?, offset: Int, length: Int)
    @JvmStatic external fun validatorSetHeldout(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                                length: Int)
    /** The report's handle; signature null = unsigned. */
    @JvmStatic external fun loraValidate(handle: Long, bytes: ByteArray?, signature: ByteArray?): Long
    @JvmStatic external fun loraValidateFile(handle: Long, adapterPath: String?, signaturePath: String?): Long
    @JvmStatic external fun validationReportFree(handle: Long)
    /** {ValidationSummary.fields(), its texts}. */
    @JvmStatic external fun validationReportSummary(handle: Long): Array<Any>
    /** {ValidationCheck.fields(), its texts}. */
    @JvmStatic external fun validationReportCheck(handle: Long, index: Int): Array<Any>
    @JvmStatic external fun validationReportJson(handle: Long): ByteArray
    @JvmStatic external fun validationReportAdapter(handle: Long): Long
    @JvmStatic external fun validationReportsCompareRound(validator: Long, reports: LongArray?)
    @JvmStatic external fun loraAdapterPrivatize(adapter: Long, start: Long, config: LongArray?): LongArray
    @JvmStatic external fun privacyEpsilon(noiseMultiplier: Double, rounds: Long, delta: Double): DoubleArray

    // DataFilter.kt (bindings/kotlin/jni/privacy_jni.cpp)
    /** {filter handle, rule handle (0 without a rule)}. */
    @JvmStatic external fun dataFilterCreate(config: LongArray?, replacement: ByteArray?, regions: ByteArray?, rule: RuleBridge?): LongArray
    @JvmStatic external fun dataFilterFree(handle: Long, rule: Long)
    @JvmStatic external fun dataFilterApply(handle: Long, rule: Long, text: ByteArray?): LongArray
    @JvmStatic external fun dataFilterOutput(handle: Long): ByteArray
    @JvmStatic external fun dataFilterSpans(handle: Long): LongArray

    // Signing.kt (bindings/kotlin/jni/signing_jni.cpp)
    @JvmStatic external fun signingKeyGenerate(): Long
    @JvmStatic external fun signingKeyFromSeed(seed: ByteArray?): Long
    @JvmStatic external fun signingKeySave(handle: Long, path: String?)
    @JvmStatic external fun signingKeyLoad(path: String?): Long
    @JvmStatic external fun signingKeyPublic(handle: Long): ByteArray
    @JvmStatic external fun signingKeyFree(handle: Long)
    @JvmStatic external fun keyId(publicKey: ByteArray?): String
    @JvmStatic external fun loraAdapterSign(key: Long, adapter: Long, fileBytes: ByteArray?): ByteArray
    @JvmStatic external fun trustedKeysCreate(): Long
    @JvmStatic external fun trustedKeysAdd(handle: Long, publicKey: ByteArray?)
    @JvmStatic external fun trustedKeysFree(handle: Long)
    /** null when the signature is valid, else the first failed check. */
    @JvmStatic external fun loraSignatureVerify(trusted: Long, adapter: Long, fileBytes: ByteArray?,
                                                signature: ByteArray?): String?

    // TrainSession.kt (bindings/kotlin/jni/train_session_jni.cpp)
    /** adapter 0 = full training of the model. */
    @JvmStatic external fun trainSessionCreate(model: Long, adapter: Long, train: LongArray?, config: LongArray?,
                                               checkpoint: String?): Long
    @JvmStatic external fun trainSessionFree(handle: Long)
    @JvmStatic external fun trainSessionSetData(handle: Long, tokens: IntArray?, tokensBuffer: IntBuffer?, offset: Int,
                                                length: Int)
    @JvmStatic external fun trainSessionRun(handle: Long): LongArray
    @JvmStatic external fun trainSessionCancel(handle: Long)
    @JvmStatic external fun trainSessionSetConditions(handle: Long, conditions: LongArray?)
    @JvmStatic external fun trainSessionReport(handle: Long): LongArray
    /** {capacity, rate's bits, ...}. */
    @JvmStatic external fun trainSessionCoreRates(handle: Long): LongArray
    /** budget < 0: pg_train_memory_plan; else pg_train_memory_max_batch. lora null = full training. */
    @JvmStatic external fun trainMemoryPlan(model: LongArray?, storage: Int, lora: LongArray?, layers: IntArray?,
                                            train: LongArray?, nDataTokens: Long, budget: Long): LongArray
}
