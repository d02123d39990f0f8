// The coordinator natives (Kotlin: Coordinator.kt): averaging adapters of one base
// (pg_lora_average), validating uploads (pg_validator_*, pg_lora_validate*, the report, the
// round's comparison) and the phone's differential privacy (pg_lora_adapter_privatize,
// pg_privacy_epsilon). A
// validator borrows its base model: Kotlin keeps it alive while the validator lives. A report
// is its own handle; its adapter is a new LoraAdapter handle.
#include "call_args.hpp"

namespace pg_jni {
namespace {

pg_validator* validator_of(JNIEnv* env, jlong h) { return handle_of<pg_validator>(env, h, "Validator"); }
pg_validation_report* report_of(JNIEnv* env, jlong h) {
    return handle_of<pg_validation_report>(env, h, "ValidationReport");
}

bool validator_failed(JNIEnv* env, pg_status s, const pg_validator* v) {
    return failed(env, s, v, pg_validator_last_error);
}

// A result with text fields as {long[] values, String[] texts}.
template <class S>
jobjectArray struct_object(JNIEnv* env, const S& s) {
    jclass object_class = env->FindClass("java/lang/Object");
    if (!object_class) return nullptr;
    jobjectArray out = env->NewObjectArray(2, object_class, nullptr);
    env->DeleteLocalRef(object_class);
    jlongArray values = out ? struct_longs(env, s) : nullptr;
    jobjectArray texts = values ? struct_texts(env, s) : nullptr;
    if (!texts) return nullptr;
    env->SetObjectArrayElement(out, 0, values);
    env->SetObjectArrayElement(out, 1, texts);
    return out;
}

// --- averaging -----------------------------------------------------------------------------

// `adapters`: the handles; `weights`: null (equal) or one per adapter. Returns {the new adapter's
// handle, LoraAverageReport.fields()...}.
jlongArray n_lora_average(JNIEnv* env, jclass, jlongArray jadapters, jdoubleArray jweights, jlongArray jconfig) {
    if (!jadapters) {
        throw_invalid(env, "average: adapters is null");
        return nullptr;
    }
    const jsize n = env->GetArrayLength(jadapters);
    std::vector<jlong> handles(static_cast<std::size_t>(n));
    if (n > 0) env->GetLongArrayRegion(jadapters, 0, n, handles.data());
    std::vector<const pg_lora_adapter*> adapters;
    for (jlong h : handles) {
        auto* a = handle_of<pg_lora_adapter>(env, h, "LoraAdapter");
        if (!a) return nullptr;
        adapters.push_back(a);
    }
    std::vector<double> weights;
    if (jweights) {
        if (env->GetArrayLength(jweights) != n) {
            throw_invalid(env, "average: " + std::to_string(env->GetArrayLength(jweights)) + " weights for " +
                                   std::to_string(n) + " adapters");
            return nullptr;
        }
        weights.resize(static_cast<std::size_t>(n));
        if (n > 0) env->GetDoubleArrayRegion(jweights, 0, n, weights.data());
    }
    pg_lora_average_config c;
    if (!options_from(env, jconfig, &c)) return nullptr;
    pg_lora_average_report r = blank<pg_lora_average_report>();
    pg_lora_adapter* out = nullptr;
    if (failed(env, pg_lora_average(adapters.empty() ? nullptr : adapters.data(), adapters.size(),
                                    jweights ? weights.data() : nullptr, &c, &out, &r)))
        return nullptr;
    std::vector<jlong> result = {to_handle(out)};
    for (jlong v : values_of(r)) result.push_back(v);
    jlongArray a = new_longs(env, result);
    if (!a) pg_lora_adapter_free(out);
    return a;
}

// --- the validator -------------------------------------------------------------------------

jlong n_validator_create(JNIEnv* env, jclass, jlong base, jlongArray jpolicy) {
    auto* m = handle_of<pg_model>(env, base, "Model");
    pg_validation_policy p;
    if (!m || !options_from(env, jpolicy, &p)) return 0;
    pg_validator* v = nullptr;
    if (failed(env, pg_validator_create(m, &p, &v))) return 0;
    return to_handle(v);
}

void n_validator_free(JNIEnv*, jclass, jlong h) { pg_validator_free(reinterpret_cast<pg_validator*>(intptr_t(h))); }

void n_validator_set_trusted_keys(JNIEnv* env, jclass, jlong h, jlong keys) {
    auto* v = validator_of(env, h);
    auto* k = v ? handle_of<pg_trusted_keys>(env, keys, "TrustedKeys") : nullptr;
    if (k) validator_failed(env, pg_validator_set_trusted_keys(v, k), v);
}

// `resumed_from` 0: the base alone.
void n_validator_set_reference(JNIEnv* env, jclass, jlong h, jlong resumed_from, jintArray tok_a, jobject tok_b,
                               jint offset, jint length) {
    auto* v = validator_of(env, h);
    auto* a = v && resumed_from ? handle_of<pg_lora_adapter>(env, resumed_from, "LoraAdapter") : nullptr;
    IntBulk tokens;
    if (!v || (resumed_from && !a) || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true)) return;
    validator_failed(env, pg_validator_set_reference(v, a, tokens.data(), tokens.size()), v);
}

void n_validator_set_heldout(JNIEnv* env, jclass, jlong h, jintArray tok_a, jobject tok_b, jint offset, jint length) {
    auto* v = validator_of(env, h);
    IntBulk tokens;
    if (!v || !tokens.open(env, tok_a, tok_b, offset, length, "tokens", true)) return;
    validator_failed(env, pg_validator_set_heldout(v, tokens.data(), tokens.size()), v);
}

// The adapter file's bytes and its signature file's (null = unsigned); returns the report's handle.
jlong n_lora_validate(JNIEnv* env, jclass, jlong h, jbyteArray jbytes, jbyteArray jsignature) {
    auto* v = validator_of(env, h);
    std::vector<char> bytes, signature;
    if (!v || !get_bytes(env, jbytes, "adapter file bytes", &bytes)) return 0;
    if (jsignature && !get_bytes(env, jsignature, "signature", &signature)) return 0;
    pg_validation_report* r = nullptr;
    if (validator_failed(env, pg_lora_validate(v, bytes_of(bytes), bytes.size(), jsignature ? bytes_of(signature) : nullptr,
                                               signature.size(), &r), v))
        return 0;
    return to_handle(r);
}

jlong n_lora_validate_file(JNIEnv* env, jclass, jlong h, jstring jpath, jstring jsignature_path) {
    auto* v = validator_of(env, h);
    std::string path, signature_path;
    if (!v || !get_string(env, jpath, "adapter path", &path)) return 0;
    if (jsignature_path && !get_string(env, jsignature_path, "signature path", &signature_path)) return 0;
    pg_validation_report* r = nullptr;
    if (validator_failed(env, pg_lora_validate_file(v, path.c_str(), jsignature_path ? signature_path.c_str() : nullptr,
                                                    &r), v))
        return 0;
    return to_handle(r);
}

// --- reports -------------------------------------------------------------------------------

void n_validation_report_free(JNIEnv*, jclass, jlong h) {
    pg_validation_report_free(reinterpret_cast<pg_validation_report*>(intptr_t(h)));
}

jobjectArray n_validation_report_summary(JNIEnv* env, jclass, jlong h) {
    auto* r = report_of(env, h);
    pg_validation_summary s = blank<pg_validation_summary>();
    if (!r || failed(env, pg_validation_report_summary(r, &s))) return nullptr;
    return struct_object(env, s);
}

jobjectArray n_validation_report_check(JNIEnv* env, jclass, jlong h, jint index) {
    auto* r = report_of(env, h);
    pg_validation_check c = blank<pg_validation_check>();
    if (!r || failed(env, pg_validation_report_check(r, index, &c))) return nullptr;
    return struct_object(env, c);
}

jbyteArray n_validation_report_json(JNIEnv* env, jclass, jlong h) {
    auto* r = report_of(env, h);
    if (!r) return nullptr;
    return filled_bytes(env, [&](char* text, size_t cap, size_t* len) { return pg_validation_report_json(r, text, cap, len); });
}

jlong n_validation_report_adapter(JNIEnv* env, jclass, jlong h) {
    auto* r = report_of(env, h);
    pg_lora_adapter* a = nullptr;
    if (!r || failed(env, pg_validation_report_adapter(r, &a))) return 0;
    return to_handle(a);
}

// `reports`: the round's report handles; adds "round norm" to each.
void n_validation_reports_compare_round(JNIEnv* env, jclass, jlong h, jlongArray jreports) {
    auto* v = validator_of(env, h);
    if (!v) return;
    if (!jreports) {
        throw_invalid(env, "compareRound: reports is null");
        return;
    }
    const jsize n = env->GetArrayLength(jreports);
    std::vector<jlong> handles(static_cast<std::size_t>(n));
    if (n > 0) env->GetLongArrayRegion(jreports, 0, n, handles.data());
    std::vector<pg_validation_report*> reports;
    for (jlong r : handles) {
        reports.push_back(report_of(env, r));
        if (!reports.back()) return;
    }
    validator_failed(env, pg_validation_reports_compare_round(v, reports.data(), reports.size()), v);
}

// --- differential privacy ------------------------------------------------------------------

// Returns LoraPrivacyReport.fields().
jlongArray n_lora_adapter_privatize(JNIEnv* env, jclass, jlong h, jlong start, jlongArray jconfig) {
    auto* a = handle_of<pg_lora_adapter>(env, h, "LoraAdapter");
    auto* s = a ? handle_of<pg_lora_adapter>(env, start, "LoraAdapter") : nullptr;
    pg_lora_privacy_config c;
    if (!s || !options_from(env, jconfig, &c)) return nullptr;
    pg_lora_privacy_report r = blank<pg_lora_privacy_report>();
    if (failed(env, pg_lora_adapter_privatize(a, s, &c, &r))) return nullptr;
    return new_longs(env, values_of(r));
}

// {epsilon, order}.
jdoubleArray n_privacy_epsilon(JNIEnv* env, jclass, jdouble noise_multiplier, jlong rounds, jdouble delta) {
    double out[2] = {0.0, 0.0};
    if (failed(env, pg_privacy_epsilon(noise_multiplier, rounds, delta, &out[0], &out[1]))) return nullptr;
    jdoubleArray a = env->NewDoubleArray(2);
    if (a) env->SetDoubleArrayRegion(a, 0, 2, out);
    return a;
}

const JNINativeMethod kCoordinatorNatives[] = {
    PG_NATIVE("loraAverage", "([J[D[J)[J", n_lora_average),
    PG_NATIVE("validatorCreate", "(J[J)J", n_validator_create),
    PG_NATIVE("validatorFree", "(J)V", n_validator_free),
    PG_NATIVE("validatorSetTrustedKeys", "(JJ)V", n_validator_set_trusted_keys),
    PG_NATIVE("validatorSetReference", "(JJ" PG_SIG_INTS ")V", n_validator_set_reference),
    PG_NATIVE("validatorSetHeldout", "(J" PG_SIG_INTS ")V", n_validator_set_heldout),
    PG_NATIVE("loraValidate", "(J[B[B)J", n_lora_validate),
    PG_NATIVE("loraValidateFile", "(JLjava/lang/String;Ljava/lang/String;)J", n_lora_validate_file),
    PG_NATIVE("validationReportFree", "(J)V", n_validation_report_free),
    PG_NATIVE("validationReportSummary", "(J)[Ljava/lang/Object;", n_validation_report_summary),
    PG_NATIVE("validationReportCheck", "(JI)[Ljava/lang/Object;", n_validation_report_check),
    PG_NATIVE("validationReportJson", "(J)[B", n_validation_report_json),
    PG_NATIVE("validationReportAdapter", "(J)J", n_validation_report_adapter),
    PG_NATIVE("validationReportsCompareRound", "(J[J)V", n_validation_reports_compare_round),
    PG_NATIVE("loraAdapterPrivatize", "(JJ[J)[J", n_lora_adapter_privatize),
    PG_NATIVE("privacyEpsilon", "(DJD)[D", n_privacy_epsilon),
};

}  // namespace

bool register_coordinator_natives(JNIEnv* env, jclass natives) {
    return register_natives(env, natives, kCoordinatorNatives);
}

}  // namespace pg_jni
