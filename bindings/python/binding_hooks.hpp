// What the binding's core files lend coord_bindings.cpp and lora_bindings.cpp: the status ->
// exception conversion, the token-array conversion, paths and numpy views (binding_common.cpp)
// and the native handle of a phonegpt.Model (model_bindings.cpp, binding_hooks()), so each
// file binds its own classes over the public C API without a second copy of these.
// The struct classes (ValidationPolicy, LoraConfig, EvalResult, ...) are generated once in
// struct_bindings.cpp from lib/core/c_struct_fields.def; other files convert them with py::cast.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <phonegpt/phonegpt.h>

#include "call_session.hpp"

namespace pg_py {

namespace py = pybind11;

// The parameters of PG_PY_NAMED_OBJECT (after this namespace) take any Python object.
inline bool any_python_object(PyObject*) { return true; }

// Model.forward / evaluate / evaluate_sampled / generate and Adapter.evaluate run on a session
// made for the one call (bindings/call_session.hpp).
using pg_bindings::on_call_session;

// A warm-up at least as long as the run keeps the learning rate below lr_max for the whole run.
// One the caller did not choose (the default) becomes a tenth of the run, with a warning; a
// chosen one is kept, with the warning.
inline void clamp_warmup(pg_train_config& c, int64_t run_steps, bool chosen) {
    if (run_steps <= 0 || c.warmup_steps < run_steps) return;
    std::string message = "warmup_steps " + std::to_string(c.warmup_steps) + " is not shorter than the run's " +
                          std::to_string(run_steps) + " steps: the learning rate would stay below lr_max";
    if (!chosen) {
        c.warmup_steps = int32_t(run_steps / 10);
        message += "; warming up over " + std::to_string(c.warmup_steps) + " steps instead (pass warmup_steps to choose)";
    }
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}
// forcecast: converting int64 -> int32 is an "unsafe" cast to numpy; the range is checked first.
using TokenArray = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

struct Hooks {
    // Raises the status' phonegpt exception with `message`.
    [[noreturn]] void (*raise_status)(pg_status status, const std::string& message);
    // PG_OK: nothing; else raises with pg_last_error().
    void (*check)(pg_status status);
    // Runs a C call with the GIL released and raises on failure (message read on that thread).
    void (*call_nogil)(const std::function<pg_status()>& call);
    // Any integer array-like as C-contiguous int32 of rank `ndim` (range-checked).
    TokenArray (*as_tokens)(const py::handle& obj, const char* what, int ndim);
    // The handle of a phonegpt.Model, shared (StateError once closed; TypeError for anything
    // else): holding it keeps the native model alive.
    std::shared_ptr<pg_model> (*model_of)(const py::handle& model);
    // A new phonegpt.Model owning `model`.
    py::object (*wrap_model)(pg_model* model);
    // str, bytes or os.PathLike -> file-system bytes.
    std::string (*to_path)(const py::object& path);
    // A numpy float32 array over native memory kept alive by `keep` (no copy); read-only
    // unless `writable`.
    py::array (*float_view)(std::shared_ptr<void> keep, const float* data, std::vector<py::ssize_t> shape,
                            bool writable);
};

// A text argument's bytes: a str as UTF-8, bytes-like objects as they are; anything else is a
// TypeError naming `what`. A lone surrogate, which UTF-8 cannot encode, raises Python's own
// UnicodeEncodeError naming it and its position (as str.encode() does), not a cast failure.
inline std::string text_bytes(const py::handle& obj, const char* what) {
    if (py::isinstance<py::str>(obj)) {
        Py_ssize_t n = 0;
        const char* p = PyUnicode_AsUTF8AndSize(obj.ptr(), &n);
        if (!p) throw py::error_already_set();
        return std::string(p, std::size_t(n));
    }
    if (py::isinstance<py::bytes>(obj)) return std::string(py::bytes(py::reinterpret_borrow<py::object>(obj)));
    if (py::isinstance<py::bytearray>(obj) || py::isinstance<py::memoryview>(obj))
        return std::string(py::bytes(py::module_::import("builtins").attr("bytes")(obj)));
    throw py::type_error(std::string(what) + " must be str or bytes, not " +
                         std::string(py::str(obj.get_type().attr("__name__"))));
}

// A C result or option struct with its struct_size set and everything else zero.
template <class S>
S sized() {
    S s{};
    s.struct_size = sizeof s;
    return s;
}

// The bytes a C call writes under the sizing protocol (call(out, capacity, &len): a text, which
// the call NUL-terminates, or a file's bytes): first into `guess` bytes (0: the call only reports
// the size), then, if that was too small, into the size the library reported (plus the NUL's
// byte). `check` raises any other failure.
template <class F>
std::string sized_output(F&& call, void (*check)(pg_status), std::size_t guess = 0) {
    std::string out(guess, '\0');
    std::size_t len = 0;
    pg_status s = call(guess > 0 ? &out[0] : nullptr, guess, &len);
    if (s == PG_ERR_BUFFER_TOO_SMALL) {
        out.assign(len + 1, '\0');
        s = call(&out[0], out.size(), &len);
    }
    check(s);
    out.resize(len);
    return out;
}

// close(), closed and the context manager of a handle class C (close() frees the native handle;
// views taken earlier stay valid).
template <class C, class PyC>
void add_lifetime(PyC& cls, const char* what) {
    cls.def("close", &C::close,
            (std::string("Frees the native ") + what +
             " now. Further use raises StateError; numpy views taken earlier stay valid.")
                .c_str())
        .def_property_readonly("closed", &C::closed)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](C& self, py::args) { self.close(); });
}

