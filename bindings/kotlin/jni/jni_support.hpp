// Helpers shared by the JNI shim's files (phonegpt_jni.cpp, session_jni.cpp, ...): exceptions,
// strings, bulk data (direct buffers or array copies), field arrays and callbacks into Kotlin.
// Every file registers its own natives on phonegpt.Native from JNI_OnLoad (phonegpt_jni.cpp).
#pragma once

#include <jni.h>

#include <phonegpt/phonegpt.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace pg_jni {


inline JavaVM* g_vm = nullptr;
inline jclass g_exception_class = nullptr;          // phonegpt/PhoneGptException (global ref)
inline jmethodID g_exception_from_status = nullptr; // static PhoneGptException fromStatus(int, String)
inline jmethodID g_progress_method = nullptr;       // boolean ProgressBridge.onProgress(long, long)
inline jmethodID g_token_method = nullptr;          // boolean TokenBridge.onToken(int)

// ---------------------------------------------------------------------------------------------
// Exceptions
// ---------------------------------------------------------------------------------------------

inline void throw_status(JNIEnv* env, pg_status status, const char* message) {
    if (env->ExceptionCheck()) return;  // keep the first exception
    jstring text = env->NewStringUTF(message ? message : "");
    if (!text) return;  // OutOfMemoryError pending
    auto exc = static_cast<jthrowable>(
        env->CallStaticObjectMethod(g_exception_class, g_exception_from_status, jint(status), text));
    env->DeleteLocalRef(text);
    if (exc && !env->ExceptionCheck()) env->Throw(exc);
}

inline void throw_invalid(JNIEnv* env, const std::string& message) {
    throw_status(env, PG_ERR_INVALID_ARGUMENT, message.c_str());
}

// Throws for a failed status with the thread's last error message. Returns true if it threw.
inline bool failed(JNIEnv* env, pg_status status) {
    if (status == PG_OK) return false;
    throw_status(env, status, pg_last_error());
    return true;
}

// The same with a handle's own message (`message` = pg_session_last_error, ...), read only
// after the call has returned its status.
template <class H>
bool failed(JNIEnv* env, pg_status status, const H* handle, const char* (*message)(const H*)) {
    if (status == PG_OK) return false;
    throw_status(env, status, message(handle));
    return true;
}

// A handle value from Kotlin: 0 means closed (Kotlin throws before, this is the second line).
template <class T>
inline T* handle_of(JNIEnv* env, jlong handle, const char* what) {
    if (handle == 0) {
        throw_status(env, PG_ERR_STATE, (std::string(what) + " is closed").c_str());
        return nullptr;
    }
    return reinterpret_cast<T*>(static_cast<intptr_t>(handle));
}

inline jlong to_handle(const void* p) { return static_cast<jlong>(reinterpret_cast<intptr_t>(p)); }

// ---------------------------------------------------------------------------------------------
// Strings and byte arrays
// ---------------------------------------------------------------------------------------------

// A java.lang.String as UTF-8 (Kotlin passes text as UTF-8 byte arrays; paths and names come as
// Strings: Java's "modified UTF-8" equals UTF-8 for every path without NUL or astral characters).
inline bool get_string(JNIEnv* env, jstring s, const char* what, std::string* out) {
    if (!s) {
        throw_invalid(env, std::string(what) + " is null");
        return false;
    }
    const char* chars = env->GetStringUTFChars(s, nullptr);
    if (!chars) return false;
    out->assign(chars);
    env->ReleaseStringUTFChars(s, chars);
    return true;
}

// A String[] (null = none) as std::strings; a null element is refused naming `what`.
inline bool get_strings(JNIEnv* env, jobjectArray a, const char* what, std::vector<std::string>* out) {
    out->clear();
    if (!a) return true;
    const jsize n = env->GetArrayLength(a);
    for (jsize i = 0; i < n; ++i) {
        auto s = static_cast<jstring>(env->GetObjectArrayElement(a, i));
        std::string value;
        const bool ok = get_string(env, s, what, &value);
        env->DeleteLocalRef(s);
        if (!ok) return false;
        out->push_back(std::move(value));
    }
    return true;
}

