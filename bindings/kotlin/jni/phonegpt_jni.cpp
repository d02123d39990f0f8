// The JNI shim of the Kotlin binding: a thin layer over the public C API (phonegpt.h is the only
// libphonegpt header included; the shim links the shared library), registered with
// RegisterNatives in JNI_OnLoad so that JNI_OnLoad is its only exported symbol. This file has
// the library, model, trainer and LoRA adapter natives and JNI_OnLoad; other areas have their
// own file (session_jni.cpp, tokenizer_jni.cpp, lora_jni.cpp, privacy_jni.cpp, signing_jni.cpp)
// with its registration function; all share jni_support.hpp.
//
// What the Kotlin side (bindings/kotlin/src/phonegpt/Native.kt) guarantees and what the shim
// still checks: Kotlin passes live handles (it serialises use and close with a per-handle lock),
// but every pointer, length and offset that comes from Java is checked here again, so a wrong
// call from Java gives an exception, never a crash.
//
// Errors: a failed C call throws phonegpt.PhoneGptException (the subclass of its status, built
// by PhoneGptException.fromStatus) with the library's message; the shim then returns a dummy
// value that the JVM discards.
//
// Bulk data: token, logit and weight arguments come either as a direct NIO buffer (used in
// place: GetDirectBufferAddress, no copy) or as a Java array (copied with Get/Set<T>ArrayRegion;
// never pinned with GetPrimitiveArrayCritical, because long calls run library callbacks that
// call back into Java, which a critical section forbids).
//
// Callbacks: evaluation progress and generated tokens call a Kotlin bridge object. An exception
// thrown by Kotlin code inside a callback is taken out of the JNI env (so the C code is never
// unwound through), the library is asked to stop, and the exception is re-thrown once the C call
// has returned.
#include "jni_support.hpp"

namespace {

using namespace pg_jni;

// ---------------------------------------------------------------------------------------------
// Configurations as long arrays; the field order is the struct's (ModelConfig.kt, TrainConfig.kt)
// ---------------------------------------------------------------------------------------------

constexpr std::size_t kModelConfigFields = 7;
std::vector<jlong> model_config_fields(const pg_model_config& c) {
    return {c.n_layer, c.n_head, c.n_embd, c.n_ctx, c.vocab_size, c.padded_vocab_size,
            float_to_bits(c.layernorm_eps)};
}
bool model_config_from(JNIEnv* env, jlongArray a, pg_model_config* c) {
    std::vector<jlong> f;
    if (!get_longs(env, a, kModelConfigFields, "ModelConfig", &f)) return false;
    pg_model_config_default(c);
    for (std::size_t i = 0; i < 6; ++i) {
        if (f[i] < INT32_MIN || f[i] > INT32_MAX) {
            throw_invalid(env, "ModelConfig: field " + std::to_string(i) + " is outside int32");
            return false;
        }
    }
    c->n_layer = int32_t(f[0]);
    c->n_head = int32_t(f[1]);
    c->n_embd = int32_t(f[2]);
    c->n_ctx = int32_t(f[3]);
    c->vocab_size = int32_t(f[4]);
    c->padded_vocab_size = int32_t(f[5]);
    c->layernorm_eps = bits_to_float(f[6]);
    return true;
}

// =============================================================================================
// The natives (phonegpt.Native, one static method each; registered in JNI_OnLoad)
// =============================================================================================

// --- library -------------------------------------------------------------------------------

jint n_version_number(JNIEnv*, jclass) { return jint(pg_version_number()); }
jint n_header_version_number(JNIEnv*, jclass) { return PG_VERSION_NUMBER; }
jstring n_version_string(JNIEnv* env, jclass) { return env->NewStringUTF(pg_version_string()); }
jstring n_simd_arch(JNIEnv* env, jclass) { return env->NewStringUTF(pg_simd_arch()); }
jstring n_status_name(JNIEnv* env, jclass, jint status) {
    return env->NewStringUTF(pg_status_name(pg_status(status)));
}
jstring n_last_error(JNIEnv* env, jclass) { return env->NewStringUTF(pg_last_error()); }

jlong n_split_index(JNIEnv* env, jclass, jlong n, jdouble fraction) {
    if (n < 0) {
        throw_invalid(env, "splitIndex: n is negative");
        return 0;
    }
    size_t n_train = 0;
    if (failed(env, pg_split_index(size_t(n), fraction, &n_train))) return 0;
    return jlong(n_train);
}

jbyteArray n_read_file(JNIEnv* env, jclass, jstring jpath) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return nullptr;
    char* data = nullptr;
    size_t len = 0;
    if (failed(env, pg_read_file(path.c_str(), &data, &len))) return nullptr;
    if (len > size_t(INT32_MAX)) {
        pg_buffer_free(data);
        throw_status(env, PG_ERR_UNSUPPORTED, ("readFile: " + path + " is larger than a Java array").c_str());
        return nullptr;
    }
    jbyteArray out = new_bytes(env, data, len);
    pg_buffer_free(data);
    return out;
}

