// The training session natives (pg_train_session_*, pg_train_memory_*; Kotlin:
// TrainSession.kt). A session borrows its model (and adapter): Kotlin keeps them alive while it
// lives. run() holds the session's lock; cancel, set_conditions, report and core rates are called
// from other threads while a run is in progress, which the C API allows.
#include "call_args.hpp"

namespace pg_jni {
namespace {

pg_train_session* train_session_of(JNIEnv* env, jlong h) { return handle_of<pg_train_session>(env, h, "TrainSession"); }

bool session_failed(JNIEnv* env, pg_status s, const pg_train_session* t) {
    return failed(env, s, t, pg_train_session_last_error);
}

jlong n_train_session_create(JNIEnv* env, jclass, jlong model, jlong adapter, jlongArray jtrain, jlongArray jconfig,
                             jstring jpath) {
    auto* m = handle_of<pg_model>(env, model, "Model");
    pg_lora_adapter* a = nullptr;
    if (m && adapter != 0) a = handle_of<pg_lora_adapter>(env, adapter, "LoraAdapter");
    pg_train_config train;
    pg_train_session_config config;
    std::string path;
    if (!m || (adapter != 0 && !a) || !options_from(env, jtrain, &train) || !options_from(env, jconfig, &config) ||
        !get_string(env, jpath, "checkpoint", &path))
        return 0;
    pg_train_session* s = nullptr;
    const pg_status st = a ? pg_train_session_create_lora(m, a, &train, &config, path.c_str(), &s)
                           : pg_train_session_create(m, &train, &config, path.c_str(), &s);
    if (failed(env, st)) return 0;
    return to_handle(s);
}

void n_train_session_free(JNIEnv*, jclass, jlong h) {
    pg_train_session_free(reinterpret_cast<pg_train_session*>(intptr_t(h)));
}

void n_train_session_set_data(JNIEnv* env, jclass, jlong h, jintArray a, jobject b, jint offset, jint length) {
    set_data(env, train_session_of(env, h), pg_train_session_set_data, pg_train_session_last_error, a, b, offset,
             length);
}

jlongArray n_train_session_run(JNIEnv* env, jclass, jlong h) {
    auto* s = train_session_of(env, h);
    pg_train_session_report r = blank<pg_train_session_report>();
    if (!s || session_failed(env, pg_train_session_run(s, &r), s)) return nullptr;
    return struct_longs(env, r);
}

void n_train_session_cancel(JNIEnv* env, jclass, jlong h) {
    auto* s = train_session_of(env, h);
    if (s) session_failed(env, pg_train_session_cancel(s), s);
}

void n_train_session_set_conditions(JNIEnv* env, jclass, jlong h, jlongArray jconditions) {
    auto* s = train_session_of(env, h);
    pg_device_conditions c;
    if (!s || !options_from(env, jconditions, &c)) return;
    session_failed(env, pg_train_session_set_conditions(s, &c), s);
}

jlongArray n_train_session_report(JNIEnv* env, jclass, jlong h) {
    auto* s = train_session_of(env, h);
    pg_train_session_report r = blank<pg_train_session_report>();
    if (!s || session_failed(env, pg_train_session_get_report(s, &r), s)) return nullptr;
    return struct_longs(env, r);
}

// {capacity, rate bits, capacity, rate bits, ...}, fastest class first.
jlongArray n_train_session_core_rates(JNIEnv* env, jclass, jlong h) {
    auto* s = train_session_of(env, h);
    if (!s) return nullptr;
    std::vector<int32_t> caps;
    std::vector<double> rates;
    int32_t n = 0;
    pg_status st = PG_ERR_BUFFER_TOO_SMALL;
    while (st == PG_ERR_BUFFER_TOO_SMALL) {  // the classes may grow between the calls
        caps.resize(size_t(n));
        rates.resize(size_t(n));
        st = pg_train_session_core_rates(s, caps.data(), rates.data(), n, &n);
    }
    if (session_failed(env, st, s)) return nullptr;
    std::vector<jlong> out;
    for (int32_t i = 0; i < n; ++i) {
        out.push_back(caps[size_t(i)]);
        out.push_back(to_long(rates[size_t(i)]));
    }
    return new_longs(env, out);
}

// pg_train_memory_plan (budget < 0) or pg_train_memory_max_batch; jlora null = full training.
jlongArray n_train_memory_plan(JNIEnv* env, jclass, jlongArray jmodel, jint storage, jlongArray jlora,
                               jintArray jlayers, jlongArray jtrain, jlong n_data, jlong budget) {
    pg_model_config model;
    pg_train_config train;
    pg_lora_config lora;
    if (!options_from(env, jmodel, &model) || !options_from(env, jtrain, &train)) return nullptr;
    std::vector<int32_t> layers;
    if (jlora) {
        if (!options_from(env, jlora, &lora)) return nullptr;
        if (jlayers) {
            layers.resize(size_t(env->GetArrayLength(jlayers)));
            env->GetIntArrayRegion(jlayers, 0, jsize(layers.size()), layers.data());
        }
        lora.layers = layers.empty() ? nullptr : layers.data();
        lora.n_layers = int32_t(layers.size());
    }
    pg_memory_plan p = blank<pg_memory_plan>();
    const pg_status st =
        budget < 0 ? pg_train_memory_plan(&model, pg_weight_storage(storage), jlora ? &lora : nullptr, &train, n_data, &p)
                   : pg_train_memory_max_batch(&model, pg_weight_storage(storage), jlora ? &lora : nullptr, &train,
                                               n_data, budget, &p);
    if (failed(env, st)) return nullptr;
    return struct_longs(env, p);
}

const JNINativeMethod kTrainSessionNatives[] = {
    PG_NATIVE("trainSessionCreate", "(JJ[J[JLjava/lang/String;)J", n_train_session_create),
    PG_NATIVE("trainSessionFree", "(J)V", n_train_session_free),
    PG_NATIVE("trainSessionSetData", "(J" PG_SIG_INTS ")V", n_train_session_set_data),
    PG_NATIVE("trainSessionRun", "(J)[J", n_train_session_run),
    PG_NATIVE("trainSessionCancel", "(J)V", n_train_session_cancel),
    PG_NATIVE("trainSessionSetConditions", "(J[J)V", n_train_session_set_conditions),
    PG_NATIVE("trainSessionReport", "(J)[J", n_train_session_report),
    PG_NATIVE("trainSessionCoreRates", "(J)[J", n_train_session_core_rates),
    PG_NATIVE("trainMemoryPlan", "([JI[J[I[JJJ)[J", n_train_memory_plan),
};

}  // namespace

bool register_train_session_natives(JNIEnv* env, jclass natives) {
    return register_natives(env, natives, kTrainSessionNatives);
}

}  // namespace pg_jni
