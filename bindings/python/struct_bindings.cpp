// The public structs' Python classes, generated from lib/core/c_struct_fields.def: options
// (ModelConfig, TrainConfig, EvalConfig, ...) with keyword constructors and replace(), results
// (StepResult, EvalResult, ...) read-only, enumerations by name, and _phonegpt._c_struct_fields
// (where Python reaches every field).
#include "struct_bindings.hpp"

#include <pybind11/stl.h>

#include "binding_common.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace pg_py {

// ---------------------------------------------------------------------------------------
// The public structs. Their Python classes are generated from the library's one list of
// fields, lib/core/c_struct_fields.def (it names only what phonegpt.h declares, so this module
// still uses nothing but the public API): an options struct becomes a class built with keyword
// arguments over the library's *_default() values, a result a read-only class. Fields that are
// not plain values (callbacks and their user pointers, string arrays, pointers into a model)
// are arguments of the call that takes the struct. _phonegpt._c_struct_fields records where
// Python reaches every field; tests/python/test_binding.py checks it against phonegpt.h.
// ---------------------------------------------------------------------------------------

namespace {

// A full-size struct as the library gives it: filled by `init` (*_default) or zero (results).
template <class S>
S fresh_struct(void (*init)(S*)) {
    S s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (init) init(&s);
    return s;
}

}  // namespace