// A tokenizer's copy through its serialised form (so that a Kotlin Tokenizer never borrows a
// pointer whose owner could free it).
pg_tokenizer* copy_tokenizer(JNIEnv* env, pg_tokenizer* tok) {
    std::vector<char> data;
    if (!fill_bytes(env, [&](char* d, size_t cap, size_t* len) { return pg_tokenizer_serialize(tok, d, cap, len); },
                    &data))
        return nullptr;
    pg_tokenizer* copy = nullptr;
    if (failed(env, pg_tokenizer_deserialize(data.data(), data.size(), &copy))) return nullptr;
    return copy;
}

// --- model configurations ------------------------------------------------------------------

jlongArray n_model_config_default(JNIEnv* env, jclass) {
    pg_model_config c;
    pg_model_config_default(&c);
    return new_longs(env, model_config_fields(c));
}

jlongArray n_model_config_preset(JNIEnv* env, jclass, jstring jname) {
    std::string name;
    if (!get_string(env, jname, "preset name", &name)) return nullptr;
    pg_model_config c;
    pg_model_config_default(&c);
    if (failed(env, pg_model_config_preset(name.c_str(), &c))) return nullptr;
    return new_longs(env, model_config_fields(c));
}

void n_model_config_validate(JNIEnv* env, jclass, jlongArray jc) {
    pg_model_config c;
    if (model_config_from(env, jc, &c)) failed(env, pg_model_config_validate(&c));
}

jlong n_model_config_num_params(JNIEnv* env, jclass, jlongArray jc) {
    pg_model_config c;
    if (!model_config_from(env, jc, &c)) return 0;
    return jlong(pg_model_config_num_params(&c));
}

// --- models --------------------------------------------------------------------------------

jlong n_model_create(JNIEnv* env, jclass, jlongArray jc, jlong seed) {
    pg_model_config c;
    if (!model_config_from(env, jc, &c)) return 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_create(&c, uint64_t(seed), &m))) return 0;
    return to_handle(m);
}

void n_model_free(JNIEnv*, jclass, jlong h) { pg_model_free(reinterpret_cast<pg_model*>(intptr_t(h))); }

jlongArray n_model_get_config(JNIEnv* env, jclass, jlong h) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    pg_model_config c;
    pg_model_config_default(&c);
    if (!m || failed(env, pg_model_get_config(m, &c))) return nullptr;
    return new_longs(env, model_config_fields(c));
}

void n_model_allow_untrained_base(JNIEnv* env, jclass, jlong h, jboolean allow) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    if (m) failed(env, pg_model_allow_untrained_base(m, allow ? 1 : 0));
}

jlong n_model_num_params(JNIEnv* env, jclass, jlong h) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    int64_t n = 0;
    if (!m || failed(env, pg_model_num_params(m, &n))) return 0;
    return jlong(n);
}

void n_model_set_tokenizer(JNIEnv* env, jclass, jlong h, jlong th) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    auto* tok = m ? handle_of<pg_tokenizer>(env, th, "Tokenizer") : nullptr;
    if (tok) failed(env, pg_model_set_tokenizer(m, tok));
}

// A new tokenizer handle holding a copy of the model's, or 0 if the model has none.
jlong n_model_get_tokenizer(JNIEnv* env, jclass, jlong h) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    pg_tokenizer* tok = nullptr;
    if (!m || failed(env, pg_model_get_tokenizer(m, &tok)) || !tok) return 0;
    return to_handle(copy_tokenizer(env, tok));
}

// Named tensors, the same calls for a model's weights and an adapter's A and B matrices.
template <class H> struct Tensors;
template <> struct Tensors<pg_model> {
    static constexpr const char* kind = "Model";
    static pg_status count(const pg_model* h, int32_t* n) { return pg_model_num_tensors(h, n); }
    static pg_status info(const pg_model* h, int32_t i, pg_tensor_info* t) { return pg_model_tensor_info(h, i, t); }
    static pg_status find(const pg_model* h, const char* name, int32_t* i) { return pg_model_find_tensor(h, name, i); }
    static pg_status data(pg_model* h, int32_t i, float** d) { return pg_model_tensor_data_mutable(h, i, d); }
};
template <> struct Tensors<pg_lora_adapter> {
    static constexpr const char* kind = "LoraAdapter";
    static pg_status count(const pg_lora_adapter* h, int32_t* n) { return pg_lora_adapter_num_tensors(h, n); }
    static pg_status info(const pg_lora_adapter* h, int32_t i, pg_tensor_info* t) {
        return pg_lora_adapter_tensor_info(h, i, t);
    }
    static pg_status find(const pg_lora_adapter* h, const char* name, int32_t* i) {
        return pg_lora_adapter_find_tensor(h, name, i);
    }
    static pg_status data(pg_lora_adapter* h, int32_t i, float** d) { return pg_lora_adapter_tensor_data_mutable(h, i, d); }
};

template <class H>
bool tensor_info(JNIEnv* env, H* h, jint index, pg_tensor_info* info) {
    std::memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    return !failed(env, Tensors<H>::info(h, index, info));
}

template <class H>
jint n_num_tensors(JNIEnv* env, jclass, jlong handle) {
    auto* h = handle_of<H>(env, handle, Tensors<H>::kind);
    int32_t n = 0;
    if (!h || failed(env, Tensors<H>::count(h, &n))) return 0;
    return n;
}

