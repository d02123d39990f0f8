// The arguments that several natives share: evaluation and sampling configurations with their
// callbacks (model and session), generation output, forward-pass regions, and a caller's training
// batch (full and LoRA trainer). Structs cross through struct_jni.hpp.
#pragma once

#include "struct_jni.hpp"

namespace pg_jni {

// pg_eval_config from EvalConfig.fields(); a non-null ProgressBridge is wired to `cb`, which must
// outlive the call.
inline bool eval_config_from(JNIEnv* env, jlongArray a, jobject bridge, Callback* cb, pg_eval_config* c) {
    if (!options_from(env, a, c)) return false;
    cb->bridge = bridge;
    if (bridge) {
        c->progress = progress_trampoline;
        c->progress_user = cb;
    }
    return true;
}

// pg_sample_config from SampleConfig.fields(), its stop strings and a TokenBridge (may be null).
// The struct points into this object's strings and callback: use it in place, do not copy it.
struct SampleArgs {
    pg_sample_config config;
    std::vector<std::string> stops;
    std::vector<const char*> stop_ptrs;
    Callback cb;
};

inline bool sample_config_from(JNIEnv* env, jlongArray jconfig, jobjectArray jstops, jobject bridge,
                               SampleArgs* args) {
    pg_sample_config& c = args->config;
    if (!options_from(env, jconfig, &c)) return false;
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
        pg_model_config c = defaults<pg_model_config>();
        if (failed(env, pg_model_get_config(model, &c), model, pg_model_last_error)) return false;
        if (int64_t(log_len) != bt * c.vocab_size) {  // smaller: the binding's one "too small" status
            throw_status(env, int64_t(log_len) < bt * c.vocab_size ? PG_ERR_BUFFER_TOO_SMALL : PG_ERR_GEOMETRY, ("forward: logits must hold B*T*vocab_size = " +
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

// The [B, T] inputs and targets of a caller-given training batch.
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

// pg_trainer_set_data and pg_lora_trainer_set_data: the training tokens from a Java array or buffer.
template <class H>
void set_data(JNIEnv* env, H* t, pg_status (*set)(H*, const int32_t*, size_t), const char* (*message)(const H*),
              jintArray a, jobject b, jint offset, jint length) {
    IntBulk tokens;
    if (!t || !tokens.open(env, a, b, offset, length, "tokens", true)) return;
    failed(env, set(t, tokens.data(), tokens.size()), t, message);
}

// pg_trainer_step and pg_lora_trainer_step: one step on a sampled batch; its pg_step_result's
// fields, or null with an exception pending.
template <class H>
jlongArray step(JNIEnv* env, H* t, pg_status (*step_fn)(H*, pg_step_result*), const char* (*message)(const H*)) {
    pg_step_result r = blank<pg_step_result>();
    if (!t || failed(env, step_fn(t, &r), t, message)) return nullptr;
    return struct_longs(env, r);
}

// pg_trainer_step_batch and pg_lora_trainer_step_batch: one step on the caller's [B, T] batch.
template <class H>
jlongArray step_batch(JNIEnv* env, H* t,
                      pg_status (*step_fn)(H*, const int32_t*, const int32_t*, int32_t, int32_t, pg_step_result*),
                      const char* (*message)(const H*), jintArray in_a, jobject in_b, jint in_off, jintArray tgt_a,
                      jobject tgt_b, jint tgt_off, jint B, jint T) {
    IntBulk in, tgt;
    if (!t || !open_batch(env, B, T, &in, in_a, in_b, in_off, &tgt, tgt_a, tgt_b, tgt_off)) return nullptr;
    pg_step_result r = blank<pg_step_result>();
    if (failed(env, step_fn(t, in.data(), tgt.data(), B, T, &r), t, message)) return nullptr;
    return struct_longs(env, r);
}

// pg_trainer_compute_gradients and pg_lora_trainer_compute_gradients: the caller's batch in, the
// mean loss out (0 with an exception pending on failure).
template <class H>
jfloat compute_gradients(JNIEnv* env, H* t, pg_status (*compute)(H*, const int32_t*, const int32_t*, int32_t, int32_t, float*),
                         const char* (*message)(const H*), jintArray in_a, jobject in_b, jint in_off, jintArray tgt_a,
                         jobject tgt_b, jint tgt_off, jint B, jint T) {
    IntBulk in, tgt;
    if (!t || !open_batch(env, B, T, &in, in_a, in_b, in_off, &tgt, tgt_a, tgt_b, tgt_off)) return 0;
    float loss = 0.0f;
    if (failed(env, compute(t, in.data(), tgt.data(), B, T, &loss), t, message)) return 0;
    return loss;
}

// pg_trainer_grad and pg_lora_trainer_grad: copies tensor `index`'s gradient (`length` floats;
// Kotlin knows the shape) into the Java array or buffer.
template <class H>
void read_grad(JNIEnv* env, const H* t, pg_status (*grad)(const H*, int32_t, const float**),
               const char* (*message)(const H*), jint index, jfloatArray a, jobject b, jint offset, jint length) {
    const float* data = nullptr;
    if (!t || failed(env, grad(t, index, &data), t, message)) return;
    FloatBulk dst;
    if (!dst.open(env, a, b, offset, length, "readGrad", false)) return;
    if (length > 0) std::memcpy(dst.data(), data, std::size_t(length) * sizeof(float));
    dst.commit(std::size_t(length));
}

// The getters both trainers answer alike (pg_trainer_get_config and pg_lora_trainer_get_config,
// _step_count, _lr_at, _n_threads) and _set_threads; 0 or null with an exception pending.
template <class H>
jlongArray get_train_config(JNIEnv* env, const H* t, pg_status (*get)(const H*, pg_train_config*),
                            const char* (*message)(const H*)) {
    pg_train_config c = defaults<pg_train_config>();
    if (!t || failed(env, get(t, &c), t, message)) return nullptr;
    return struct_longs(env, c);
}

template <class H, class T>
T get_number(JNIEnv* env, const H* t, pg_status (*get)(const H*, T*), const char* (*message)(const H*)) {
    T value = 0;
    if (!t || failed(env, get(t, &value), t, message)) return 0;
    return value;
}

template <class H>
jfloat lr_at(JNIEnv* env, const H* t, pg_status (*get)(const H*, int64_t, float*), const char* (*message)(const H*),
             jlong step) {
    float lr = 0.0f;
    if (!t || failed(env, get(t, step, &lr), t, message)) return 0;
    return lr;
}

template <class H>
void set_threads(JNIEnv* env, H* t, pg_status (*set)(H*, int32_t), const char* (*message)(const H*), jint n) {
    if (t) failed(env, set(t, n), t, message);
}

}  // namespace pg_jni
