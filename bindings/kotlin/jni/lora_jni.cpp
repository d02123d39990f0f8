// The LoRA trainer natives (pg_lora_trainer_*; Kotlin: LoraTrainer in Lora.kt). The trainer
// borrows its base and its adapter: Kotlin keeps both alive while it lives, holds the base's
// lock shared (it is never written) and the adapter's alone during a step.
#include "jni_support.hpp"

namespace pg_jni {
namespace {

pg_lora_trainer* lora_trainer_of(JNIEnv* env, jlong h) { return handle_of<pg_lora_trainer>(env, h, "LoraTrainer"); }

jlong n_lora_trainer_create(JNIEnv* env, jclass, jlong base, jlong adapter, jlongArray jconfig) {
    auto* m = handle_of<pg_model>(env, base, "Model");
    auto* a = m ? handle_of<pg_lora_adapter>(env, adapter, "LoraAdapter") : nullptr;
    pg_train_config c;
    if (!a || !train_config_from(env, jconfig, &c)) return 0;
    pg_lora_trainer* t = nullptr;
    if (failed(env, pg_lora_trainer_create(m, a, &c, &t))) return 0;
    return to_handle(t);
}

void n_lora_trainer_free(JNIEnv*, jclass, jlong h) {
    pg_lora_trainer_free(reinterpret_cast<pg_lora_trainer*>(intptr_t(h)));
}

void n_lora_trainer_set_data(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset, jint length) {
    auto* t = lora_trainer_of(env, h);
    IntBulk tokens;
    if (!t || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true)) return;
    failed(env, pg_lora_trainer_set_data(t, tokens.data(), tokens.size()), t, pg_lora_trainer_last_error);
}

jlongArray n_lora_trainer_step(JNIEnv* env, jclass, jlong h) {
    auto* t = lora_trainer_of(env, h);
    pg_step_result r = blank_step_result();
    if (!t || failed(env, pg_lora_trainer_step(t, &r), t, pg_lora_trainer_last_error)) return nullptr;
    return step_result_fields(env, r);
}

jlongArray n_lora_trainer_step_batch(JNIEnv* env, jclass, jlong h, jintArray in_a, jobject in_b, jint in_off,
                                     jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T) {
    auto* t = lora_trainer_of(env, h);
    IntBulk in, tgt;
    if (!t || !open_batch(env, B, T, &in, in_a, in_b, in_off, &tgt, tgt_a, tgt_b, tgt_off)) return nullptr;
    pg_step_result r = blank_step_result();
    if (failed(env, pg_lora_trainer_step_batch(t, in.data(), tgt.data(), B, T, &r), t, pg_lora_trainer_last_error))
        return nullptr;
    return step_result_fields(env, r);
}

const JNINativeMethod kLoraTrainerNatives[] = {
    PG_NATIVE("loraTrainerCreate", "(JJ[J)J", n_lora_trainer_create),
    PG_NATIVE("loraTrainerFree", "(J)V", n_lora_trainer_free),
    PG_NATIVE("loraTrainerSetData", "(J" PG_INTS ")V", n_lora_trainer_set_data),
    PG_NATIVE("loraTrainerStep", "(J)[J", n_lora_trainer_step),
    PG_NATIVE("loraTrainerStepBatch", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III)[J", n_lora_trainer_step_batch),
};

}  // namespace

bool register_lora_trainer_natives(JNIEnv* env, jclass natives) {
    return register_natives(env, natives, kLoraTrainerNatives);
}

}  // namespace pg_jni
