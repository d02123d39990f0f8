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
        return k == PG_TOKENIZER_CHAR ? "char" : k == PG_TOKENIZER_BPE ? "bpe" : "kind" + std::to_string(int(k));
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

    // ---- byte-level BPE (owner: bpe) ------------------------------------------------------
    static Tokenizer from_tiktoken(const py::bytes& ranks, const std::string& encoding) {
        const std::string r = ranks;
        pg_tokenizer* t = nullptr;
        call_nogil([&] { return pg_tokenizer_create_tiktoken(r.data(), r.size(), encoding.c_str(), &t); });
        return Tokenizer(own_tokenizer(t));
    }
    static Tokenizer from_gpt2(const py::bytes& encoder_json, const py::bytes& vocab_bpe) {
        const std::string e = encoder_json, v = vocab_bpe;
        pg_tokenizer* t = nullptr;
        call_nogil([&] { return pg_tokenizer_create_gpt2(e.data(), e.size(), v.data(), v.size(), &t); });
        return Tokenizer(own_tokenizer(t));
    }
    static Tokenizer from_hf(const std::string& tokenizer_json) {
        pg_tokenizer* t = nullptr;
        call_nogil([&] { return pg_tokenizer_create_hf(tokenizer_json.data(), tokenizer_json.size(), &t); });
        return Tokenizer(own_tokenizer(t));
    }
    // text: str or bytes; allowed_special: "all", a list of special-token texts, or None (the
    // options `o` alone decide).
    py::array_t<int32_t> encode_special(const std::string& text, const py::object& allowed, pg_encode_options o) const {
        pg_tokenizer* t = get();
        auto keep = p_;
        std::vector<std::string> names;
        if (allowed.is_none()) {
        } else if (py::isinstance<py::str>(allowed)) {
            if (allowed.cast<std::string>() != "all") throw py::value_error("allowed_special is \"all\" or a list of texts");
            o.allow_all_special = 1;
        } else {
            for (const auto& item : allowed) names.push_back(item.cast<std::string>());
        }
        std::vector<const char*> ptrs;
        for (const auto& n : names) ptrs.push_back(n.c_str());
        o.allowed_special = ptrs.data();
        o.n_allowed_special = int32_t(ptrs.size());
        std::vector<int32_t> ids(text.size() + 1);
        size_t n = 0;
        call_nogil([&] { return pg_tokenizer_encode_with(t, text.data(), text.size(), &o, ids.data(), ids.size(), &n); });
        py::array_t<int32_t> out{py::ssize_t(n)};
        if (n) std::memcpy(out.mutable_data(), ids.data(), n * sizeof(int32_t));
        return out;
    }
    // file: "tiktoken", "gpt2_encoder", "gpt2_merges" or "hf_json".
    py::bytes write_file(const std::string& file) const {
        pg_tokenizer_file f;
        if (file == "tiktoken") f = PG_TOKENIZER_FILE_TIKTOKEN;
        else if (file == "gpt2_encoder") f = PG_TOKENIZER_FILE_GPT2_ENCODER;
        else if (file == "gpt2_merges") f = PG_TOKENIZER_FILE_GPT2_MERGES;
        else if (file == "hf_json") f = PG_TOKENIZER_FILE_HF_JSON;
        else throw py::value_error("file is one of tiktoken, gpt2_encoder, gpt2_merges, hf_json");
        pg_tokenizer* t = get();
        size_t len = 0;
        const pg_status s = pg_tokenizer_write_file(t, f, nullptr, 0, &len);
        if (s != PG_ERR_BUFFER_TOO_SMALL) check(s);
        std::string buf(len, '\0');
        check(pg_tokenizer_write_file(t, f, buf.data(), buf.size(), &len));
        return py::bytes(buf.data(), len);
    }
    // ---- end of byte-level BPE -------------------------------------------------------------

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