template <class H>
jstring n_tensor_name(JNIEnv* env, jclass, jlong handle, jint index) {
    auto* h = handle_of<H>(env, handle, Tensors<H>::kind);
    pg_tensor_info info;
    if (!h || !tensor_info(env, h, index, &info)) return nullptr;
    return env->NewStringUTF(info.name);
}

template <class H>
jlongArray n_tensor_shape(JNIEnv* env, jclass, jlong handle, jint index) {
    auto* h = handle_of<H>(env, handle, Tensors<H>::kind);
    pg_tensor_info info;
    if (!h || !tensor_info(env, h, index, &info)) return nullptr;
    return new_longs(env, std::vector<jlong>(info.shape, info.shape + info.n_dims));
}

template <class H>
jint n_find_tensor(JNIEnv* env, jclass, jlong handle, jstring jname) {
    auto* h = handle_of<H>(env, handle, Tensors<H>::kind);
    std::string name;
    if (!h || !get_string(env, jname, "tensor name", &name)) return -1;
    int32_t index = -1;
    if (failed(env, Tensors<H>::find(h, name.c_str(), &index))) return -1;
    return index;
}

// Copies `n` floats from `src` into the array or buffer region, which must hold exactly n.
void copy_out(JNIEnv* env, const float* src, int64_t n, jfloatArray a, jobject b, jint offset, jint length,
              const char* what) {
    if (int64_t(length) != n) {
        throw_status(env, PG_ERR_GEOMETRY,
                     (std::string(what) + ": the destination holds " + std::to_string(length) +
                      " floats, the tensor has " + std::to_string(n)).c_str());
        return;
    }
    FloatBulk dst;
    if (!dst.open(env, a, b, offset, length, what, false)) return;
    if (n > 0) std::memcpy(dst.data(), src, std::size_t(n) * sizeof(float));
    dst.commit(std::size_t(n));
}

template <class H>
void n_read_tensor(JNIEnv* env, jclass, jlong handle, jint index, jfloatArray a, jobject b, jint offset, jint length) {
    auto* h = handle_of<H>(env, handle, Tensors<H>::kind);
    pg_tensor_info info;
    if (!h || !tensor_info(env, h, index, &info)) return;
    copy_out(env, info.data, info.numel, a, b, offset, length, "readTensor");
}

template <class H>
void n_write_tensor(JNIEnv* env, jclass, jlong handle, jint index, jfloatArray a, jobject b, jint offset, jint length) {
    auto* h = handle_of<H>(env, handle, Tensors<H>::kind);
    pg_tensor_info info;
    if (!h || !tensor_info(env, h, index, &info)) return;
    if (int64_t(length) != info.numel) {
        throw_status(env, PG_ERR_GEOMETRY, ("writeTensor: " + std::string(info.name) + " has " +
                                            std::to_string(info.numel) + " floats, got " +
                                            std::to_string(length)).c_str());
        return;
    }
    FloatBulk src;
    if (!src.open(env, a, b, offset, length, "writeTensor", true)) return;
    float* data = nullptr;
    if (failed(env, Tensors<H>::data(h, index, &data))) return;
    if (length > 0) std::memcpy(data, src.data(), std::size_t(length) * sizeof(float));
}

void n_model_read_params(JNIEnv* env, jclass, jlong h, jfloatArray a, jobject b, jint offset, jint length) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    const float* data = nullptr;
    int64_t n = 0;
    if (!m || failed(env, pg_model_params(m, &data, &n))) return;
    copy_out(env, data, n, a, b, offset, length, "readParameters");
}

// Returns the mean loss when targets are given (NaN otherwise); logits go to the logits region
// when one is given (it must hold B*T*vocab_size floats).
jfloat n_model_forward(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint tok_off,
                       jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T, jfloatArray log_a,
                       jobject log_b, jint log_off, jint log_len, jint n_threads) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    ForwardArgs a;
    if (!m || !a.open(env, m, B, T, tok_a, tok_b, tok_off, tgt_a, tgt_b, tgt_off, log_a, log_b, log_off, log_len))
        return 0;
    float loss = 0.0f;
    if (failed(env, pg_model_forward(m, a.tokens.data(), B, T, a.targets_data(), a.logits_data(), a.loss_out(&loss),
                                     n_threads)))
        return 0;
    return a.finish(loss);
}

// --- checkpoints and interop ---------------------------------------------------------------

pg_save_options save_options(jint level) {
    pg_save_options o;
    pg_save_options_default(&o);
    o.compression_level = level;
    return o;
}

void n_model_save(JNIEnv* env, jclass, jlong h, jstring jpath, jint level) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    std::string path;
    if (!m || !get_string(env, jpath, "path", &path)) return;
    pg_save_options o = save_options(level);
    failed(env, pg_model_save(m, path.c_str(), &o));
}

jlong n_model_load(JNIEnv* env, jclass, jstring jpath) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_load(path.c_str(), &m))) return 0;
    return to_handle(m);
}

void n_model_export(JNIEnv* env, jclass, jlong h, jint format, jstring jpath) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    std::string path;
    if (!m || !get_string(env, jpath, "path", &path)) return;
    failed(env, pg_model_export(m, pg_interop_format(format), path.c_str()));
}

