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

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

// ---------------------------------------------------------------------------------------
// Exceptions: one class per status family, all deriving from phonegpt.Error.
// ---------------------------------------------------------------------------------------

constexpr int kNumStatuses = PG_ERR_NOT_FINITE + 1;
PyObject* g_error_base = nullptr;               // phonegpt.Error
PyObject* g_error_class[kNumStatuses] = {};     // indexed by pg_status (leaked on purpose:
                                                // module-lifetime, never destroyed at exit)

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
void check(pg_status s) {
    if (s != PG_OK) raise_status(s, pg_last_error());
}

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
std::string to_path(const py::object& path) {
    py::object b = py::module_::import("os").attr("fsencode")(path);
    return std::string(py::bytes(b));
}

// forcecast: converting int64 -> int32 is an "unsafe" cast to numpy; the range is checked first.
using TokenArray = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

// Accepts any integer array-like: an int32 C-contiguous numpy array is used as it is (no
// copy); other integer dtypes are range-checked and converted. `ndim` is the required rank.
TokenArray as_tokens(const py::handle& obj, const char* what, int ndim) {
    py::array a = py::array::ensure(obj);
    if (!a) throw py::type_error(std::string(what) + " must be an integer array");
    if (a.size() == 0 && a.dtype().kind() == 'f') a = a.attr("astype")("int32");  // [] -> int32
    const char kind = a.dtype().kind();
    if (kind != 'i' && kind != 'u')
        throw py::type_error(std::string(what) + " must be an integer array, got dtype " +
                             std::string(py::str(a.dtype())));
    if (a.ndim() != ndim)
        raise_invalid(std::string(what) + " must have " + std::to_string(ndim) +
                      " dimension(s), got shape " + std::string(py::str(a.attr("shape"))));
    if (a.size() > 0 && (a.dtype().itemsize() > 4 || kind == 'u')) {
        py::module_ np = py::module_::import("numpy");
        long long lo = py::int_(np.attr("min")(a)), hi = py::int_(np.attr("max")(a));
        if (lo < INT32_MIN || hi > INT32_MAX)
            raise_invalid(std::string(what) + " has values outside int32: [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    // numpy hands back the same object (no copy) when it is already int32 and C-contiguous.
    TokenArray out = TokenArray::ensure(a);
    if (!out) raise_invalid(std::string(what) + " could not be converted to int32");
    return out;
}

// A numpy array over native memory kept alive by `keep` (no copy). Read-only unless
// `writable`; a read-only view cannot be made writable again (its base is not an array).
py::array float_view(std::shared_ptr<void> keep, const float* data, std::vector<py::ssize_t> shape,
                     bool writable) {
    auto* holder = new std::shared_ptr<void>(std::move(keep));
    py::capsule base(holder, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
    py::array a(py::dtype::of<float>(), shape, {}, data, base);
    if (!writable) py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return a;
}

// ---------------------------------------------------------------------------------------
// Handles.
// ---------------------------------------------------------------------------------------

using TokenizerPtr = std::shared_ptr<pg_tokenizer>;
using ModelPtr = std::shared_ptr<pg_model>;

TokenizerPtr own_tokenizer(pg_tokenizer* t) { return TokenizerPtr(t, pg_tokenizer_free); }
ModelPtr own_model(pg_model* m) { return ModelPtr(m, pg_model_free); }

// A trainer borrows its model: the model reference is dropped only after the trainer is freed.
// A trainer is one-thread-at-a-time in C; `busy` serialises the binding's calls on it (taken
// with the GIL released), so two Python threads stepping one trainer wait instead of racing.
struct TrainerHandle {
    ModelPtr model;
    pg_trainer* trainer = nullptr;
    std::mutex busy;
    ~TrainerHandle() { pg_trainer_free(trainer); }
};
using TrainerPtr = std::shared_ptr<TrainerHandle>;

class Tokenizer {
public:
    explicit Tokenizer(TokenizerPtr p) : p_(std::move(p)) {}

    static Tokenizer from_text(const std::string& text) {
        pg_tokenizer* t = nullptr;
        call_nogil([&] { return pg_tokenizer_create_char(text.data(), text.size(), &t); });
        return Tokenizer(own_tokenizer(t));
    }
    static Tokenizer from_bytes(const py::bytes& data) {
        std::string s = data;
        pg_tokenizer* t = nullptr;
        check(pg_tokenizer_deserialize(s.data(), s.size(), &t));
        return Tokenizer(own_tokenizer(t));
    }
    // A copy owned by Python of a tokenizer owned by someone else (e.g. a model).
    static Tokenizer copy_of(pg_tokenizer* borrowed) {
        Tokenizer view(TokenizerPtr(borrowed, [](pg_tokenizer*) {}));
        return from_bytes(view.to_bytes());
    }

    pg_tokenizer* get() const {
        if (!p_) raise_state("the Tokenizer is closed");
        return p_.get();
    }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    std::string kind() const {
        pg_tokenizer_kind k;
        check(pg_tokenizer_kind_of(get(), &k));
        return k == PG_TOKENIZER_CHAR ? "char" : "kind" + std::to_string(int(k));
    }
    int vocab_size() const {
        int32_t v = 0;
        check(pg_tokenizer_vocab_size(get(), &v));
        return v;
    }

    py::array_t<int32_t> encode(const std::string& text) const {
        pg_tokenizer* t = get();
        auto keep = p_;
        // Every token covers at least one byte, so len(text) ids always suffice.
        std::vector<int32_t> ids(text.size());
        size_t n = 0;
        call_nogil([&] { return pg_tokenizer_encode(t, text.data(), text.size(), ids.data(), ids.size(), &n); });
        py::array_t<int32_t> out{py::ssize_t(n)};
        if (n) std::memcpy(out.mutable_data(), ids.data(), n * sizeof(int32_t));
        return out;
    }

    py::bytes decode_bytes(const py::object& ids_obj) const {
        pg_tokenizer* t = get();
        TokenArray ids = as_tokens(ids_obj, "ids", 1);
        const int32_t* p = ids.data();
        const size_t n = size_t(ids.size());
        std::string buf(n * 4 + 1, '\0');
        size_t len = 0;
        pg_status s = pg_tokenizer_decode(t, p, n, buf.data(), buf.size(), &len);
        if (s == PG_ERR_BUFFER_TOO_SMALL) {
            buf.assign(len + 1, '\0');
            s = pg_tokenizer_decode(t, p, n, buf.data(), buf.size(), &len);
        }
        check(s);
        return py::bytes(buf.data(), len);
    }

    py::str decode(const py::object& ids) const {
        std::string b = decode_bytes(ids);
        return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(b.data(), py::ssize_t(b.size()), "replace"));
    }

    py::bytes to_bytes() const {
        pg_tokenizer* t = get();
        size_t len = 0;
        pg_status s = pg_tokenizer_serialize(t, nullptr, 0, &len);
        if (s != PG_OK && s != PG_ERR_BUFFER_TOO_SMALL) check(s);
        std::string buf(len, '\0');
        check(pg_tokenizer_serialize(t, buf.data(), buf.size(), &len));
        return py::bytes(buf.data(), len);
    }

private:
    TokenizerPtr p_;
};

// ---------------------------------------------------------------------------------------
// Configurations: plain value types mirroring the C structs, built with keyword arguments.
// ---------------------------------------------------------------------------------------

// Applies keyword arguments to the attributes of a freshly defaulted config object; an
// unknown name is an error, not silently ignored.
void apply_kwargs(py::object self, const py::kwargs& kw, const char* type_name) {
    for (auto item : kw) {
        std::string key = py::str(item.first);
        if (!py::hasattr(self, key.c_str()) || key.rfind("_", 0) == 0)
            throw py::type_error(std::string(type_name) + " has no field '" + key + "'");
        self.attr(key.c_str()) = item.second;
    }
}

const char* schedule_name(pg_lr_schedule s) {
    switch (s) {
        case PG_LR_CONSTANT: return "constant";
        case PG_LR_COSINE: return "cosine";
        case PG_LR_LINEAR: return "linear";
    }
    return "unknown";
}
pg_lr_schedule schedule_from_name(const std::string& n) {
    if (n == "constant") return PG_LR_CONSTANT;
    if (n == "cosine") return PG_LR_COSINE;
    if (n == "linear") return PG_LR_LINEAR;
    raise_invalid("schedule must be 'constant', 'cosine' or 'linear', got '" + n + "'");
}

pg_model_config default_model_config() {
    pg_model_config c;
    pg_model_config_default(&c);
    return c;
}

pg_model_config config_from(const py::object& config_or_preset) {
    if (py::isinstance<py::str>(config_or_preset)) {
        pg_model_config c = default_model_config();
        check(pg_model_config_preset(std::string(py::str(config_or_preset)).c_str(), &c));
        return c;
    }
    return config_or_preset.cast<pg_model_config>();
}

// ---------------------------------------------------------------------------------------
// Results.
// ---------------------------------------------------------------------------------------

pg_step_result new_step_result() {
    pg_step_result r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    return r;
}
pg_eval_result new_eval_result() {
    pg_eval_result r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    return r;
}

// ---------------------------------------------------------------------------------------
// Model.
// ---------------------------------------------------------------------------------------

class Model {
public:
    explicit Model(ModelPtr p) : p_(std::move(p)) {}

    static Model create(const py::object& config, uint64_t seed) {
        pg_model_config c = config_from(config);
        pg_model* m = nullptr;
        call_nogil([&] { return pg_model_create(&c, seed, &m); });
        return Model(own_model(m));
    }
    static Model load(const py::object& path) {
        std::string p = to_path(path);
        pg_model* m = nullptr;
        call_nogil([&] { return pg_model_load(p.c_str(), &m); });
        return Model(own_model(m));
    }
    static Model import_from(const py::object& path, const std::string& format) {
        std::string p = to_path(path);
        pg_interop_format f = format_from_name(format);
        pg_model* m = nullptr;
        call_nogil([&] { return pg_model_import(f, p.c_str(), &m); });
        return Model(own_model(m));
    }

    // The native handle; raises StateError after close().
    const ModelPtr& ptr() const {
        if (!p_) raise_state("the Model is closed");
        return p_;
    }
    pg_model* get() const { return ptr().get(); }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    pg_model_config config() const {
        pg_model_config c = default_model_config();
        check(pg_model_get_config(get(), &c));
        return c;
    }
    int64_t num_params() const {
        int64_t n = 0;
        check(pg_model_num_params(get(), &n));
        return n;
    }

    py::object tokenizer() const {
        pg_tokenizer* t = nullptr;
        check(pg_model_get_tokenizer(get(), &t));
        if (!t) return py::none();
        return py::cast(Tokenizer::copy_of(t));
    }
    void set_tokenizer(const Tokenizer& tok) { check(pg_model_set_tokenizer(get(), tok.get())); }

    void save(const py::object& path, int compression_level) const {
        std::string p = to_path(path);
        pg_model* m = get();
        auto keep = p_;
        pg_save_options o;
        pg_save_options_default(&o);
        o.compression_level = compression_level;
        call_nogil([&] { return pg_model_save(m, p.c_str(), &o); });
    }
    void export_to(const py::object& path, const std::string& format) const {
        std::string p = to_path(path);
        pg_interop_format f = format_from_name(format);
        pg_model* m = get();
        auto keep = p_;
        call_nogil([&] { return pg_model_export(m, f, p.c_str()); });
    }

    // Tensors --------------------------------------------------------------------------

    int num_tensors() const {
        int32_t n = 0;
        check(pg_model_num_tensors(get(), &n));
        return n;
    }
    pg_tensor_info info(int32_t index) const {
        pg_tensor_info i;
        std::memset(&i, 0, sizeof i);
        i.struct_size = sizeof i;
        check(pg_model_tensor_info(get(), index, &i));
        return i;
    }
    int32_t index_of(const std::string& name) const {
        int32_t idx = -1;
        check(pg_model_find_tensor(get(), name.c_str(), &idx));
        return idx;
    }
    static std::vector<py::ssize_t> shape_of(const pg_tensor_info& i) {
        return std::vector<py::ssize_t>(i.shape, i.shape + i.n_dims);
    }
    std::vector<std::string> tensor_names() const {
        std::vector<std::string> out;
        for (int i = 0, n = num_tensors(); i < n; ++i) out.push_back(info(i).name);
        return out;
    }
    py::array tensor_view(int32_t index, bool writable) {
        pg_tensor_info i = info(index);
        const float* data = i.data;
        if (writable) {
            float* w = nullptr;
            check(pg_model_tensor_data_mutable(get(), index, &w));
            data = w;
        }
        return float_view(p_, data, shape_of(i), writable);
    }
    py::array parameter(const std::string& name, bool writable) {
        return tensor_view(index_of(name), writable);
    }
    py::dict parameters(bool writable) {
        py::dict d;
        for (int i = 0, n = num_tensors(); i < n; ++i) d[py::str(info(i).name)] = tensor_view(i, writable);
        return d;
    }
    py::array flat_parameters() const {
        const float* data = nullptr;
        int64_t n = 0;
        check(pg_model_params(get(), &data, &n));
        return float_view(p_, data, {py::ssize_t(n)}, false);
    }

    // Forward ---------------------------------------------------------------------------

    py::tuple forward(const py::object& tokens_obj, const py::object& targets_obj, int n_threads) const {
        pg_model* m = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 2);
        const int32_t B = int32_t(tokens.shape(0)), T = int32_t(tokens.shape(1));
        TokenArray targets;
        const int32_t* tg = nullptr;
        if (!targets_obj.is_none()) {
            targets = as_tokens(targets_obj, "targets", 2);
            if (targets.shape(0) != B || targets.shape(1) != T)
                raise_invalid("targets shape " + std::string(py::str(targets.attr("shape"))) +
                              " != tokens shape " + std::string(py::str(tokens.attr("shape"))));
            tg = targets.data();
        }
        const int V = config().vocab_size;
        py::array_t<float> logits({py::ssize_t(B), py::ssize_t(T), py::ssize_t(V)});
        float* lp = logits.mutable_data();
        float loss = 0.0f;
        const int32_t* tp = tokens.data();
        call_nogil([&] { return pg_model_forward(m, tp, B, T, tg, lp, tg ? &loss : nullptr, n_threads); });
        return py::make_tuple(logits, tg ? py::object(py::float_(loss)) : py::object(py::none()));
    }

    // Evaluation ------------------------------------------------------------------------

    pg_eval_result evaluate(const py::object& tokens_obj, int window, int stride, int batch_size,
                            int n_threads, const py::object& progress) const {
        pg_model* m = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        Callback cb{progress, {}};
        pg_eval_config c;
        pg_eval_config_default(&c);
        c.window = window;
        c.stride = stride;
        c.batch_size = batch_size;
        c.n_threads = n_threads;
        c.progress = [](void* user, int64_t done, int64_t total) -> int {
            return static_cast<Callback*>(user)->invoke(done, total) ? 1 : 0;
        };
        c.progress_user = &cb;
        pg_eval_result r = new_eval_result();
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        pg_status s;
        std::string message;
        {
            py::gil_scoped_release nogil;
            s = pg_evaluate(m, tp, n, &c, &r);
            if (s != PG_OK) message = pg_last_error();
        }
        cb.error.raise_if_set();  // Ctrl-C or the callback's exception, before CANCELLED
        if (s != PG_OK) raise_status(s, message);
        return r;
    }

    pg_eval_result evaluate_sampled(const py::object& tokens_obj, int n_batches, int batch_size,
                                    uint64_t seed, int n_threads) const {
        pg_model* m = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        pg_eval_result r = new_eval_result();
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        call_nogil([&] { return pg_evaluate_sampled(m, tp, n, n_batches, batch_size, seed, n_threads, &r); });
        return r;
    }

    // Generation ------------------------------------------------------------------------

    py::array_t<int32_t> generate(const py::object& prompt_obj, int max_tokens, float temperature,
                                  int top_k, float top_p, uint64_t seed, int n_threads, int slide_keep,
                                  const std::vector<std::string>& stop, const py::object& on_token) const {
        pg_model* m = get();
        auto keep = p_;
        TokenArray prompt = as_tokens(prompt_obj, "prompt", 1);
        if (max_tokens < 0) raise_invalid("max_tokens must be >= 0");
        Callback cb{on_token, {}};
        std::vector<const char*> stops;
        for (const auto& s : stop) stops.push_back(s.c_str());
        pg_sample_config c;
        pg_sample_config_default(&c);
        c.temperature = temperature;
        c.top_k = top_k;
        c.top_p = top_p;
        c.seed = seed;
        c.max_tokens = max_tokens;
        c.n_threads = n_threads;
        c.slide_keep = slide_keep;
        c.on_token = [](void* user, int32_t token) -> int {
            return static_cast<Callback*>(user)->invoke(token) ? 1 : 0;
        };
        c.on_token_user = &cb;
        c.stop_strings = stops.empty() ? nullptr : stops.data();
        c.n_stop_strings = int32_t(stops.size());
        std::vector<int32_t> out(size_t(max_tokens) + 1);
        size_t n_out = 0;
        const int32_t* pp = prompt.data();
        const size_t np = size_t(prompt.size());
        pg_status s;
        std::string message;
        {
            py::gil_scoped_release nogil;
            s = pg_generate(m, pp, np, &c, out.data(), out.size(), &n_out);
            if (s != PG_OK) message = pg_last_error();
        }
        cb.error.raise_if_set();
        if (s != PG_OK) raise_status(s, message);
        py::array_t<int32_t> result{py::ssize_t(n_out)};
        if (n_out) std::memcpy(result.mutable_data(), out.data(), n_out * sizeof(int32_t));
        return result;
    }

    static pg_interop_format format_from_name(const std::string& f) {
        if (f == "llmc") return PG_FORMAT_LLMC;
        if (f == "safetensors") return PG_FORMAT_SAFETENSORS;
        raise_invalid("format must be 'llmc' or 'safetensors', got '" + f + "'");
    }

private:
    ModelPtr p_;
};

// ---------------------------------------------------------------------------------------
// Trainer.
// ---------------------------------------------------------------------------------------

pg_train_config default_train_config() {
    pg_train_config c;
    pg_train_config_default(&c);
    return c;
}

class Trainer {
public:
    Trainer(py::object model_obj, TrainerPtr p) : model_obj_(std::move(model_obj)), p_(std::move(p)) {}

    static Trainer create(py::object model_obj, const py::object& config, const py::kwargs& kw) {
        Model& model = model_obj.cast<Model&>();
        py::object cfg = config.is_none() ? py::cast(default_train_config()) : py::cast(config.cast<pg_train_config>());
        apply_kwargs(cfg, kw, "TrainConfig");
        pg_train_config c = cfg.cast<pg_train_config>();
        auto h = std::make_shared<TrainerHandle>();
        h->model = model.ptr();
        check(pg_trainer_create(h->model.get(), &c, &h->trainer));
        return Trainer(std::move(model_obj), std::move(h));
    }

    static Trainer resume(const py::object& path) {
        std::string p = to_path(path);
        pg_model* m = nullptr;
        pg_trainer* t = nullptr;
        call_nogil([&] { return pg_trainer_resume(p.c_str(), &m, &t); });
        auto h = std::make_shared<TrainerHandle>();
        h->model = own_model(m);
        h->trainer = t;
        py::object model_obj = py::cast(Model(h->model));  // before h is moved from
        return Trainer(std::move(model_obj), std::move(h));
    }

    const TrainerPtr& ptr() const {
        if (!p_) raise_state("the Trainer is closed");
        return p_;
    }
    pg_trainer* get() const { return ptr()->trainer; }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }
    py::object model() const { return model_obj_; }

    pg_train_config config() const {
        pg_train_config c = default_train_config();
        check(pg_trainer_get_config(get(), &c));
        return c;
    }

    void set_data(const py::object& tokens_obj) {
        pg_trainer* t = get();
        auto keep = p_;  // another thread's close() must not free it while the GIL is released
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_trainer_set_data(t, tp, n);
        });
    }

    pg_step_result step() {
        pg_trainer* t = get();
        auto keep = p_;
        pg_step_result r = new_step_result();
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_trainer_step(t, &r);
        });
        return r;
    }

    pg_step_result step_batch(const py::object& inputs_obj, const py::object& targets_obj) {
        pg_trainer* t = get();
        auto keep = p_;
        TokenArray inputs, targets;
        int32_t B, T;
        batch_arrays(inputs_obj, targets_obj, inputs, targets, B, T);
        pg_step_result r = new_step_result();
        const int32_t *ip = inputs.data(), *tp = targets.data();
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_trainer_step_batch(t, ip, tp, B, T, &r);
        });
        return r;
    }

    float compute_gradients(const py::object& inputs_obj, const py::object& targets_obj) {
        pg_trainer* t = get();
        auto keep = p_;
        TokenArray inputs, targets;
        int32_t B, T;
        batch_arrays(inputs_obj, targets_obj, inputs, targets, B, T);
        float loss = 0.0f;
        const int32_t *ip = inputs.data(), *tp = targets.data();
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_trainer_compute_gradients(t, ip, tp, B, T, &loss);
        });
        return loss;
    }

    // Runs `steps` optimizer steps on the trainer's data. After each step (GIL held) checks
    // for Ctrl-C and calls callback(result); a truthy return value stops early. Returns the
    // results of the steps taken.
    std::vector<pg_step_result> train(int64_t steps, const py::object& callback) {
        if (steps < 0) raise_invalid("steps must be >= 0");
        std::vector<pg_step_result> results;
        for (int64_t i = 0; i < steps; ++i) {
            // before the step too: a signal raised during the callback may have been handled
            // by another thread only after the callback returned
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            results.push_back(step());
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (!callback.is_none() && py::bool_(callback(results.back()))) break;
        }
        return results;
    }

    py::array grad(const std::string& name) const {
        const Model m(ptr()->model);
        return grad_view(m.index_of(name));
    }
    py::dict gradients() const {
        py::dict d;
        const Model m(ptr()->model);
        for (int i = 0, n = m.num_tensors(); i < n; ++i) d[py::str(m.info(i).name)] = grad_view(i);
        return d;
    }

    int64_t step_count() const {
        int64_t s = 0;
        check(pg_trainer_step_count(get(), &s));
        return s;
    }
    float lr_at(int64_t step) const {
        float lr = 0.0f;
        check(pg_trainer_lr_at(get(), step, &lr));
        return lr;
    }

    void save(const py::object& path, int compression_level) const {
        std::string p = to_path(path);
        pg_trainer* t = get();
        auto keep = p_;
        pg_save_options o;
        pg_save_options_default(&o);
        o.compression_level = compression_level;
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_trainer_save(t, p.c_str(), &o);
        });
    }