inline bool get_bytes(JNIEnv* env, jbyteArray a, const char* what, std::vector<char>* out) {
    if (!a) {
        throw_invalid(env, std::string(what) + " is null");
        return false;
    }
    out->resize(std::size_t(env->GetArrayLength(a)));
    if (!out->empty()) env->GetByteArrayRegion(a, 0, jsize(out->size()), reinterpret_cast<jbyte*>(out->data()));
    return !env->ExceptionCheck();
}

// The bytes' address for the C API, which reads NULL as a missing argument: an empty Java array
// is empty data, not a missing one.
inline const char* bytes_of(const std::vector<char>& v) {
    static const char empty = 0;
    return v.empty() ? &empty : v.data();
}

inline jbyteArray new_bytes(JNIEnv* env, const void* data, std::size_t n) {
    jbyteArray a = env->NewByteArray(jsize(n));
    if (a && n) env->SetByteArrayRegion(a, 0, jsize(n), static_cast<const jbyte*>(data));
    return a;
}

// Bytes from a C call with the library's sizing convention (`fill(data, capacity, &len)`: on
// PG_ERR_BUFFER_TOO_SMALL nothing changed and len is what is needed, a NUL not counted): a
// small buffer first, then one of the size asked for. Returns false with an exception pending.
template <class Fill>
bool fill_bytes(JNIEnv* env, Fill fill, std::vector<char>* out) {
    out->resize(256);
    size_t len = 0;
    pg_status s = fill(out->data(), out->size(), &len);
    if (s == PG_ERR_BUFFER_TOO_SMALL) {
        out->resize(len + 1);
        s = fill(out->data(), out->size(), &len);
    }
    if (failed(env, s)) return false;
    out->resize(len);
    return true;
}

