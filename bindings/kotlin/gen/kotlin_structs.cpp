// Writes the Kotlin binding's option and result data classes (CStructs.kt) from the one list of
// the C structs' fields, lib/core/c_struct_fields.def, at build time (bindings/kotlin/CMakeLists.txt
// runs it before kotlinc). The JNI shim marshals the same list (jni/struct_jni.hpp): value fields
// (PG_VALUE, PG_FLAG, PG_ENUM) cross as a long[] in the list's order, PG_TEXT fields as a
// String[], so neither side has a hand-written field list. Kotlin types follow the C types:
// int32_t Int, int64_t/uint64_t/uint32_t Long, float Float, double Double, PG_FLAG Boolean, an
// enumeration its Kotlin enum (kotlin_enum below), PG_STRINGS List<String>, PG_INTS List<Int>?
// (null = none), PG_TEXT String; callbacks are arguments of the calls (not fields). Property
// names are the C names in camelCase. Usage: pg_kotlin_structs OUTPUT.kt
#include <phonegpt/phonegpt_coordinator.h>  // both tiers (it includes phonegpt.h)

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

enum class Kind { PG_VALUE, PG_FLAG, PG_ENUM, PG_CALLBACK, PG_USER, PG_STRINGS, PG_INTS, PG_COUNT, PG_TEXT, PG_SHAPE,
                  PG_DATA };

// The Kotlin enum of each C enumeration used as a field (a new one fails to compile here until
// it is added, with its Kotlin enum class implementing CEnum).
template <class E>
struct kotlin_enum;
template <> struct kotlin_enum<pg_lr_schedule> { static constexpr const char* name = "LrSchedule"; };
template <> struct kotlin_enum<pg_optimizer> { static constexpr const char* name = "Optimizer"; };
template <> struct kotlin_enum<pg_bpe_pattern> { static constexpr const char* name = "BpePattern"; };
template <> struct kotlin_enum<pg_lora_average_method> { static constexpr const char* name = "LoraAverageMethod"; };
template <> struct kotlin_enum<pg_lora_clip_mode> { static constexpr const char* name = "LoraClipMode"; };
template <> struct kotlin_enum<pg_signature_policy> { static constexpr const char* name = "SignaturePolicy"; };
template <> struct kotlin_enum<pg_base_trained_policy> { static constexpr const char* name = "BaseTrainedPolicy"; };
template <> struct kotlin_enum<pg_check_outcome> { static constexpr const char* name = "CheckOutcome"; };
template <> struct kotlin_enum<pg_train_stop> { static constexpr const char* name = "TrainStop"; };
template <> struct kotlin_enum<pg_norm_kind> { static constexpr const char* name = "NormKind"; };
template <> struct kotlin_enum<pg_position_kind> { static constexpr const char* name = "PositionKind"; };
template <> struct kotlin_enum<pg_mlp_kind> { static constexpr const char* name = "MlpKind"; };

// Bit masks shown as sets of a Kotlin enum implementing CBit: the only fields whose Kotlin type
// is not read from their C type (a uint32_t of OR-ed bits).
struct BitSet {
    const char* c_struct;
    const char* field;
    const char* kotlin_enum;
};
const BitSet kBitSets[] = {{"pg_lora_config", "target_modules", "LoraTarget"},
                           {"pg_data_filter_config", "kinds", "PiiKind"},
                           {"pg_data_filter_config", "placeholder_kinds", "PiiKind"}};

struct Field {
    std::string c_name, name, type;     // Kotlin name and type
    std::string to_long, from_long;     // conversions to and from the long[] entry ("%" = the value)
    Kind kind;
};

struct StructDef {
    std::string c_name, kotlin_name;
    bool options;
    std::vector<Field> fields;
    std::vector<Kind> kinds;  // of every listed field, those without a Kotlin property too
};

std::string camel(const std::string& s) {
    std::string out;
    bool up = false;
    for (char c : s) {
        if (c == '_') {
            up = true;
        } else {
            out += up ? char(std::toupper(static_cast<unsigned char>(c))) : c;
            up = false;
        }
    }
    return out;
}