private:
    py::array grad_view(int32_t index) const {
        const Model m(ptr()->model);
        pg_tensor_info i = m.info(index);
        const float* data = nullptr;
        check(pg_trainer_grad(get(), index, &data));
        return float_view(p_, data, Model::shape_of(i), false);
    }
    static void batch_arrays(const py::object& inputs_obj, const py::object& targets_obj,
                             TokenArray& inputs, TokenArray& targets, int32_t& B, int32_t& T) {
        inputs = as_tokens(inputs_obj, "inputs", 2);
        targets = as_tokens(targets_obj, "targets", 2);
        if (targets.shape(0) != inputs.shape(0) || targets.shape(1) != inputs.shape(1))
            raise_invalid("targets shape " + std::string(py::str(targets.attr("shape"))) +
                          " != inputs shape " + std::string(py::str(inputs.attr("shape"))));
        B = int32_t(inputs.shape(0));
        T = int32_t(inputs.shape(1));
    }

    py::object model_obj_;  // the Python Model (kept alive with the trainer)
    TrainerPtr p_;
};

// Context-manager helpers shared by the handle classes.
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

}  // namespace

PYBIND11_MODULE(_phonegpt, m) {
    m.doc() = "libphonegpt: train, fine-tune, evaluate and sample small GPT models on a CPU.";

    // Exceptions -------------------------------------------------------------------------
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

    // Versions and small helpers --------------------------------------------------------------
    m.attr("__version__") = pg_version_string();
    m.attr("HEADER_VERSION") = PG_VERSION_NUMBER;
    m.def("version", [] { return std::string(pg_version_string()); }, "The loaded library's version, e.g. '0.1.0'.");
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

    // Tokenizer ------------------------------------------------------------------------------
    py::class_<Tokenizer> tok(m, "Tokenizer",
        "A tokenizer: text <-> int32 token ids. Build a character tokenizer with\n"
        "Tokenizer.char(text) (vocabulary = sorted set of the text's code points).");
    tok.def_static("char", &Tokenizer::from_text, py::arg("text"),
                   "A character tokenizer whose vocabulary is the sorted set of code points of text.")
        .def_static("from_bytes", &Tokenizer::from_bytes, py::arg("data"), "Restores a tokenizer from to_bytes().")
        .def_property_readonly("kind", &Tokenizer::kind, "'char' (byte-level BPE later).")
        .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
        .def("__len__", &Tokenizer::vocab_size)
        .def("encode", &Tokenizer::encode, py::arg("text"),
             "Encodes text to an int32 array; an unknown character raises TokenizeError.")
        .def("decode", &Tokenizer::decode, py::arg("ids"), "Decodes ids to str.")
        .def("decode_bytes", &Tokenizer::decode_bytes, py::arg("ids"), "Decodes ids to UTF-8 bytes.")
        .def("to_bytes", &Tokenizer::to_bytes, "Serialises the tokenizer (kind, version, vocabulary).")
        .def("__repr__", [](const Tokenizer& t) {
            if (t.closed()) return std::string("<phonegpt.Tokenizer closed>");
            return "<phonegpt.Tokenizer kind=" + t.kind() + " vocab_size=" + std::to_string(t.vocab_size()) + ">";
        });
    add_lifetime<Tokenizer>(tok, "tokenizer");

    // Configurations ---------------------------------------------------------------------------
    py::class_<pg_model_config> mc(m, "ModelConfig",
        "Model geometry. ModelConfig(**fields) starts from the PhoneGPT preset;\n"
        "ModelConfig.preset('tiny') gives a named preset.");
    mc.def(py::init([](py::kwargs kw) {
          py::object self = py::cast(default_model_config());
          apply_kwargs(self, kw, "ModelConfig");
          return self.cast<pg_model_config>();
      }))
        .def_static("preset", [](const std::string& name) {
            pg_model_config c = default_model_config();
            check(pg_model_config_preset(name.c_str(), &c));
            return c;
        }, py::arg("name"), "'phonegpt' or 'tiny'; other names raise InvalidArgument.")
        .def_readwrite("n_layer", &pg_model_config::n_layer)
        .def_readwrite("n_head", &pg_model_config::n_head)
        .def_readwrite("n_embd", &pg_model_config::n_embd)
        .def_readwrite("n_ctx", &pg_model_config::n_ctx)
        .def_readwrite("vocab_size", &pg_model_config::vocab_size)
        .def_readwrite("padded_vocab_size", &pg_model_config::padded_vocab_size)
        .def_readwrite("layernorm_eps", &pg_model_config::layernorm_eps)
        .def("validate", [](const pg_model_config& c) { check(pg_model_config_validate(&c)); },
             "Raises InvalidArgument naming the first bad field.")
        .def_property_readonly("num_params", [](const pg_model_config& c) {
            check(pg_model_config_validate(&c));
            return pg_model_config_num_params(&c);
        })
        .def("__eq__", [](const pg_model_config& a, const pg_model_config& b) {
            return a.n_layer == b.n_layer && a.n_head == b.n_head && a.n_embd == b.n_embd &&
                   a.n_ctx == b.n_ctx && a.vocab_size == b.vocab_size &&
                   a.padded_vocab_size == b.padded_vocab_size && a.layernorm_eps == b.layernorm_eps;
        })
        .def("__repr__", [](const pg_model_config& c) {
            return "ModelConfig(n_layer=" + std::to_string(c.n_layer) + ", n_head=" + std::to_string(c.n_head) +
                   ", n_embd=" + std::to_string(c.n_embd) + ", n_ctx=" + std::to_string(c.n_ctx) +
                   ", vocab_size=" + std::to_string(c.vocab_size) +
                   ", padded_vocab_size=" + std::to_string(c.padded_vocab_size) +
                   ", layernorm_eps=" + std::string(py::str(py::float_(c.layernorm_eps))) + ")";
        });

    py::class_<pg_train_config> tc(m, "TrainConfig",
        "Training configuration; TrainConfig(**fields) starts from the library defaults\n"
        "(batch 32, AdamW 0.9/0.95/1e-8, lr 1e-3 cosine to 1e-4, 100 warm-up steps, ...).");
    tc.def(py::init([](py::kwargs kw) {
          py::object self = py::cast(default_train_config());
          apply_kwargs(self, kw, "TrainConfig");
          return self.cast<pg_train_config>();
      }))
        .def_readwrite("batch_size", &pg_train_config::batch_size)
        .def_readwrite("seq_len", &pg_train_config::seq_len)
        .def_readwrite("grad_accum_steps", &pg_train_config::grad_accum_steps)
        .def_property("schedule", [](const pg_train_config& c) { return std::string(schedule_name(c.schedule)); },
                      [](pg_train_config& c, const std::string& s) { c.schedule = schedule_from_name(s); },
                      "'constant', 'cosine' or 'linear'.")
        .def_readwrite("lr_max", &pg_train_config::lr_max)
        .def_readwrite("lr_min", &pg_train_config::lr_min)
        .def_readwrite("warmup_steps", &pg_train_config::warmup_steps)
        .def_readwrite("total_steps", &pg_train_config::total_steps)
        .def_readwrite("beta1", &pg_train_config::beta1)
        .def_readwrite("beta2", &pg_train_config::beta2)
        .def_readwrite("eps", &pg_train_config::eps)
        .def_readwrite("weight_decay", &pg_train_config::weight_decay)
        .def_property("decay_embeddings", [](const pg_train_config& c) { return c.decay_embeddings != 0; },
                      [](pg_train_config& c, bool v) { c.decay_embeddings = v ? 1 : 0; })
        .def_readwrite("grad_clip", &pg_train_config::grad_clip)
        .def_readwrite("dropout", &pg_train_config::dropout)
        .def_readwrite("seed", &pg_train_config::seed)
        .def_readwrite("n_threads", &pg_train_config::n_threads)
        .def("__repr__", [](const pg_train_config& c) {
            return "TrainConfig(batch_size=" + std::to_string(c.batch_size) + ", seq_len=" + std::to_string(c.seq_len) +
                   ", grad_accum_steps=" + std::to_string(c.grad_accum_steps) + ", schedule='" + schedule_name(c.schedule) +
                   "', lr_max=" + std::string(py::str(py::float_(c.lr_max))) +
                   ", lr_min=" + std::string(py::str(py::float_(c.lr_min))) +
                   ", warmup_steps=" + std::to_string(c.warmup_steps) + ", total_steps=" + std::to_string(c.total_steps) +
                   ", seed=" + std::to_string(c.seed) + ", n_threads=" + std::to_string(c.n_threads) + ", ...)";
        });

    // Results -----------------------------------------------------------------------------
    py::class_<pg_step_result>(m, "StepResult", "What one optimizer step did.")
        .def_readonly("step", &pg_step_result::step, "Steps completed after this one.")
        .def_readonly("loss", &pg_step_result::loss)
        .def_readonly("lr", &pg_step_result::lr)
        .def_readonly("grad_norm", &pg_step_result::grad_norm, "Global gradient norm before clipping.")
        .def_readonly("tokens", &pg_step_result::tokens)
        .def("__repr__", [](const pg_step_result& r) {
            return "StepResult(step=" + std::to_string(r.step) + ", loss=" + std::string(py::str(py::float_(r.loss))) +
                   ", lr=" + std::string(py::str(py::float_(r.lr))) +
                   ", grad_norm=" + std::string(py::str(py::float_(r.grad_norm))) +
                   ", tokens=" + std::to_string(r.tokens) + ")";
        });
    py::class_<pg_eval_result>(m, "EvalResult", "A whole-split (or sampled) evaluation.")
        .def_readonly("mean_loss", &pg_eval_result::mean_loss, "Mean cross-entropy, natural log.")
        .def_readonly("bits_per_token", &pg_eval_result::bits_per_token)
        .def_readonly("n_scored", &pg_eval_result::n_scored)
        .def_readonly("n_windows", &pg_eval_result::n_windows)
        .def("__repr__", [](const pg_eval_result& r) {
            return "EvalResult(mean_loss=" + std::string(py::str(py::float_(r.mean_loss))) +
                   ", bits_per_token=" + std::string(py::str(py::float_(r.bits_per_token))) +
                   ", n_scored=" + std::to_string(r.n_scored) + ", n_windows=" + std::to_string(r.n_windows) + ")";
        });

    // Model ------------------------------------------------------------------------------------
    py::class_<Model> model(m, "Model",
        "A GPT model: configuration, weights and (optionally) its tokenizer.\n"
        "Model(config_or_preset='phonegpt', seed=0) creates one with GPT-2 initialisation;\n"
        "Model.load(path) opens a native checkpoint.");
    model.def(py::init([](const py::object& config, uint64_t seed) { return Model::create(config, seed); }),
              py::arg("config") = "phonegpt", py::arg("seed") = 0)
        .def_static("load", &Model::load, py::arg("path"), "Loads and validates a native checkpoint.")
        .def_static("import_from", &Model::import_from, py::arg("path"), py::arg("format"),
                    "Imports an 'llmc' model file or a 'safetensors' file (config.json beside it).")
        .def("save", &Model::save, py::arg("path"), py::arg("compression_level") = 0,
             "Saves atomically (0 = raw, 1..19 = zstd level).")
        .def("export", &Model::export_to, py::arg("path"), py::arg("format"),
             "Exports the weights as 'llmc' or 'safetensors' (+ config.json).")
        .def_property_readonly("config", &Model::config)
        .def_property_readonly("num_params", &Model::num_params)
        .def_property("tokenizer", &Model::tokenizer, &Model::set_tokenizer,
                      "A copy of the model's tokenizer (None if it has none); assigning replaces it.")
        .def_property_readonly("tensor_names", &Model::tensor_names)
        .def("parameter", &Model::parameter, py::arg("name"), py::arg("writable") = true,
             "A numpy view (no copy) of one tensor; writes change the model.")
        .def("parameters", &Model::parameters, py::arg("writable") = true,
             "{name: numpy view} of every tensor, in the library's order.")
        .def("flat_parameters", &Model::flat_parameters,
             "A read-only view of the whole parameter allocation (llm.c's order).")
        .def("forward", &Model::forward, py::arg("tokens"), py::arg("targets") = py::none(),
             py::arg("n_threads") = 0,
             "tokens, targets: [B, T] int arrays. Returns (logits [B, T, vocab_size], mean loss or None).")
        .def("evaluate", &Model::evaluate, py::arg("tokens"), py::arg("window") = 0, py::arg("stride") = 0,
             py::arg("batch_size") = 16, py::arg("n_threads") = 0, py::arg("progress") = py::none(),
             "Whole-split evaluation of a 1-D token array (every prediction scored once).\n"
             "progress(done, total) is called as positions are scored; a truthy return cancels.")
        .def("evaluate_sampled", &Model::evaluate_sampled, py::arg("tokens"), py::arg("n_batches"),
             py::arg("batch_size"), py::arg("seed") = 1337, py::arg("n_threads") = 0,
             "nanoGPT-style estimate over n_batches random batches (not the whole-split score).")
        .def("_generate", &Model::generate, py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"),
             py::arg("top_k"), py::arg("top_p"), py::arg("seed"), py::arg("n_threads"), py::arg("slide_keep"), py::arg("stop"),
             py::arg("on_token"))
        .def("__repr__", [](const Model& self) {
            if (self.closed()) return std::string("<phonegpt.Model closed>");
            return "<phonegpt.Model " + std::string(py::str(py::cast(self.config()))) + ">";
        });
    add_lifetime<Model>(model, "model");

    // Trainer --------------------------------------------------------------------------------
    py::class_<Trainer> trainer(m, "Trainer",
        "Training state for a Model (gradients, AdamW moments, schedule, sampler).\n"
        "Trainer(model, config=None, **fields): fields override the config's.");
    trainer.def(py::init(&Trainer::create), py::arg("model"), py::arg("config") = py::none())
        .def_static("resume", &Trainer::resume, py::arg("path"),
                    "A trainer (and its model, .model) from a checkpoint written by save().")
        .def_property_readonly("model", &Trainer::model)
        .def_property_readonly("config", &Trainer::config)
        .def("set_data", &Trainer::set_data, py::arg("tokens"), "Training tokens (copied).")
        .def("step", &Trainer::step, "One optimizer step on batches drawn from the data.")
        .def("step_batch", &Trainer::step_batch, py::arg("inputs"), py::arg("targets"),
             "One optimizer step on a given [B, T] batch.")
        .def("compute_gradients", &Trainer::compute_gradients, py::arg("inputs"), py::arg("targets"),
             "Forward and backward only; returns the mean loss, gradients readable with grad().")
        .def("train", &Trainer::train, py::arg("steps"), py::arg("callback") = py::none(),
             "Runs steps optimizer steps; callback(StepResult) after each (truthy return stops).\n"
             "Ctrl-C stops between steps with KeyboardInterrupt. Returns the StepResults.")
        .def("grad", &Trainer::grad, py::arg("name"),
             "Read-only view of a tensor's gradient (valid until the next trainer call).")
        .def("gradients", &Trainer::gradients, "{name: read-only gradient view}.")
        .def_property_readonly("step_count", &Trainer::step_count)
        .def("lr_at", &Trainer::lr_at, py::arg("step"), "The schedule's learning rate at step.")
        .def("save", &Trainer::save, py::arg("path"), py::arg("compression_level") = 0,
             "Saves model and training state so that resume() continues bit for bit.");
    add_lifetime<Trainer>(trainer, "trainer");
}
