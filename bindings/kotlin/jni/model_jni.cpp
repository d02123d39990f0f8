// The model natives (pg_model_*; Kotlin: Model.kt): configurations, creation, the tokenizer,
// tensors and parameters, provenance, checkpoints and interop, and the forward pass, evaluation
// and generation, each on a session made for the call (pg_session_*). Evaluation and generation call back into Kotlin
// (progress, tokens) through call_args.hpp.
#include "call_args.hpp"
#include "call_session.hpp"
#include "tensor_jni.hpp"

namespace pg_jni {
namespace {

pg_model* model_of(JNIEnv* env, jlong h) { return handle_of<pg_model>(env, h, "Model"); }

bool model_failed(JNIEnv* env, pg_status s, const pg_model* m) { return failed(env, s, m, pg_model_last_error); }

// Model.forward / evaluate / evaluateSampled / generate run on a session made for the one call
// (bindings/call_session.hpp); a failure's message is the thread's pg_last_error(), read by failed().
using pg_bindings::on_call_session;

// A tokenizer's copy through its serialised form (so that a Kotlin Tokenizer never borrows a
// pointer whose owner could free it).
pg_tokenizer* copy_tokenizer(JNIEnv* env, const pg_tokenizer* tok) {
    std::vector<char> data;
    if (!fill_bytes(env, [&](char* d, size_t cap, size_t* len) { return pg_tokenizer_serialize(tok, d, cap, len); },
                    &data))
        return nullptr;
    pg_tokenizer* copy = nullptr;
    if (failed(env, pg_tokenizer_deserialize(data.data(), data.size(), &copy))) return nullptr;
    return copy;
}

// --- configurations ------------------------------------------------------------------------

jlongArray n_model_config_preset(JNIEnv* env, jclass, jstring jname) {
    std::string name;
    if (!get_string(env, jname, "preset name", &name)) return nullptr;
    pg_model_config c = defaults<pg_model_config>();
    if (failed(env, pg_model_config_preset(name.c_str(), &c))) return nullptr;
    return struct_longs(env, c);
}

void n_model_config_validate(JNIEnv* env, jclass, jlongArray jc) {
    pg_model_config c;
    if (options_from(env, jc, &c)) failed(env, pg_model_config_validate(&c));
}

jlong n_model_config_num_params(JNIEnv* env, jclass, jlongArray jc) {
    pg_model_config c;
    if (!options_from(env, jc, &c)) return 0;
    return jlong(pg_model_config_num_params(&c));
}

// --- the handle ----------------------------------------------------------------------------

jlong n_model_create(JNIEnv* env, jclass, jlongArray jc, jlong seed) {
    pg_model_config c;
    if (!options_from(env, jc, &c)) return 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_create(&c, uint64_t(seed), &m))) return 0;
    return to_handle(m);
}

void n_model_free(JNIEnv*, jclass, jlong h) { pg_model_free(reinterpret_cast<pg_model*>(intptr_t(h))); }

jlongArray n_model_get_config(JNIEnv* env, jclass, jlong h) {
    auto* m = model_of(env, h);
    pg_model_config c = defaults<pg_model_config>();
    if (!m || model_failed(env, pg_model_get_config(m, &c), m)) return nullptr;
    return struct_longs(env, c);
}

jlong n_model_num_params(JNIEnv* env, jclass, jlong h) {
    auto* m = model_of(env, h);
    int64_t n = 0;
    if (!m || model_failed(env, pg_model_num_params(m, &n), m)) return 0;
    return jlong(n);
}

// {kind, has_init_seed, init_seed, steps, tokens}.
jlongArray n_model_provenance(JNIEnv* env, jclass, jlong h) {
    auto* m = model_of(env, h);
    pg_provenance_kind kind = PG_PROVENANCE_UNKNOWN;
    int32_t has_seed = 0;
    uint64_t seed = 0;
    int64_t steps = 0, tokens = 0;
    if (!m || model_failed(env, pg_model_provenance(m, &kind, &has_seed, &seed, &steps, &tokens), m)) return nullptr;
    return new_longs(env, {jlong(kind), has_seed, jlong(seed), steps, tokens});
}

void n_model_allow_untrained_base(JNIEnv* env, jclass, jlong h, jboolean allow) {
    auto* m = model_of(env, h);
    if (m) model_failed(env, pg_model_allow_untrained_base(m, allow ? 1 : 0), m);
}

