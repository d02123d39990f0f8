// The LoRA natives (pg_lora_*; Kotlin: Lora.kt): configurations, adapters (tensors, files, the
// base check and the base's JSON, PEFT export and import, the training record), merging, and the
// LoRA trainer with its gradients and checkpoints. The trainer borrows its base and its adapter: Kotlin keeps both alive while it
// lives, holds the base's lock shared (it is never written) and the adapter's alone during a step.
#include "call_args.hpp"
#include "tensor_jni.hpp"

namespace pg_jni {
namespace {

pg_lora_adapter* adapter_of(JNIEnv* env, jlong h) { return handle_of<pg_lora_adapter>(env, h, "LoraAdapter"); }
pg_lora_trainer* lora_trainer_of(JNIEnv* env, jlong h) { return handle_of<pg_lora_trainer>(env, h, "LoraTrainer"); }

bool adapter_failed(JNIEnv* env, pg_status s, const pg_lora_adapter* a) {
    return failed(env, s, a, pg_lora_adapter_last_error);
}
bool lora_trainer_failed(JNIEnv* env, pg_status s, const pg_lora_trainer* t) {
    return failed(env, s, t, pg_lora_trainer_last_error);
}

// --- configurations: LoraConfig.fields() and its layer list (null = every layer) ------------

// Fills `c`; `layers` keeps the list alive for the call.
bool lora_config_from(JNIEnv* env, jlongArray jc, jintArray jlayers, pg_lora_config* c, std::vector<int32_t>* layers) {
    if (!options_from(env, jc, c)) return false;
    if (jlayers) {
        layers->resize(std::size_t(env->GetArrayLength(jlayers)));
        if (!layers->empty())
            env->GetIntArrayRegion(jlayers, 0, jsize(layers->size()), reinterpret_cast<jint*>(layers->data()));
        c->layers = layers->empty() ? nullptr : layers->data();
        c->n_layers = int32_t(layers->size());
    }
    return !env->ExceptionCheck();
}

void n_lora_config_validate(JNIEnv* env, jclass, jlongArray jc, jintArray jlayers) {
    pg_lora_config c;
    std::vector<int32_t> layers;
    if (lora_config_from(env, jc, jlayers, &c, &layers)) failed(env, pg_lora_config_validate(&c));
}

// --- adapters ------------------------------------------------------------------------------

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
    auto* a = adapter_of(env, h);
    *c = defaults<pg_lora_config>();
    return a && !adapter_failed(env, pg_lora_adapter_get_config(a, c), a);
}

jlongArray n_lora_adapter_get_config(JNIEnv* env, jclass, jlong h) {
    pg_lora_config c;
    if (!lora_config_of(env, h, &c)) return nullptr;
    return struct_longs(env, c);
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
    auto* a = adapter_of(env, h);
    float scale = 0.0f;
    if (!a || adapter_failed(env, pg_lora_adapter_scale(a, &scale), a)) return 0;
    return scale;
}

jlong n_lora_adapter_num_params(JNIEnv* env, jclass, jlong h) {
    auto* a = adapter_of(env, h);
    int64_t n = 0;
    if (!a || adapter_failed(env, pg_lora_adapter_num_params(a, &n), a)) return 0;
    return jlong(n);
}

// The training record: {steps, tokens} in `counts` (2 longs) and the losses and learning rates
// as one float array (steps losses, then steps learning rates).
jfloatArray n_lora_adapter_training_record(JNIEnv* env, jclass, jlong h, jlongArray counts) {
    auto* a = adapter_of(env, h);
    if (!a) return nullptr;
    if (!counts || env->GetArrayLength(counts) != 2) {
        throw_invalid(env, "trainingRecord: counts must have 2 entries");
        return nullptr;
    }
    int64_t steps = 0, tokens = 0;
    const float* losses = nullptr;
    const float* lrs = nullptr;
    if (adapter_failed(env, pg_lora_adapter_training_record(a, &steps, &tokens, &losses, &lrs), a)) return nullptr;
    if (steps > INT32_MAX / 2) {
        throw_status(env, PG_ERR_UNSUPPORTED, "trainingRecord: the record does not fit a Java array");
        return nullptr;
    }
    const jlong c[2] = {steps, tokens};
    env->SetLongArrayRegion(counts, 0, 2, c);
    jfloatArray out = env->NewFloatArray(jsize(2 * steps));
    if (out && steps > 0) {
        env->SetFloatArrayRegion(out, 0, jsize(steps), losses);
        env->SetFloatArrayRegion(out, jsize(steps), jsize(steps), lrs);
    }
    return out;
}

// Merging an adapter into a model, and adapter files.
jlong n_lora_merge(JNIEnv* env, jclass, jlong mh, jlong ah, jint n_threads) {
    auto* m = handle_of<pg_model>(env, mh, "Model");
    auto* a = m ? adapter_of(env, ah) : nullptr;
    pg_model* merged = nullptr;
    if (!a || failed(env, pg_lora_merge(m, a, n_threads, &merged))) return 0;
    return to_handle(merged);
}

void n_lora_merge_in_place(JNIEnv* env, jclass, jlong mh, jlong ah, jint n_threads, jboolean unmerge) {
    auto* m = handle_of<pg_model>(env, mh, "Model");
    auto* a = m ? adapter_of(env, ah) : nullptr;
    if (a) failed(env, unmerge ? pg_lora_unmerge_in_place(m, a, n_threads) : pg_lora_merge_in_place(m, a, n_threads));
}

void n_lora_adapter_save(JNIEnv* env, jclass, jlong h, jstring jpath) {
    auto* a = adapter_of(env, h);
    std::string path;
    if (a && get_string(env, jpath, "path", &path)) adapter_failed(env, pg_lora_adapter_save(a, path.c_str()), a);
}

void n_lora_export_peft(JNIEnv* env, jclass, jlong h, jstring jfolder) {
    auto* a = adapter_of(env, h);
    std::string folder;
    if (a && get_string(env, jfolder, "folder", &folder)) adapter_failed(env, pg_lora_export_peft(a, folder.c_str()), a);
}

// `base` 0: no base check.
jlong n_lora_adapter_load(JNIEnv* env, jclass, jstring jpath, jlong mh) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return 0;
    auto* m = mh ? handle_of<pg_model>(env, mh, "Model") : nullptr;
    if (mh && !m) return 0;
    pg_lora_adapter* a = nullptr;
    if (failed(env, pg_lora_adapter_load(path.c_str(), m, &a))) return 0;
    return to_handle(a);
}