template <class Fill>
jbyteArray filled_bytes(JNIEnv* env, Fill fill) {
    std::vector<char> data;
    return fill_bytes(env, fill, &data) ? new_bytes(env, data.data(), data.size()) : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Bulk data: a direct buffer used in place, or an array region copied in (and out).
// ---------------------------------------------------------------------------------------------

// Traits of the two element types that cross as bulk data.
template <class T> struct Prim;
template <> struct Prim<int32_t> {
    using Array = jintArray;
    static void get(JNIEnv* e, Array a, jsize o, jsize n, int32_t* d) { e->GetIntArrayRegion(a, o, n, reinterpret_cast<jint*>(d)); }
    static void set(JNIEnv* e, Array a, jsize o, jsize n, const int32_t* d) { e->SetIntArrayRegion(a, o, n, reinterpret_cast<const jint*>(d)); }
};
template <> struct Prim<float> {
    using Array = jfloatArray;
    static void get(JNIEnv* e, Array a, jsize o, jsize n, float* d) { e->GetFloatArrayRegion(a, o, n, d); }
    static void set(JNIEnv* e, Array a, jsize o, jsize n, const float* d) { e->SetFloatArrayRegion(a, o, n, d); }
};

// `length` elements at `offset` of either `array` or the direct `buffer` (exactly one is set;
// the buffer's capacity and offset are in elements). For inputs the array region is copied in;
// for outputs it is written back by commit().
template <class T>
class Bulk {
public:
    using Array = typename Prim<T>::Array;

    // Returns false with an exception pending if the arguments do not describe a valid region.
    bool open(JNIEnv* env, Array array, jobject buffer, jint offset, jint length, const char* what,
              bool copy_in) {
        env_ = env;
        array_ = array;
        offset_ = offset;
        length_ = length;
        if (offset < 0 || length < 0) {
            throw_invalid(env, std::string(what) + ": negative offset or length");
            return false;
        }
        if (array && buffer) {
            throw_invalid(env, std::string(what) + ": both an array and a buffer");
            return false;
        }
        if (buffer) {
            void* address = env->GetDirectBufferAddress(buffer);
            jlong capacity = env->GetDirectBufferCapacity(buffer);
            if (!address || capacity < 0) {
                throw_invalid(env, std::string(what) + ": the buffer is not a direct buffer");
                return false;
            }
            if (jlong(offset) + jlong(length) > capacity) {
                throw_invalid(env, std::string(what) + ": " + std::to_string(length) + " elements at " +
                                       std::to_string(offset) + " exceed the buffer's capacity " +
                                       std::to_string(capacity));
                return false;
            }
            data_ = static_cast<T*>(address) + offset;
            return true;
        }
        if (!array) {
            throw_invalid(env, std::string(what) + " is null");
            return false;
        }
        const jsize array_length = env->GetArrayLength(array);
        if (jlong(offset) + jlong(length) > jlong(array_length)) {
            throw_invalid(env, std::string(what) + ": " + std::to_string(length) + " elements at " +
                                   std::to_string(offset) + " exceed the array's length " +
                                   std::to_string(array_length));
            return false;
        }
        copy_.resize(std::size_t(length));
        if (copy_in && length > 0) Prim<T>::get(env, array, offset, length, copy_.data());
        data_ = copy_.data();
        return !env->ExceptionCheck();
    }

    // Writes the first n elements back to the array (a buffer was written in place).
    void commit(std::size_t n) {
        if (array_ && n > 0) Prim<T>::set(env_, array_, offset_, jsize(n), copy_.data());
    }

    T* data() const { return data_; }
    std::size_t size() const { return std::size_t(length_); }

private:
    JNIEnv* env_ = nullptr;
    Array array_ = nullptr;
    jint offset_ = 0, length_ = 0;
    T* data_ = nullptr;
    std::vector<T> copy_;
};

using IntBulk = Bulk<int32_t>;
using FloatBulk = Bulk<float>;

inline jlongArray new_longs(JNIEnv* env, const std::vector<jlong>& v) {
    jlongArray a = env->NewLongArray(jsize(v.size()));
    if (a) env->SetLongArrayRegion(a, 0, jsize(v.size()), v.data());
    return a;
}

inline jdoubleArray new_doubles(JNIEnv* env, const std::vector<jdouble>& v) {
    jdoubleArray a = env->NewDoubleArray(jsize(v.size()));
    if (a) env->SetDoubleArrayRegion(a, 0, jsize(v.size()), v.data());
    return a;
}

inline bool get_longs(JNIEnv* env, jlongArray a, std::size_t want, const char* what, std::vector<jlong>* out) {
    if (!a || std::size_t(env->GetArrayLength(a)) != want) {
        throw_invalid(env, std::string(what) + " must have " + std::to_string(want) + " fields");
        return false;
    }
    out->resize(want);
    env->GetLongArrayRegion(a, 0, jsize(want), out->data());
    return !env->ExceptionCheck();
}

// Floats travel inside the long arrays as their raw bits (Float.toRawBits on the Kotlin side).
inline float bits_to_float(jlong bits) {
    const uint32_t u = uint32_t(bits);
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
inline jlong float_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return jlong(u);
}

// ---------------------------------------------------------------------------------------------
// Callbacks into Kotlin
// ---------------------------------------------------------------------------------------------

// The JNIEnv of the thread the library calls back on (the caller's thread for both callbacks
// today; a thread the JVM does not know is attached as a daemon rather than crashing).
inline JNIEnv* callback_env() {
    JNIEnv* env = nullptr;
    if (g_vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) == JNI_OK) return env;
    if (g_vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&env), nullptr) == JNI_OK) return env;
    return nullptr;
}

// One Kotlin bridge object for one C call; keeps the first exception a callback threw.
struct Callback {
    jobject bridge = nullptr;
    jthrowable pending = nullptr;  // global ref

    // After a call into Java: takes a thrown exception out of the env. Returns true to stop.
    bool took_exception(JNIEnv* env) {
        if (!env->ExceptionCheck()) return false;
        jthrowable t = env->ExceptionOccurred();
        env->ExceptionClear();
        if (!pending) pending = static_cast<jthrowable>(env->NewGlobalRef(t));
        env->DeleteLocalRef(t);
        return true;
    }

