// The JNI shim of the Kotlin binding: a thin layer over the public C API (phonegpt.h is the only
// libphonegpt header included; the shim links the shared library), registered with
// RegisterNatives in JNI_OnLoad so that JNI_OnLoad is its only exported symbol. This file has
// the library-wide natives, the struct defaults and JNI_OnLoad; each area has its own file
// (model_jni.cpp, trainer_jni.cpp, session_jni.cpp, tokenizer_jni.cpp, lora_jni.cpp,
// coordinator_jni.cpp, privacy_jni.cpp, signing_jni.cpp) with its registration function; all
// share jni_support.hpp (and struct_jni.hpp for the option and result structs).
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
#include "struct_jni.hpp"

namespace {

using namespace pg_jni;

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

// The int behind a java.io.FileDescriptor: a private field, "fd" in OpenJDK, "descriptor" in
// Android's libcore (what Android's own jniGetFDFromFileDescriptor reads); -1 once closed.
jint n_file_descriptor_int(JNIEnv* env, jclass, jobject jfd) {
    if (!jfd) return throw_invalid(env, "fd is null"), -1;
    jclass cls = env->GetObjectClass(jfd);
    for (const char* name : {"descriptor", "fd"}) {
        jfieldID field = env->GetFieldID(cls, name, "I");
        if (field) return env->GetIntField(jfd, field);
        env->ExceptionClear();  // NoSuchFieldError: try the other runtime's name
    }
    throw_status(env, PG_ERR_UNSUPPORTED, "this runtime's FileDescriptor has neither an \"fd\" nor a \"descriptor\" field");
    return -1;
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

// The defaults of an options struct named as in lib/core/c_struct_fields.def ("pg_train_config"):
// the generated data classes' default() (CStructs.kt).
jlongArray n_struct_default(JNIEnv* env, jclass, jstring jname) {
    std::string name;
    if (!get_string(env, jname, "struct name", &name)) return nullptr;
#define PG_DEFAULT_BY_NAME_PG_OPTIONS(S) \
    if (name == #S) return struct_longs(env, defaults<S>());
#define PG_DEFAULT_BY_NAME_PG_RESULT(S)
#define PG_STRUCT(S, kotlin_name, role) PG_DEFAULT_BY_NAME_##role(S)
#define PG_FIELD(S, field, kind)
#define PG_STRUCT_END(S)
#include "../../../lib/core/c_struct_fields.def"
#undef PG_DEFAULT_BY_NAME_PG_OPTIONS
#undef PG_DEFAULT_BY_NAME_PG_RESULT
    throw_invalid(env, "structDefault: " + name + " is not an options struct of phonegpt.h");
    return nullptr;
}

jstring n_pii_kind_name(JNIEnv* env, jclass, jint kind) { return env->NewStringUTF(pg_pii_kind_name(pg_pii_kind(kind))); }

const JNINativeMethod kNatives[] = {
    PG_NATIVE("versionNumber", "()I", n_version_number),
    PG_NATIVE("headerVersionNumber", "()I", n_header_version_number),
    PG_NATIVE("versionString", "()Ljava/lang/String;", n_version_string),
    PG_NATIVE("simdArch", "()Ljava/lang/String;", n_simd_arch),
    PG_NATIVE("statusName", "(I)Ljava/lang/String;", n_status_name),
    PG_NATIVE("lastError", "()Ljava/lang/String;", n_last_error),
    PG_NATIVE("structDefault", "(Ljava/lang/String;)[J", n_struct_default),
    PG_NATIVE("piiKindName", "(I)Ljava/lang/String;", n_pii_kind_name),
    PG_NATIVE("splitIndex", "(JD)J", n_split_index),
    PG_NATIVE("fileDescriptorInt", "(Ljava/io/FileDescriptor;)I", n_file_descriptor_int),
    PG_NATIVE("readFile", "(Ljava/lang/String;)[B", n_read_file),
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
                                                     "(ILjava/lang/String;)Ljava/lang/RuntimeException;");
    jclass progress = env->FindClass("phonegpt/ProgressBridge");
    jclass token = progress ? env->FindClass("phonegpt/TokenBridge") : nullptr;
    jclass natives = token ? env->FindClass("phonegpt/Native") : nullptr;
    if (!g_exception_from_status || !natives) return JNI_ERR;
    g_progress_method = env->GetMethodID(progress, "onProgress", "(JJ)Z");
    g_token_method = env->GetMethodID(token, "onToken", "(I)Z");
    if (!g_progress_method || !g_token_method) return JNI_ERR;
    // A signature mismatch between this table and Native.kt fails here, at load time, with
    // NoSuchMethodError naming the method (tested by the JUnit suite loading the library).
    if (!register_natives(env, natives, kNatives) || !register_model_natives(env, natives) ||
        !register_trainer_natives(env, natives) || !register_session_natives(env, natives) ||
        !register_tokenizer_natives(env, natives) || !register_lora_natives(env, natives) ||
        !register_coordinator_natives(env, natives) || !register_privacy_natives(env, natives) ||
        !register_signing_natives(env, natives) || !register_train_session_natives(env, natives))
        return JNI_ERR;
    return JNI_VERSION_1_6;
}