jlong n_lora_import_peft(JNIEnv* env, jclass, jstring jfolder, jlong mh) {
    std::string folder;
    if (!get_string(env, jfolder, "folder", &folder)) return 0;
    auto* m = handle_of<pg_model>(env, mh, "Model");
    pg_lora_adapter* a = nullptr;
    if (!m || failed(env, pg_lora_import_peft(folder.c_str(), m, &a))) return 0;
    return to_handle(a);
}

// The recorded base's identity as UTF-8 JSON bytes (Kotlin decodes them).
jbyteArray n_lora_adapter_base_json(JNIEnv* env, jclass, jlong h) {
    auto* a = adapter_of(env, h);
    if (!a) return nullptr;
    return filled_bytes(env, [&](char* text, size_t cap, size_t* len) { return pg_lora_adapter_base_json(a, text, cap, len); },
                        [&] { return pg_lora_adapter_last_error(a); });
}

void n_lora_adapter_check_base(JNIEnv* env, jclass, jlong h, jlong mh) {
    auto* a = adapter_of(env, h);
    auto* m = a ? handle_of<pg_model>(env, mh, "Model") : nullptr;
    if (m) adapter_failed(env, pg_lora_adapter_check_base(a, m), a);
}

// --- the LoRA trainer ----------------------------------------------------------------------

jlong n_lora_trainer_create(JNIEnv* env, jclass, jlong base, jlong adapter, jlongArray jconfig) {
    auto* m = handle_of<pg_model>(env, base, "Model");
    auto* a = m ? adapter_of(env, adapter) : nullptr;
    pg_train_config c;
    if (!a || !options_from(env, jconfig, &c)) return 0;
    pg_lora_trainer* t = nullptr;
    if (failed(env, pg_lora_trainer_create(m, a, &c, &t))) return 0;
    return to_handle(t);
}

void n_lora_trainer_free(JNIEnv*, jclass, jlong h) {
    pg_lora_trainer_free(reinterpret_cast<pg_lora_trainer*>(intptr_t(h)));
}

