// The named-tensor natives that a model's weights and a LoRA adapter's A and B matrices share
// (model_jni.cpp and lora_jni.cpp register them for their handle): names, shapes, lookup, and
// copies out of and into the tensors (the binding never hands out a view of native memory).
#pragma once

#include "jni_support.hpp"

namespace pg_jni {

// Named tensors, the same calls for a model's weights and an adapter's A and B matrices.
template <class H> struct Tensors;
template <> struct Tensors<pg_model> {
    static constexpr const char* kind = "Model";
    static const char* message(const pg_model* h) { return pg_model_last_error(h); }
    static pg_status count(const pg_model* h, int32_t* n) { return pg_model_num_tensors(h, n); }
    static pg_status info(const pg_model* h, int32_t i, pg_tensor_info* t) { return pg_model_tensor_info(h, i, t); }
    static pg_status find(const pg_model* h, const char* name, int32_t* i) { return pg_model_find_tensor(h, name, i); }
    static pg_status data(pg_model* h, int32_t i, float** d) { return pg_model_tensor_data_mutable(h, i, d); }
};
template <> struct Tensors<pg_lora_adapter> {
    static constexpr const char* kind = "LoraAdapter";
    static const char* message(const pg_lora_adapter* h) { return pg_lora_adapter_last_error(h); }
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
    return !failed(env, Tensors<H>::info(h, index, info), h, Tensors<H>::message);
}

template <class H>
jint n_num_tensors(JNIEnv* env, jclass, jlong handle) {
    auto* h = handle_of<H>(env, handle, Tensors<H>::kind);
    int32_t n = 0;
    if (!h || failed(env, Tensors<H>::count(h, &n), h, Tensors<H>::message)) return 0;
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
    if (failed(env, Tensors<H>::find(h, name.c_str(), &index), h, Tensors<H>::message)) return -1;
    return index;
}

// Copies `n` floats from `src` into the array or buffer region, which must hold exactly n.
inline void copy_out(JNIEnv* env, const float* src, int64_t n, jfloatArray a, jobject b, jint offset, jint length,
              const char* what) {
    if (int64_t(length) != n) {  // smaller: the binding's one "too small" status
        throw_status(env, int64_t(length) < n ? PG_ERR_BUFFER_TOO_SMALL : PG_ERR_GEOMETRY,
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
    if (failed(env, Tensors<H>::data(h, index, &data), h, Tensors<H>::message)) return;
    if (length > 0) std::memcpy(data, src.data(), std::size_t(length) * sizeof(float));
}

}  // namespace pg_jni
