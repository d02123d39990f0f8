// phonegpt.Trainer: training state for a Model (gradients, optimizer moments, schedule,
// sampler): optimizer steps on the trainer's data or a given batch, gradients as numpy views,
// the learning-rate schedule, and save / resume of the whole training state.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <phonegpt/phonegpt.h>

#include "binding_handles.hpp"
#include "struct_bindings.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

// ---------------------------------------------------------------------------------------
// Trainer.
// ---------------------------------------------------------------------------------------

class Trainer {
public:
    Trainer(ModelArg model_obj, TrainerPtr p) : model_obj_(std::move(model_obj)), p_(std::move(p)) {}

    static Trainer create(ModelArg model_obj, const py::object& config, const py::kwargs& kw) {
        Model& model = model_obj.cast<Model&>();
        pg_train_config c = options_from<pg_train_config>(config, kw);
        clamp_warmup(c, c.total_steps, !config.is_none() || kw.contains("warmup_steps"));
        auto h = std::make_shared<TrainerHandle>();
        h->model = model.ptr();
        check(pg_trainer_create(h->model.get(), &c, &h->trainer));
        return Trainer(std::move(model_obj), std::move(h));
    }

    static Trainer resume(const PathArg& path) {
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

    int n_threads() const {
        int32_t n = 0;
        check(pg_trainer_n_threads(get(), &n));
        return n;
    }
    void set_n_threads(int32_t n) {
        pg_trainer* t = get();
        auto keep = p_;
        call_nogil([&] {
            std::lock_guard<std::mutex> lock(keep->busy);  // not while another thread steps it
            return pg_trainer_set_threads(t, n);
        });
    }

    void set_data(const TokensArg& tokens_obj) {
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

    pg_step_result step_batch(const TokensArg& inputs_obj, const TokensArg& targets_obj) {
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

    float compute_gradients(const TokensArg& inputs_obj, const TokensArg& targets_obj) {
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

    void save(const PathArg& path, const py::object& options, const py::kwargs& fields) const {
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
    static void batch_arrays(const TokensArg& inputs_obj, const TokensArg& targets_obj,
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

}  // namespace

void bind_trainer(py::module_& m) {
    py::class_<Trainer> trainer(m, "Trainer",
        "Training state for a Model (gradients, AdamW moments, schedule, sampler).\n"
        "Trainer(model, config=None, **fields): fields override the config's.");
    trainer.def(py::init(&Trainer::create), py::arg("model"), py::arg("config") = py::none())
        .def_static("resume", &Trainer::resume, py::arg("path"),
                    "A trainer (and its model, .model) from a checkpoint written by save().")
        .def_property_readonly("model", &Trainer::model)
        .def_property_readonly("config", &Trainer::config)
        .def_property("n_threads", &Trainer::n_threads, &Trainer::set_n_threads,
                      "The threads the steps run on (config.n_threads with <= 0 resolved to this machine's\n"
                      "cores). Assigning changes it for the later steps (<= 0: all cores; at most 1024), e.g. to\n"
                      "continue a resumed run on the cores free now; config and the next save() record it.\n"
                      "Results then match the unchanged run up to float rounding.")
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
}

}  // namespace pg_py