void n_model_set_weight_storage(JNIEnv* env, jclass, jlong h, jint storage) {
    auto* m = model_of(env, h);
    if (m) model_failed(env, pg_model_set_weight_storage(m, pg_weight_storage(storage)), m);
}

// {storage, weight_bytes}.
jlongArray n_model_weight_storage(JNIEnv* env, jclass, jlong h) {
    auto* m = model_of(env, h);
    pg_weight_storage storage = PG_WEIGHTS_FP32;
    int64_t bytes = 0;
    if (!m || model_failed(env, pg_model_weight_storage(m, &storage, &bytes), m)) return nullptr;
    return new_longs(env, {jlong(storage), bytes});
}

void n_model_set_tokenizer(JNIEnv* env, jclass, jlong h, jlong th) {
    auto* m = model_of(env, h);
    auto* tok = m ? handle_of<pg_tokenizer>(env, th, "Tokenizer") : nullptr;
    if (tok) model_failed(env, pg_model_set_tokenizer(m, tok), m);
}

// A new tokenizer handle holding a copy of the model's, or 0 if the model has none.
jlong n_model_get_tokenizer(JNIEnv* env, jclass, jlong h) {
    auto* m = model_of(env, h);
    const pg_tokenizer* tok = nullptr;
    if (!m || model_failed(env, pg_model_get_tokenizer(m, &tok), m) || !tok) return 0;
    return to_handle(copy_tokenizer(env, tok));
}

void n_model_read_params(JNIEnv* env, jclass, jlong h, jfloatArray a, jobject b, jint offset, jint length) {
    auto* m = model_of(env, h);
    const float* data = nullptr;
    int64_t n = 0;
    if (!m || model_failed(env, pg_model_params(m, &data, &n), m)) return;
    copy_out(env, data, n, a, b, offset, length, "readParameters");
}

// Returns the mean loss when targets are given (NaN otherwise); logits go to the logits region
// when one is given (it must hold B*T*vocab_size floats).
jfloat n_model_forward(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint tok_off,
                       jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T, jfloatArray log_a,
                       jobject log_b, jint log_off, jint log_len, jint n_threads) {
    auto* m = model_of(env, h);
    ForwardArgs a;
    if (!m || !a.open(env, m, B, T, tok_a, tok_b, tok_off, tgt_a, tgt_b, tgt_off, log_a, log_b, log_off, log_len))
        return 0;
    float loss = 0.0f;
    const pg_status s = on_call_session(m, n_threads, [&](pg_session* session) {
        return pg_session_forward(session, a.tokens.data(), B, T, a.targets_data(), a.logits_data(), a.loss_out(&loss));
    });
    if (failed(env, s)) return 0;
    return a.finish(loss);
}

// --- checkpoints and interop ---------------------------------------------------------------

void n_model_save(JNIEnv* env, jclass, jlong h, jstring jpath, jlongArray joptions) {
    auto* m = model_of(env, h);
    std::string path;
    pg_save_options o;
    if (!m || !get_string(env, jpath, "path", &path) || !options_from(env, joptions, &o)) return;
    model_failed(env, pg_model_save(m, path.c_str(), &o), m);
}

jlong n_model_load(JNIEnv* env, jclass, jstring jpath) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_load(path.c_str(), &m))) return 0;
    return to_handle(m);
}

jlong n_model_load_with(JNIEnv* env, jclass, jstring jpath, jlongArray joptions) {
    std::string path;
    pg_load_options o;
    if (!get_string(env, jpath, "path", &path) || !options_from(env, joptions, &o)) return 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_load_with(path.c_str(), &o, &m))) return 0;
    return to_handle(m);
}

// A Java array's bytes in place where the VM allows it (ART and HotSpot may copy), released
// without writing back.
jlong n_model_load_from_bytes(JNIEnv* env, jclass, jbyteArray jdata, jint offset, jint length) {
    if (!jdata) return throw_invalid(env, "data is null"), 0;
    if (offset < 0 || length < 0 || int64_t(offset) + length > env->GetArrayLength(jdata))
        return throw_invalid(env, "offset " + std::to_string(offset) + " and length " + std::to_string(length) +
                                      " are outside the array"), 0;
    jbyte* bytes = env->GetByteArrayElements(jdata, nullptr);
    if (!bytes) return 0;  // OutOfMemoryError pending
    pg_model* m = nullptr;
    const pg_status s = pg_model_load_from_memory(bytes + offset, std::size_t(length), nullptr, &m);
    env->ReleaseByteArrayElements(jdata, bytes, JNI_ABORT);
    return failed(env, s) ? 0 : to_handle(m);
}