const char* bit_set_of(const std::string& s, const std::string& field) {
    for (const BitSet& b : kBitSets)
        if (s == b.c_struct && field == b.field) return b.kotlin_enum;
    return nullptr;
}

template <class T>
Field value_field(const std::string& s, const std::string& c_name, Kind kind) {
    Field f{c_name, camel(c_name), "", "", "", kind};
    if (const char* e = bit_set_of(s, c_name)) {
        f.type = std::string("Set<") + e + ">";
        f.to_long = "cBits(%)";
        f.from_long = std::string("cBitSet<") + e + ">(%)";
    } else if (kind == Kind::PG_FLAG) {
        f.type = "Boolean";
        f.to_long = "(if (%) 1L else 0L)";
        f.from_long = "(% != 0L)";
    } else if constexpr (std::is_enum_v<T>) {
        f.type = kotlin_enum<T>::name;
        f.to_long = "%.code.toLong()";
        f.from_long = std::string("cEnum<") + kotlin_enum<T>::name + ">(%)";
    } else if constexpr (std::is_same_v<T, float>) {
        f.type = "Float";
        f.to_long = "%.toRawBits().toLong()";
        f.from_long = "Float.fromBits(%.toInt())";
    } else if constexpr (std::is_same_v<T, double>) {
        f.type = "Double";
        f.to_long = "%.toRawBits()";
        f.from_long = "Double.fromBits(%)";
    } else if constexpr (std::is_same_v<T, int32_t>) {
        f.type = "Int";
        f.to_long = "%.toLong()";
        f.from_long = "%.toInt()";
    } else {
        static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t> || std::is_same_v<T, uint32_t>,
                      "a value field of a C type the Kotlin generator does not map");
        f.type = "Long";
        f.to_long = "%";
        f.from_long = "%";
    }
    return f;
}

template <class T>
void add_field(StructDef* s, const char* c_name, Kind kind) {
    s->kinds.push_back(kind);
    if (kind == Kind::PG_VALUE || kind == Kind::PG_FLAG || kind == Kind::PG_ENUM) {
        if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) s->fields.push_back(value_field<T>(s->c_name, c_name, kind));
        return;
    }
    Field f{c_name, camel(c_name), "", "", "", kind};
    switch (kind) {
        case Kind::PG_STRINGS: f.type = "List<String>"; break;
        case Kind::PG_INTS: f.type = "List<Int>?"; break;
        case Kind::PG_TEXT: f.type = "String"; break;
        default: return;  // counts, callbacks and their user pointers: not fields in Kotlin
    }
    s->fields.push_back(f);
}

std::vector<StructDef> read_list() {
    std::vector<StructDef> out;
#define PG_STRUCT(S, kotlin_name, role) out.push_back(StructDef{#S, #kotlin_name, std::string(#role) == "PG_OPTIONS", {}, {}});
#define PG_FIELD(S, field, kind) add_field<std::decay_t<decltype(std::declval<S&>().field)>>(&out.back(), #field, Kind::kind);
#define PG_STRUCT_END(S)
#include "../../../lib/core/c_struct_fields.def"
    return out;
}

std::string apply(const std::string& pattern, const std::string& value) {
    std::string out;
    for (char c : pattern) out += c == '%' ? value : std::string(1, c);
    return out;
}

bool has(const StructDef& s, Kind k) {
    for (Kind x : s.kinds)
        if (x == k) return true;
    return false;
}

bool is_value(Kind k) { return k == Kind::PG_VALUE || k == Kind::PG_FLAG || k == Kind::PG_ENUM; }

