// The public structs' Python classes (ModelConfig, TrainConfig, EvalResult, ...), generated in
// struct_bindings.cpp from lib/core/c_struct_fields.def: what the other binding files use to
// make a struct (defaults<S>) and to take one from Python (options_from<S>).
#pragma once

#include <pybind11/pybind11.h>

#include <phonegpt/phonegpt_coordinator.h>  // both tiers (it includes phonegpt.h)

#include "binding_hooks.hpp"

#include <string>

namespace pg_py {

// Every listed struct's class, and _c_struct_fields.
void bind_structs(py::module_& m);

// A full-size struct as the library gives it: filled by its *_default (options) or zero
// (results). One per listed struct, generated in struct_bindings.cpp.
template <class S>
S defaults();
#define PG_STRUCT(S, python_name, role) \
    template <>                         \
    S defaults<S>();
#define PG_FIELD(S, field, kind)
#define PG_STRUCT_END(S)
#include "../../lib/core/c_struct_fields.def"

// An enumeration's Python name ("cosine", "fp16", ...; "unknown" for a value it lacks) and the
// value of a name (InvalidArgument naming `field` and the choices otherwise). Defined in
// struct_bindings.cpp for the enumerations of the listed structs' fields, and instantiated there
// for those other files use (pg_weight_storage).
template <class E>
std::string enum_name(E value);
template <class E>
E enum_from_name(const std::string& name, const std::string& field);

// `base` with the keyword arguments' fields changed; an unknown name is a TypeError.
template <class S>
S with_fields(const S& base, const py::kwargs& kw) {
    py::object self = py::cast(base);
    py::tuple fields = self.attr("_fields");
    for (auto item : kw) {
        if (!fields.contains(item.first))
            throw py::type_error(std::string(py::str(py::type::of(self).attr("__name__"))) + " has no field '" +
                                 std::string(py::str(item.first)) + "'");
        self.attr(item.first) = item.second;
    }
    return self.cast<S>();
}

// The options a call takes: `config` (an instance of the struct's class; None = the
// library's defaults) with the keyword arguments' fields changed.
template <class S>
S options_from(const py::object& config, const py::kwargs& fields) {
    const S base = config.is_none() ? defaults<S>() : config.cast<S>();
    return with_fields(base, fields);
}

}  // namespace pg_py
