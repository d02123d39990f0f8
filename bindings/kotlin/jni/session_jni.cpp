// The session natives (pg_session_*; Kotlin: Session.kt). A session borrows its model: Kotlin
// keeps the model's native memory alive while the session lives and holds the session's lock
// alone for every call (the C API allows one thread at a time on a session), so the shim only
// checks what comes from Java.
#include "call_args.hpp"

namespace pg_jni {
namespace {

pg_session* session_of(JNIEnv* env, jlong h) { return handle_of<pg_session>(env, h, "Session"); }

// --- the handle ----------------------------------------------------------------------------

jlong n_session_create(JNIEnv* env, jclass, jlong model, jlongArray jconfig) {
    auto* m = handle_of<pg_model>(env, model, "Model");
    pg_session_config c;
    if (!m || !options_from(env, jconfig, &c)) return 0;
    pg_session* s = nullptr;
    if (failed(env, pg_session_create(m, &c, &s))) return 0;
    return to_handle(s);
}

void n_session_free(JNIEnv*, jclass, jlong h) { pg_session_free(reinterpret_cast<pg_session*>(intptr_t(h))); }

jstring n_session_last_error(JNIEnv* env, jclass, jlong h) {
    auto* s = session_of(env, h);
    return s ? env->NewStringUTF(pg_session_last_error(s)) : nullptr;
}

jint n_session_n_threads(JNIEnv* env, jclass, jlong h) {
    auto* s = session_of(env, h);
    int32_t n = 0;
    if (!s || failed(env, pg_session_n_threads(s, &n), s, pg_session_last_error)) return 0;
    return n;
}

// --- stateless calls on the session's threads and scratch -----------------------------------

// `model` is the session's model (Kotlin passes it): it gives the logits' size to check.
jfloat n_session_forward(JNIEnv* env, jclass, jlong h, jlong model, jintArray tok_a, jobject tok_b, jint tok_off,
                         jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T, jfloatArray log_a,
                         jobject log_b, jint log_off, jint log_len) {
    auto* s = session_of(env, h);
    auto* m = s ? handle_of<pg_model>(env, model, "Model") : nullptr;
    ForwardArgs a;
    if (!m || !a.open(env, m, B, T, tok_a, tok_b, tok_off, tgt_a, tgt_b, tgt_off, log_a, log_b, log_off, log_len))
        return 0;
    float loss = 0.0f;
    if (failed(env, pg_session_forward(s, a.tokens.data(), B, T, a.targets_data(), a.logits_data(), a.loss_out(&loss)),
               s, pg_session_last_error))
        return 0;
    return a.finish(loss);
}

jlongArray n_session_evaluate(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset,
                              jint length, jlongArray jconfig, jobject bridge) {
    auto* s = session_of(env, h);
    IntBulk tokens;
    Callback cb;
    pg_eval_config c;
    if (!s || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true) ||
        !eval_config_from(env, jconfig, bridge, &cb, &c))
        return nullptr;
    pg_eval_result r = blank<pg_eval_result>();
    pg_status status = pg_session_evaluate(s, tokens.data(), tokens.size(), &c, &r);
    if (cb.rethrow(env) || failed(env, status, s, pg_session_last_error)) return nullptr;
    return struct_longs(env, r);
}

jlongArray n_session_evaluate_sampled(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset,
                                      jint length, jlongArray jconfig) {
    auto* s = session_of(env, h);
    IntBulk tokens;
    pg_eval_sampled_config c;
    if (!s || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true) ||
        !options_from(env, jconfig, &c))
        return nullptr;
    pg_eval_result r = blank<pg_eval_result>();
    if (failed(env, pg_session_evaluate_sampled(s, tokens.data(), tokens.size(), &c, &r), s, pg_session_last_error))
        return nullptr;
    return struct_longs(env, r);
}

// --- the sequence --------------------------------------------------------------------------

void n_session_append(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset, jint length) {
    auto* s = session_of(env, h);
    IntBulk tokens;
    if (!s || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true)) return;
    failed(env, pg_session_append(s, tokens.data(), tokens.size()), s, pg_session_last_error);
}

void n_session_logits(JNIEnv* env, jclass, jlong h, jfloatArray out_a, jobject out_b, jint offset, jint length) {
    auto* s = session_of(env, h);
    FloatBulk out;
    if (!s || !out.open(env, out_a, out_b, offset, length, "logits", false)) return;
    if (!failed(env, pg_session_logits(s, out.data(), out.size()), s, pg_session_last_error)) out.commit(out.size());
}

