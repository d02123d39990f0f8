// Writes the Kotlin binding's option and result data classes (CStructs.kt) from the one list of
// the C structs' fields, lib/core/c_struct_fields.def, at build time (bindings/kotlin/CMakeLists.txt
// runs it before kotlinc). The JNI shim marshals the same list (jni/struct_jni.hpp): value fields
// (PG_VALUE, PG_FLAG, PG_ENUM) cross as a long[] in the list's order, PG_TEXT fields as a
// String[], so neither side has a hand-written field list. Kotlin types follow the C types:
// int32_t Int, int64_t/uint64_t/uint32_t Long, float Float, double Double, PG_FLAG Boolean, an
// enumeration its Kotlin enum (kotlin_enum below), PG_STRINGS List<String>, PG_INTS List<Int>?
// (null = none), PG_TEXT String; callbacks are arguments of the calls (not fields). Property
// names are the C names in camelCase.
//
// Binary compatibility: the classes are not data classes, whose constructor and copy() change
// with every field. C only ever appends fields to its structs, so the classes append them too,
// and keep the constructor and copy() of every field list since the one recorded in
// gen/released_fields.txt (the fields added since take their defaults: the library's for
// options, zero for results); an app compiled against an older jar links and runs. A released
// field that is gone, renamed or moved fails the generation. The constructors of earlier lists
// stay callable; their copy() only for compiled code (hidden), so copy(name = value) resolves
// to the full one.
// Usage: pg_kotlin_structs OUTPUT.kt RELEASED_FIELDS.txt [MODE]; MODE (the ctest
// kotlin_config_binary_compat only): --previous writes the classes as they were one field ago
// (every struct without its last field), --released-previous the current classes as if that
// previous list had been released; --write-released writes RELEASED_FIELDS.txt from the list.
#include <phonegpt/phonegpt_coordinator.h>  // both tiers (it includes phonegpt.h)

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
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
template <> struct kotlin_enum<pg_arithmetic> { static constexpr const char* name = "Arithmetic"; };
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

std::string fill_in(const std::string& pattern, const std::string& value) {
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

// What a field added after `released` takes in the constructors of the earlier lists.
std::string added_field_default(const StructDef& s, const Field& f) {
    if (s.options) return "defaults()." + f.name;
    if (f.type.rfind("Set<", 0) == 0) return "emptySet()";
    if (f.kind == Kind::PG_FLAG) return "false";
    if (f.kind == Kind::PG_ENUM) return "enumValues<" + f.type + ">().first()";
    if (f.type == "Int") return "0";
    if (f.type == "Long") return "0L";
    if (f.type == "Float") return "0f";
    if (f.type == "Double") return "0.0";
    if (f.kind == Kind::PG_STRINGS) return "emptyList()";
    if (f.kind == Kind::PG_INTS) return "null";
    return "\"\"";  // PG_TEXT
}

// "name: Type" (with " = this.name" when `defaults`) of fields [0, n), comma-separated.
std::string params(const StructDef& s, std::size_t n, bool defaults) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        const Field& f = s.fields[i];
        out += (i ? ", " : "") + f.name + ": " + f.type + (defaults ? " = this." + f.name : "");
    }
    return out;
}

// The arguments of the primary constructor: fields [0, n) as given, the others from `rest`.
std::string args(const StructDef& s, std::size_t n, bool rest_from_this) {
    std::string out;
    for (std::size_t i = 0; i < s.fields.size(); ++i) {
        const Field& f = s.fields[i];
        out += (i ? ", " : "") + (i < n ? f.name : rest_from_this ? "this." + f.name : added_field_default(s, f));
    }
    return out;
}