jlong n_model_import(JNIEnv* env, jclass, jint format, jstring jpath) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return 0;
    pg_model* m = nullptr;
    if (failed(env, pg_model_import(pg_interop_format(format), path.c_str(), &m))) return 0;
    return to_handle(m);
}

// --- evaluation and sampling ---------------------------------------------------------------

jintArray n_eval_config_default(JNIEnv* env, jclass) {
    pg_eval_config c;
    pg_eval_config_default(&c);
    const jint f[4] = {c.window, c.stride, c.batch_size, c.n_threads};
    jintArray a = env->NewIntArray(4);
    if (a) env->SetIntArrayRegion(a, 0, 4, f);
    return a;
}

jlongArray n_sample_config_default(JNIEnv* env, jclass) {
    pg_sample_config c;
    pg_sample_config_default(&c);
    return new_longs(env, {float_to_bits(c.temperature), c.top_k, float_to_bits(c.top_p), jlong(c.seed),
                           c.max_tokens, c.n_threads, c.slide_keep});
}

// config: window, stride, batch_size, n_threads. `bridge` (a ProgressBridge) may be null.
jdoubleArray n_evaluate(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset, jint length,
                        jintArray jconfig, jobject bridge) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    IntBulk tokens;
    Callback cb;
    pg_eval_config c;
    if (!m || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true) ||
        !eval_config_from(env, jconfig, bridge, &cb, &c))
        return nullptr;
    pg_eval_result r = new_eval_result();
    pg_status s = pg_evaluate(m, tokens.data(), tokens.size(), &c, &r);
    if (cb.rethrow(env) || failed(env, s)) return nullptr;
    return eval_result_fields(env, r);
}

jdoubleArray n_evaluate_sampled(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset,
                                jint length, jint n_batches, jint batch_size, jlong seed, jint n_threads) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    IntBulk tokens;
    if (!m || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true)) return nullptr;
    pg_eval_result r = new_eval_result();
    if (failed(env, pg_evaluate_sampled(m, tokens.data(), tokens.size(), n_batches, batch_size, uint64_t(seed),
                                        n_threads, &r)))
        return nullptr;
    return eval_result_fields(env, r);
}

// config: temperature (float bits), top_k, top_p (float bits), seed, max_tokens, n_threads,
// slide_keep. Generated tokens go to the bridge (a TokenBridge, may be null) and the first
// `capacity` of them to the output region (may be absent). Returns how many were written.
jint n_generate(JNIEnv* env, jclass, jlong h, jintArray p_a, jobject p_b, jint p_off, jint p_len,
                jlongArray jconfig, jobjectArray jstops, jobject bridge, jintArray out_a, jobject out_b,
                jint out_off, jint out_cap) {
    auto* m = handle_of<pg_model>(env, h, "Model");
    IntBulk prompt;
    SampleArgs args;
    GenerateOutput out;
    if (!m || !prompt.open(env, p_a, p_b, p_off, p_len, "prompt", true) ||
        !sample_config_from(env, jconfig, jstops, bridge, &args) || !out.open(env, out_a, out_b, out_off, out_cap))
        return 0;
    size_t n_out = 0;
    pg_status s = pg_generate(m, prompt.data(), prompt.size(), &args.config, out.data(), out.capacity(), &n_out);
    if (args.cb.rethrow(env) || failed(env, s)) return 0;
    return out.commit(n_out);
}

// --- training ------------------------------------------------------------------------------

jlongArray n_train_config_default(JNIEnv* env, jclass) {
    pg_train_config c;
    pg_train_config_default(&c);
    return new_longs(env, train_config_fields(c));
}

jlong n_trainer_create(JNIEnv* env, jclass, jlong mh, jlongArray jc) {
    auto* m = handle_of<pg_model>(env, mh, "Model");
    pg_train_config c;
    if (!m || !train_config_from(env, jc, &c)) return 0;
    pg_trainer* t = nullptr;
    if (failed(env, pg_trainer_create(m, &c, &t))) return 0;
    return to_handle(t);
}

void n_trainer_free(JNIEnv*, jclass, jlong h) { pg_trainer_free(reinterpret_cast<pg_trainer*>(intptr_t(h))); }

jlongArray n_trainer_get_config(JNIEnv* env, jclass, jlong h) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    pg_train_config c;
    pg_train_config_default(&c);
    if (!t || failed(env, pg_trainer_get_config(t, &c))) return nullptr;
    return new_longs(env, train_config_fields(c));
}

void n_trainer_set_data(JNIEnv* env, jclass, jlong h, jintArray a, jobject b, jint offset, jint length) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    IntBulk tokens;
    if (!t || !tokens.open(env, a, b, offset, length, "tokens", true)) return;
    failed(env, pg_trainer_set_data(t, tokens.data(), tokens.size()));
}

jlongArray n_trainer_step(JNIEnv* env, jclass, jlong h) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    pg_step_result r = blank_step_result();
    if (!t || failed(env, pg_trainer_step(t, &r))) return nullptr;
    return step_result_fields(env, r);
}