void n_session_reset(JNIEnv* env, jclass, jlong h) {
    auto* s = session_of(env, h);
    if (s) failed(env, pg_session_reset(s), s, pg_session_last_error);
}

jlong n_session_position(JNIEnv* env, jclass, jlong h) {
    auto* s = session_of(env, h);
    int64_t position = 0;
    if (!s || failed(env, pg_session_position(s, &position), s, pg_session_last_error)) return 0;
    return jlong(position);
}

// Generation after the sequence; the arguments are those of Native.generate without a prompt.
jint n_session_generate(JNIEnv* env, jclass, jlong h, jlongArray jconfig, jobjectArray jstops, jobject bridge,
                        jintArray out_a, jobject out_b, jint out_off, jint out_cap) {
    auto* s = session_of(env, h);
    SampleArgs args;
    GenerateOutput out;
    if (!s || !sample_config_from(env, jconfig, jstops, bridge, &args) || !out.open(env, out_a, out_b, out_off, out_cap))
        return 0;
    size_t n_out = 0;
    pg_status status = pg_session_generate(s, &args.config, out.data(), out.capacity(), &n_out);
    if (args.cb.rethrow(env) || failed(env, status, s, pg_session_last_error)) return 0;
    return out.commit(n_out);
}

// --- adapters (Kotlin keeps an attached adapter alive and holds its lock shared per call) -----

void n_session_attach_adapter(JNIEnv* env, jclass, jlong h, jlong adapter) {
    auto* s = session_of(env, h);
    auto* a = s ? handle_of<pg_lora_adapter>(env, adapter, "LoraAdapter") : nullptr;
    if (a) failed(env, pg_session_attach_adapter(s, a), s, pg_session_last_error);
}

void n_session_detach_adapter(JNIEnv* env, jclass, jlong h) {
    auto* s = session_of(env, h);
    if (s) failed(env, pg_session_detach_adapter(s), s, pg_session_last_error);
}

// The attached adapter's handle (the pointer Kotlin attached), or 0.
jlong n_session_adapter(JNIEnv* env, jclass, jlong h) {
    auto* s = session_of(env, h);
    const pg_lora_adapter* a = nullptr;
    if (!s || failed(env, pg_session_adapter(s, &a), s, pg_session_last_error)) return 0;
    return to_handle(a);
}

const JNINativeMethod kSessionNatives[] = {
    PG_NATIVE("sessionCreate", "(J[J)J", n_session_create),
    PG_NATIVE("sessionFree", "(J)V", n_session_free),
    PG_NATIVE("sessionLastError", "(J)Ljava/lang/String;", n_session_last_error),
    PG_NATIVE("sessionNThreads", "(J)I", n_session_n_threads),
    PG_NATIVE("sessionForward", "(JJ[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III" PG_SIG_FLOATS ")F", n_session_forward),
    PG_NATIVE("sessionEvaluate", "(J" PG_SIG_INTS "[JLphonegpt/ProgressBridge;)[J", n_session_evaluate),
    PG_NATIVE("sessionEvaluateSampled", "(J" PG_SIG_INTS "[J)[J", n_session_evaluate_sampled),
    PG_NATIVE("sessionAppend", "(J" PG_SIG_INTS ")V", n_session_append),
    PG_NATIVE("sessionLogits", "(J" PG_SIG_FLOATS ")V", n_session_logits),
    PG_NATIVE("sessionReset", "(J)V", n_session_reset),
    PG_NATIVE("sessionPosition", "(J)J", n_session_position),
    PG_NATIVE("sessionAttachAdapter", "(JJ)V", n_session_attach_adapter),
    PG_NATIVE("sessionDetachAdapter", "(J)V", n_session_detach_adapter),
    PG_NATIVE("sessionAdapter", "(J)J", n_session_adapter),
    PG_NATIVE("sessionGenerate", "(J[J[Ljava/lang/String;Lphonegpt/TokenBridge;" PG_SIG_INTS ")I", n_session_generate),
};

}  // namespace

bool register_session_natives(JNIEnv* env, jclass natives) { return register_natives(env, natives, kSessionNatives); }

}  // namespace pg_jni