// A direct ByteBuffer's bytes [position, position + length), read in place.
jlong n_model_load_from_direct(JNIEnv* env, jclass, jobject jbuffer, jlong position, jlong length) {
    auto* base = jbuffer ? static_cast<const uint8_t*>(env->GetDirectBufferAddress(jbuffer)) : nullptr;
    if (!base) return throw_invalid(env, "data is not a direct ByteBuffer"), 0;
    const jlong capacity = env->GetDirectBufferCapacity(jbuffer);
    if (position < 0 || length < 0 || position + length > capacity)
        return throw_invalid(env, "position " + std::to_string(position) + " and length " + std::to_string(length) +
                                      " are outside the buffer's " + std::to_string(capacity) + " bytes"), 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_load_from_memory(base + position, std::size_t(length), nullptr, &m))) return 0;
    return to_handle(m);
}

jlong n_model_load_from_fd(JNIEnv* env, jclass, jint fd, jlong offset, jlong length) {
    pg_model* m = nullptr;
    if (failed(env, pg_model_load_from_fd(fd, offset, length, nullptr, &m))) return 0;
    return to_handle(m);
}

jboolean n_model_weights_mapped(JNIEnv* env, jclass, jlong h) {
    auto* m = model_of(env, h);
    int32_t mapped = 0;
    if (!m || model_failed(env, pg_model_weights_mapped(m, &mapped), m)) return JNI_FALSE;
    return mapped ? JNI_TRUE : JNI_FALSE;
}

void n_model_export(JNIEnv* env, jclass, jlong h, jint format, jstring jpath) {
    auto* m = model_of(env, h);
    std::string path;
    if (!m || !get_string(env, jpath, "path", &path)) return;
    model_failed(env, pg_model_export(m, pg_interop_format(format), path.c_str()), m);
}

jlong n_model_import(JNIEnv* env, jclass, jint format, jstring jpath, jlongArray joptions) {
    std::string path;
    pg_load_options o;
    if (!get_string(env, jpath, "path", &path) || !options_from(env, joptions, &o)) return 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_import_with(pg_interop_format(format), path.c_str(), &o, &m))) return 0;
    return to_handle(m);
}

// --- evaluation and sampling ---------------------------------------------------------------

// `bridge` (a ProgressBridge) may be null. Returns EvalResult.fields().
jlongArray n_evaluate(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset, jint length,
                      jlongArray jconfig, jobject bridge) {
    auto* m = model_of(env, h);
    IntBulk tokens;
    Callback cb;
    pg_eval_config c;
    if (!m || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true) ||
        !eval_config_from(env, jconfig, bridge, &cb, &c))
        return nullptr;
    pg_eval_result r = blank<pg_eval_result>();
    const pg_status s = on_call_session(m, c.n_threads, [&](pg_session* session) {
        return pg_session_evaluate(session, tokens.data(), tokens.size(), &c, &r);
    });
    if (cb.rethrow(env) || failed(env, s)) return nullptr;
    return struct_longs(env, r);
}

jlongArray n_evaluate_sampled(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset,
                              jint length, jint n_batches, jint batch_size, jlong seed, jint n_threads) {
    auto* m = model_of(env, h);
    IntBulk tokens;
    if (!m || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true)) return nullptr;
    pg_eval_result r = blank<pg_eval_result>();
    pg_eval_sampled_config c;
    pg_eval_sampled_config_default(&c);
    c.n_batches = n_batches;
    c.batch_size = batch_size;
    c.seed = uint64_t(seed);
    const pg_status s = on_call_session(m, n_threads, [&](pg_session* session) {
        return pg_session_evaluate_sampled(session, tokens.data(), tokens.size(), &c, &r);
    });
    if (failed(env, s)) return nullptr;
    return struct_longs(env, r);
}

