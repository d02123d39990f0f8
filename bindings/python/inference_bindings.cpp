// Running a model: Model.forward, Model.evaluate / evaluate_sampled and Model._generate, and
// phonegpt.Session (its own threads and one sequence's key/value cache: forward, evaluation,
// append / logits and generation that continues where it stopped, with or without a LoRA
// adapter attached). Both share the runners
// below, which release the GIL and bridge the progress and on_token callbacks to Python.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <phonegpt/phonegpt.h>

#include "binding_handles.hpp"
#include "struct_bindings.hpp"

#include <cstring>
#include <memory>
#include <new>
#include <mutex>
#include <string>
#include <vector>

namespace pg_py {

namespace {

// Runs a forward call (GIL released) on [B, T] tokens and optional targets; returns
// (logits [B, T, vocab_size], the mean loss or None).
template <class Call>
py::tuple run_forward(const TokensArg& tokens_obj, const TokensArg& targets_obj, int vocab_size, Call&& call) {
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

// Runs a generation call (GIL released) with the Python on_token callable and the stop strings
// wired into the options; returns the generated ids. The ids are gathered as the tokens come
// (the C call gets no output buffer): max_tokens is a bound, not an allocation, so 2^31-1 with a
// callback that stops after five tokens costs five ids.
template <class Call>
py::array_t<int32_t> run_generation(pg_sample_config c, const std::vector<std::string>& stop,
                                    const py::object& on_token, Call&& call) {
    if (c.max_tokens < 0) raise_invalid("max_tokens must be >= 0");
    struct Gathered {
        Callback cb;
        std::vector<int32_t> ids;
        bool out_of_memory = false;
    } g{{on_token, {}}, {}, false};
    std::vector<const char*> stops;
    for (const auto& s : stop) stops.push_back(s.c_str());
    c.on_token = [](void* user, int32_t token) -> int {
        auto* g = static_cast<Gathered*>(user);
        try {
            g->ids.push_back(token);
        } catch (const std::bad_alloc&) {
            g->out_of_memory = true;
            return 1;
        }
        return g->cb.invoke(token) ? 1 : 0;
    };
    c.on_token_user = &g;
    c.stop_strings = stops.empty() ? nullptr : stops.data();
    c.n_stop_strings = int32_t(stops.size());
    size_t n_out = 0;
    pg_status s;
    std::string message;
    {
        py::gil_scoped_release nogil;
        s = call(&c, nullptr, 0, &n_out);
        if (s != PG_OK) message = pg_last_error();
    }
    g.cb.error.raise_if_set();
    if (g.out_of_memory)
        raise_status(PG_ERR_OUT_OF_MEMORY, "generate: no memory to hold more than " + std::to_string(g.ids.size()) +
                                               " generated ids");
    if (s != PG_OK) raise_status(s, message);
    py::array_t<int32_t> result{py::ssize_t(g.ids.size())};
    if (!g.ids.empty()) std::memcpy(result.mutable_data(), g.ids.data(), g.ids.size() * sizeof(int32_t));
    return result;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Model: forward, evaluation and generation.
// ---------------------------------------------------------------------------------------

// Forward ---------------------------------------------------------------------------------

py::tuple Model::forward(const TokensArg& tokens_obj, const TokensArg& targets_obj, int n_threads) const {
    pg_model* m = get();
    auto keep = p_;
    return run_forward(tokens_obj, targets_obj, config().vocab_size,
                       [&](const int32_t* tokens, int32_t B, int32_t T, const int32_t* targets, float* logits,
                           float* loss) {
                           return on_call_session(m, n_threads, [&](pg_session* s) {
                               return pg_session_forward(s, tokens, B, T, targets, logits, loss);
                           });
                       });
}

// Evaluation ------------------------------------------------------------------------------

pg_eval_result Model::evaluate(const TokensArg& tokens_obj, const py::object& config, const py::object& progress,
                               const py::kwargs& fields) const {
    pg_model* m = get();
    auto keep = p_;
    TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
    return run_evaluation(options_from<pg_eval_config>(config, fields), progress,
                          [&](const pg_eval_config* c, pg_eval_result* r) {
                              return on_call_session(m, c->n_threads, [&](pg_session* s) {
                                  return pg_session_evaluate(s, tokens.data(), size_t(tokens.size()), c, r);
                              });
                          });
}

pg_eval_result Model::evaluate_sampled(const TokensArg& tokens_obj, int n_batches, int batch_size,
                                       uint64_t seed, int n_threads) const {
    pg_model* m = get();
    auto keep = p_;
    TokenArray tokens = as_tokens(tokens_obj, "tokens", 1);
    pg_eval_result r = defaults<pg_eval_result>();
    const int32_t* tp = tokens.data();
    const size_t n = size_t(tokens.size());
    pg_eval_sampled_config c;
    pg_eval_sampled_config_default(&c);
    c.n_batches = n_batches;
    c.batch_size = batch_size;
    c.seed = seed;
    call_nogil([&] {
        return on_call_session(m, n_threads, [&](pg_session* s) { return pg_session_evaluate_sampled(s, tp, n, &c, &r); });
    });
    return r;
}

// Generation ------------------------------------------------------------------------------

py::array_t<int32_t> Model::generate(const py::object& prompt_obj, const pg_sample_config& options,
                                     const std::vector<std::string>& stop, const py::object& on_token) const {
    pg_model* m = get();
    auto keep = p_;
    TokenArray prompt = as_tokens(prompt_obj, "prompt", 1);
    // A fresh session has nothing to continue: the prompt is the caller's argument.
    if (prompt.size() == 0) raise_invalid("generate: the prompt is empty (at least one token)");
    return run_generation(options, stop, on_token,
                          [&](const pg_sample_config* c, int32_t* out, size_t capacity, size_t* n_out) {
                              return on_call_session(m, c->n_threads, [&](pg_session* s) {
                                  pg_status st = pg_session_append(s, prompt.data(), size_t(prompt.size()));
                                  return st == PG_OK ? pg_session_generate(s, c, out, capacity, n_out) : st;
                              });
                          });
}

namespace {

// ---------------------------------------------------------------------------------------
// Session.
// ---------------------------------------------------------------------------------------

// A session borrows its model and its attached adapter (the references keep them alive until
// the session is freed) and is one-thread-at-a-time in C; `busy` serialises the binding's calls
// on it, as for a trainer.
struct SessionHandle {
    ModelPtr model;
    std::shared_ptr<pg_lora_adapter> adapter;  // the attached one, or null
    pg_session* session = nullptr;
    std::mutex busy;
    ~SessionHandle() { pg_session_free(session); }
};
using SessionPtr = std::shared_ptr<SessionHandle>;

class Session {
public:
    Session(ModelArg model_obj, SessionPtr p) : model_obj_(std::move(model_obj)), p_(std::move(p)) {}

    static Session create(ModelArg model_obj, const py::object& config, const py::kwargs& fields) {
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

    py::tuple forward(const TokensArg& tokens_obj, const TokensArg& targets_obj) {
        pg_session* s = get();
        auto keep = p_;
        return run_forward(tokens_obj, targets_obj, Model(keep->model).config().vocab_size,
                           [&](const int32_t* tokens, int32_t B, int32_t T, const int32_t* targets, float* logits,
                               float* loss) {
                               std::lock_guard<std::mutex> lock(keep->busy);
                               return pg_session_forward(s, tokens, B, T, targets, logits, loss);
                           });
    }

    pg_eval_result evaluate(const TokensArg& tokens_obj, const py::object& config, const py::object& progress,
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

    pg_eval_result evaluate_sampled(const TokensArg& tokens_obj, const py::object& config,
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

    void append(const TokensArg& tokens_obj) {
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

    // Adapters: the session keeps the Python Adapter (and so its native adapter: Adapter.close()
    // only drops the Python object's reference) while it is attached.
    void attach_adapter(AdapterArg adapter_obj) {
        pg_session* s = get();
        auto keep = p_;
        std::shared_ptr<pg_lora_adapter> a = adapter_of(adapter_obj);
        call_nogil([&] {  // checks the adapter against the model (its weights' fingerprint)
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_session_attach_adapter(s, a.get());
        });
        keep->adapter = std::move(a);  // after the library let go of the previous one
        adapter_obj_ = std::move(adapter_obj);
    }
    void detach_adapter() {
        pg_session* s = get();
        auto keep = p_;
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);
            return pg_session_detach_adapter(s);
        });
        keep->adapter.reset();
        adapter_obj_ = py::none();
    }
    py::object adapter() const {
        const pg_lora_adapter* a = nullptr;
        check(pg_session_adapter(get(), &a));
        if (!a) return py::none();
        if (a != ptr()->adapter.get()) raise_status(PG_ERR_INTERNAL, "Session.adapter: the library's adapter is not the attached one");
        return adapter_obj_;
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
    py::object model_obj_;                  // the Python Model (kept alive with the session)
    py::object adapter_obj_ = py::none();   // the Python Adapter attached, or None
    SessionPtr p_;
};

}  // namespace

void bind_session(py::module_& m) {
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
        .def("attach_adapter", &Session::attach_adapter, py::arg("adapter"),
             "Every later pass on this session (forward, evaluate, append / logits, generate) computes\n"
             "model + adapter, as Adapter.merge's model would within fp32 rounding, while the model is\n"
             "never written: other sessions of the model keep their own adapter or none. The adapter\n"
             "must be the model's (GeometryError naming both sides otherwise; nothing changes then) and\n"
             "replaces an attached one. The session keeps it alive while attached; do not train or\n"
             "write it meanwhile. The sequence is kept: its keys and values are recomputed with the\n"
             "new weights at the next logits().")
        .def("detach_adapter", &Session::detach_adapter,
             "Back to the model alone (the sequence is kept and recomputed); nothing attached: nothing happens.")
        .def_property_readonly("adapter", &Session::adapter, "The attached Adapter, or None.")
        .def("_generate", &Session::generate, py::arg("options"), py::arg("stop"), py::arg("on_token"));
    add_lifetime<Session>(session, "session");
}

}  // namespace pg_py
