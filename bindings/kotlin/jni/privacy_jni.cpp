// The data filter natives (pg_data_filter_*; Kotlin: DataFilter.kt): the built-in PII detectors
// over UTF-8 text, the filtered text, the removed spans and the report (counts, never the text).
#include "jni_support.hpp"

namespace pg_jni {
namespace {

pg_data_filter* filter_of(JNIEnv* env, jlong h) { return handle_of<pg_data_filter>(env, h, "DataFilter"); }

jint n_data_filter_kinds_default(JNIEnv*, jclass) {
    pg_data_filter_config c;
    pg_data_filter_config_default(&c);
    return jint(c.kinds);
}

// kinds: the (1 << kind) bits; replacement: UTF-8 bytes, empty = remove the span.
jlong n_data_filter_create(JNIEnv* env, jclass, jint kinds, jbyteArray jreplacement) {
    std::vector<char> replacement;
    if (!get_bytes(env, jreplacement, "replacement", &replacement)) return 0;
    replacement.push_back('\0');
    pg_data_filter_config c;
    pg_data_filter_config_default(&c);
    c.kinds = uint32_t(kinds);
    c.replacement = replacement.data();
    pg_data_filter* f = nullptr;
    if (failed(env, pg_data_filter_create(&c, &f))) return 0;
    return to_handle(f);
}

void n_data_filter_free(JNIEnv*, jclass, jlong h) { pg_data_filter_free(reinterpret_cast<pg_data_filter*>(intptr_t(h))); }

// Filters `text`; returns DataFilterReport.fields() (bytes_in .. n_custom).
jlongArray n_data_filter_apply(JNIEnv* env, jclass, jlong h, jbyteArray jtext) {
    auto* f = filter_of(env, h);
    std::vector<char> text;
    if (!f || !get_bytes(env, jtext, "text", &text)) return nullptr;
    pg_data_filter_report r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (failed(env, pg_data_filter_apply(f, bytes_of(text), text.size(), &r), f, pg_data_filter_last_error))
        return nullptr;
    return new_longs(env, {jlong(r.bytes_in), jlong(r.bytes_out), jlong(r.bytes_removed), jlong(r.n_spans),
                           jlong(r.n_email), jlong(r.n_phone), jlong(r.n_payment_card), jlong(r.n_iban),
                           jlong(r.n_ipv4), jlong(r.n_ipv6), jlong(r.n_custom)});
}

jbyteArray n_data_filter_output(JNIEnv* env, jclass, jlong h) {
    auto* f = filter_of(env, h);
    if (!f) return nullptr;
    return filled_bytes(env, [&](char* text, size_t cap, size_t* len) { return pg_data_filter_output(f, text, cap, len); });
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
    PG_NATIVE("dataFilterKindsDefault", "()I", n_data_filter_kinds_default),
    PG_NATIVE("dataFilterCreate", "(I[B)J", n_data_filter_create),
    PG_NATIVE("dataFilterFree", "(J)V", n_data_filter_free),
    PG_NATIVE("dataFilterApply", "(J[B)[J", n_data_filter_apply),
    PG_NATIVE("dataFilterOutput", "(J)[B", n_data_filter_output),
    PG_NATIVE("dataFilterSpans", "(J)[J", n_data_filter_spans),
};

}  // namespace

bool register_privacy_natives(JNIEnv* env, jclass natives) { return register_natives(env, natives, kPrivacyNatives); }

}  // namespace pg_jni