pg_model_config config_from(const py::object& config_or_preset) {
    if (py::isinstance<py::str>(config_or_preset)) {
        pg_model_config c = defaults<pg_model_config>();
        check(pg_model_config_preset(std::string(py::str(config_or_preset)).c_str(), &c));
        return c;
    }
    return config_or_preset.cast<pg_model_config>();
}

// Runs a forward call (GIL released) on [B, T] tokens and optional targets; returns
// (logits [B, T, vocab_size], the mean loss or None).
template <class Call>
py::tuple run_forward(const py::object& tokens_obj, const py::object& targets_obj, int vocab_size, Call&& call) {
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
    py::array_t<float> logits({py::ssize_t(B), py::ssize_t(T), py::ssize_t(vocab_size)});
    float* lp = logits.mutable_data();
    float loss = 0.0f;
    const int32_t* tp = tokens.data();
    call_nogil([&] { return call(tp, B, T, tg, lp, tg ? &loss : nullptr); });
    return py::make_tuple(logits, tg ? py::object(py::float_(loss)) : py::object(py::none()));
}

// Runs an evaluation call (GIL released) with the Python progress callable wired into the
// options; a callback's exception or Ctrl-C is raised before the CANCELLED status it caused.
template <class Call>
pg_eval_result run_evaluation(pg_eval_config c, const py::object& progress, Call&& call) {
    Callback cb{progress, {}};
    c.progress = [](void* user, int64_t done, int64_t total) -> int {
        return static_cast<Callback*>(user)->invoke(done, total) ? 1 : 0;
    };
    c.progress_user = &cb;
    pg_eval_result r = defaults<pg_eval_result>();
    pg_status s;
    std::string message;
    {
        py::gil_scoped_release nogil;
        s = call(&c, &r);
        if (s != PG_OK) message = pg_last_error();
    }
    cb.error.raise_if_set();
    if (s != PG_OK) raise_status(s, message);
    return r;
}

// Tokenizer.encode_special (owner: bpe): allowed_special None takes the options as they are,
// except that with neither config nor fields it means "all" (the call's default).
py::array_t<int32_t> tokenizer_encode_special(const Tokenizer& tok, const std::string& text, const py::object& allowed,
                                              const py::object& config, const py::kwargs& fields) {
    const bool options_given = !config.is_none() || fields.size() > 0;
    const py::object which = allowed.is_none() && !options_given ? py::object(py::str("all")) : allowed;
    return tok.encode_special(text, which, options_from<pg_encode_options>(config, fields));
}

// Tokenizer.train (owner: bpe): texts is one str/bytes or a sequence of them; the GIL is released
// while training, progress(done, total) (tokens so far, vocab_size) cancels with a truthy return.
Tokenizer train_bpe_tokenizer(const py::object& texts_obj, int32_t vocab_size, const py::object& config,
                              const std::vector<std::string>& special_tokens, const py::object& progress,
                              const py::kwargs& fields) {
    pg_bpe_train_options o = options_from<pg_bpe_train_options>(config, fields);
    std::vector<std::string> texts;
    if (py::isinstance<py::str>(texts_obj) || py::isinstance<py::bytes>(texts_obj)) {
        texts.push_back(texts_obj.cast<std::string>());
    } else {
        for (const auto& item : texts_obj) texts.push_back(item.cast<std::string>());
    }
    std::vector<const char*> ptrs, specials;
    std::vector<size_t> lens;
    for (const auto& t : texts) ptrs.push_back(t.data()), lens.push_back(t.size());
    for (const auto& s : special_tokens) specials.push_back(s.c_str());
    o.special_tokens = specials.empty() ? nullptr : specials.data();
    o.n_special_tokens = int32_t(specials.size());
    Callback cb{progress, {}};
    o.progress = [](void* user, int64_t done, int64_t total) -> int {
        return static_cast<Callback*>(user)->invoke(done, total) ? 1 : 0;
    };
    o.progress_user = &cb;
    pg_tokenizer* t = nullptr;
    pg_status s;
    std::string message;
    {
        py::gil_scoped_release nogil;
        s = pg_bpe_train(ptrs.data(), lens.data(), ptrs.size(), vocab_size, &o, &t);
        if (s != PG_OK) message = pg_last_error();
    }
    cb.error.raise_if_set();
    if (s != PG_OK) raise_status(s, message);
    return Tokenizer(own_tokenizer(t));
}

