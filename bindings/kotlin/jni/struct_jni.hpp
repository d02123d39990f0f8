// The option and result structs as Java arrays, from the one list of their fields
// (lib/core/c_struct_fields.def, which names only what phonegpt.h declares). A struct crosses as
// a long[] of its value fields (PG_VALUE, PG_FLAG, PG_ENUM) in the list's order, floats and
// doubles as their raw bits, and a String[] of its PG_TEXT fields. The Kotlin data classes are
// generated from the same list at build time (bindings/kotlin/gen/kotlin_structs.cpp), so the two
// sides cannot disagree on an order, and no field list is written by hand on either side.
// Arrays, strings lists and callbacks (PG_INTS, PG_STRINGS, PG_CALLBACK) are arguments of the
// call that takes the struct.
#pragma once

#include "jni_support.hpp"

#include <type_traits>

namespace pg_jni {

// The list's field kinds (the library's own enum is internal, lib/core/struct_fields.hpp).
enum class FieldKind { PG_VALUE, PG_FLAG, PG_ENUM, PG_CALLBACK, PG_USER, PG_STRINGS, PG_INTS, PG_COUNT, PG_TEXT,
                       PG_SHAPE, PG_DATA };

constexpr bool is_value_field(FieldKind k) {
    return k == FieldKind::PG_VALUE || k == FieldKind::PG_FLAG || k == FieldKind::PG_ENUM;
}

// Struct<S>::each(s, f) calls f(name, kind, field) for every field of S in the list's order.
template <class S>
struct Struct;
#define PG_STRUCT(S, kotlin_name, role)                  \
    template <>                                          \
    struct Struct<S> {                                   \
        static constexpr const char* name = #S;          \
        template <class Ref, class F>                    \
        static void each(Ref& s, F&& f) {
#define PG_FIELD(S, field, kind) f(#field, FieldKind::kind, s.field);
#define PG_STRUCT_END(S) \
    }                    \
    }                    \
    ;
#include "../../../lib/core/c_struct_fields.def"

template <class T>
constexpr bool is_scalar_field = std::is_arithmetic_v<T> || std::is_enum_v<T>;

template <class T>
jlong to_long(T v) {
    if constexpr (std::is_same_v<T, float>) {
        return float_to_bits(v);
    } else if constexpr (std::is_same_v<T, double>) {
        int64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        return jlong(bits);
    } else {
        return jlong(v);  // integers and enumerations
    }
}

// False if `v` is outside T (64-bit integers take any long: a uint64_t seed crosses as its bits).
template <class T>
bool from_long(jlong v, T* out) {
    if constexpr (std::is_same_v<T, float>) {
        if (v < INT32_MIN || v > jlong(UINT32_MAX)) return false;  // Kotlin's toRawBits() may sign-extend
        *out = bits_to_float(v);
    } else if constexpr (std::is_same_v<T, double>) {
        std::memcpy(out, &v, sizeof v);
    } else if constexpr (std::is_enum_v<T>) {
        if (v < INT32_MIN || v > INT32_MAX) return false;
        *out = T(int32_t(v));
    } else if constexpr (sizeof(T) == 8) {
        *out = T(v);
    } else {
        if (v < jlong(std::numeric_limits<T>::min()) || v > jlong(std::numeric_limits<T>::max())) return false;
        *out = T(v);
    }
    return true;
}

// The value fields of `s`.
template <class S>
std::vector<jlong> values_of(const S& s) {
    std::vector<jlong> out;
    Struct<S>::each(s, [&](const char*, FieldKind kind, const auto& field) {
        using T = std::decay_t<decltype(field)>;
        if constexpr (is_scalar_field<T>)
            if (is_value_field(kind)) out.push_back(to_long(field));
    });
    return out;
}

template <class S>
jlongArray struct_longs(JNIEnv* env, const S& s) {
    return new_longs(env, values_of(s));
}

// Sets the value fields of `s` (already filled with its defaults) from Kotlin's fields(): the
// array must have one entry per value field, each in its C type's range (the message names the
// field). Returns false with an exception pending.
template <class S>
bool values_from(JNIEnv* env, jlongArray a, S* s) {
    const std::size_t want = values_of(*s).size();
    std::vector<jlong> v;
    if (!get_longs(env, a, want, Struct<S>::name, &v)) return false;
    std::size_t i = 0;
    const char* bad = nullptr;
    Struct<S>::each(*s, [&](const char* name, FieldKind kind, auto& field) {
        using T = std::decay_t<decltype(field)>;
        if constexpr (is_scalar_field<T>) {
            if (!is_value_field(kind)) return;
            if (!from_long(v[i++], &field) && !bad) bad = name;
        }
    });
    if (bad) throw_invalid(env, std::string(Struct<S>::name) + "." + bad + " is outside its C type's range");
    return bad == nullptr;
}

// The PG_TEXT fields of a result (library-owned strings; NULL reads as "").
template <class S>
jobjectArray struct_texts(JNIEnv* env, const S& s) {
    std::vector<const char*> texts;
    Struct<S>::each(s, [&](const char*, FieldKind kind, const auto& field) {
        using T = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<T, const char*>)
            if (kind == FieldKind::PG_TEXT) texts.push_back(field ? field : "");
    });
    jclass string_class = env->FindClass("java/lang/String");
    if (!string_class) return nullptr;
    jobjectArray out = env->NewObjectArray(jsize(texts.size()), string_class, nullptr);
    env->DeleteLocalRef(string_class);
    for (std::size_t i = 0; out && i < texts.size(); ++i) {
        jstring t = env->NewStringUTF(texts[i]);
        if (!t) return nullptr;
        env->SetObjectArrayElement(out, jsize(i), t);
        env->DeleteLocalRef(t);
    }
    return out;
}

// A result struct zeroed with its full struct_size, for the library to fill.
template <class S>
S blank() {
    S s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    return s;
}

// An options struct with the library's defaults (pg_<struct>_default).
template <class S>
S defaults();
#define PG_DEFAULTS_PG_OPTIONS(S) \
    template <>                   \
    inline S defaults<S>() {      \
        S s;                      \
        S##_default(&s);          \
        return s;                 \
    }
#define PG_DEFAULTS_PG_RESULT(S)
#define PG_STRUCT(S, kotlin_name, role) PG_DEFAULTS_##role(S)
#define PG_FIELD(S, field, kind)
#define PG_STRUCT_END(S)
#include "../../../lib/core/c_struct_fields.def"
#undef PG_DEFAULTS_PG_OPTIONS
#undef PG_DEFAULTS_PG_RESULT

// An options struct from Kotlin's fields() over the library's defaults.
template <class S>
bool options_from(JNIEnv* env, jlongArray a, S* s) {
    *s = defaults<S>();
    return values_from(env, a, s);
}

}  // namespace pg_jni
