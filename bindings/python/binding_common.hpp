// The machinery every file of the Python binding shares (defined in binding_common.cpp): the
// phonegpt exceptions and the status -> exception conversion, the GIL-releasing call wrapper,
// the bridge from library callbacks to Python callables, paths, token arrays and numpy views
// over native memory, and the shared pointers that own the native handles.
//
// The files over it: struct_bindings.cpp (the generated config and result classes),
// tokenizer_bindings.cpp, model_bindings.cpp, inference_bindings.cpp (forward, evaluation,
// sampling, Session) and training_bindings.cpp; module.cpp wires them into the module.
// coord_bindings.cpp and lora_bindings.cpp reach the same functions through binding_hooks.hpp.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <phonegpt/phonegpt_coordinator.h>  // both tiers (it includes phonegpt.h)

#include "binding_hooks.hpp"

#include <memory>
#include <string>
#include <vector>

namespace pg_py {

// ---------------------------------------------------------------------------------------
// Exceptions: one class per status family, all deriving from phonegpt.Error.
// ---------------------------------------------------------------------------------------

// Creates phonegpt.Error and its subclasses in `m` (once, before anything can raise).
void bind_errors(py::module_& m);

[[noreturn]] void raise_status(pg_status status, const std::string& message);
[[noreturn]] void raise_state(const std::string& message);
[[noreturn]] void raise_invalid(const std::string& message);

// Runs a C call with the GIL released; on failure raises the status' exception with the
// library's message (read on this thread right after the call, before anything else runs).
template <class F>
void call_nogil(F&& f) {
    pg_status s;
    std::string message;
    {
        py::gil_scoped_release nogil;
        s = f();
        if (s != PG_OK) message = pg_last_error();
    }
    if (s != PG_OK) raise_status(s, message);
}

// The same for short calls, which keep the GIL.
void check(pg_status s);

// A Python exception raised inside a library callback, kept until the call returns.
struct PendingError {
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    bool set() const { return type != nullptr; }
    void fetch() { PyErr_Fetch(&type, &value, &trace); }  // GIL held
    // Re-raises it (GIL held). Called after the C call returned.
    void raise_if_set() {
        if (!type) return;
        PyErr_Restore(type, value, trace);
        type = value = trace = nullptr;
        throw py::error_already_set();
    }
    ~PendingError() {
        if (type) {
            py::gil_scoped_acquire gil;
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(trace);
        }
    }
};

// A Python callable invoked from a library callback. Returns true when the library should
// stop: a truthy return value, a Ctrl-C (KeyboardInterrupt pending) or an exception.
struct Callback {
    py::object fn;  // may be None
    PendingError error;

    template <class... Args>
    bool invoke(Args... args) {
        py::gil_scoped_acquire gil;
        if (error.set()) return true;
        if (PyErr_CheckSignals() != 0) {
            error.fetch();
            return true;
        }
        if (fn.is_none()) return false;
        try {
            return py::bool_(fn(args...));
        } catch (py::error_already_set& e) {
            e.restore();
            error.fetch();
            return true;
        }
    }
};

// ---------------------------------------------------------------------------------------
// Paths, token arrays and numpy views.
// ---------------------------------------------------------------------------------------

// str, bytes or os.PathLike -> file-system bytes.
std::string to_path(const py::object& path);

// Accepts any integer array-like: an int32 C-contiguous numpy array is used as it is (no
// copy); other integer dtypes are range-checked and converted. `ndim` is the required rank.
TokenArray as_tokens(const py::handle& obj, const char* what, int ndim);

// A numpy array over native memory kept alive by `keep` (no copy). Read-only unless
// `writable`; a read-only view cannot be made writable again (its base is not an array).
py::array float_view(std::shared_ptr<void> keep, const float* data, std::vector<py::ssize_t> shape,
                     bool writable);

// ---------------------------------------------------------------------------------------
// Handles.
// ---------------------------------------------------------------------------------------

using TokenizerPtr = std::shared_ptr<pg_tokenizer>;
using ModelPtr = std::shared_ptr<pg_model>;

inline TokenizerPtr own_tokenizer(pg_tokenizer* t) { return TokenizerPtr(t, pg_tokenizer_free); }
inline ModelPtr own_model(pg_model* m) { return ModelPtr(m, pg_model_free); }

}  // namespace pg_py