// Opens the [B, T] inputs and targets of a caller-given batch.
jlongArray n_trainer_step_batch(JNIEnv* env, jclass, jlong h, jintArray in_a, jobject in_b, jint in_off,
                                jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    IntBulk in, tgt;
    if (!t || !open_batch(env, B, T, &in, in_a, in_b, in_off, &tgt, tgt_a, tgt_b, tgt_off)) return nullptr;
    pg_step_result r = blank_step_result();
    if (failed(env, pg_trainer_step_batch(t, in.data(), tgt.data(), B, T, &r))) return nullptr;
    return step_result_fields(env, r);
}

jfloat n_trainer_compute_gradients(JNIEnv* env, jclass, jlong h, jintArray in_a, jobject in_b, jint in_off,
                                   jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    IntBulk in, tgt;
    if (!t || !open_batch(env, B, T, &in, in_a, in_b, in_off, &tgt, tgt_a, tgt_b, tgt_off)) return 0;
    float loss = 0.0f;
    if (failed(env, pg_trainer_compute_gradients(t, in.data(), tgt.data(), B, T, &loss))) return 0;
    return loss;
}

// Copies the gradient of tensor `index` (numel floats; Kotlin knows the shape from the model).
void n_trainer_read_grad(JNIEnv* env, jclass, jlong h, jint index, jfloatArray a, jobject b, jint offset,
                         jint length) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    const float* data = nullptr;
    if (!t || failed(env, pg_trainer_grad(t, index, &data))) return;
    FloatBulk dst;
    if (!dst.open(env, a, b, offset, length, "readGrad", false)) return;
    if (length > 0) std::memcpy(dst.data(), data, std::size_t(length) * sizeof(float));
    dst.commit(std::size_t(length));
}

jlong n_trainer_step_count(JNIEnv* env, jclass, jlong h) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    int64_t step = 0;
    if (!t || failed(env, pg_trainer_step_count(t, &step))) return 0;
    return jlong(step);
}

jfloat n_trainer_lr_at(JNIEnv* env, jclass, jlong h, jlong step) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    float lr = 0.0f;
    if (!t || failed(env, pg_trainer_lr_at(t, step, &lr))) return 0;
    return lr;
}

void n_trainer_save(JNIEnv* env, jclass, jlong h, jstring jpath, jint level) {
    auto* t = handle_of<pg_trainer>(env, h, "Trainer");
    std::string path;
    if (!t || !get_string(env, jpath, "path", &path)) return;
    pg_save_options o = save_options(level);
    failed(env, pg_trainer_save(t, path.c_str(), &o));
}

// Returns {model handle, trainer handle}.
jlongArray n_trainer_resume(JNIEnv* env, jclass, jstring jpath) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return nullptr;
    pg_model* m = nullptr;
    pg_trainer* t = nullptr;
    if (failed(env, pg_trainer_resume(path.c_str(), &m, &t))) return nullptr;
    jlongArray out = new_longs(env, {to_handle(m), to_handle(t)});
    if (!out) {
        pg_trainer_free(t);
        pg_model_free(m);
    }
    return out;
}

// --- LoRA adapters -------------------------------------------------------------------------

// fields: rank, alpha (bits), use_rslora, dropout (bits), target_modules, init_seed, freeze_a;
// the layer list travels as its own int array (null = every layer).
constexpr std::size_t kLoraConfigFields = 7;

std::vector<jlong> lora_config_fields(const pg_lora_config& c) {
    return {c.rank, float_to_bits(c.alpha), c.use_rslora, float_to_bits(c.dropout), jlong(c.target_modules),
            jlong(c.init_seed), c.freeze_a};
}

// Fills `c` from the fields and layers; `layers` keeps the list alive for the call.
bool lora_config_from(JNIEnv* env, jlongArray jc, jintArray jlayers, pg_lora_config* c, std::vector<int32_t>* layers) {
    std::vector<jlong> f;
    if (!get_longs(env, jc, kLoraConfigFields, "LoraConfig", &f)) return false;
    for (std::size_t i : {0, 2, 6}) {
        if (f[i] < INT32_MIN || f[i] > INT32_MAX) {
            throw_invalid(env, "LoraConfig: field " + std::to_string(i) + " is outside int32");
            return false;
        }
    }
    if (f[4] < 0 || f[4] > jlong(UINT32_MAX)) {
        throw_invalid(env, "LoraConfig: target_modules is outside uint32");
        return false;
    }
    pg_lora_config_default(c);
    c->rank = int32_t(f[0]);
    c->alpha = bits_to_float(f[1]);
    c->use_rslora = int32_t(f[2]);
    c->dropout = bits_to_float(f[3]);
    c->target_modules = uint32_t(f[4]);
    c->init_seed = uint64_t(f[5]);
    c->freeze_a = int32_t(f[6]);
    if (jlayers) {
        layers->resize(std::size_t(env->GetArrayLength(jlayers)));
        if (!layers->empty())
            env->GetIntArrayRegion(jlayers, 0, jsize(layers->size()), reinterpret_cast<jint*>(layers->data()));
        c->layers = layers->empty() ? nullptr : layers->data();
        c->n_layers = int32_t(layers->size());
    }
    return !env->ExceptionCheck();
}

