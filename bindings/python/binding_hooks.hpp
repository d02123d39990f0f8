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

namespace pg_py {

namespace py = pybind11;
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