// Runs a generation call (GIL released) with the Python on_token callable and the stop strings
// wired into the options; returns the generated ids.
template <class Call>
py::array_t<int32_t> run_generation(pg_sample_config c, const std::vector<std::string>& stop,
                                    const py::object& on_token, Call&& call) {
    if (c.max_tokens < 0) raise_invalid("max_tokens must be >= 0");
    Callback cb{on_token, {}};
    std::vector<const char*> stops;
    for (const auto& s : stop) stops.push_back(s.c_str());
    c.on_token = [](void* user, int32_t token) -> int {
        return static_cast<Callback*>(user)->invoke(token) ? 1 : 0;
    };
    c.on_token_user = &cb;
    c.stop_strings = stops.empty() ? nullptr : stops.data();
    c.n_stop_strings = int32_t(stops.size());
    std::vector<int32_t> out(size_t(c.max_tokens) + 1);
    size_t n_out = 0;
    pg_status s;
    std::string message;
    {
        py::gil_scoped_release nogil;
        s = call(&c, out.data(), out.size(), &n_out);
        if (s != PG_OK) message = pg_last_error();
    }
    cb.error.raise_if_set();
    if (s != PG_OK) raise_status(s, message);
    py::array_t<int32_t> result{py::ssize_t(n_out)};
    if (n_out) std::memcpy(result.mutable_data(), out.data(), n_out * sizeof(int32_t));
    return result;
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
    static Model load(const py::object& path, const py::object& options, const py::kwargs& fields) {
        std::string p = to_path(path);
        const pg_load_options o = options_from<pg_load_options>(options, fields);
        pg_model* m = nullptr;
        call_nogil([&] { return pg_model_load_with(p.c_str(), &o, &m); });
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
        pg_model_config c = defaults<pg_model_config>();
        check(pg_model_get_config(get(), &c));
        return c;
    }
    int64_t num_params() const {
        int64_t n = 0;
        check(pg_model_num_params(get(), &n));
        return n;
    }
    bool mapped() const {
        int32_t m = 0;
        check(pg_model_weights_mapped(get(), &m));
        return m == 1;
    }
    // {"kind": "unknown" | "initialised" | "trained", "init_seed": int or None, "steps", "tokens"}.
    py::dict provenance() const {
        pg_provenance_kind kind = PG_PROVENANCE_UNKNOWN;
        int32_t has_seed = 0;
        uint64_t seed = 0;
        int64_t steps = 0, tokens = 0;
        check(pg_model_provenance(get(), &kind, &has_seed, &seed, &steps, &tokens));
        static const char* names[] = {"unknown", "initialised", "trained"};
        py::dict d;
        d["kind"] = names[int(kind) >= 0 && int(kind) <= 2 ? int(kind) : 0];
        d["init_seed"] = has_seed ? py::object(py::int_(seed)) : py::object(py::none());
        d["steps"] = steps;
        d["tokens"] = tokens;
        return d;
    }
    void allow_untrained_base(bool allow) { check(pg_model_allow_untrained_base(get(), allow ? 1 : 0)); }

    py::object tokenizer() const {
        pg_tokenizer* t = nullptr;
        check(pg_model_get_tokenizer(get(), &t));
        if (!t) return py::none();
        return py::cast(Tokenizer::copy_of(t));
    }
    void set_tokenizer(const Tokenizer& tok) { check(pg_model_set_tokenizer(get(), tok.get())); }

    void save(const py::object& path, const py::object& options, const py::kwargs& fields) const {
        std::string p = to_path(path);
        pg_model* m = get();
        auto keep = p_;
        const pg_save_options o = options_from<pg_save_options>(options, fields);
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
        pg_tensor_info i = defaults<pg_tensor_info>();
        check(pg_model_tensor_info(get(), index, &i));
        return i;
    }
    // For Python: the name and data pointers point into the model, which the object may
    // outlive, so they are dropped (the name is the argument; Model.parameter gives the data).
    pg_tensor_info tensor_info(const std::string& name) const {
        pg_tensor_info i = info(index_of(name));
        i.name = nullptr;
        i.data = nullptr;
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
        return run_forward(tokens_obj, targets_obj, config().vocab_size,
                           [&](const int32_t* tokens, int32_t B, int32_t T, const int32_t* targets, float* logits,
                               float* loss) { return pg_model_forward(m, tokens, B, T, targets, logits, loss, n_threads); });
    }

    // Evaluation ------------------------------------------------------------------------

    pg_eval_result evaluate(const py::object& tokens_obj, const py::object& config, const py::object& progress,
                            const py::kwargs& fields) const {
        pg_model* m = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        return run_evaluation(options_from<pg_eval_config>(config, fields), progress,
                              [&](const pg_eval_config* c, pg_eval_result* r) {
                                  return pg_evaluate(m, tokens.data(), size_t(tokens.size()), c, r);
                              });
    }

    pg_eval_result evaluate_sampled(const py::object& tokens_obj, int n_batches, int batch_size,
                                    uint64_t seed, int n_threads) const {
        pg_model* m = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        pg_eval_result r = defaults<pg_eval_result>();
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        call_nogil([&] { return pg_evaluate_sampled(m, tp, n, n_batches, batch_size, seed, n_threads, &r); });
        return r;
    }

    // Generation ------------------------------------------------------------------------

    // The options come whole from Python (phonegpt/__init__.py builds them), the callable and
    // the stop strings beside them.
    py::array_t<int32_t> generate(const py::object& prompt_obj, const pg_sample_config& options,
                                  const std::vector<std::string>& stop, const py::object& on_token) const {
        pg_model* m = get();
        auto keep = p_;
        TokenArray prompt = as_tokens(prompt_obj, "prompt", 1);
        return run_generation(options, stop, on_token,
                              [&](const pg_sample_config* c, int32_t* out, size_t capacity, size_t* n_out) {
                                  return pg_generate(m, prompt.data(), size_t(prompt.size()), c, out, capacity, n_out);
                              });
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
// Session.
// ---------------------------------------------------------------------------------------

// A session borrows its model (the reference keeps the model alive) and is
// one-thread-at-a-time in C; `busy` serialises the binding's calls on it, as for a trainer.
struct SessionHandle {
    ModelPtr model;
    pg_session* session = nullptr;
    std::mutex busy;
    ~SessionHandle() { pg_session_free(session); }
};
using SessionPtr = std::shared_ptr<SessionHandle>;

class Session {
public:
    Session(py::object model_obj, SessionPtr p) : model_obj_(std::move(model_obj)), p_(std::move(p)) {}

    static Session create(py::object model_obj, const py::object& config, const py::kwargs& fields) {
        Model& model = model_obj.cast<Model&>();
        const pg_session_config c = options_from<pg_session_config>(config, fields);
        auto h = std::make_shared<SessionHandle>();
        h->model = model.ptr();
        pg_model* m = h->model.get();
        call_nogil([&] { return pg_session_create(m, &c, &h->session); });
        return Session(std::move(model_obj), std::move(h));
    }

    const SessionPtr& ptr() const {
        if (!p_) raise_state("the Session is closed");
        return p_;
    }
    pg_session* get() const { return ptr()->session; }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }
    py::object model() const { return model_obj_; }

    int n_threads() const {
        int32_t n = 0;
        check(pg_session_n_threads(get(), &n));
        return n;
    }
    int64_t position() const {
        int64_t n = 0;
        check(pg_session_position(get(), &n));
        return n;
    }

    py::tuple forward(const py::object& tokens_obj, const py::object& targets_obj) {
        pg_session* s = get();
        auto keep = p_;
        return run_forward(tokens_obj, targets_obj, Model(keep->model).config().vocab_size,
                           [&](const int32_t* tokens, int32_t B, int32_t T, const int32_t* targets, float* logits,
                               float* loss) {
                               std::lock_guard<std::mutex> lock(keep->busy);
                               return pg_session_forward(s, tokens, B, T, targets, logits, loss);
                           });
    }

    pg_eval_result evaluate(const py::object& tokens_obj, const py::object& config, const py::object& progress,
                            const py::kwargs& fields) {
        pg_session* s = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        return run_evaluation(options_from<pg_eval_config>(config, fields), progress,
                              [&](const pg_eval_config* c, pg_eval_result* r) {
                                  std::lock_guard<std::mutex> lock(keep->busy);
                                  return pg_session_evaluate(s, tokens.data(), size_t(tokens.size()), c, r);
                              });
    }

    pg_eval_result evaluate_sampled(const py::object& tokens_obj, const py::object& config,
                                    const py::kwargs& fields) {
        pg_session* s = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        const pg_eval_sampled_config c = options_from<pg_eval_sampled_config>(config, fields);
        pg_eval_result r = defaults<pg_eval_result>();
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_session_evaluate_sampled(s, tp, n, &c, &r);
        });
        return r;
    }

    void append(const py::object& tokens_obj) {
        pg_session* s = get();
        auto keep = p_;
        TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_session_append(s, tp, n);
        });
    }

    py::array_t<float> logits() {
        pg_session* s = get();
        auto keep = p_;
        const int V = Model(keep->model).config().vocab_size;
        py::array_t<float> out{py::ssize_t(V)};
        float* p = out.mutable_data();
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_session_logits(s, p, size_t(V));
        });
        return out;
    }

    void reset() {
        pg_session* s = get();
        auto keep = p_;
        std::lock_guard<std::mutex> lock(keep->busy);
        check(pg_session_reset(s));
    }

    // The options come whole from Python (phonegpt/__init__.py builds them).
    py::array_t<int32_t> generate(const pg_sample_config& options, const std::vector<std::string>& stop,
                                  const py::object& on_token) {
        pg_session* s = get();
        auto keep = p_;
        return run_generation(options, stop, on_token,
                              [&](const pg_sample_config* c, int32_t* out, size_t capacity, size_t* n_out) {
                                  std::lock_guard<std::mutex> lock(keep->busy);
                                  return pg_session_generate(s, c, out, capacity, n_out);
                              });
    }