jlongArray n_lora_config_default(JNIEnv* env, jclass) {
    pg_lora_config c;
    pg_lora_config_default(&c);
    return new_longs(env, lora_config_fields(c));
}

void n_lora_config_validate(JNIEnv* env, jclass, jlongArray jc, jintArray jlayers) {
    pg_lora_config c;
    std::vector<int32_t> layers;
    if (lora_config_from(env, jc, jlayers, &c, &layers)) failed(env, pg_lora_config_validate(&c));
}

jlong n_lora_adapter_create(JNIEnv* env, jclass, jlong mh, jlongArray jc, jintArray jlayers) {
    auto* m = handle_of<pg_model>(env, mh, "Model");
    pg_lora_config c;
    std::vector<int32_t> layers;
    if (!m || !lora_config_from(env, jc, jlayers, &c, &layers)) return 0;
    pg_lora_adapter* a = nullptr;
    if (failed(env, pg_lora_adapter_create(m, &c, &a))) return 0;
    return to_handle(a);
}

void n_lora_adapter_free(JNIEnv*, jclass, jlong h) {
    pg_lora_adapter_free(reinterpret_cast<pg_lora_adapter*>(intptr_t(h)));
}

bool lora_config_of(JNIEnv* env, jlong h, pg_lora_config* c) {
    auto* a = handle_of<pg_lora_adapter>(env, h, "LoraAdapter");
    pg_lora_config_default(c);
    return a && !failed(env, pg_lora_adapter_get_config(a, c));
}

jlongArray n_lora_adapter_get_config(JNIEnv* env, jclass, jlong h) {
    pg_lora_config c;
    if (!lora_config_of(env, h, &c)) return nullptr;
    return new_longs(env, lora_config_fields(c));
}

// The adapted layers, or null when every layer is adapted.
jintArray n_lora_adapter_get_layers(JNIEnv* env, jclass, jlong h) {
    pg_lora_config c;
    if (!lora_config_of(env, h, &c) || !c.layers || c.n_layers <= 0) return nullptr;
    jintArray a = env->NewIntArray(c.n_layers);
    if (a) env->SetIntArrayRegion(a, 0, c.n_layers, reinterpret_cast<const jint*>(c.layers));
    return a;
}

jfloat n_lora_adapter_scale(JNIEnv* env, jclass, jlong h) {
    auto* a = handle_of<pg_lora_adapter>(env, h, "LoraAdapter");
    float scale = 0.0f;
    if (!a || failed(env, pg_lora_adapter_scale(a, &scale))) return 0;
    return scale;
}

jlong n_lora_adapter_num_params(JNIEnv* env, jclass, jlong h) {
    auto* a = handle_of<pg_lora_adapter>(env, h, "LoraAdapter");
    int64_t n = 0;
    if (!a || failed(env, pg_lora_adapter_num_params(a, &n))) return 0;
    return jlong(n);
}

// Merging an adapter into a model, and adapter files.
jlong n_lora_merge(JNIEnv* env, jclass, jlong mh, jlong ah, jint n_threads) {
    auto* m = handle_of<pg_model>(env, mh, "Model");
    auto* a = m ? handle_of<pg_lora_adapter>(env, ah, "LoraAdapter") : nullptr;
    pg_model* merged = nullptr;
    if (!a || failed(env, pg_lora_merge(m, a, n_threads, &merged))) return 0;
    return to_handle(merged);
}

void n_lora_merge_in_place(JNIEnv* env, jclass, jlong mh, jlong ah, jint n_threads, jboolean unmerge) {
    auto* m = handle_of<pg_model>(env, mh, "Model");
    auto* a = m ? handle_of<pg_lora_adapter>(env, ah, "LoraAdapter") : nullptr;
    if (a) failed(env, unmerge ? pg_lora_unmerge_in_place(m, a, n_threads) : pg_lora_merge_in_place(m, a, n_threads));
}

void n_lora_adapter_save(JNIEnv* env, jclass, jlong h, jstring jpath) {
    auto* a = handle_of<pg_lora_adapter>(env, h, "LoraAdapter");
    std::string path;
    if (a && get_string(env, jpath, "path", &path)) failed(env, pg_lora_adapter_save(a, path.c_str()));
}

// `base` 0: no base check.
jlong n_lora_adapter_load(JNIEnv* env, jclass, jstring jpath, jlong mh) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return 0;
    auto* m = mh ? handle_of<pg_model>(env, mh, "Model") : nullptr;
    pg_lora_adapter* a = nullptr;
    if (failed(env, pg_lora_adapter_load(path.c_str(), m, &a))) return 0;
    return to_handle(a);
}

void n_lora_adapter_check_base(JNIEnv* env, jclass, jlong h, jlong mh) {
    auto* a = handle_of<pg_lora_adapter>(env, h, "LoraAdapter");
    auto* m = a ? handle_of<pg_model>(env, mh, "Model") : nullptr;
    if (m) failed(env, pg_lora_adapter_check_base(a, m));
}

// --- the struct field list ------------------------------------------------------------------