#define PG_INIT_PG_OPTIONS(S) &S##_default
#define PG_INIT_PG_RESULT(S) nullptr
#define PG_STRUCT(S, python_name, role) \
    template <>                         \
    S defaults<S>() {                   \
        return fresh_struct<S>(PG_INIT_##role(S)); \
    }
#define PG_FIELD(S, field, kind)
#define PG_STRUCT_END(S)
#include "../../lib/core/c_struct_fields.def"
#undef PG_INIT_PG_OPTIONS
#undef PG_INIT_PG_RESULT

namespace {

// The names an enumeration shows in Python.
template <class E>
struct EnumNames;
template <>
struct EnumNames<pg_lr_schedule> {
    static constexpr std::pair<pg_lr_schedule, const char*> items[] = {
        {PG_LR_CONSTANT, "constant"}, {PG_LR_COSINE, "cosine"}, {PG_LR_LINEAR, "linear"}};
};
template <>
struct EnumNames<pg_optimizer> {
    static constexpr std::pair<pg_optimizer, const char*> items[] = {
        {PG_OPTIMIZER_ADAMW, "adamw"}, {PG_OPTIMIZER_MUON, "muon"}};
};
template <>
struct EnumNames<pg_arithmetic> {
    static constexpr std::pair<pg_arithmetic, const char*> items[] = {{PG_ARITHMETIC_EXACT, "exact"},
                                                                       {PG_ARITHMETIC_FP16, "fp16"},
                                                                       {PG_ARITHMETIC_BF16, "bf16"},
                                                                       {PG_ARITHMETIC_INT8, "int8"}};
};
template <>
struct EnumNames<pg_lora_average_method> {  // the names lib/coordinator/average.cpp gives them
    static constexpr std::pair<pg_lora_average_method, const char*> items[] = {
        {PG_LORA_AVERAGE_FEDAVG_FACTORS, "fedavg_factors"}, {PG_LORA_AVERAGE_CAT, "cat"},
        {PG_LORA_AVERAGE_SVD, "svd"}, {PG_LORA_AVERAGE_FROZEN_A, "frozen_a"},
        {PG_LORA_AVERAGE_TRIMMED_MEAN, "trimmed_mean"}, {PG_LORA_AVERAGE_MEDIAN, "median"}};
};
template <>
struct EnumNames<pg_lora_clip_mode> {
    static constexpr std::pair<pg_lora_clip_mode, const char*> items[] = {
        {PG_LORA_CLIP_NONE, "none"}, {PG_LORA_CLIP_MEDIAN, "median"}, {PG_LORA_CLIP_BOUND, "bound"}};
};
template <>
struct EnumNames<pg_bpe_pattern> {  // bpe::pattern_name's names
    static constexpr std::pair<pg_bpe_pattern, const char*> items[] = {
        {PG_BPE_PATTERN_GPT2, "gpt2"}, {PG_BPE_PATTERN_CL100K, "cl100k"}, {PG_BPE_PATTERN_O200K, "o200k"}};
};
template <>
struct EnumNames<pg_signature_policy> {
    static constexpr std::pair<pg_signature_policy, const char*> items[] = {
        {PG_SIGNATURE_REQUIRED, "required"}, {PG_SIGNATURE_OPTIONAL, "optional"}, {PG_SIGNATURE_OFF, "off"}};
};
template <>
struct EnumNames<pg_base_trained_policy> {
    static constexpr std::pair<pg_base_trained_policy, const char*> items[] = {
        {PG_BASE_TRAINED_REFUSE_UNTRAINED, "refuse_untrained"},
        {PG_BASE_TRAINED_REQUIRE_RECORD, "require_record"},
        {PG_BASE_TRAINED_OFF, "off"}};
};
template <>
struct EnumNames<pg_check_outcome> {
    static constexpr std::pair<pg_check_outcome, const char*> items[] = {
        {PG_CHECK_PASSED, "passed"}, {PG_CHECK_FAILED, "failed"}, {PG_CHECK_SKIPPED, "skipped"}};
};
template <>
struct EnumNames<pg_train_stop> {
    static constexpr std::pair<pg_train_stop, const char*> items[] = {
        {PG_TRAIN_STOP_NONE, "none"}, {PG_TRAIN_STOP_STEPS, "steps"}, {PG_TRAIN_STOP_TIME, "time"},
        {PG_TRAIN_STOP_CANCELLED, "cancelled"}};
};
template <>
struct EnumNames<pg_norm_kind> {
    static constexpr std::pair<pg_norm_kind, const char*> items[] = {{PG_NORM_LAYERNORM, "layernorm"},
                                                                      {PG_NORM_RMSNORM, "rmsnorm"}};
};
template <>
struct EnumNames<pg_position_kind> {
    static constexpr std::pair<pg_position_kind, const char*> items[] = {{PG_POSITIONS_LEARNED, "learned"},
                                                                          {PG_POSITIONS_ROTARY, "rotary"}};
};
template <>
struct EnumNames<pg_mlp_kind> {
    static constexpr std::pair<pg_mlp_kind, const char*> items[] = {{PG_MLP_GELU, "gelu"}, {PG_MLP_SWIGLU, "swiglu"}};
};
template <>
struct EnumNames<pg_weight_storage> {  // Model.weight_storage (no struct field)
    static constexpr std::pair<pg_weight_storage, const char*> items[] = {
        {PG_WEIGHTS_FP32, "fp32"}, {PG_WEIGHTS_FP16, "fp16"}, {PG_WEIGHTS_BF16, "bf16"},
        {PG_WEIGHTS_FP16_ARITHMETIC, "fp16_arithmetic"}, {PG_WEIGHTS_BF16_ARITHMETIC, "bf16_arithmetic"},
        {PG_WEIGHTS_Q8_0, "q8_0"}, {PG_WEIGHTS_Q4_0, "q4_0"}};
};
template <class E>
std::string enum_choices() {
    std::string out;
    const std::size_t n = std::size(EnumNames<E>::items);
    for (std::size_t i = 0; i < n; ++i)
        out += (i == 0 ? "'" : i + 1 == n ? " or '" : ", '") + std::string(EnumNames<E>::items[i].second) + "'";
    return out;
}

}  // namespace

template <class E>
std::string enum_name(E v) {
    for (const auto& item : EnumNames<E>::items)
        if (item.first == v) return item.second;
    return "unknown";
}
template <class E>
E enum_from_name(const std::string& name, const std::string& field) {
    for (const auto& item : EnumNames<E>::items)
        if (name == item.second) return item.first;
    raise_invalid(field + " must be " + enum_choices<E>() + ", got '" + name + "'");
}
// The enumerations other binding files name (struct_bindings.hpp).
template std::string enum_name(pg_weight_storage);
template pg_weight_storage enum_from_name(const std::string&, const std::string&);

namespace {

// The Python call that takes a struct's non-attribute fields (field = nullptr: every field).
struct CallRoute {
    const char* c_struct;
    const char* field;
    const char* call;
};
const CallRoute kCallRoutes[] = {
    {"pg_eval_config", nullptr, "Model.evaluate"},
    {"pg_sample_config", nullptr, "Model.generate"},
    {"pg_bpe_train_options", nullptr, "Tokenizer.train"},
    {"pg_encode_options", nullptr, "Tokenizer.encode_special"},
    {"pg_tensor_info", "name", "Model.tensor_info"},  // the struct holds a model-owned string
    {"pg_tensor_info", "data", "Model.parameter"},    // a numpy view instead of the pointer
    // bindings/python/coord_bindings.cpp
    {"pg_lora_config", nullptr, "Adapter.create"},            // layers: a sequence argument
    {"pg_data_filter_config", nullptr, "DataFilter.__init__"},  // replacement, regions, custom_rule
    {"pg_validation_summary", "key_id", "ValidationReport.key_id()"},
    {"pg_validation_check", nullptr, "ValidationReport.checks()"},  // dicts with name and message
};
// Python's argument name where it differs from the C field's.
std::string argument_name(const std::string& field) { return field == "stop_strings" ? "stop" : field; }

const char* struct_doc(const std::string& c_struct) {
    if (c_struct == "pg_model_config")
        return "Model geometry. ModelConfig(**fields) starts from the PhoneGPT preset;\n"
               "ModelConfig.preset('tiny') gives a named preset.";
    if (c_struct == "pg_train_config")
        return "Training configuration; TrainConfig(**fields) starts from the library defaults\n"
               "(batch 32, AdamW 0.9/0.95/1e-8, lr 1e-3 cosine to 1e-4, 100 warm-up steps, ...).";
    if (c_struct == "pg_save_options")
        return "How a checkpoint is saved: compression_level 0 = raw, 1..19 = zstd level; weight_storage -1 = as\n"
               "held (a q8_0 / q4_0 model in its blocks), 1 = fp16, 2 = bf16 (a frozen base); align_for_mapping\n"
               "writes the mappable layout.";
    if (c_struct == "pg_load_options")
        return "How a checkpoint is loaded: map_weights maps a mappable raw file read-only (Model.load(path, map_weights=True));\n"
               "weight_storage 5 / 6 (q8_0 / q4_0) quantizes an fp32 file while reading it.";
    if (c_struct == "pg_eval_config")
        return "Whole-split evaluation options: Model.evaluate(tokens, config, progress=..., **fields).";
    if (c_struct == "pg_sample_config")
        return "Sampling options: Model.generate(prompt, max_tokens, config=..., stop=..., on_token=..., **fields).";
    if (c_struct == "pg_encode_options")
        return "Encoding options: Tokenizer.encode_special(text, allowed_special, config, **fields);\n"
               "allow_all_special recognises every special token.";
    if (c_struct == "pg_bpe_train_options")
        return "BPE training options: Tokenizer.train(texts, vocab_size, config, special_tokens=..., progress=...,\n"
               "**fields); min_frequency 2, pattern 'gpt2', all cores by default.";
    if (c_struct == "pg_step_result") return "What one optimizer step did.";
    if (c_struct == "pg_train_session_config")
        return "A TrainSession's budgets, checkpoint cadence, memory budget and conditions policy.";
    if (c_struct == "pg_device_conditions")
        return "What the app reports of the device: battery_percent (-1 unknown), charging, thermal_status\n"
               "(Android PowerManager's THERMAL_STATUS_NONE = 0 .. SHUTDOWN = 6).";
    if (c_struct == "pg_train_session_report") return "Where a TrainSession is and why its last run stopped.";
    if (c_struct == "pg_memory_plan") return "The predicted peak resident memory of training, term by term (bytes).";
    if (c_struct == "pg_eval_result") return "A whole-split (or sampled) evaluation.";
    if (c_struct == "pg_tensor_info")
        return "A tensor's shape and place in the parameter allocation (Model.tensor_info(name));\n"
               "Model.parameter(name) gives its weights.";
    return "";
}

std::string shortest_float(float v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, r.ptr);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 1 -> 1.0, as Python writes floats
    return s;
}

// Builds one struct's class field by field (the bind_<kind> functions below).
template <class S>
struct StructBinding {
    py::class_<S> cls;
    std::string c_name, py_name;
    bool options;                     // fields are read-write and the class has a constructor
    std::vector<std::string> attributes;
    py::dict routes;                  // C field -> "Class.attribute" or "Class.call(argument)"
    std::string previous_argument;    // of the preceding callback or array (for USER, COUNT)
    std::vector<std::string> float_fields;  // attributes that are C floats

    StructBinding(py::module_& m, const char* c, const char* py, bool is_options)
        : cls(m, py, struct_doc(c)), c_name(c), py_name(py), options(is_options) {}

    void attribute(const char* field) {
        attributes.push_back(field);
        routes[field] = py_name + "." + field;
    }
    // None when no Python call takes the struct yet: the test names the unreachable field.
    void argument(const char* field, const std::string& arg) {
        routes[field] = py::none();
        for (const CallRoute& r : kCallRoutes) {
            if (c_name == r.c_struct && (!r.field || std::string(field) == r.field)) {
                // "Class.member()": the field is reached through that member, not as an argument
                const bool verbatim = std::strchr(r.call, '(') != nullptr;
                routes[field] = std::string(r.call) + (arg.empty() || verbatim ? "" : "(" + arg + ")");
                return;
            }
        }
    }

    void finish(py::dict& all) {
        cls.attr("_fields") = py::tuple(py::cast(attributes));
        const std::string name = py_name;
        const std::vector<std::string> floats = float_fields;
        cls.def("__repr__", [name, floats](const py::object& self) {
            std::string out = name + "(";
            bool first = true;
            for (auto f : self.attr("_fields")) {
                const std::string field = py::str(f);
                const py::object value = self.attr(field.c_str());
                // float fields as the shortest text that reads back as the same float (0.001,
                // not 0.0010000000474974513)
                const bool is_float = std::find(floats.begin(), floats.end(), field) != floats.end();
                out += (first ? "" : ", ") + field + "=" +
                       (is_float ? shortest_float(value.cast<float>()) : std::string(py::repr(value)));
                first = false;
            }
            return out + ")";
        });
        cls.def("__eq__", [](const py::object& a, const py::object& b) {
            if (!py::isinstance(b, py::type::of(a))) return false;
            for (auto f : a.attr("_fields"))
                if (!a.attr(f.cast<py::str>()).equal(b.attr(f.cast<py::str>()))) return false;
            return true;
        });
        if (options) {
            cls.def(py::init([](const py::kwargs& kw) { return with_fields(defaults<S>(), kw); }));
            cls.def("replace", [](const S& s, const py::kwargs& kw) { return with_fields(s, kw); },
                    "A copy with the given fields changed.");
        }
        py::dict entry;
        entry["class"] = py_name;
        entry["options"] = options;
        entry["fields"] = routes;
        all[c_name.c_str()] = entry;
    }
};

template <class S, class T>
void bind_PG_VALUE(StructBinding<S>& b, const char* name, T S::*member) {
    if (std::is_same_v<T, float>) b.float_fields.push_back(name);
    if (b.options)
        b.cls.def_readwrite(name, member);
    else
        b.cls.def_readonly(name, member);
    b.attribute(name);
}
template <class S>
void bind_PG_FLAG(StructBinding<S>& b, const char* name, int32_t S::*member) {
    auto get = [member](const S& s) { return s.*member != 0; };
    if (b.options)
        b.cls.def_property(name, get, [member](S& s, bool v) { s.*member = v ? 1 : 0; });
    else
        b.cls.def_property_readonly(name, get);
    b.attribute(name);
}
template <class S, class E>
void bind_PG_ENUM(StructBinding<S>& b, const char* name, E S::*member) {
    auto get = [member](const S& s) { return enum_name(s.*member); };
    const std::string field = name, doc = enum_choices<E>() + ".";
    if (b.options)
        b.cls.def_property(name, get, [member, field](S& s, const std::string& v) { s.*member = enum_from_name<E>(v, field); },
                           doc.c_str());
    else
        b.cls.def_property_readonly(name, get, doc.c_str());
    b.attribute(name);
}
template <class S, std::size_t N>
void bind_PG_SHAPE(StructBinding<S>& b, const char* name, int64_t (S::*member)[N]) {
    b.cls.def_property_readonly(name, [member](const S& s) {
        py::tuple t(std::size_t(std::clamp<int32_t>(s.n_dims, 0, int32_t(N))));
        for (std::size_t i = 0; i < t.size(); ++i) t[i] = (s.*member)[i];
        return t;
    });
    b.attribute(name);
}
template <class S, class T>
void bind_PG_CALLBACK(StructBinding<S>& b, const char* name, T S::*) {
    b.previous_argument = argument_name(name);
    b.argument(name, b.previous_argument);
}
template <class S, class T>
void bind_PG_USER(StructBinding<S>& b, const char* name, T S::*) {
    b.argument(name, b.previous_argument);  // the binding's own closure for that callable
}
template <class S, class T>
void bind_PG_STRINGS(StructBinding<S>& b, const char* name, T S::*member) {
    bind_PG_CALLBACK(b, name, member);
}
template <class S, class T>
void bind_PG_INTS(StructBinding<S>& b, const char* name, T S::*member) {
    bind_PG_CALLBACK(b, name, member);  // a sequence argument of the call
}
template <class S, class T>
void bind_PG_COUNT(StructBinding<S>& b, const char* name, T S::*member) {
    bind_PG_USER(b, name, member);  // the length of the Python sequence
}
template <class S, class T>
void bind_PG_TEXT(StructBinding<S>& b, const char* name, T S::*) {
    b.argument(name, name);
}
template <class S, class T>
void bind_PG_DATA(StructBinding<S>& b, const char* name, T S::*) {
    b.argument(name, "");
}

}  // namespace

// Every listed struct's class, and _c_struct_fields.
void bind_structs(py::module_& m) {
    py::dict all;
#define PG_IS_OPTIONS_PG_OPTIONS true
#define PG_IS_OPTIONS_PG_RESULT false
#define PG_STRUCT(S, python_name, role) \
    {                                   \
        StructBinding<S> b(m, #S, #python_name, PG_IS_OPTIONS_##role);
#define PG_FIELD(S, field, kind) bind_##kind(b, #field, &S::field);
#define PG_STRUCT_END(S) \
    b.finish(all);       \
    }
#include "../../lib/core/c_struct_fields.def"
#undef PG_IS_OPTIONS_PG_OPTIONS
#undef PG_IS_OPTIONS_PG_RESULT
    m.attr("_c_struct_fields") = all;
}

}  // namespace pg_py