    // After the C call: re-throws the callback's exception (it wins over the status). Returns true
    // if it threw.
    bool rethrow(JNIEnv* env) {
        if (!pending) return false;
        env->Throw(pending);
        env->DeleteGlobalRef(pending);
        pending = nullptr;
        return true;
    }
};

inline int progress_trampoline(void* user, int64_t done, int64_t total) {
    auto* cb = static_cast<Callback*>(user);
    JNIEnv* env = callback_env();
    if (!env || cb->pending) return 1;
    const jboolean go_on = env->CallBooleanMethod(cb->bridge, g_progress_method, jlong(done), jlong(total));
    if (cb->took_exception(env)) return 1;
    return go_on ? 0 : 1;
}

inline int token_trampoline(void* user, int32_t token) {
    auto* cb = static_cast<Callback*>(user);
    JNIEnv* env = callback_env();
    if (!env || cb->pending) return 1;
    const jboolean go_on = env->CallBooleanMethod(cb->bridge, g_token_method, jint(token));
    if (cb->took_exception(env)) return 1;
    return go_on ? 0 : 1;
}


// ---------------------------------------------------------------------------------------------
// The arguments of the calls that the model and the session share (evaluate, generate, forward)
// ---------------------------------------------------------------------------------------------

inline pg_eval_result new_eval_result() {
    pg_eval_result r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    return r;
}

inline jdoubleArray eval_result_fields(JNIEnv* env, const pg_eval_result& r) {
    return new_doubles(env, {r.mean_loss, r.bits_per_token, double(r.n_scored), double(r.n_windows)});
}

// pg_eval_config from EvalConfig.fields() (window, stride, batch_size, n_threads); a non-null
// ProgressBridge is wired to `cb`, which must outlive the call.
inline bool eval_config_from(JNIEnv* env, jintArray a, jobject bridge, Callback* cb, pg_eval_config* c) {
    constexpr jsize kFields = 4;
    if (!a || env->GetArrayLength(a) != kFields) {
        throw_invalid(env, "EvalConfig must have 4 fields");
        return false;
    }
    jint f[kFields];
    env->GetIntArrayRegion(a, 0, kFields, f);
    pg_eval_config_default(c);
    c->window = f[0];
    c->stride = f[1];
    c->batch_size = f[2];
    c->n_threads = f[3];
    cb->bridge = bridge;
    if (bridge) {
        c->progress = progress_trampoline;
        c->progress_user = cb;
    }
    return true;
}

// pg_sample_config from SampleConfig.fields() (temperature and top_p as float bits, top_k, seed,
// max_tokens, n_threads, slide_keep), its stop strings and a TokenBridge (may be null). The
// struct points into this object's strings and callback: use it in place, do not copy it.
struct SampleArgs {
    pg_sample_config config;
    std::vector<std::string> stops;
    std::vector<const char*> stop_ptrs;
    Callback cb;
};

inline bool sample_config_from(JNIEnv* env, jlongArray jconfig, jobjectArray jstops, jobject bridge,
                               SampleArgs* args) {
    std::vector<jlong> f;
    if (!get_longs(env, jconfig, 7, "SampleConfig", &f)) return false;
    for (std::size_t i : {1, 4, 5, 6}) {
        if (f[i] < INT32_MIN || f[i] > INT32_MAX) {
            throw_invalid(env, "SampleConfig: field " + std::to_string(i) + " is outside int32");
            return false;
        }
    }
    pg_sample_config& c = args->config;
    pg_sample_config_default(&c);
    c.temperature = bits_to_float(f[0]);
    c.top_k = int32_t(f[1]);
    c.top_p = bits_to_float(f[2]);
    c.seed = uint64_t(f[3]);
    c.max_tokens = int32_t(f[4]);
    c.n_threads = int32_t(f[5]);
    c.slide_keep = int32_t(f[6]);
    if (!get_strings(env, jstops, "stop string", &args->stops)) return false;
    if (!args->stops.empty()) {
        for (const std::string& s : args->stops) args->stop_ptrs.push_back(s.c_str());
        c.stop_strings = args->stop_ptrs.data();
        c.n_stop_strings = int32_t(args->stop_ptrs.size());
    }
    args->cb.bridge = bridge;
    if (bridge) {
        c.on_token = token_trampoline;
        c.on_token_user = &args->cb;
    }
    return true;
}

