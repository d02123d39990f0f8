// The full-model trainer natives (pg_trainer_*; Kotlin: Trainer.kt): creation over a model, data,
// steps (sampled or on a caller's batch), gradients, the schedule, threads, save and resume. The
// trainer borrows its model: Kotlin keeps it alive and holds its lock alone during a step.
#include "call_args.hpp"

namespace pg_jni {
namespace {

pg_trainer* trainer_of(JNIEnv* env, jlong h) { return handle_of<pg_trainer>(env, h, "Trainer"); }

bool trainer_failed(JNIEnv* env, pg_status s, const pg_trainer* t) { return failed(env, s, t, pg_trainer_last_error); }

jlong n_trainer_create(JNIEnv* env, jclass, jlong mh, jlongArray jc) {
    auto* m = handle_of<pg_model>(env, mh, "Model");
    pg_train_config c;
    if (!m || !options_from(env, jc, &c)) return 0;
    pg_trainer* t = nullptr;
    if (failed(env, pg_trainer_create(m, &c, &t))) return 0;
    return to_handle(t);
}

void n_trainer_free(JNIEnv*, jclass, jlong h) { pg_trainer_free(reinterpret_cast<pg_trainer*>(intptr_t(h))); }

jlongArray n_trainer_get_config(JNIEnv* env, jclass, jlong h) {
    return get_train_config(env, trainer_of(env, h), pg_trainer_get_config, pg_trainer_last_error);
}

void n_trainer_set_data(JNIEnv* env, jclass, jlong h, jintArray a, jobject b, jint offset, jint length) {
    set_data(env, trainer_of(env, h), pg_trainer_set_data, pg_trainer_last_error, a, b, offset, length);
}

jlongArray n_trainer_step(JNIEnv* env, jclass, jlong h) {
    return step(env, trainer_of(env, h), pg_trainer_step, pg_trainer_last_error);
}

jlongArray n_trainer_step_batch(JNIEnv* env, jclass, jlong h, jintArray in_a, jobject in_b, jint in_off,
                                jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T) {
    return step_batch(env, trainer_of(env, h), pg_trainer_step_batch, pg_trainer_last_error, in_a, in_b, in_off, tgt_a,
                      tgt_b, tgt_off, B, T);
}

jfloat n_trainer_compute_gradients(JNIEnv* env, jclass, jlong h, jintArray in_a, jobject in_b, jint in_off,
                                   jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T) {
    return compute_gradients(env, trainer_of(env, h), pg_trainer_compute_gradients, pg_trainer_last_error, in_a, in_b,
                             in_off, tgt_a, tgt_b, tgt_off, B, T);
}

// Copies the gradient of tensor `index` (numel floats; Kotlin knows the shape from the model).
void n_trainer_read_grad(JNIEnv* env, jclass, jlong h, jint index, jfloatArray a, jobject b, jint offset,
                         jint length) {
    read_grad(env, trainer_of(env, h), pg_trainer_grad, pg_trainer_last_error, index, a, b, offset, length);
}

jlong n_trainer_step_count(JNIEnv* env, jclass, jlong h) {
    return get_number(env, trainer_of(env, h), pg_trainer_step_count, pg_trainer_last_error);
}

jfloat n_trainer_lr_at(JNIEnv* env, jclass, jlong h, jlong step) {
    return lr_at(env, trainer_of(env, h), pg_trainer_lr_at, pg_trainer_last_error, step);
}

jint n_trainer_threads(JNIEnv* env, jclass, jlong h) {
    return get_number(env, trainer_of(env, h), pg_trainer_n_threads, pg_trainer_last_error);
}

void n_trainer_set_threads(JNIEnv* env, jclass, jlong h, jint n) {
    set_threads(env, trainer_of(env, h), pg_trainer_set_threads, pg_trainer_last_error, n);
}

void n_trainer_save(JNIEnv* env, jclass, jlong h, jstring jpath, jlongArray joptions) {
    auto* t = trainer_of(env, h);
    std::string path;
    pg_save_options o;
    if (!t || !get_string(env, jpath, "path", &path) || !options_from(env, joptions, &o)) return;
    trainer_failed(env, pg_trainer_save(t, path.c_str(), &o), t);
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

const JNINativeMethod kTrainerNatives[] = {
    PG_NATIVE("trainerCreate", "(J[J)J", n_trainer_create),
    PG_NATIVE("trainerFree", "(J)V", n_trainer_free),
    PG_NATIVE("trainerGetConfig", "(J)[J", n_trainer_get_config),
    PG_NATIVE("trainerSetData", "(J" PG_SIG_INTS ")V", n_trainer_set_data),
    PG_NATIVE("trainerStep", "(J)[J", n_trainer_step),
    PG_NATIVE("trainerStepBatch", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III)[J", n_trainer_step_batch),
    PG_NATIVE("trainerComputeGradients", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III)F",
              n_trainer_compute_gradients),
    PG_NATIVE("trainerReadGrad", "(JI" PG_SIG_FLOATS ")V", n_trainer_read_grad),
    PG_NATIVE("trainerStepCount", "(J)J", n_trainer_step_count),
    PG_NATIVE("trainerLrAt", "(JJ)F", n_trainer_lr_at),
    PG_NATIVE("trainerThreads", "(J)I", n_trainer_threads),
    PG_NATIVE("trainerSetThreads", "(JI)V", n_trainer_set_threads),
    PG_NATIVE("trainerSave", "(JLjava/lang/String;[J)V", n_trainer_save),
    PG_NATIVE("trainerResume", "(Ljava/lang/String;)[J", n_trainer_resume),
};

}  // namespace

bool register_trainer_natives(JNIEnv* env, jclass natives) { return register_natives(env, natives, kTrainerNatives); }

}  // namespace pg_jni
