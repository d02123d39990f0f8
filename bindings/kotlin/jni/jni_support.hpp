// Helpers shared by the JNI shim's files (phonegpt_jni.cpp, model_jni.cpp, ...): exceptions,
// strings, bulk data (direct buffers or array copies), long arrays and callbacks into Kotlin.
// struct_jni.hpp has the option and result structs, call_args.hpp the arguments that several
// calls share.
// Every file registers its own natives on phonegpt.Native from JNI_OnLoad (phonegpt_jni.cpp).
#pragma once

#include <jni.h>

#include <phonegpt/phonegpt_coordinator.h>  // both tiers (it includes phonegpt.h)

#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace pg_jni {


inline JavaVM* g_vm = nullptr;
inline jclass g_exception_class = nullptr;          // phonegpt/PhoneGptException (global ref)
inline jmethodID g_exception_from_status = nullptr; // static RuntimeException fromStatus(int, String)
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
// small buffer first, then one of the size asked for. A failure throws with message() (the
// handle's own message), or the thread's. Returns false with an exception pending.
template <class Fill, class Message>
bool fill_bytes(JNIEnv* env, Fill fill, std::vector<char>* out, Message message) {
    out->resize(256);
    size_t len = 0;
    pg_status s = fill(out->data(), out->size(), &len);
    if (s == PG_ERR_BUFFER_TOO_SMALL) {
        out->resize(len + 1);
        s = fill(out->data(), out->size(), &len);
    }
    if (s != PG_OK) {
        throw_status(env, s, message());
        return false;
    }
    out->resize(len);
    return true;
}

template <class Fill>
bool fill_bytes(JNIEnv* env, Fill fill, std::vector<char>* out) {
    return fill_bytes(env, fill, out, [] { return pg_last_error(); });
}

template <class Fill, class Message>
jbyteArray filled_bytes(JNIEnv* env, Fill fill, Message message) {
    std::vector<char> data;
    return fill_bytes(env, fill, &data, message) ? new_bytes(env, data.data(), data.size()) : nullptr;
}

template <class Fill>
jbyteArray filled_bytes(JNIEnv* env, Fill fill) {
    return filled_bytes(env, fill, [] { return pg_last_error(); });
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
        // An empty array is empty data, not a missing argument (the C API reads NULL as missing).
        data_ = length > 0 ? copy_.data() : &empty_;
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
    T empty_{};
    std::vector<T> copy_;
};

using IntBulk = Bulk<int32_t>;
using FloatBulk = Bulk<float>;

inline jlongArray new_longs(JNIEnv* env, const std::vector<jlong>& v) {
    jlongArray a = env->NewLongArray(jsize(v.size()));
    if (a) env->SetLongArrayRegion(a, 0, jsize(v.size()), v.data());
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

// Registration: each file of natives has one of these, called from JNI_OnLoad.
#define PG_NATIVE(name, signature, fn) {const_cast<char*>(name), const_cast<char*>(signature), reinterpret_cast<void*>(fn)}
#define PG_SIG_INTS "[ILjava/nio/IntBuffer;II"    // (int[] array, IntBuffer buffer, int offset, int length)
#define PG_SIG_FLOATS "[FLjava/nio/FloatBuffer;II"

template <std::size_t N>
bool register_natives(JNIEnv* env, jclass natives, const JNINativeMethod (&methods)[N]) {
    return env->RegisterNatives(natives, methods, jint(N)) == JNI_OK;
}

bool register_model_natives(JNIEnv* env, jclass natives);      // model_jni.cpp
bool register_trainer_natives(JNIEnv* env, jclass natives);    // trainer_jni.cpp
bool register_session_natives(JNIEnv* env, jclass natives);    // session_jni.cpp
bool register_train_session_natives(JNIEnv* env, jclass natives);  // train_session_jni.cpp
bool register_tokenizer_natives(JNIEnv* env, jclass natives);  // tokenizer_jni.cpp
bool register_lora_natives(JNIEnv* env, jclass natives);       // lora_jni.cpp
bool register_coordinator_natives(JNIEnv* env, jclass natives);  // coordinator_jni.cpp
bool register_privacy_natives(JNIEnv* env, jclass natives);    // privacy_jni.cpp
bool register_signing_natives(JNIEnv* env, jclass natives);    // signing_jni.cpp

}  // namespace pg_jni