// Where generated tokens go: an array or direct buffer region, or nowhere (streaming only).
class GenerateOutput {
public:
    bool open(JNIEnv* env, jintArray array, jobject buffer, jint offset, jint capacity) {
        used_ = array || buffer;
        return !used_ || bulk_.open(env, array, buffer, offset, capacity, "output", false);
    }
    int32_t* data() const { return used_ ? bulk_.data() : nullptr; }
    size_t capacity() const { return used_ ? bulk_.size() : 0; }
    // Copies the n written tokens back to an array; returns n.
    jint commit(size_t n) {
        if (used_) bulk_.commit(n);
        return jint(n);
    }

private:
    bool used_ = false;
    Bulk<int32_t> bulk_;
};

// A forward pass's B*T tokens, optional targets and optional logits (B*T*vocab_size floats of
// `model`'s vocabulary, checked here so that the library never writes past the region).
struct ForwardArgs {
    Bulk<int32_t> tokens, targets;
    Bulk<float> logits;
    bool with_targets = false, with_logits = false;

    bool open(JNIEnv* env, const pg_model* model, jint B, jint T, jintArray tok_a, jobject tok_b, jint tok_off,
              jintArray tgt_a, jobject tgt_b, jint tgt_off, jfloatArray log_a, jobject log_b, jint log_off,
              jint log_len) {
        if (B < 1 || T < 1) {
            throw_invalid(env, "forward: B and T must be >= 1, got " + std::to_string(B) + " and " + std::to_string(T));
            return false;
        }
        const int64_t bt = int64_t(B) * int64_t(T);
        if (bt > INT32_MAX) {
            throw_invalid(env, "forward: B*T is too large");
            return false;
        }
        if (!tokens.open(env, tok_a, tok_b, tok_off, jint(bt), "tokens", true)) return false;
        with_targets = tgt_a || tgt_b;
        if (with_targets && !targets.open(env, tgt_a, tgt_b, tgt_off, jint(bt), "targets", true)) return false;
        with_logits = log_a || log_b;
        if (!with_logits) return true;
        pg_model_config c;
        pg_model_config_default(&c);
        if (failed(env, pg_model_get_config(model, &c))) return false;
        if (int64_t(log_len) != bt * c.vocab_size) {
            throw_status(env, PG_ERR_GEOMETRY, ("forward: logits must hold B*T*vocab_size = " +
                                                std::to_string(bt * c.vocab_size) + " floats, got " +
                                                std::to_string(log_len)).c_str());
            return false;
        }
        return logits.open(env, log_a, log_b, log_off, log_len, "logits", false);
    }

    const int32_t* targets_data() const { return with_targets ? targets.data() : nullptr; }
    float* logits_data() const { return with_logits ? logits.data() : nullptr; }
    float* loss_out(float* loss) const { return with_targets ? loss : nullptr; }

    // After a successful pass: copies logits back to an array; the loss, or NaN without targets.
    jfloat finish(float loss) {
        if (with_logits) logits.commit(logits.size());
        return with_targets ? loss : std::numeric_limits<float>::quiet_NaN();
    }
};

// ---------------------------------------------------------------------------------------------
// Training arguments that the full and the LoRA trainer share
// ---------------------------------------------------------------------------------------------