// Generated tokens go to the bridge (a TokenBridge, may be null) and the first `capacity` of them
// to the output region (may be absent). Returns how many were written.
jint n_generate(JNIEnv* env, jclass, jlong h, jintArray p_a, jobject p_b, jint p_off, jint p_len,
                jlongArray jconfig, jobjectArray jstops, jobject bridge, jintArray out_a, jobject out_b,
                jint out_off, jint out_cap) {
    auto* m = model_of(env, h);
    IntBulk prompt;
    SampleArgs args;
    GenerateOutput out;
    if (!m || !prompt.open(env, p_a, p_b, p_off, p_len, "prompt", true) ||
        !sample_config_from(env, jconfig, jstops, bridge, &args) || !out.open(env, out_a, out_b, out_off, out_cap))
        return 0;
    // A fresh session has nothing to continue: the prompt is the caller's argument.
    if (prompt.size() == 0) return throw_invalid(env, "generate: the prompt is empty (at least one token)"), 0;
    size_t n_out = 0;
    const pg_status s = on_call_session(m, args.config.n_threads, [&](pg_session* session) {
        const pg_status appended = pg_session_append(session, prompt.data(), prompt.size());
        return appended == PG_OK ? pg_session_generate(session, &args.config, out.data(), out.capacity(), &n_out)
                                 : appended;
    });
    if (args.cb.rethrow(env) || failed(env, s)) return 0;
    return out.commit(n_out);
}

const JNINativeMethod kModelNatives[] = {
    PG_NATIVE("modelConfigPreset", "(Ljava/lang/String;)[J", n_model_config_preset),
    PG_NATIVE("modelConfigValidate", "([J)V", n_model_config_validate),
    PG_NATIVE("modelConfigNumParams", "([J)J", n_model_config_num_params),
    PG_NATIVE("modelCreate", "([JJ)J", n_model_create),
    PG_NATIVE("modelFree", "(J)V", n_model_free),
    PG_NATIVE("modelGetConfig", "(J)[J", n_model_get_config),
    PG_NATIVE("modelNumParams", "(J)J", n_model_num_params),
    PG_NATIVE("modelProvenance", "(J)[J", n_model_provenance),
    PG_NATIVE("modelAllowUntrainedBase", "(JZ)V", n_model_allow_untrained_base),
    PG_NATIVE("modelSetWeightStorage", "(JI)V", n_model_set_weight_storage),
    PG_NATIVE("modelWeightStorage", "(J)[J", n_model_weight_storage),
    PG_NATIVE("modelSetTokenizer", "(JJ)V", n_model_set_tokenizer),
    PG_NATIVE("modelGetTokenizer", "(J)J", n_model_get_tokenizer),
    PG_NATIVE("modelNumTensors", "(J)I", n_num_tensors<pg_model>),
    PG_NATIVE("modelTensorName", "(JI)Ljava/lang/String;", n_tensor_name<pg_model>),
    PG_NATIVE("modelTensorShape", "(JI)[J", n_tensor_shape<pg_model>),
    PG_NATIVE("modelFindTensor", "(JLjava/lang/String;)I", n_find_tensor<pg_model>),
    PG_NATIVE("modelReadTensor", "(JI" PG_SIG_FLOATS ")V", n_read_tensor<pg_model>),
    PG_NATIVE("modelWriteTensor", "(JI" PG_SIG_FLOATS ")V", n_write_tensor<pg_model>),
    PG_NATIVE("modelReadParams", "(J" PG_SIG_FLOATS ")V", n_model_read_params),
    PG_NATIVE("modelForward", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III" PG_SIG_FLOATS "I)F", n_model_forward),
    PG_NATIVE("modelSave", "(JLjava/lang/String;[J)V", n_model_save),
    PG_NATIVE("modelLoad", "(Ljava/lang/String;)J", n_model_load),
    PG_NATIVE("modelLoadWith", "(Ljava/lang/String;[J)J", n_model_load_with),
    PG_NATIVE("modelLoadFromBytes", "([BII)J", n_model_load_from_bytes),
    PG_NATIVE("modelLoadFromDirect", "(Ljava/nio/ByteBuffer;JJ)J", n_model_load_from_direct),
    PG_NATIVE("modelLoadFromFd", "(IJJ)J", n_model_load_from_fd),
    PG_NATIVE("modelWeightsMapped", "(J)Z", n_model_weights_mapped),
    PG_NATIVE("modelExport", "(JILjava/lang/String;)V", n_model_export),
    PG_NATIVE("modelImport", "(ILjava/lang/String;[J)J", n_model_import),
    PG_NATIVE("evaluate", "(J" PG_SIG_INTS "[JLphonegpt/ProgressBridge;)[J", n_evaluate),
    PG_NATIVE("evaluateSampled", "(J" PG_SIG_INTS "IIJI)[J", n_evaluate_sampled),
    PG_NATIVE("generate", "(J" PG_SIG_INTS "[J[Ljava/lang/String;Lphonegpt/TokenBridge;" PG_SIG_INTS ")I", n_generate),
};

}  // namespace

bool register_model_natives(JNIEnv* env, jclass natives) { return register_natives(env, natives, kModelNatives); }

}  // namespace pg_jni
