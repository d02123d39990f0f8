// The shared machinery of the Python binding (binding_common.hpp): the phonegpt exception
// classes and raising them from a status, paths, token arrays and numpy views.
#include "binding_common.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pg_py {

// ---------------------------------------------------------------------------------------
// Exceptions: one class per status family, all deriving from phonegpt.Error.
// ---------------------------------------------------------------------------------------

namespace {

constexpr int kNumStatuses = PG_ERR_NOT_FINITE + 1;
PyObject* g_error_base = nullptr;               // phonegpt.Error
PyObject* g_error_class[kNumStatuses] = {};     // indexed by pg_status (leaked on purpose:
                                                // module-lifetime, never destroyed at exit)

}  // namespace

void bind_errors(py::module_& m) {
    g_error_base = PyErr_NewExceptionWithDoc(
        "phonegpt.Error", "Base class of every libphonegpt error; .status is the pg_status code.",
        PyExc_Exception, nullptr);
    m.add_object("Error", py::handle(g_error_base));
    // Class-level defaults; every raised instance carries its own status and status_name.
    py::handle(g_error_base).attr("status") = py::none();
    py::handle(g_error_base).attr("status_name") = py::none();
    struct Family {
        pg_status status;
        const char* name;
        PyObject* extra_base;
        const char* doc;
    };
    const Family families[] = {
        {PG_ERR_INVALID_ARGUMENT, "InvalidArgument", PyExc_ValueError, "An argument is NULL, out of range or inconsistent."},
        {PG_ERR_OUT_OF_MEMORY, "OutOfMemory", PyExc_MemoryError, "An allocation failed; nothing was changed."},
        {PG_ERR_IO, "IOError", PyExc_OSError, "Opening, reading or writing a file failed."},
        {PG_ERR_FORMAT, "FormatError", nullptr, "A file or buffer is malformed."},
        {PG_ERR_VERSION, "VersionError", nullptr, "A file's format version is newer than this library reads."},
        {PG_ERR_CHECKSUM, "ChecksumError", nullptr, "Stored and computed checksums differ."},
        {PG_ERR_GEOMETRY, "GeometryError", nullptr, "Shapes or configurations that must agree do not."},
        {PG_ERR_TOKENIZE, "TokenizeError", PyExc_ValueError, "Text the tokenizer cannot encode."},
        {PG_ERR_CANCELLED, "Cancelled", nullptr, "A callback asked the call to stop."},
        {PG_ERR_STATE, "StateError", nullptr, "The call is not valid in the object's state (e.g. after close())."},
        {PG_ERR_BUFFER_TOO_SMALL, "BufferTooSmall", nullptr, "An output buffer was too small."},
        {PG_ERR_UNSUPPORTED, "Unsupported", nullptr, "A valid request this build cannot serve."},
        {PG_ERR_INTERNAL, "InternalError", nullptr, "A bug in libphonegpt: please report the message."},
        {PG_ERR_NOT_FINITE, "NotFinite", PyExc_ArithmeticError, "A loss, gradient norm or loaded weight is NaN or infinite (a diverged run); nothing was changed."},
    };
    for (const Family& f : families) {
        PyObject* bases = f.extra_base ? PyTuple_Pack(2, g_error_base, f.extra_base) : PyTuple_Pack(1, g_error_base);
        std::string qual = std::string("phonegpt.") + f.name;
        PyObject* cls = PyErr_NewExceptionWithDoc(qual.c_str(), f.doc, bases, nullptr);
        Py_DECREF(bases);
        if (!cls) throw py::error_already_set();
        g_error_class[f.status] = cls;  // one reference kept for the module's lifetime
        py::handle(cls).attr("status") = int(f.status);  // e.g. phonegpt.ChecksumError.status == 6
        py::handle(cls).attr("status_name") = pg_status_name(f.status);
        m.add_object(f.name, py::reinterpret_borrow<py::object>(cls));
    }
}

