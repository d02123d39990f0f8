// The Python binding of libphonegpt: a thin layer over the public C API (nothing else is
// included or linked), turning statuses into exceptions, handles into objects with
// deterministic freeing, and token/parameter buffers into numpy arrays without copies.
//
// Lifetime: every native handle lives in a std::shared_ptr. A Python object holds one
// reference; close() drops it. numpy views and trainers hold their own references, so the
// native memory outlives anything that can still touch it and "use after close" is an
// exception (StateError), never a dangling pointer.
//
// Threads: long calls release the GIL. Callbacks from the library (evaluation progress,
// generated tokens) take the GIL back, check for Ctrl-C with PyErr_CheckSignals, and ask the
// library to stop when a Python exception is pending; the exception is then re-raised.
//
// The files: binding_common (exceptions, the GIL-releasing call wrapper, callbacks, paths,
// token arrays, numpy views, handle pointers), struct_bindings (the config and result classes
// generated from lib/core/c_struct_fields.def), binding_handles.hpp (Tokenizer and Model),
// tokenizer_bindings, model_bindings, inference_bindings (forward, evaluation, sampling,
// Session), training_bindings, and coord_bindings / lora_bindings (federated and LoRA parts,
// over binding_hooks.hpp). This file only wires them into the module.
#include <pybind11/pybind11.h>

#include <phonegpt/phonegpt.h>

#include "binding_common.hpp"
#include "binding_handles.hpp"
#include "binding_hooks.hpp"
#include "struct_bindings.hpp"

#include <string>

namespace py = pybind11;

PYBIND11_MODULE(_phonegpt, m) {
    m.doc() = "libphonegpt: train, fine-tune, evaluate and sample small GPT models on a CPU.";

    // Exceptions (binding_common.cpp): first, so that everything after can raise them.
    pg_py::bind_errors(m);

    // Versions and small helpers --------------------------------------------------------------
    m.attr("__version__") = pg_version_string();
    m.attr("HEADER_VERSION") = PG_VERSION_NUMBER;
    m.def("version", [] { return std::string(pg_version_string()); }, "The loaded library's version, e.g. '0.2.0'.");
    m.def("version_number", [] { return pg_version_number(); }, "major*10000 + minor*100 + patch of the loaded library.");
    m.def("simd_arch", [] { return std::string(pg_simd_arch()); }, "The instruction set the kernels dispatched to.");
    m.def("status_name", [](int s) { return std::string(pg_status_name(pg_status(s))); });
    m.def(
        "split_index",
        [](size_t n, double fraction) {
            size_t k = 0;
            pg_py::check(pg_split_index(n, fraction, &k));
            return k;
        },
        py::arg("n"), py::arg("train_fraction") = 0.9,
        "Index splitting n items at floor(n * train_fraction): train [0, k), validation [k, n).");
    m.def(
        "read_file",
        [](const pg_py::PathArg& path) {
            std::string p = pg_py::to_path(path);
            char* data = nullptr;
            size_t len = 0;
            pg_py::call_nogil([&] { return pg_read_file(p.c_str(), &data, &len); });
            py::bytes b(data, len);
            pg_buffer_free(data);
            return b;
        },
        py::arg("path"), "Reads a whole regular file (bytes), at most 1 GiB; a FIFO, device or directory is IOError.");

    // Tokenizer (tokenizer_bindings.cpp).
    pg_py::bind_tokenizer(m);

    // Configurations and results: generated from the library's field list (struct_bindings.cpp).
    pg_py::bind_structs(m);

    // Model and ModelConfig's presets (model_bindings.cpp), Session (inference_bindings.cpp),
    // Trainer (training_bindings.cpp).
    pg_py::bind_model(m);
    pg_py::bind_session(m);
    pg_py::bind_trainer(m);

    // The coordinator's side and the phone's data filter (bindings/python/coord_bindings.cpp).
    pg_py::bind_coord(m, pg_py::binding_hooks());
    pg_py::bind_lora(m, pg_py::binding_hooks());
    pg_py::bind_train_session(m, pg_py::binding_hooks());
}