private:
    py::object model_obj_;  // the Python Model (kept alive with the session)
    SessionPtr p_;
};

// ---------------------------------------------------------------------------------------
// Trainer.
// ---------------------------------------------------------------------------------------

class Trainer {
public:
    Trainer(py::object model_obj, TrainerPtr p) : model_obj_(std::move(model_obj)), p_(std::move(p)) {}

    static Trainer create(py::object model_obj, const py::object& config, const py::kwargs& kw) {
        Model& model = model_obj.cast<Model&>();
        pg_train_config c = options_from<pg_train_config>(config, kw);
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
        pg_train_config c = defaults<pg_train_config>();
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
        pg_step_result r = defaults<pg_step_result>();
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
        pg_step_result r = defaults<pg_step_result>();
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

    void save(const py::object& path, const py::object& options, const py::kwargs& fields) const {
        std::string p = to_path(path);
        pg_trainer* t = get();
        auto keep = p_;
        const pg_save_options o = options_from<pg_save_options>(options, fields);
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

// What the other binding files borrow from this one (binding_hooks.hpp).
pg_py::Hooks binding_hooks() {
    pg_py::Hooks h;
    h.raise_status = raise_status;
    h.check = check;
    h.call_nogil = [](const std::function<pg_status()>& call) { call_nogil(call); };
    h.as_tokens = as_tokens;
    h.model_of = [](const py::handle& obj) -> ModelPtr {
        if (!py::isinstance<Model>(obj)) throw py::type_error("expected a phonegpt.Model");
        return obj.cast<const Model&>().ptr();
    };
    h.wrap_model = [](pg_model* m) { return py::cast(Model(own_model(m))); };
    h.to_path = to_path;
    h.float_view = float_view;
    return h;
}

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

    // Tokenizer ------------------------------------------------------------------------------
    py::class_<Tokenizer> tok(m, "Tokenizer",
        "A tokenizer: text <-> int32 token ids. Build a character tokenizer with\n"
        "Tokenizer.char(text) (vocabulary = sorted set of the text's code points).");
    tok.def_static("char", &Tokenizer::from_text, py::arg("text"),
                   "A character tokenizer whose vocabulary is the sorted set of code points of text.")
        .def_static("from_bytes", &Tokenizer::from_bytes, py::arg("data"), "Restores a tokenizer from to_bytes().")
        .def_property_readonly("kind", &Tokenizer::kind, "'char' or 'bpe'.")
        .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
        .def("__len__", &Tokenizer::vocab_size)
        .def("encode", &Tokenizer::encode, py::arg("text"),
             "Encodes text to an int32 array; an unknown character raises TokenizeError.")
        .def("decode", &Tokenizer::decode, py::arg("ids"), "Decodes ids to str.")
        .def("decode_bytes", &Tokenizer::decode_bytes, py::arg("ids"), "Decodes ids to UTF-8 bytes.")
        .def("to_bytes", &Tokenizer::to_bytes, "Serialises the tokenizer (kind, version, vocabulary).")
        // byte-level BPE (owner: bpe)
        .def_static("from_tiktoken", &Tokenizer::from_tiktoken, py::arg("ranks"), py::arg("encoding"),
                    "Byte-level BPE from a .tiktoken rank file's bytes and an encoding name (gpt2, r50k_base,\n"
                    "p50k_base, cl100k_base, o200k_base) or the regex of one of their pre-tokenizers.")
        .def_static("from_gpt2", &Tokenizer::from_gpt2, py::arg("encoder_json"), py::arg("vocab_bpe"),
                    "Byte-level BPE from GPT-2's encoder.json and vocab.bpe (bytes).")
        .def_static("from_hf", &Tokenizer::from_hf, py::arg("tokenizer_json"),
                    "Byte-level BPE from a Hugging Face tokenizer.json (str or bytes).")
        .def_static("train", &train_bpe_tokenizer, py::arg("texts"), py::arg("vocab_size"),
                    py::arg("config") = py::none(), py::kw_only(), py::arg("special_tokens") = std::vector<std::string>{},
                    py::arg("progress") = py::none(),
                    "Trains a byte-level BPE tokenizer (HF BpeTrainer's merges) on texts (one str/bytes or a\n"
                    "list; each is pre-split on its own) to at most vocab_size tokens: special_tokens get ids\n"
                    "0.., then the 256 bytes, then the merges. config: BpeTrainOptions (or its fields as\n"
                    "keywords: min_frequency, pattern 'gpt2'/'cl100k'/'o200k', n_threads).\n"
                    "progress(done, total) is called after each merge; a truthy return cancels.")
        .def("encode_special", &tokenizer_encode_special, py::arg("text"), py::arg("allowed_special") = py::none(),
             py::arg("config") = py::none(),
             "Encodes text (str or bytes) recognising special tokens: allowed_special \"all\" or a list of\n"
             "their texts; config: EncodeOptions (or allow_all_special=... as a keyword). With neither\n"
             "allowed_special nor options every special token is recognised.")
        .def("write_file", &Tokenizer::write_file, py::arg("file"),
             "A BPE tokenizer as file bytes: \"tiktoken\", \"gpt2_encoder\", \"gpt2_merges\" or \"hf_json\".")
        .def("__repr__", [](const Tokenizer& t) {
            if (t.closed()) return std::string("<phonegpt.Tokenizer closed>");
            return "<phonegpt.Tokenizer kind=" + t.kind() + " vocab_size=" + std::to_string(t.vocab_size()) + ">";
        });
    add_lifetime<Tokenizer>(tok, "tokenizer");

    // Configurations and results: generated from the library's field list -----------------
    bind_structs(m);
    auto mc = py::reinterpret_borrow<py::class_<pg_model_config>>(m.attr("ModelConfig"));
    mc.def_static("preset", [](const std::string& name) {
          pg_model_config c = defaults<pg_model_config>();
          check(pg_model_config_preset(name.c_str(), &c));
          return c;
      }, py::arg("name"), "'phonegpt' or 'tiny'; other names raise InvalidArgument.")
        .def("validate", [](const pg_model_config& c) { check(pg_model_config_validate(&c)); },
             "Raises InvalidArgument naming the first bad field.")
        .def_property_readonly("num_params", [](const pg_model_config& c) {
            check(pg_model_config_validate(&c));
            return pg_model_config_num_params(&c);
        });

    // Model ------------------------------------------------------------------------------------
    py::class_<Model> model(m, "Model",
        "A GPT model: configuration, weights and (optionally) its tokenizer.\n"
        "Model(config_or_preset='phonegpt', seed=0) creates one with GPT-2 initialisation;\n"
        "Model.load(path) opens a native checkpoint.");
    model.def(py::init([](const py::object& config, uint64_t seed) { return Model::create(config, seed); }),
              py::arg("config") = "phonegpt", py::arg("seed") = 0)
        .def_static("load", &Model::load, py::arg("path"), py::arg("options") = py::none(),
                    "Loads and validates a native checkpoint; options: a LoadOptions, keyword arguments change\n"
                    "its fields (map_weights=True maps a raw file saved with the mapping layout read-only).")
        .def_static("import_from", &Model::import_from, py::arg("path"), py::arg("format"),
                    "Imports an 'llmc' model file or a 'safetensors' file (config.json beside it).")
        .def("save", &Model::save, py::arg("path"), py::arg("options") = py::none(),
             "Saves atomically; options: a SaveOptions, keyword arguments change its fields\n"
             "(compression_level: 0 = raw, 1..19 = zstd level).")
        .def("export", &Model::export_to, py::arg("path"), py::arg("format"),
             "Exports the weights as 'llmc' or 'safetensors' (+ config.json).")
        .def_property_readonly("config", &Model::config)
        .def_property_readonly("num_params", &Model::num_params)
        .def_property_readonly("mapped", &Model::mapped, "True when the weights are a read-only file mapping.")
        .def_property_readonly("provenance", &Model::provenance,
                               "Where the weights come from: {'kind': 'unknown' | 'initialised' | 'trained',\n"
                               "'init_seed': int or None, 'steps': int, 'tokens': int} (saved with the model).")
        .def("allow_untrained_base", &Model::allow_untrained_base, py::arg("allow") = true,
             "Lets LoRA train on / validate against this model although it was never trained\n"
             "(refused otherwise: its weights are random). This handle only; never saved.")
        .def_property("tokenizer", &Model::tokenizer, &Model::set_tokenizer,
                      "A copy of the model's tokenizer (None if it has none); assigning replaces it.")
        .def_property_readonly("tensor_names", &Model::tensor_names)
        .def("tensor_info", &Model::tensor_info, py::arg("name"), "The TensorInfo of the tensor called name.")
        .def("parameter", &Model::parameter, py::arg("name"), py::arg("writable") = true,
             "A numpy view (no copy) of one tensor; writes change the model.")
        .def("parameters", &Model::parameters, py::arg("writable") = true,
             "{name: numpy view} of every tensor, in the library's order.")
        .def("flat_parameters", &Model::flat_parameters,
             "A read-only view of the whole parameter allocation (llm.c's order).")
        .def("forward", &Model::forward, py::arg("tokens"), py::arg("targets") = py::none(),
             py::arg("n_threads") = 0,
             "tokens, targets: [B, T] int arrays. Returns (logits [B, T, vocab_size], mean loss or None).")
        .def("evaluate", &Model::evaluate, py::arg("tokens"), py::arg("config") = py::none(), py::kw_only(),
             py::arg("progress") = py::none(),
             "Whole-split evaluation of a 1-D token array (every prediction scored once).\n"
             "config: an EvalConfig; keyword arguments change its fields (window, stride, ...).\n"
             "progress(done, total) is called as positions are scored; a truthy return cancels.")
        .def("evaluate_sampled", &Model::evaluate_sampled, py::arg("tokens"), py::arg("n_batches"),
             py::arg("batch_size"), py::arg("seed") = 1337, py::arg("n_threads") = 0,
             "nanoGPT-style estimate over n_batches random batches (not the whole-split score).")
        .def("_generate", &Model::generate, py::arg("prompt"), py::arg("options"), py::arg("stop"),
             py::arg("on_token"))
        .def("__repr__", [](const Model& self) {
            if (self.closed()) return std::string("<phonegpt.Model closed>");
            return "<phonegpt.Model " + std::string(py::str(py::cast(self.config()))) + ">";
        });
    add_lifetime<Model>(model, "model");

    // Session ---------------------------------------------------------------------------------
    py::class_<Session> session(m, "Session",
        "Inference state over a Model: its own threads (fixed at creation), scratch and one\n"
        "sequence's key/value cache, so generation continues where it stopped.\n"
        "Session(model, config=None, **fields): a SessionConfig; fields change its values.");
    session.def(py::init(&Session::create), py::arg("model"), py::arg("config") = py::none())
        .def_property_readonly("model", &Session::model)
        .def_property_readonly("n_threads", &Session::n_threads)
        .def_property_readonly("position", &Session::position,
                               "Tokens in the sequence (appended and generated) since creation or reset().")
        .def("forward", &Session::forward, py::arg("tokens"), py::arg("targets") = py::none(),
             "Model.forward on the session's threads; the sequence is left alone.")
        .def("evaluate", &Session::evaluate, py::arg("tokens"), py::arg("config") = py::none(), py::kw_only(),
             py::arg("progress") = py::none(),
             "Model.evaluate on the session's threads (EvalConfig.n_threads is not read).")
        .def("evaluate_sampled", &Session::evaluate_sampled, py::arg("tokens"), py::arg("config") = py::none(),
             "The sampled estimate with an EvalSampledConfig; keyword arguments change its fields.")
        .def("append", &Session::append, py::arg("tokens"), "Adds token ids to the sequence.")
        .def("logits", &Session::logits, "The vocab_size logits for the token after the sequence.")
        .def("reset", &Session::reset, "Empties the sequence (needed after the model's weights change).")
        .def("_generate", &Session::generate, py::arg("options"), py::arg("stop"), py::arg("on_token"));
    add_lifetime<Session>(session, "session");

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
        .def("save", &Trainer::save, py::arg("path"), py::arg("options") = py::none(),
             "Saves model and training state so that resume() continues bit for bit.");
    add_lifetime<Trainer>(trainer, "trainer");

    // The coordinator's side and the phone's data filter (bindings/python/coord_bindings.cpp).
    pg_py::bind_coord(m, binding_hooks());
    pg_py::bind_lora(m, binding_hooks());
}
