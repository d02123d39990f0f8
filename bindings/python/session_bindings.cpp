// The Python binding's training sessions (pg_train_session_*): TrainSession over a Model (full
// training) or a Model and an Adapter (LoRA), run / cancel / set_conditions / report /
// core_rates, and the training memory plan (memory_plan, max_batch). Public C API only
// (docs/python.md).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "binding_hooks.hpp"
#include "struct_bindings.hpp"

namespace pg_py {

namespace {

Hooks H;  // set once by bind_train_session

// The session borrows its model (and adapter): both references are dropped after it is freed.
// run() holds `busy` with the GIL released; cancel, set_conditions and report do not take it
// (the C calls are safe from any thread while a run is in progress).
struct SessionHandle {
    std::shared_ptr<pg_model> model;
    std::shared_ptr<pg_lora_adapter> adapter;
    pg_train_session* session = nullptr;
    std::mutex busy;
    ~SessionHandle() { pg_train_session_free(session); }
};

class TrainSession {
public:
    TrainSession(py::object model, const py::object& checkpoint, py::object adapter, const py::object& config,
                 const py::object& session_config, const py::kwargs& fields)
        : model_obj_(std::move(model)), adapter_obj_(std::move(adapter)) {
        const pg_train_config train = config.is_none() ? H_default_train() : config.cast<pg_train_config>();
        py::object sc = session_config.is_none()
                            ? py::module_::import("phonegpt._phonegpt").attr("TrainSessionConfig")()
                            : session_config;
        if (fields.size() > 0) sc = sc.attr("replace")(**fields);
        const pg_train_session_config c = sc.cast<pg_train_session_config>();
        const std::string path = H.to_path(checkpoint);
        auto h = std::make_shared<SessionHandle>();
        h->model = H.model_of(model_obj_);
        pg_model* m = h->model.get();
        pg_train_session* s = nullptr;
        if (adapter_obj_.is_none()) {
            H.call_nogil([&] { return pg_train_session_create(m, &train, &c, path.c_str(), &s); });
        } else {
            h->adapter = adapter_of(adapter_obj_);
            pg_lora_adapter* a = h->adapter.get();
            H.call_nogil([&] { return pg_train_session_create_lora(m, a, &train, &c, path.c_str(), &s); });
        }
        h->session = s;
        p_ = std::move(h);
    }

    py::object model() const { return model_obj_; }
    py::object adapter() const { return adapter_obj_; }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    void set_data(const TokensArg& tokens_obj) {
        const auto h = handle();
        TokenArray tokens = H.as_tokens(tokens_obj, "tokens", 1);
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);
            return pg_train_session_set_data(h->session, tp, n);
        });
    }

    pg_train_session_report run() {
        const auto h = handle();
        pg_train_session_report r = sized<pg_train_session_report>();
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);
            return pg_train_session_run(h->session, &r);
        });
        return r;
    }

    void cancel() {
        const auto h = handle();
        H.check(pg_train_session_cancel(h->session));
    }

    void set_conditions(const py::object& conditions, const py::kwargs& fields) {
        const auto h = handle();
        py::object c = conditions.is_none()
                           ? py::module_::import("phonegpt._phonegpt").attr("DeviceConditions")()
                           : conditions;
        if (fields.size() > 0) c = c.attr("replace")(**fields);
        const pg_device_conditions dc = c.cast<pg_device_conditions>();
        H.check(pg_train_session_set_conditions(h->session, &dc));
    }

    pg_train_session_report report() const {
        const auto h = handle();
        pg_train_session_report r = sized<pg_train_session_report>();
        H.check(pg_train_session_get_report(h->session, &r));
        return r;
    }

    // [(capacity, tokens per second)], fastest class first.
    std::vector<std::pair<int32_t, double>> core_rates() const {
        const auto h = handle();
        int32_t n = 0;
        std::vector<int32_t> caps;
        std::vector<double> rates;
        pg_status s = PG_ERR_BUFFER_TOO_SMALL;
        while (s == PG_ERR_BUFFER_TOO_SMALL) {  // the classes may grow between the calls
            caps.resize(size_t(n));
            rates.resize(size_t(n));
            s = pg_train_session_core_rates(h->session, caps.data(), rates.data(), int32_t(caps.size()), &n);
        }
        H.check(s);
        std::vector<std::pair<int32_t, double>> out;
        for (int32_t i = 0; i < n; ++i) out.emplace_back(caps[size_t(i)], rates[size_t(i)]);
        return out;
    }

private:
    static pg_train_config H_default_train() {
        return py::module_::import("phonegpt._phonegpt").attr("TrainConfig")().cast<pg_train_config>();
    }
    std::shared_ptr<SessionHandle> handle() const {
        if (!p_) H.raise_status(PG_ERR_STATE, "the TrainSession is closed");
        return p_;
    }

    py::object model_obj_, adapter_obj_;
    std::shared_ptr<SessionHandle> p_;
};

