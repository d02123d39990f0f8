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
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <phonegpt/phonegpt.h>

#include "binding_hooks.hpp"
#include "binding_common.hpp"
#include "struct_bindings.hpp"
#include "binding_handles.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace py = pybind11;

namespace pg_py {

namespace {

}  // namespace

}  // namespace pg_py

PYBIND11_MODULE(_phonegpt, m) {
    m.doc() = "libphonegpt: train, fine-tune, evaluate and sample small GPT models on a CPU.";

    using namespace pg_py;

    // Exceptions (binding_common.cpp).
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
            check(pg_split_index(n, fraction, &k));
            return k;
        },
        py::arg("n"), py::arg("train_fraction") = 0.9,
        "Index splitting n items at floor(n * train_fraction): train [0, k), validation [k, n).");
    m.def(
        "read_file",
        [](const py::object& path) {
            std::string p = to_path(path);
            char* data = nullptr;
            size_t len = 0;
            call_nogil([&] { return pg_read_file(p.c_str(), &data, &len); });
            py::bytes b(data, len);
            pg_buffer_free(data);
            return b;
        },
        py::arg("path"), "Reads a whole file (bytes).");

    bind_tokenizer(m);

    // Configurations and results: generated from the library's field list -----------------
    bind_structs(m);
    bind_model(m);

    bind_session(m);

    bind_trainer(m);

    // The coordinator's side and the phone's data filter (bindings/python/coord_bindings.cpp).
    pg_py::bind_coord(m, binding_hooks());
    pg_py::bind_lora(m, binding_hooks());
}