// bindings/python/coord_bindings.cpp: the data filter, keys and signatures, adapters as numpy
// arrays (get/set, fit/evaluate), averaging and validation.
void bind_coord(py::module_& m, const Hooks& hooks);
// Also coord_bindings.cpp: the native adapter of a phonegpt.Adapter (shared: holding it keeps the
// adapter alive; TypeError for anything else, StateError once closed), and a new phonegpt.Adapter
// owning `adapter`.
std::shared_ptr<pg_lora_adapter> adapter_of(const py::handle& adapter);
py::object wrap_adapter(pg_lora_adapter* adapter);

// bindings/python/lora_bindings.cpp: the LoRA parts beside the federated ones: numpy views of an
// Adapter's A and B, PEFT import and export, the base it records, and LoraTrainer. Call after
// bind_coord (it extends phonegpt.Adapter).
void bind_lora(py::module_& m, const Hooks& hooks);
// bindings/python/session_bindings.cpp: TrainSession and the training memory plan. Call after
// bind_coord (it takes phonegpt.Adapter).
void bind_train_session(py::module_& m, const Hooks& hooks);

}  // namespace pg_py

// Parameters that take any Python object (converted and checked by the function itself) but
// show a real type in help() and in the generated signatures, where a py::object shows
// "object"; bindings/python/phonegpt/__init__.pyi has the full types.
#define PG_PY_NAMED_OBJECT(Name, caption)                                             \
    namespace pg_py {                                                                 \
    class Name : public py::object {                                                  \
    public:                                                                           \
        PYBIND11_OBJECT_DEFAULT(Name, py::object, any_python_object)                  \
    };                                                                                \
    }                                                                                 \
    template <>                                                                       \
    struct pybind11::detail::handle_type_name<pg_py::Name> {                          \
        static constexpr auto name = pybind11::detail::const_name(caption);           \
    };
PG_PY_NAMED_OBJECT(PathArg, "Union[str, os.PathLike]")
PG_PY_NAMED_OBJECT(TokensArg, "Union[numpy.ndarray, Sequence[int]]")
PG_PY_NAMED_OBJECT(ModelArg, "phonegpt.Model")
PG_PY_NAMED_OBJECT(AdapterArg, "phonegpt.Adapter")
#undef PG_PY_NAMED_OBJECT