void write_struct(std::ostream& o, const StructDef& s) {
    o << "/** " << s.c_name << (s.options ? " (options" : " (a result")
      << "; phonegpt.h documents each field). Generated from lib/core/c_struct_fields.def. */\n";
    o << "data class " << s.kotlin_name << "(\n";
    for (std::size_t i = 0; i < s.fields.size(); ++i)
        o << "    val " << s.fields[i].name << ": " << s.fields[i].type << (i + 1 < s.fields.size() ? ",\n" : "\n");
    o << ") {\n    companion object {\n";
    if (s.options)
        o << "        /** The library's defaults (" << s.c_name << "_default). */\n"
          << "        @JvmStatic fun defaults(): " << s.kotlin_name << " = fromFields(Native.structDefault(\"" << s.c_name
          << "\"), null)\n"
          << "        /** [defaults] (Kotlin's name; `default` is a keyword in Java). */\n"
          << "        @JvmSynthetic fun default(): " << s.kotlin_name << " = defaults()\n";
    // Companion members a struct has beyond the generated ones (static in Java).
    if (s.kotlin_name == "ModelConfig")
        o << "        /** A named preset: \"phonegpt\" (= defaults()) or \"tiny\"; another name is an [InvalidArgumentException]. */\n"
             "        @JvmStatic fun preset(name: String): ModelConfig = fromFields(Native.modelConfigPreset(name), null)\n";
    if (s.kotlin_name == "EncodeOptions")
        o << "        /** Every special token recognised (tiktoken's allowed_special=\"all\"); the defaults recognise none. */\n"
             "        @JvmField val ALL_SPECIAL: EncodeOptions = defaults().copy(allowAllSpecial = true)\n";
    // fromFields: value fields from the long[], texts from the String[] (an option's text
    // defaults to "", its NULL); lists get their defaults (empty, or null = none), which the
    // calls that return them fill in with copy().
    o << "        internal fun fromFields(v: LongArray, t: Array<String>?): " << s.kotlin_name << " = "
      << s.kotlin_name << "(";
    std::size_t iv = 0, it = 0;
    for (std::size_t i = 0; i < s.fields.size(); ++i) {
        const Field& f = s.fields[i];
        if (i) o << ", ";
        if (is_value(f.kind)) o << apply(f.from_long, "v[" + std::to_string(iv++) + "]");
        else if (f.kind == Kind::PG_TEXT) o << (s.options ? "(t?.get(" + std::to_string(it++) + ") ?: \"\")" : "t!![" + std::to_string(it++) + "]");
        else if (f.kind == Kind::PG_STRINGS) o << "emptyList()";
        else o << "null";
    }
    o << ")\n    }\n\n";
    o << "    internal fun fields(): LongArray = longArrayOf(";
    bool first = true;
    for (const Field& f : s.fields) {
        if (!is_value(f.kind)) continue;
        o << (first ? "" : ", ") << apply(f.to_long, f.name);
        first = false;
    }
    o << ")\n";
    if (has(s, Kind::PG_TEXT)) {
        o << "    internal fun texts(): Array<String> = arrayOf(";
        first = true;
        for (const Field& f : s.fields) {
            if (f.kind != Kind::PG_TEXT) continue;
            o << (first ? "" : ", ") << f.name;
            first = false;
        }
        o << ")\n";
    }
    o << "}\n\n";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: pg_kotlin_structs OUTPUT.kt\n";
        return 2;
    }
    std::ofstream o(argv[1]);
    o << "// Generated by bindings/kotlin/gen/kotlin_structs.cpp from lib/core/c_struct_fields.def at build\n"
         "// time: do not edit. The option and result structs of phonegpt.h as data classes; the JNI\n"
         "// shim (jni/struct_jni.hpp) reads and writes their fields() in the same order.\n"
         "package phonegpt\n\n";
    for (const StructDef& s : read_list()) {
        if (has(s, Kind::PG_SHAPE) || has(s, Kind::PG_DATA)) continue;  // pg_tensor_info: views of native memory
        write_struct(o, s);
    }
    o.close();
    if (!o) {
        std::cerr << "pg_kotlin_structs: cannot write " << argv[1] << "\n";
        return 1;
    }
    return 0;
}