// The value fields (numbers, flags, enumerations) of every size-prefixed struct, in declaration
// order, from the one list that the library and the Python binding read too
// (lib/core/c_struct_fields.def: it names only what phonegpt.h declares). The Kotlin classes
// carry these fields in this order through the long arrays above; the JUnit suite compares
// each class's order with this list, so a field added to a C struct fails the suite until the
// Kotlin side has it. Returns null for a struct the list does not have.
jobjectArray n_struct_value_fields(JNIEnv* env, jclass, jstring jname) {
    std::string name;
    if (!get_string(env, jname, "struct name", &name)) return nullptr;
    std::vector<std::string> fields;
    bool found = false;
    auto add = [&](const char* s, const char* field, const char* kind) {
        const std::string k = kind;
        if (name == s && (k == "PG_VALUE" || k == "PG_FLAG" || k == "PG_ENUM")) fields.push_back(field);
    };
#define PG_STRUCT(S, binding_name, role) found = found || name == #S;
#define PG_FIELD(S, field, kind) add(#S, #field, #kind);
#define PG_STRUCT_END(S)
#include "../../../lib/core/c_struct_fields.def"
    if (!found) return nullptr;
    jclass string_class = env->FindClass("java/lang/String");
    if (!string_class) return nullptr;
    jobjectArray out = env->NewObjectArray(jsize(fields.size()), string_class, nullptr);
    for (std::size_t i = 0; out && i < fields.size(); ++i) {
        jstring f = env->NewStringUTF(fields[i].c_str());
        if (!f) return nullptr;
        env->SetObjectArrayElement(out, jsize(i), f);
        env->DeleteLocalRef(f);
    }
    return out;
}

// =============================================================================================
// Registration
// =============================================================================================

const JNINativeMethod kNatives[] = {
    PG_NATIVE("versionNumber", "()I", n_version_number),
    PG_NATIVE("headerVersionNumber", "()I", n_header_version_number),
    PG_NATIVE("versionString", "()Ljava/lang/String;", n_version_string),
    PG_NATIVE("simdArch", "()Ljava/lang/String;", n_simd_arch),
    PG_NATIVE("statusName", "(I)Ljava/lang/String;", n_status_name),
    PG_NATIVE("lastError", "()Ljava/lang/String;", n_last_error),
    PG_NATIVE("structValueFields", "(Ljava/lang/String;)[Ljava/lang/String;", n_struct_value_fields),
    PG_NATIVE("splitIndex", "(JD)J", n_split_index),
    PG_NATIVE("readFile", "(Ljava/lang/String;)[B", n_read_file),

    PG_NATIVE("modelConfigDefault", "()[J", n_model_config_default),
    PG_NATIVE("modelConfigPreset", "(Ljava/lang/String;)[J", n_model_config_preset),
    PG_NATIVE("modelConfigValidate", "([J)V", n_model_config_validate),
    PG_NATIVE("modelConfigNumParams", "([J)J", n_model_config_num_params),

    PG_NATIVE("modelCreate", "([JJ)J", n_model_create),
    PG_NATIVE("modelFree", "(J)V", n_model_free),
    PG_NATIVE("modelGetConfig", "(J)[J", n_model_get_config),
    PG_NATIVE("modelNumParams", "(J)J", n_model_num_params),
    PG_NATIVE("modelAllowUntrainedBase", "(JZ)V", n_model_allow_untrained_base),
    PG_NATIVE("modelSetTokenizer", "(JJ)V", n_model_set_tokenizer),
    PG_NATIVE("modelGetTokenizer", "(J)J", n_model_get_tokenizer),
    PG_NATIVE("modelNumTensors", "(J)I", n_num_tensors<pg_model>),
    PG_NATIVE("modelTensorName", "(JI)Ljava/lang/String;", n_tensor_name<pg_model>),
    PG_NATIVE("modelTensorShape", "(JI)[J", n_tensor_shape<pg_model>),
    PG_NATIVE("modelFindTensor", "(JLjava/lang/String;)I", n_find_tensor<pg_model>),
    PG_NATIVE("modelReadTensor", "(JI" PG_FLOATS ")V", n_read_tensor<pg_model>),
    PG_NATIVE("modelWriteTensor", "(JI" PG_FLOATS ")V", n_write_tensor<pg_model>),
    PG_NATIVE("modelReadParams", "(J" PG_FLOATS ")V", n_model_read_params),
    PG_NATIVE("modelForward", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III" PG_FLOATS "I)F", n_model_forward),
    PG_NATIVE("modelSave", "(JLjava/lang/String;I)V", n_model_save),
    PG_NATIVE("modelLoad", "(Ljava/lang/String;)J", n_model_load),
    PG_NATIVE("modelExport", "(JILjava/lang/String;)V", n_model_export),
    PG_NATIVE("modelImport", "(ILjava/lang/String;)J", n_model_import),

    PG_NATIVE("evalConfigDefault", "()[I", n_eval_config_default),
    PG_NATIVE("sampleConfigDefault", "()[J", n_sample_config_default),
    PG_NATIVE("evaluate", "(J" PG_INTS "[ILphonegpt/ProgressBridge;)[D", n_evaluate),
    PG_NATIVE("evaluateSampled", "(J" PG_INTS "IIJI)[D", n_evaluate_sampled),
    PG_NATIVE("generate", "(J" PG_INTS "[J[Ljava/lang/String;Lphonegpt/TokenBridge;" PG_INTS ")I", n_generate),

    PG_NATIVE("trainConfigDefault", "()[J", n_train_config_default),
    PG_NATIVE("trainerCreate", "(J[J)J", n_trainer_create),
    PG_NATIVE("trainerFree", "(J)V", n_trainer_free),
    PG_NATIVE("trainerGetConfig", "(J)[J", n_trainer_get_config),
    PG_NATIVE("trainerSetData", "(J" PG_INTS ")V", n_trainer_set_data),
    PG_NATIVE("trainerStep", "(J)[J", n_trainer_step),
    PG_NATIVE("trainerStepBatch", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III)[J", n_trainer_step_batch),
    PG_NATIVE("trainerComputeGradients", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III)F",
              n_trainer_compute_gradients),
    PG_NATIVE("trainerReadGrad", "(JI" PG_FLOATS ")V", n_trainer_read_grad),
    PG_NATIVE("trainerStepCount", "(J)J", n_trainer_step_count),
    PG_NATIVE("trainerLrAt", "(JJ)F", n_trainer_lr_at),
    PG_NATIVE("trainerSave", "(JLjava/lang/String;I)V", n_trainer_save),
    PG_NATIVE("trainerResume", "(Ljava/lang/String;)[J", n_trainer_resume),

    PG_NATIVE("loraConfigDefault", "()[J", n_lora_config_default),
    PG_NATIVE("loraConfigValidate", "([J[I)V", n_lora_config_validate),
    PG_NATIVE("loraAdapterCreate", "(J[J[I)J", n_lora_adapter_create),
    PG_NATIVE("loraAdapterFree", "(J)V", n_lora_adapter_free),
    PG_NATIVE("loraAdapterGetConfig", "(J)[J", n_lora_adapter_get_config),
    PG_NATIVE("loraAdapterGetLayers", "(J)[I", n_lora_adapter_get_layers),
    PG_NATIVE("loraAdapterScale", "(J)F", n_lora_adapter_scale),
    PG_NATIVE("loraAdapterNumParams", "(J)J", n_lora_adapter_num_params),
    PG_NATIVE("loraAdapterNumTensors", "(J)I", n_num_tensors<pg_lora_adapter>),
    PG_NATIVE("loraAdapterTensorName", "(JI)Ljava/lang/String;", n_tensor_name<pg_lora_adapter>),
    PG_NATIVE("loraAdapterTensorShape", "(JI)[J", n_tensor_shape<pg_lora_adapter>),
    PG_NATIVE("loraAdapterFindTensor", "(JLjava/lang/String;)I", n_find_tensor<pg_lora_adapter>),
    PG_NATIVE("loraAdapterReadTensor", "(JI" PG_FLOATS ")V", n_read_tensor<pg_lora_adapter>),
    PG_NATIVE("loraAdapterWriteTensor", "(JI" PG_FLOATS ")V", n_write_tensor<pg_lora_adapter>),
    PG_NATIVE("loraMerge", "(JJI)J", n_lora_merge),
    PG_NATIVE("loraMergeInPlace", "(JJIZ)V", n_lora_merge_in_place),
    PG_NATIVE("loraAdapterSave", "(JLjava/lang/String;)V", n_lora_adapter_save),
    PG_NATIVE("loraAdapterLoad", "(Ljava/lang/String;J)J", n_lora_adapter_load),
    PG_NATIVE("loraAdapterCheckBase", "(JJ)V", n_lora_adapter_check_base),
};

