// The data filter natives (pg_data_filter_*; Kotlin: DataFilter.kt): the built-in PII detectors
// and the app's own rule (a Kotlin lambda) over UTF-8 text, the filtered text, the removed spans
// and the report (counts, never the text).
#include "struct_jni.hpp"

namespace pg_jni {
namespace {

pg_data_filter* filter_of(JNIEnv* env, jlong h) { return handle_of<pg_data_filter>(env, h, "DataFilter"); }

// The app's rule (pg_pii_rule_fn): a Kotlin RuleBridge gets the text's UTF-8 bytes and returns
// its spans as (begin, end) byte pairs, which the trampoline hands to the library's `add`. It
// lives as long as the filter and is freed with it. An exception thrown by the rule cancels the
// apply (the library is told to stop) and is re-thrown by it.
jmethodID g_rule_method = nullptr;  // long[] RuleBridge.spans(byte[])

struct Rule {
    Callback cb;  // cb.bridge: a global ref
};

int rule_trampoline(void* user, const char* text, size_t len, pg_pii_add_fn add, void* sink) {
    auto* rule = static_cast<Rule*>(user);
    JNIEnv* env = callback_env();
    if (!env || rule->cb.pending || len > size_t(INT32_MAX)) return 1;
    jbyteArray bytes = new_bytes(env, text, len);
    if (!bytes) {
        rule->cb.took_exception(env);  // OutOfMemoryError
        return 1;
    }
    auto spans = static_cast<jlongArray>(env->CallObjectMethod(rule->cb.bridge, g_rule_method, bytes));
    env->DeleteLocalRef(bytes);
    if (rule->cb.took_exception(env)) return 1;
    if (!spans) return 0;
    const jsize n = env->GetArrayLength(spans);
    std::vector<jlong> v(static_cast<std::size_t>(n));
    if (n > 0) env->GetLongArrayRegion(spans, 0, n, v.data());
    env->DeleteLocalRef(spans);
    // The library checks each span (empty, out of range, off a character boundary: the apply
    // fails with PG_ERR_INVALID_ARGUMENT); a negative offset is passed as out of range.
    auto offset = [](jlong x) { return x < 0 ? SIZE_MAX : size_t(x); };
    for (jsize i = 0; i + 1 < n; i += 2)
        if (add(sink, offset(v[std::size_t(i)]), offset(v[std::size_t(i) + 1])) != PG_OK) break;
    return 0;
}

void free_rule(JNIEnv* env, Rule* rule) {
    if (!rule) return;
    if (rule->cb.pending) env->DeleteGlobalRef(rule->cb.pending);
    if (rule->cb.bridge) env->DeleteGlobalRef(rule->cb.bridge);
    delete rule;
}

// fields: DataFilterConfig.fields(); replacement: UTF-8 bytes, empty = remove the span; regions:
// UTF-8 bytes, empty = the default plans; bridge: a RuleBridge or null. Returns {filter handle,
// rule handle (0 without a rule)}.
jlongArray n_data_filter_create(JNIEnv* env, jclass, jlongArray jfields, jbyteArray jreplacement, jbyteArray jregions,
                                jobject bridge) {
    std::vector<char> replacement, regions;
    pg_data_filter_config c;
    if (!options_from(env, jfields, &c) || !get_bytes(env, jreplacement, "replacement", &replacement) ||
        !get_bytes(env, jregions, "regions", &regions))
        return nullptr;
    replacement.push_back('\0');
    regions.push_back('\0');
    c.replacement = replacement.data();
    c.regions = regions.data();
    Rule* rule = nullptr;
    if (bridge) {
        rule = new Rule;
        rule->cb.bridge = env->NewGlobalRef(bridge);
        c.custom_rule = rule_trampoline;
        c.custom_user = rule;
    }
    pg_data_filter* f = nullptr;
    if (failed(env, pg_data_filter_create(&c, &f))) {
        free_rule(env, rule);
        return nullptr;
    }
    jlongArray out = new_longs(env, {to_handle(f), to_handle(rule)});
    if (!out) {
        pg_data_filter_free(f);
        free_rule(env, rule);
    }
    return out;
}

void n_data_filter_free(JNIEnv* env, jclass, jlong h, jlong rule) {
    pg_data_filter_free(reinterpret_cast<pg_data_filter*>(intptr_t(h)));
    free_rule(env, reinterpret_cast<Rule*>(intptr_t(rule)));
}

// Filters `text` (`rule`: the filter's rule handle, whose exception wins over the status);
// returns DataFilterReport.fields().
jlongArray n_data_filter_apply(JNIEnv* env, jclass, jlong h, jlong rule, jbyteArray jtext) {
    auto* f = filter_of(env, h);
    std::vector<char> text;
    if (!f || !get_bytes(env, jtext, "text", &text)) return nullptr;
    pg_data_filter_report r = blank<pg_data_filter_report>();
    const pg_status s = pg_data_filter_apply(f, bytes_of(text), text.size(), &r);
    auto* custom = reinterpret_cast<Rule*>(intptr_t(rule));
    if ((custom && custom->cb.rethrow(env)) || failed(env, s, f, pg_data_filter_last_error)) return nullptr;
    return struct_longs(env, r);
}

jbyteArray n_data_filter_output(JNIEnv* env, jclass, jlong h) {
    auto* f = filter_of(env, h);
    if (!f) return nullptr;
    return filled_bytes(env, [&](char* text, size_t cap, size_t* len) { return pg_data_filter_output(f, text, cap, len); },
                        [&] { return pg_data_filter_last_error(f); });
}

// The spans as (begin, end, kind) triples.
jlongArray n_data_filter_spans(JNIEnv* env, jclass, jlong h) {
    auto* f = filter_of(env, h);
    size_t n = 0;
    if (!f) return nullptr;
    pg_status s = pg_data_filter_spans(f, nullptr, 0, &n);
    if (s != PG_ERR_BUFFER_TOO_SMALL && failed(env, s, f, pg_data_filter_last_error)) return nullptr;
    std::vector<pg_pii_span> spans(n);
    if (n && failed(env, pg_data_filter_spans(f, spans.data(), spans.size(), &n), f, pg_data_filter_last_error))
        return nullptr;
    std::vector<jlong> out;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(jlong(spans[i].begin));
        out.push_back(jlong(spans[i].end));
        out.push_back(jlong(spans[i].kind));
    }
    return new_longs(env, out);
}

const JNINativeMethod kPrivacyNatives[] = {
    PG_NATIVE("dataFilterCreate", "([J[B[BLphonegpt/RuleBridge;)[J", n_data_filter_create),
    PG_NATIVE("dataFilterFree", "(JJ)V", n_data_filter_free),
    PG_NATIVE("dataFilterApply", "(JJ[B)[J", n_data_filter_apply),
    PG_NATIVE("dataFilterOutput", "(J)[B", n_data_filter_output),
    PG_NATIVE("dataFilterSpans", "(J)[J", n_data_filter_spans),
};

}  // namespace

bool register_privacy_natives(JNIEnv* env, jclass natives) {
    jclass rule = env->FindClass("phonegpt/RuleBridge");
    if (!rule) return false;
    g_rule_method = env->GetMethodID(rule, "spans", "([B)[J");
    env->DeleteLocalRef(rule);
    return g_rule_method && register_natives(env, natives, kPrivacyNatives);
}

}  // namespace pg_jni