[[noreturn]] void raise_status(pg_status status, const std::string& message) {
    PyObject* cls = (status > 0 && status < kNumStatuses) ? g_error_class[status] : nullptr;
    if (!cls) cls = g_error_class[PG_ERR_INTERNAL];
    py::object exc = py::reinterpret_borrow<py::object>(cls)(message);
    exc.attr("status") = int(status);
    exc.attr("status_name") = pg_status_name(status);
    PyErr_SetObject(cls, exc.ptr());
    throw py::error_already_set();
}

[[noreturn]] void raise_state(const std::string& message) { raise_status(PG_ERR_STATE, message); }
[[noreturn]] void raise_invalid(const std::string& message) {
    raise_status(PG_ERR_INVALID_ARGUMENT, message);
}

void check(pg_status s) {
    if (s != PG_OK) raise_status(s, pg_last_error());
}

// ---------------------------------------------------------------------------------------
// Paths, token arrays and numpy views.
// ---------------------------------------------------------------------------------------

std::string to_path(const py::object& path) {
    py::object b = py::module_::import("os").attr("fsencode")(path);
    return std::string(py::bytes(b));
}

namespace {

// The range check of as_tokens, on Python ints: numpy's uint64 above 2^63 - 1 (and ints beyond
// 64 bits, held as objects) do not fit a C long long.
[[noreturn]] void raise_outside_int32(const char* what, const py::object& lo, const py::object& hi) {
    raise_invalid(std::string(what) + " has values outside int32: [" + std::string(py::str(lo)) + ", " +
                  std::string(py::str(hi)) + "]");
}

}  // namespace

TokenArray as_tokens(const py::handle& obj, const char* what, int ndim) {
    py::array a = py::array::ensure(obj);
    if (!a) throw py::type_error(std::string(what) + " must be an integer array");
    if (a.size() == 0 && a.dtype().kind() == 'f') a = a.attr("astype")("int32");  // [] -> int32
    if (a.dtype().kind() == 'O' && a.size() > 0) {
        // Python ints numpy could not hold in 64 bits (2^64, -2^63 - 1): out of range, not of
        // the wrong type.
        bool all_ints = true;
        py::object lo, hi;
        for (py::handle x : a.attr("flat")) {
            all_ints = all_ints && py::isinstance<py::int_>(x) && !py::isinstance<py::bool_>(x);
            if (!all_ints) break;
            py::object v = py::reinterpret_borrow<py::object>(x);
            if (!lo || v < lo) lo = v;
            if (!hi || v > hi) hi = v;
        }
        if (all_ints && (lo < py::int_(INT32_MIN) || hi > py::int_(INT32_MAX))) raise_outside_int32(what, lo, hi);
        if (all_ints) a = a.attr("astype")("int32");
    }
    const char kind = a.dtype().kind();
    if (kind != 'i' && kind != 'u')
        throw py::type_error(std::string(what) + " must be an integer array, got dtype " +
                             std::string(py::str(a.dtype())));
    if (a.ndim() != ndim)
        raise_invalid(std::string(what) + " must have " + std::to_string(ndim) +
                      " dimension(s), got shape " + std::string(py::str(a.attr("shape"))));
    if (a.size() > 0 && (a.dtype().itemsize() > 4 || kind == 'u')) {
        py::module_ np = py::module_::import("numpy");
        const py::int_ lo(np.attr("min")(a)), hi(np.attr("max")(a));
        if (lo < py::int_(INT32_MIN) || hi > py::int_(INT32_MAX)) raise_outside_int32(what, lo, hi);
    }
    // numpy hands back the same object (no copy) when it is already int32 and C-contiguous.
    TokenArray out = TokenArray::ensure(a);
    if (!out) raise_invalid(std::string(what) + " could not be converted to int32");
    return out;
}

py::array float_view(std::shared_ptr<void> keep, const float* data, std::vector<py::ssize_t> shape,
                     bool writable) {
    auto* holder = new std::shared_ptr<void>(std::move(keep));
    py::capsule base(holder, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
    py::array a(py::dtype::of<float>(), shape, {}, data, base);
    if (!writable) py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return a;
}

}  // namespace pg_py