// The C plan's arguments from Python: a ModelConfig, the storage's name or value, a LoraConfig or
// None, a TrainConfig (None: defaults).
struct PlanArgs {
    pg_model_config model;
    pg_weight_storage storage;
    pg_lora_config lora;
    bool has_lora;
    pg_train_config train;
    std::vector<int32_t> layers;  // what lora.layers points into
};

void plan_args(PlanArgs& a, const py::object& model, const py::object& storage, const py::object& lora,
               const py::object& layers, const py::object& train) {
    a.model = model.cast<pg_model_config>();
    a.storage = py::isinstance<py::str>(storage)
                    ? enum_from_name<pg_weight_storage>(storage.cast<std::string>(), "storage")
                    : pg_weight_storage(storage.cast<int>());
    a.has_lora = !lora.is_none();
    if (a.has_lora) {
        a.lora = lora.cast<pg_lora_config>();
        if (!layers.is_none()) a.layers = layers.cast<std::vector<int32_t>>();
        a.lora.layers = a.layers.empty() ? nullptr : a.layers.data();
        a.lora.n_layers = int32_t(a.layers.size());
    }
    a.train = train.is_none() ? py::module_::import("phonegpt._phonegpt").attr("TrainConfig")().cast<pg_train_config>()
                              : train.cast<pg_train_config>();
}

}  // namespace

void bind_train_session(py::module_& m, const Hooks& hooks) {
    H = hooks;
    using py::arg;
    py::class_<TrainSession> ts(m, "TrainSession",
        "A training run that survives the OS: steps until the step budget (max_steps, default\n"
        "total_steps), the time budget or cancel(); checkpoints atomically to `checkpoint` every N steps\n"
        "or ms and when it stops, and resumes from that file when created again over it (bit for bit\n"
        "with the same data and threads). adapter=None trains the model; an Adapter trains it over the\n"
        "frozen model. TrainSessionConfig fields as keywords.");
    ts.def(py::init<const ModelArg&, const py::object&, py::object, const py::object&, const py::object&,
                    const py::kwargs&>(),
           arg("model"), arg("checkpoint"), arg("adapter") = py::none(), arg("config") = py::none(),
           arg("session_config") = py::none())
        .def_property_readonly("model", &TrainSession::model)
        .def_property_readonly("adapter", &TrainSession::adapter)
        .def("set_data", &TrainSession::set_data, arg("tokens"),
             "Training tokens (copied); the same tokens again after a resume.")
        .def("run", &TrainSession::run,
             "Runs until a budget or cancel(); returns a TrainSessionReport (stop says why).")
        .def("cancel", &TrainSession::cancel, "From any thread: the run stops after its current step.")
        .def("set_conditions", &TrainSession::set_conditions, arg("conditions") = py::none(),
             "From any thread: DeviceConditions (battery_percent, charging, thermal_status) as an object or\n"
             "keywords; the session's policy pauses, throttles or spaces its steps.")
        .def("report", &TrainSession::report, "The TrainSessionReport now (any thread).")
        .def("core_rates", &TrainSession::core_rates,
             "[(capacity, tokens/s)] per core class over the throughput window (capacity -1: not pinned).");
    add_lifetime<TrainSession>(ts, "training session");

    m.def("memory_plan",
          [](const py::object& model, const py::object& storage, const py::object& lora, const py::object& layers,
             const py::object& train, int64_t n_data_tokens) {
              PlanArgs a;
              plan_args(a, model, storage, lora, layers, train);
              pg_memory_plan p = sized<pg_memory_plan>();
              H.check(pg_train_memory_plan(&a.model, a.storage, a.has_lora ? &a.lora : nullptr, &a.train,
                                           n_data_tokens, &p));
              return p;
          },
          arg("model_config"), arg("storage") = "fp32", arg("lora") = py::none(), arg("layers") = py::none(),
          arg("train") = py::none(), arg("n_data_tokens") = 0,
          "The predicted peak resident memory of training (MemoryPlan) for a ModelConfig, the base's\n"
          "storage, a LoraConfig (None: full training; layers: its layer list, None = every layer) and a\n"
          "TrainConfig.");
    m.def("max_batch",
          [](const py::object& model, int64_t budget_bytes, const py::object& storage, const py::object& lora,
             const py::object& layers, const py::object& train, int64_t n_data_tokens) {
              PlanArgs a;
              plan_args(a, model, storage, lora, layers, train);
              pg_memory_plan p = sized<pg_memory_plan>();
              H.check(pg_train_memory_max_batch(&a.model, a.storage, a.has_lora ? &a.lora : nullptr, &a.train,
                                                n_data_tokens, budget_bytes, &p));
              return p;
          },
          arg("model_config"), arg("budget_bytes"), arg("storage") = "fp32", arg("lora") = py::none(),
          arg("layers") = py::none(), arg("train") = py::none(), arg("n_data_tokens") = 0,
          "The MemoryPlan of the largest batch_size that fits budget_bytes (OutOfMemoryError with the\n"
          "figures when batch 1 does not).");
}

}  // namespace pg_py