jclass global_class(JNIEnv* env, const char* name) {
    jclass local = env->FindClass(name);
    if (!local) return nullptr;
    auto global = static_cast<jclass>(env->NewGlobalRef(local));
    env->DeleteLocalRef(local);
    return global;
}

}  // namespace

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
    g_vm = vm;
    JNIEnv* env = nullptr;
    if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
    g_exception_class = global_class(env, "phonegpt/PhoneGptException");
    if (!g_exception_class) return JNI_ERR;
    g_exception_from_status = env->GetStaticMethodID(g_exception_class, "fromStatus",
                                                     "(ILjava/lang/String;)Lphonegpt/PhoneGptException;");
    jclass progress = env->FindClass("phonegpt/ProgressBridge");
    jclass token = progress ? env->FindClass("phonegpt/TokenBridge") : nullptr;
    jclass natives = token ? env->FindClass("phonegpt/Native") : nullptr;
    if (!g_exception_from_status || !natives) return JNI_ERR;
    g_progress_method = env->GetMethodID(progress, "onProgress", "(JJ)Z");
    g_token_method = env->GetMethodID(token, "onToken", "(I)Z");
    if (!g_progress_method || !g_token_method) return JNI_ERR;
    // A signature mismatch between this table and Native.kt fails here, at load time, with
    // NoSuchMethodError naming the method (tested by the JUnit suite loading the library).
    if (!register_natives(env, natives, kNatives) || !register_session_natives(env, natives) ||
        !register_tokenizer_natives(env, natives) || !register_lora_trainer_natives(env, natives) ||
        !register_privacy_natives(env, natives) || !register_signing_natives(env, natives))
        return JNI_ERR;
    return JNI_VERSION_1_6;
}
