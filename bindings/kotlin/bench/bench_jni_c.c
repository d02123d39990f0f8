/* The C half of the JNI overhead benchmark, loaded into the same JVM as the Kotlin half
 * (BenchJni.kt) so that both run in one process, on one thread, interleaved block by block: on
 * a shared machine the load then hits both sides alike. Each function times its own loop of
 * plain C API calls (clock_gettime around the loop, no JNI inside it); the Kotlin side times
 * the same calls made through the binding. Not part of the binding (no libphonegpt_jni). */
#define _POSIX_C_SOURCE 199309L  /* clock_gettime in C99 */
#include <jni.h>
#include <phonegpt/phonegpt.h>

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct bench {
    pg_model* model;
    pg_trainer* trainer;
    int32_t* data;
    int32_t n_ctx;
    int32_t threads;
    long streamed;
} bench;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int fail(JNIEnv* env, pg_status s) {
    if (s == PG_OK) return 0;
    (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalStateException"), pg_last_error());
    return 1;
}

static int count_token(void* user, int32_t token) {
    (void)token;
    ++((bench*)user)->streamed;
    return 0;
}

/* The same model (preset, seed 1), trainer and data as BenchJni.kt builds through the binding. */
/* The process's CPU time in ns (every thread), at clock_gettime's resolution: Java's own
 * OperatingSystemMXBean.getProcessCpuTime counts 10 ms ticks on Linux, too coarse for 2%. */
JNIEXPORT jlong JNICALL Java_BenchJniKt_cCpuNs(JNIEnv* env, jclass cls) {
    (void)env;
    (void)cls;
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (jlong)t.tv_sec * 1000000000 + t.tv_nsec;
}

JNIEXPORT jlong JNICALL Java_BenchJniKt_cSetup(JNIEnv* env, jclass cls, jstring jpreset, jint batch, jint threads,
                                               jint n_data) {
    pg_model_config mc;
    pg_train_config tc;
    bench* b = calloc(1, sizeof *b);
    const char* preset = (*env)->GetStringUTFChars(env, jpreset, NULL);
    pg_status s = pg_model_config_preset(preset, &mc);
    int32_t i;
    (void)cls;
    (*env)->ReleaseStringUTFChars(env, jpreset, preset);
    if (fail(env, s) || fail(env, pg_model_create(&mc, 1, &b->model))) return 0;
    pg_train_config_default(&tc);
    tc.batch_size = batch;
    tc.n_threads = threads;
    if (fail(env, pg_trainer_create(b->model, &tc, &b->trainer))) return 0;
    b->data = malloc((size_t)n_data * sizeof *b->data);
    for (i = 0; i < n_data; ++i) b->data[i] = (int32_t)(((int64_t)i * 7919 + i / 13) % mc.vocab_size);
    if (fail(env, pg_trainer_set_data(b->trainer, b->data, (size_t)n_data))) return 0;
    b->n_ctx = mc.n_ctx;
    b->threads = threads;
    return (jlong)(intptr_t)b;
}

/* ms per pg_trainer_step over `steps` steps. */
JNIEXPORT jdouble JNICALL Java_BenchJniKt_cSteps(JNIEnv* env, jclass cls, jlong h, jint steps) {
    bench* b = (bench*)(intptr_t)h;
    double t0 = now_ms();
    jint i;
    (void)cls;
    for (i = 0; i < steps; ++i) {
        pg_step_result r = {sizeof r, 0, 0, 0, 0, 0};
        if (fail(env, pg_trainer_step(b->trainer, &r))) return 0;
    }
    return (now_ms() - t0) / steps;
}

/* µs per token of one generation of `tokens` tokens from the prompt {1, 2, 3, 4} on a session made
 * for the call (as Model.generate does), streamed to a C callback or not. */
JNIEXPORT jdouble JNICALL Java_BenchJniKt_cGenerate(JNIEnv* env, jclass cls, jlong h, jint tokens, jboolean stream,
                                                    jlong seed) {
    bench* b = (bench*)(intptr_t)h;
    const int32_t prompt[4] = {1, 2, 3, 4};
    pg_sample_config sc;
    pg_session_config sessc;
    pg_session* session = NULL;
    pg_status s;
    size_t n_out = 0;
    double t0;
    (void)cls;
    pg_session_config_default(&sessc);
    sessc.n_threads = b->threads;
    pg_sample_config_default(&sc);
    sc.max_tokens = tokens;
    sc.n_threads = b->threads;
    sc.slide_keep = b->n_ctx / 2;
    sc.seed = (uint64_t)seed;
    if (stream) {
        sc.on_token = count_token;
        sc.on_token_user = b;
    }
    t0 = now_ms();
    s = pg_session_create(b->model, &sessc, &session);
    if (s == PG_OK) s = pg_session_append(session, prompt, 4);
    if (s == PG_OK) s = pg_session_generate(session, &sc, NULL, 0, &n_out);
    pg_session_free(session);
    if (fail(env, s)) return 0;
    return (now_ms() - t0) * 1e3 / tokens;
}

/* ns per pg_trainer_step_count call over `calls` calls: the cheapest trainer call, so that the
 * Kotlin side's time for the same call is the binding's fixed cost (lock, JNI, checks). */
JNIEXPORT jdouble JNICALL Java_BenchJniKt_cStepCount(JNIEnv* env, jclass cls, jlong h, jint calls) {
    bench* b = (bench*)(intptr_t)h;
    int64_t step = 0, sum = 0;
    double t0 = now_ms();
    jint i;
    (void)cls;
    for (i = 0; i < calls; ++i) {
        if (fail(env, pg_trainer_step_count(b->trainer, &step))) return 0;
        sum += step;
    }
    return sum < 0 ? 0 : (now_ms() - t0) * 1e6 / calls;
}

/* ns per call of sink.onToken(int) from C over `calls` calls, made as the binding's token
 * trampoline makes them (GetEnv, CallBooleanMethod, ExceptionCheck): the JNI up-call cost that
 * streaming adds to every generated token. */
JNIEXPORT jdouble JNICALL Java_BenchJniKt_cUpcalls(JNIEnv* env, jclass cls, jobject sink, jint calls) {
    JavaVM* vm = NULL;
    jmethodID on_token = (*env)->GetMethodID(env, (*env)->GetObjectClass(env, sink), "onToken", "(I)Z");
    double t0;
    jint i;
    long go_on = 0;
    (void)cls;
    if (!on_token || (*env)->GetJavaVM(env, &vm) != 0) return 0;
    t0 = now_ms();
    for (i = 0; i < calls; ++i) {
        JNIEnv* e = NULL;
        (*vm)->GetEnv(vm, (void**)&e, JNI_VERSION_1_6);
        go_on += (*e)->CallBooleanMethod(e, sink, on_token, i);
        if ((*e)->ExceptionCheck(e)) return 0;
    }
    return go_on < 0 ? 0 : (now_ms() - t0) * 1e6 / calls;
}

JNIEXPORT void JNICALL Java_BenchJniKt_cFree(JNIEnv* env, jclass cls, jlong h) {
    bench* b = (bench*)(intptr_t)h;
    (void)env;
    (void)cls;
    pg_trainer_free(b->trainer);
    pg_model_free(b->model);
    free(b->data);
    free(b);
}