void n_lora_trainer_set_data(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset, jint length) {
    set_data(env, lora_trainer_of(env, h), pg_lora_trainer_set_data, pg_lora_trainer_last_error, tok_a, tok_b, offset,
             length);
}

jlongArray n_lora_trainer_step(JNIEnv* env, jclass, jlong h) {
    return step(env, lora_trainer_of(env, h), pg_lora_trainer_step, pg_lora_trainer_last_error);
}

jlongArray n_lora_trainer_step_batch(JNIEnv* env, jclass, jlong h, jintArray in_a, jobject in_b, jint in_off,
                                     jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T) {
    return step_batch(env, lora_trainer_of(env, h), pg_lora_trainer_step_batch, pg_lora_trainer_last_error, in_a, in_b,
                      in_off, tgt_a, tgt_b, tgt_off, B, T);
}

jfloat n_lora_trainer_compute_gradients(JNIEnv* env, jclass, jlong h, jintArray in_a, jobject in_b, jint in_off,
                                        jintArray tgt_a, jobject tgt_b, jint tgt_off, jint B, jint T) {
    return compute_gradients(env, lora_trainer_of(env, h), pg_lora_trainer_compute_gradients, pg_lora_trainer_last_error,
                             in_a, in_b, in_off, tgt_a, tgt_b, tgt_off, B, T);
}

// Copies the gradient of adapter tensor `index` (numel floats; Kotlin knows the shape).
void n_lora_trainer_read_grad(JNIEnv* env, jclass, jlong h, jint index, jfloatArray a, jobject b, jint offset,
                              jint length) {
    read_grad(env, lora_trainer_of(env, h), pg_lora_trainer_grad, pg_lora_trainer_last_error, index, a, b, offset, length);
}

void n_lora_trainer_save(JNIEnv* env, jclass, jlong h, jstring jpath) {
    auto* t = lora_trainer_of(env, h);
    std::string path;
    if (t && get_string(env, jpath, "path", &path)) lora_trainer_failed(env, pg_lora_trainer_save(t, path.c_str()), t);
}

// The full trainer's getters and thread count (call_args.hpp), over the LoRA family's calls.
jlongArray n_lora_trainer_get_config(JNIEnv* env, jclass, jlong h) {
    return get_train_config(env, lora_trainer_of(env, h), pg_lora_trainer_get_config, pg_lora_trainer_last_error);
}

jlong n_lora_trainer_step_count(JNIEnv* env, jclass, jlong h) {
    return get_number(env, lora_trainer_of(env, h), pg_lora_trainer_step_count, pg_lora_trainer_last_error);
}

jfloat n_lora_trainer_lr_at(JNIEnv* env, jclass, jlong h, jlong step) {
    return lr_at(env, lora_trainer_of(env, h), pg_lora_trainer_lr_at, pg_lora_trainer_last_error, step);
}

jint n_lora_trainer_threads(JNIEnv* env, jclass, jlong h) {
    return get_number(env, lora_trainer_of(env, h), pg_lora_trainer_n_threads, pg_lora_trainer_last_error);
}

void n_lora_trainer_set_threads(JNIEnv* env, jclass, jlong h, jint n) {
    set_threads(env, lora_trainer_of(env, h), pg_lora_trainer_set_threads, pg_lora_trainer_last_error, n);
}

// Returns {adapter handle, trainer handle}.
jlongArray n_lora_trainer_resume(JNIEnv* env, jclass, jstring jpath, jlong base) {
    std::string path;
    if (!get_string(env, jpath, "path", &path)) return nullptr;
    auto* m = handle_of<pg_model>(env, base, "Model");
    pg_lora_adapter* a = nullptr;
    pg_lora_trainer* t = nullptr;
    if (!m || failed(env, pg_lora_trainer_resume(path.c_str(), m, &a, &t))) return nullptr;
    jlongArray out = new_longs(env, {to_handle(a), to_handle(t)});
    if (!out) {
        pg_lora_trainer_free(t);
        pg_lora_adapter_free(a);
    }
    return out;
}