constexpr std::size_t kTrainConfigFields = 21;
inline std::vector<jlong> train_config_fields(const pg_train_config& c) {
    return {c.batch_size,         c.seq_len,           c.grad_accum_steps,   jlong(c.schedule),
            float_to_bits(c.lr_max), float_to_bits(c.lr_min), c.warmup_steps, c.total_steps,
            float_to_bits(c.beta1), float_to_bits(c.beta2), float_to_bits(c.eps),
            float_to_bits(c.weight_decay), c.decay_embeddings, float_to_bits(c.grad_clip),
            float_to_bits(c.dropout), jlong(c.seed), c.n_threads, c.recompute_activations,
            jlong(c.optimizer), float_to_bits(c.muon_momentum), float_to_bits(c.muon_lr_scale)};
}
inline bool train_config_from(JNIEnv* env, jlongArray a, pg_train_config* c) {
    std::vector<jlong> f;
    if (!get_longs(env, a, kTrainConfigFields, "TrainConfig", &f)) return false;
    for (std::size_t i : {0, 1, 2, 3, 6, 12, 16, 17, 18}) {
        if (f[i] < INT32_MIN || f[i] > INT32_MAX) {
            throw_invalid(env, "TrainConfig: field " + std::to_string(i) + " is outside int32");
            return false;
        }
    }
    pg_train_config_default(c);
    c->batch_size = int32_t(f[0]);
    c->seq_len = int32_t(f[1]);
    c->grad_accum_steps = int32_t(f[2]);
    c->schedule = pg_lr_schedule(int32_t(f[3]));
    c->lr_max = bits_to_float(f[4]);
    c->lr_min = bits_to_float(f[5]);
    c->warmup_steps = int32_t(f[6]);
    c->total_steps = int64_t(f[7]);
    c->beta1 = bits_to_float(f[8]);
    c->beta2 = bits_to_float(f[9]);
    c->eps = bits_to_float(f[10]);
    c->weight_decay = bits_to_float(f[11]);
    c->decay_embeddings = int32_t(f[12]);
    c->grad_clip = bits_to_float(f[13]);
    c->dropout = bits_to_float(f[14]);
    c->seed = uint64_t(f[15]);
    c->n_threads = int32_t(f[16]);
    c->recompute_activations = int32_t(f[17]);
    c->optimizer = pg_optimizer(int32_t(f[18]));
    c->muon_momentum = bits_to_float(f[19]);
    c->muon_lr_scale = bits_to_float(f[20]);
    return true;
}

inline jlongArray step_result_fields(JNIEnv* env, const pg_step_result& r) {
    return new_longs(env, {r.step, float_to_bits(r.loss), float_to_bits(r.lr), float_to_bits(r.grad_norm), r.tokens});
}

inline pg_step_result blank_step_result() {
    pg_step_result r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    return r;
}

inline bool open_batch(JNIEnv* env, jint B, jint T, IntBulk* in, jintArray in_a, jobject in_b, jint in_off,
                IntBulk* tgt, jintArray tgt_a, jobject tgt_b, jint tgt_off) {
    if (B < 1 || T < 1 || int64_t(B) * int64_t(T) > INT32_MAX) {
        throw_invalid(env, "B and T must be >= 1 with B*T in int32, got " + std::to_string(B) + " and " +
                               std::to_string(T));
        return false;
    }
    const jint n = B * T;
    return in->open(env, in_a, in_b, in_off, n, "inputs", true) &&
           tgt->open(env, tgt_a, tgt_b, tgt_off, n, "targets", true);
}

// Registration: each file of natives has one of these, called from JNI_OnLoad.
#define PG_NATIVE(name, signature, fn) {const_cast<char*>(name), const_cast<char*>(signature), reinterpret_cast<void*>(fn)}
#define PG_INTS "[ILjava/nio/IntBuffer;II"    // (int[] array, IntBuffer buffer, int offset, int length)
#define PG_FLOATS "[FLjava/nio/FloatBuffer;II"

template <std::size_t N>
bool register_natives(JNIEnv* env, jclass natives, const JNINativeMethod (&methods)[N]) {
    return env->RegisterNatives(natives, methods, jint(N)) == JNI_OK;
}

bool register_session_natives(JNIEnv* env, jclass natives);    // session_jni.cpp
bool register_tokenizer_natives(JNIEnv* env, jclass natives);  // tokenizer_jni.cpp
bool register_lora_trainer_natives(JNIEnv* env, jclass natives);  // lora_jni.cpp
bool register_privacy_natives(JNIEnv* env, jclass natives);       // privacy_jni.cpp
bool register_signing_natives(JNIEnv* env, jclass natives);       // signing_jni.cpp

}  // namespace pg_jni