void write_struct(std::ostream& o, const StructDef& s, std::size_t released) {
    const std::size_t n = s.fields.size();
    o << "/** " << s.c_name << (s.options ? " (options" : " (a result")
      << "; phonegpt.h documents each field). Generated from lib/core/c_struct_fields.def; binary compatible "
         "as bindings/kotlin/gen/kotlin_structs.cpp says. */\n";
    o << "class " << s.kotlin_name << "(\n";
    for (std::size_t i = 0; i < n; ++i)
        o << "    val " << s.fields[i].name << ": " << s.fields[i].type << (i + 1 < n ? ",\n" : "\n");
    o << ") {\n";
    for (std::size_t k = released; k < n; ++k)
        o << "    /** The fields of an earlier release; the ones added since take their defaults. */\n"
          << "    constructor(" << params(s, k, false) << ") : this(" << args(s, k, false) << ")\n";
    o << "\n    /** A copy with the named fields changed. */\n"
      << "    fun copy(" << params(s, n, true) << "): " << s.kotlin_name << " = " << s.kotlin_name << "("
      << args(s, n, true) << ")\n";
    for (std::size_t k = released; k < n; ++k)
        o << "    @Deprecated(\"copy() of an earlier release's fields, for code compiled against it\", "
             "level = DeprecationLevel.HIDDEN)\n"
          << "    fun copy(" << params(s, k, true) << "): " << s.kotlin_name << " = " << s.kotlin_name << "("
          << args(s, k, true) << ")\n";
    for (std::size_t i = 0; i < n; ++i)
        o << "    operator fun component" << i + 1 << "(): " << s.fields[i].type << " = " << s.fields[i].name << "\n";
    o << "\n    private fun values(): List<Any?> = listOf(";
    for (std::size_t i = 0; i < n; ++i) o << (i ? ", " : "") << s.fields[i].name;
    o << ")\n    override fun equals(other: Any?): Boolean = other is " << s.kotlin_name << " && values() == other.values()\n"
      << "    override fun hashCode(): Int = values().hashCode()\n"
      << "    override fun toString(): String = \"" << s.kotlin_name << "(";
    for (std::size_t i = 0; i < n; ++i) o << (i ? ", " : "") << s.fields[i].name << "=$" << s.fields[i].name;
    o << ")\"\n\n    companion object {\n";
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
    for (std::size_t i = 0; i < n; ++i) {
        const Field& f = s.fields[i];
        if (i) o << ", ";
        if (is_value(f.kind)) o << fill_in(f.from_long, "v[" + std::to_string(iv++) + "]");
        else if (f.kind == Kind::PG_TEXT) o << (s.options ? "(t?.get(" + std::to_string(it++) + ") ?: \"\")" : "t!![" + std::to_string(it++) + "]");
        else if (f.kind == Kind::PG_STRINGS) o << "emptyList()";
        else o << "null";
    }
    o << ")\n    }\n\n";
    o << "    internal fun fields(): LongArray = longArrayOf(";
    bool first = true;
    for (const Field& f : s.fields) {
        if (!is_value(f.kind)) continue;
        o << (first ? "" : ", ") << fill_in(f.to_long, f.name);
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

// The client of the ctest kotlin_config_binary_compat (compiled against the classes --previous
// writes, run against the current ones): every class through its constructor, copy() (named
// and positional) and component1(); options built from their defaults must equal them.
void write_client_check(std::ostream& o, const StructDef& s) {
    const std::size_t n = s.fields.size();
    o << "private fun check" << s.kotlin_name << "() {\n";
    std::string values;
    if (s.options) {
        o << "    val d = " << s.kotlin_name << ".defaults()\n";
        for (std::size_t i = 0; i < n; ++i) values += (i ? ", " : "") + std::string("d.") + s.fields[i].name;
    } else {
        for (std::size_t i = 0; i < n; ++i) values += (i ? ", " : "") + added_field_default(s, s.fields[i]);
    }
    const std::string& f0 = s.fields[0].name;
    o << "    val built = " << s.kotlin_name << "(" << values << ")\n"
      << "    check(built.copy(" << f0 << " = built." << f0 << ") == built && built.copy(";
    for (std::size_t i = 0; i < n; ++i) o << (i ? ", " : "") << "built." << s.fields[i].name;
    o << ") == built) { \"" << s.kotlin_name << ".copy\" }\n"
      << "    val (first) = built\n"
      << "    check(first == built." << f0 << " && built.hashCode() == built.copy().hashCode()) { \"" << s.kotlin_name
      << ".component1\" }\n";
    if (s.options)
        o << "    check(built == d) { \"" << s.kotlin_name
          << ": the fields added since did not take their defaults: $built, not $d\" }\n";
    o << "}\n\n";
}

// gen/released_fields.txt: "KotlinName field field ..." per line, '#' comments.
std::map<std::string, std::vector<std::string>> read_released(const std::string& path) {
    std::map<std::string, std::vector<std::string>> out;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string name, field;
        words >> name;
        while (words >> field) out[name].push_back(field);
    }
    return out;
}

// How many leading fields of `s` were released (0 for a struct never released); throws when a
// released field is gone, renamed or moved.
std::size_t released_count(const StructDef& s, const std::map<std::string, std::vector<std::string>>& released) {
    auto r = released.find(s.kotlin_name);
    if (r == released.end()) return s.fields.size();  // new since the release: nothing to keep
    const std::vector<std::string>& names = r->second;
    for (std::size_t i = 0; i < names.size(); ++i)
        if (i >= s.fields.size() || s.fields[i].name != names[i])
            throw std::runtime_error(s.kotlin_name + ": released field " + std::to_string(i + 1) + " \"" + names[i] +
                                     "\" is " + (i >= s.fields.size() ? "gone" : "now \"" + s.fields[i].name + "\"") +
                                     ": apps compiled against the released jar would break (fields are only appended)");
    return names.size();
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc >= 4 ? argv[3] : "";
    const bool usage_ok = argc == 3 || (argc == 4 && (mode == "--released-previous" || mode == "--write-released")) ||
                          (argc == 5 && mode == "--previous");
    if (!usage_ok) {
        std::cerr << "usage: pg_kotlin_structs OUTPUT.kt RELEASED_FIELDS.txt [--previous CLIENT.kt | "
                     "--released-previous | --write-released]\n";
        return 2;
    }
    std::vector<StructDef> structs;
    for (StructDef& s : read_list())
        if (!has(s, Kind::PG_SHAPE) && !has(s, Kind::PG_DATA)) structs.push_back(std::move(s));  // pg_tensor_info: views of native memory
    if (mode == "--write-released") {
        std::ofstream r(argv[2]);
        r << "# The fields of the Kotlin option and result classes as released (bindings/kotlin/gen/kotlin_structs.cpp):\n"
             "# their constructor and copy() stay in every later jar. Rewritten by pg_kotlin_structs --write-released.\n";
        for (const StructDef& s : structs) {
            r << s.kotlin_name;
            for (const Field& f : s.fields) r << ' ' << f.name;
            r << '\n';
        }
        return r ? 0 : 1;
    }
    std::ofstream o(argv[1]);
    o << "// Generated by bindings/kotlin/gen/kotlin_structs.cpp from lib/core/c_struct_fields.def at build\n"
         "// time: do not edit. The option and result structs of phonegpt.h as classes; the JNI shim\n"
         "// (jni/struct_jni.hpp) reads and writes their fields() in the same order.\n"
         "package phonegpt\n\n";
    try {
        const auto released = read_released(argv[2]);
        for (StructDef& s : structs) {
            std::size_t keep = released_count(s, released);
            const bool one_field_ago = mode == "--previous" || mode == "--released-previous";
            if (one_field_ago && s.fields.size() > 1) {
                if (mode == "--previous") s.fields.pop_back();
                keep = s.fields.size() - (mode == "--released-previous" ? 1 : 0);
            }
            write_struct(o, s, keep);
        }
        if (mode == "--previous") {
            std::ofstream c(argv[4]);
            c << "// Generated by bindings/kotlin/gen/kotlin_structs.cpp --previous: do not edit. Compiled against\n"
                 "// the option and result classes one field ago, run against the current ones.\n"
                 "import phonegpt.*\n\n";
            for (const StructDef& s : structs) write_client_check(c, s);
            c << "fun main() {\n";
            for (const StructDef& s : structs) c << "    check" << s.kotlin_name << "()\n";
            c << "    println(\"" << structs.size() << " classes: an app compiled one field ago links and runs\")\n}\n";
            if (!c) throw std::runtime_error(std::string("cannot write ") + argv[4]);
        }
    } catch (const std::exception& e) {
        std::cerr << "pg_kotlin_structs: " << e.what() << "\n";
        return 1;
    }
    o.close();
    if (!o) {
        std::cerr << "pg_kotlin_structs: cannot write " << argv[1] << "\n";
        return 1;
    }
    return 0;
}