const JNINativeMethod kLoraNatives[] = {
    PG_NATIVE("loraConfigValidate", "([J[I)V", n_lora_config_validate),
    PG_NATIVE("loraAdapterCreate", "(J[J[I)J", n_lora_adapter_create),
    PG_NATIVE("loraAdapterFree", "(J)V", n_lora_adapter_free),
    PG_NATIVE("loraAdapterGetConfig", "(J)[J", n_lora_adapter_get_config),
    PG_NATIVE("loraAdapterGetLayers", "(J)[I", n_lora_adapter_get_layers),
    PG_NATIVE("loraAdapterScale", "(J)F", n_lora_adapter_scale),
    PG_NATIVE("loraAdapterNumParams", "(J)J", n_lora_adapter_num_params),
    PG_NATIVE("loraAdapterTrainingRecord", "(J[J)[F", n_lora_adapter_training_record),
    PG_NATIVE("loraAdapterNumTensors", "(J)I", n_num_tensors<pg_lora_adapter>),
    PG_NATIVE("loraAdapterTensorName", "(JI)Ljava/lang/String;", n_tensor_name<pg_lora_adapter>),
    PG_NATIVE("loraAdapterTensorShape", "(JI)[J", n_tensor_shape<pg_lora_adapter>),
    PG_NATIVE("loraAdapterFindTensor", "(JLjava/lang/String;)I", n_find_tensor<pg_lora_adapter>),
    PG_NATIVE("loraAdapterReadTensor", "(JI" PG_SIG_FLOATS ")V", n_read_tensor<pg_lora_adapter>),
    PG_NATIVE("loraAdapterWriteTensor", "(JI" PG_SIG_FLOATS ")V", n_write_tensor<pg_lora_adapter>),
    PG_NATIVE("loraMerge", "(JJI)J", n_lora_merge),
    PG_NATIVE("loraMergeInPlace", "(JJIZ)V", n_lora_merge_in_place),
    PG_NATIVE("loraAdapterSave", "(JLjava/lang/String;)V", n_lora_adapter_save),
    PG_NATIVE("loraExportPeft", "(JLjava/lang/String;)V", n_lora_export_peft),
    PG_NATIVE("loraAdapterLoad", "(Ljava/lang/String;J)J", n_lora_adapter_load),
    PG_NATIVE("loraAdapterCheckBase", "(JJ)V", n_lora_adapter_check_base),
    PG_NATIVE("loraImportPeft", "(Ljava/lang/String;J)J", n_lora_import_peft),
    PG_NATIVE("loraAdapterBaseJson", "(J)[B", n_lora_adapter_base_json),
    PG_NATIVE("loraTrainerCreate", "(JJ[J)J", n_lora_trainer_create),
    PG_NATIVE("loraTrainerFree", "(J)V", n_lora_trainer_free),
    PG_NATIVE("loraTrainerSetData", "(J" PG_SIG_INTS ")V", n_lora_trainer_set_data),
    PG_NATIVE("loraTrainerStep", "(J)[J", n_lora_trainer_step),
    PG_NATIVE("loraTrainerStepBatch", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III)[J", n_lora_trainer_step_batch),
    PG_NATIVE("loraTrainerComputeGradients", "(J[ILjava/nio/IntBuffer;I[ILjava/nio/IntBuffer;III)F",
              n_lora_trainer_compute_gradients),
    PG_NATIVE("loraTrainerReadGrad", "(JI" PG_SIG_FLOATS ")V", n_lora_trainer_read_grad),
    PG_NATIVE("loraTrainerGetConfig", "(J)[J", n_lora_trainer_get_config),
    PG_NATIVE("loraTrainerStepCount", "(J)J", n_lora_trainer_step_count),
    PG_NATIVE("loraTrainerLrAt", "(JJ)F", n_lora_trainer_lr_at),
    PG_NATIVE("loraTrainerThreads", "(J)I", n_lora_trainer_threads),
    PG_NATIVE("loraTrainerSetThreads", "(JI)V", n_lora_trainer_set_threads),
    PG_NATIVE("loraTrainerSave", "(JLjava/lang/String;)V", n_lora_trainer_save),
    PG_NATIVE("loraTrainerResume", "(Ljava/lang/String;J)[J", n_lora_trainer_resume),
};

}  // namespace

bool register_lora_natives(JNIEnv* env, jclass natives) { return register_natives(env, natives, kLoraNatives); }

}  // namespace pg_jni
