// The Python binding's LoRA parts beside the federated ones (coord_bindings.cpp owns Adapter's
// class): numpy views of an adapter's A and B (read-only, or writable where the C API lends the
// tensor mutably), PEFT import and export, merging, the base an adapter records, and LoraTrainer (training
// an adapter over a frozen base: set_data / step / step_batch / compute_gradients + gradients,
// save / resume, evaluate). Public C API only (docs/lora.md, docs/python.md).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "binding_hooks.hpp"

namespace pg_py {

namespace {

Hooks H;  // set once by bind_lora

using AdapterPtr = std::shared_ptr<pg_lora_adapter>;
using ModelPtr = std::shared_ptr<pg_model>;

pg_tensor_info tensor_info(pg_lora_adapter* a, int32_t index) {
    pg_tensor_info t = sized<pg_tensor_info>();
    H.check(pg_lora_adapter_tensor_info(a, index, &t));
    return t;
}

int32_t tensor_index(pg_lora_adapter* a, const std::string& name) {
    int32_t index = 0;
    H.check(pg_lora_adapter_find_tensor(a, name.c_str(), &index));
    return index;
}

// A view of tensor `index`: read-only over pg_lora_adapter_tensor_info's data, writable over
// pg_lora_adapter_tensor_data_mutable's. The view keeps the adapter alive.
py::array adapter_view(const AdapterPtr& a, int32_t index, bool writable) {
    const pg_tensor_info t = tensor_info(a.get(), index);
    const float* data = t.data;
    if (writable) {
        float* mutable_data = nullptr;
        H.check(pg_lora_adapter_tensor_data_mutable(a.get(), index, &mutable_data));
        data = mutable_data;
    }
    return H.float_view(a, data, {py::ssize_t(t.shape[0]), py::ssize_t(t.shape[1])}, writable);
}

py::dict adapter_views(const py::object& self, bool writable) {
    const AdapterPtr a = adapter_of(self);
    int32_t n = 0;
    H.check(pg_lora_adapter_num_tensors(a.get(), &n));
    py::dict d;
    for (int32_t i = 0; i < n; ++i) d[py::str(tensor_info(a.get(), i).name)] = adapter_view(a, i, writable);
    return d;
}

// The factor of (layer, module), module as its GPT-2 name ("attn.c_attn", ...).
py::array factor_view(const py::object& self, int layer, const std::string& module, const char* factor, bool writable) {
    const AdapterPtr a = adapter_of(self);
    // The table's block prefix: "h." (GPT-2) or "model.layers." (the Llama family), as tensor 0 has it.
    pg_tensor_info first;
    first.struct_size = sizeof first;
    H.check(pg_lora_adapter_tensor_info(a.get(), 0, &first));
    const char* blocks = std::strncmp(first.name, "model.layers.", 13) == 0 ? "model.layers." : "h.";
    return adapter_view(a, tensor_index(a.get(), blocks + std::to_string(layer) + "." + module + "." + factor + ".weight"),
                        writable);
}

std::string base_json(const AdapterPtr& a) {
    return sized_output([&](char* t, size_t cap, size_t* len) { return pg_lora_adapter_base_json(a.get(), t, cap, len); },
                      H.check);
}

// Adds a method to an existing class (phonegpt.Adapter is bound in coord_bindings.cpp).
template <class F, class... Extra>
void add_method(py::object& cls, const char* name, F&& f, const Extra&... extra) {
    cls.attr(name) = py::cpp_function(std::forward<F>(f), py::name(name), py::is_method(cls),
                                      py::sibling(py::getattr(cls, name, py::none())), extra...);
}

// ---------------------------------------------------------------------------------------
// LoraTrainer.
// ---------------------------------------------------------------------------------------

// The trainer borrows its base and its adapter: both references are dropped only after it is
// freed. `busy` serialises calls on it (taken with the GIL released), as for Trainer.
struct LoraTrainerHandle {
    ModelPtr model;
    AdapterPtr adapter;
    pg_lora_trainer* trainer = nullptr;
    std::mutex busy;
    ~LoraTrainerHandle() { pg_lora_trainer_free(trainer); }
};
using LoraTrainerPtr = std::shared_ptr<LoraTrainerHandle>;

class LoraTrainer {
public:
    LoraTrainer(ModelArg model, AdapterArg adapter, const py::object& config, const py::kwargs& fields)
        : model_obj_(std::move(model)), adapter_obj_(std::move(adapter)) {
        py::object cfg = config.is_none() ? py::module_::import("phonegpt._phonegpt").attr("TrainConfig")() : config;
        if (fields.size() > 0) cfg = cfg.attr("replace")(**fields);
        pg_train_config c = cfg.cast<pg_train_config>();
        clamp_warmup(c, c.total_steps, !config.is_none() || fields.contains("warmup_steps"));
        auto h = std::make_shared<LoraTrainerHandle>();
        h->model = H.model_of(model_obj_);
        h->adapter = adapter_of(adapter_obj_);
        H.check(pg_lora_trainer_create(h->model.get(), h->adapter.get(), &c, &h->trainer));
        p_ = std::move(h);
    }

    // (trainer over a new adapter) from an adapter training checkpoint, against `model`.
    static LoraTrainer resume(const PathArg& path, ModelArg model) {
        const std::string p = H.to_path(path);
        auto h = std::make_shared<LoraTrainerHandle>();
        h->model = H.model_of(model);
        pg_lora_adapter* a = nullptr;
        pg_lora_trainer* t = nullptr;
        pg_model* m = h->model.get();
        H.call_nogil([&] { return pg_lora_trainer_resume(p.c_str(), m, &a, &t); });
        py::object adapter = wrap_adapter(a);
        h->adapter = adapter_of(adapter);
        h->trainer = t;
        return LoraTrainer(std::move(model), std::move(adapter), std::move(h));
    }

    py::object model() const { return model_obj_; }
    py::object adapter() const { return adapter_obj_; }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    void set_data(const TokensArg& tokens_obj) {
        const LoraTrainerPtr h = handle();
        TokenArray tokens = H.as_tokens(tokens_obj, "tokens", 1);
        const int32_t* tp = tokens.data();
        const size_t n = size_t(tokens.size());
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);
            return pg_lora_trainer_set_data(h->trainer, tp, n);
        });
    }

    pg_step_result step() {
        const LoraTrainerPtr h = handle();
        pg_step_result r = sized<pg_step_result>();
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);
            return pg_lora_trainer_step(h->trainer, &r);
        });
        return r;
    }

    pg_step_result step_batch(const TokensArg& inputs_obj, const TokensArg& targets_obj) {
        const LoraTrainerPtr h = handle();
        const Batch b(inputs_obj, targets_obj);
        pg_step_result r = sized<pg_step_result>();
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);
            return pg_lora_trainer_step_batch(h->trainer, b.inputs.data(), b.targets.data(), b.B, b.T, &r);
        });
        return r;
    }

    // The full Trainer's getters (training_bindings.cpp), over the same C calls of the LoRA family.
    pg_train_config config() const {
        const LoraTrainerPtr h = handle();
        pg_train_config c = sized<pg_train_config>();
        H.check(pg_lora_trainer_get_config(h->trainer, &c));
        return c;
    }
    int n_threads() const {
        const LoraTrainerPtr h = handle();
        int32_t n = 0;
        H.check(pg_lora_trainer_n_threads(h->trainer, &n));
        return n;
    }
    void set_n_threads(int32_t n) {
        const LoraTrainerPtr h = handle();
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);  // not while another thread steps it
            return pg_lora_trainer_set_threads(h->trainer, n);
        });
    }
    int64_t step_count() const {
        const LoraTrainerPtr h = handle();
        int64_t s = 0;
        H.check(pg_lora_trainer_step_count(h->trainer, &s));
        return s;
    }
    float lr_at(int64_t step) const {
        const LoraTrainerPtr h = handle();
        float lr = 0.0f;
        H.check(pg_lora_trainer_lr_at(h->trainer, step, &lr));
        return lr;
    }

    // `steps` steps on the trainer's data; Ctrl-C and callback(result) (truthy: stop) after each.
    std::vector<pg_step_result> train(int64_t steps, const py::object& callback) {
        if (steps < 0) H.raise_status(PG_ERR_INVALID_ARGUMENT, "steps must be >= 0");
        std::vector<pg_step_result> results;
        for (int64_t i = 0; i < steps; ++i) {
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            results.push_back(step());
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (!callback.is_none() && py::bool_(callback(results.back()))) break;
        }
        return results;
    }

    float compute_gradients(const TokensArg& inputs_obj, const TokensArg& targets_obj) {
        const LoraTrainerPtr h = handle();
        const Batch b(inputs_obj, targets_obj);
        float loss = 0.0f;
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);
            return pg_lora_trainer_compute_gradients(h->trainer, b.inputs.data(), b.targets.data(), b.B, b.T, &loss);
        });
        return loss;
    }

    // Read-only views of dA and dB of the last step or compute_gradients, by tensor name.
    py::dict gradients() const {
        const LoraTrainerPtr h = handle();
        int32_t n = 0;
        H.check(pg_lora_adapter_num_tensors(h->adapter.get(), &n));
        py::dict d;
        for (int32_t i = 0; i < n; ++i) d[py::str(tensor_info(h->adapter.get(), i).name)] = grad_view(h, i);
        return d;
    }
    py::array grad(const std::string& name) const {
        const LoraTrainerPtr h = handle();
        return grad_view(h, tensor_index(h->adapter.get(), name));
    }

    void save(const PathArg& path) const {
        const LoraTrainerPtr h = handle();
        const std::string p = H.to_path(path);
        H.call_nogil([&] {
            std::lock_guard<std::mutex> lock(h->busy);
            return pg_lora_trainer_save(h->trainer, p.c_str());
        });
    }

    // Whole-split loss of base + adapter (Adapter.evaluate: the adapter merged into a copy).
    py::object evaluate(const TokensArg& tokens, const py::object& config, int32_t n_threads) const {
        handle();
        return adapter_obj_.attr("evaluate")(model_obj_, tokens, config, n_threads);
    }

private:
    LoraTrainer(ModelArg model, AdapterArg adapter, LoraTrainerPtr h)
        : model_obj_(std::move(model)), adapter_obj_(std::move(adapter)), p_(std::move(h)) {}

    struct Batch {
        TokenArray inputs, targets;
        int32_t B = 0, T = 0;
        Batch(const TokensArg& inputs_obj, const TokensArg& targets_obj)
            : inputs(H.as_tokens(inputs_obj, "inputs", 2)), targets(H.as_tokens(targets_obj, "targets", 2)) {
            if (targets.shape(0) != inputs.shape(0) || targets.shape(1) != inputs.shape(1))
                H.raise_status(PG_ERR_INVALID_ARGUMENT, "targets shape " + std::string(py::str(targets.attr("shape"))) +
                                                            " != inputs shape " + std::string(py::str(inputs.attr("shape"))));
            B = int32_t(inputs.shape(0));
            T = int32_t(inputs.shape(1));
        }
    };

    LoraTrainerPtr handle() const {
        if (!p_) H.raise_status(PG_ERR_STATE, "the LoraTrainer is closed");
        return p_;
    }
    static py::array grad_view(const LoraTrainerPtr& h, int32_t index) {
        const pg_tensor_info t = tensor_info(h->adapter.get(), index);
        const float* data = nullptr;
        H.check(pg_lora_trainer_grad(h->trainer, index, &data));
        return H.float_view(h, data, {py::ssize_t(t.shape[0]), py::ssize_t(t.shape[1])}, false);
    }

    py::object model_obj_, adapter_obj_;  // the Python objects, kept alive with the trainer
    LoraTrainerPtr p_;
};

}  // namespace

void bind_lora(py::module_& m, const Hooks& hooks) {
    H = hooks;
    using py::arg;

    // LoraConfig, generated by bind_structs: its validation on its own (as ModelConfig.validate).
    auto lc = py::reinterpret_borrow<py::class_<pg_lora_config>>(m.attr("LoraConfig"));
    lc.def("validate", [](const pg_lora_config& c) { H.check(pg_lora_config_validate(&c)); },
           "Raises InvalidArgument naming the first bad field (the layers are checked against a base by\n"
           "Adapter.create).");

    py::object ad = m.attr("Adapter");
    add_method(ad, "tensors", [](const AdapterArg& self, bool writable) { return adapter_views(self, writable); },
               arg("writable") = false,
               "{name: numpy view} of every A [rank, in] and B [out, rank], no copy: read-only, or writable\n"
               "with writable=True (not while a LoraTrainer trains the adapter).");
    add_method(ad, "lora_A",
               [](const AdapterArg& self, int layer, const std::string& module, bool writable) {
                   return factor_view(self, layer, module, "lora_A", writable);
               },
               arg("layer"), arg("module") = "attn.c_attn", arg("writable") = false,
               "The view of A [rank, in] of (layer, module), module one of attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj\n"
               "(GPT-2) or self_attn.q_proj, .k_proj, .v_proj, .o_proj, mlp.gate_proj, .up_proj, .down_proj (Llama).");
    add_method(ad, "lora_B",
               [](const AdapterArg& self, int layer, const std::string& module, bool writable) {
                   return factor_view(self, layer, module, "lora_B", writable);
               },
               arg("layer"), arg("module") = "attn.c_attn", arg("writable") = false, "The view of B [out, rank].");
    add_method(ad, "base_info",
               [](const AdapterArg& self) {
                   return py::module_::import("json").attr("loads")(base_json(adapter_of(self)));
               },
               "The base the adapter was made for, as its file records it: geometry, weights_xxh64, tokenizer,\n"
               "fingerprint, description and provenance (kind, init_seed, steps, tokens, description).");
    add_method(ad, "export_peft",
               [](const AdapterArg& self, const PathArg& folder) {
                   const AdapterPtr a = adapter_of(self);
                   const std::string f = H.to_path(folder);
                   py::module_::import("os").attr("makedirs")(folder, py::arg("exist_ok") = true);  // as the CLI does
                   H.call_nogil([&] { return pg_lora_export_peft(a.get(), f.c_str()); });
               },
               arg("folder"),
               "Writes adapter_config.json and adapter_model.safetensors for PEFT into folder (created with\n"
               "its parents if missing).");
    add_method(ad, "__repr__",
               [](const AdapterArg& self) {
                   if (self.attr("closed").cast<bool>()) return std::string("<phonegpt.Adapter closed>");
                   const AdapterPtr a = adapter_of(self);
                   pg_lora_config c;
                   pg_lora_config_default(&c);
                   H.check(pg_lora_adapter_get_config(a.get(), &c));
                   int64_t params = 0;
                   H.check(pg_lora_adapter_num_params(a.get(), &params));
                   const std::pair<uint32_t, const char*> modules[] = {
                       {PG_LORA_ATTN_C_ATTN, "attn.c_attn"}, {PG_LORA_ATTN_C_PROJ, "attn.c_proj"},
                       {PG_LORA_MLP_C_FC, "mlp.c_fc"},       {PG_LORA_MLP_C_PROJ, "mlp.c_proj"},
                       {PG_LORA_Q_PROJ, "q_proj"},           {PG_LORA_K_PROJ, "k_proj"},
                       {PG_LORA_V_PROJ, "v_proj"},           {PG_LORA_O_PROJ, "o_proj"},
                       {PG_LORA_GATE_PROJ, "gate_proj"},     {PG_LORA_UP_PROJ, "up_proj"},
                       {PG_LORA_DOWN_PROJ, "down_proj"}};
                   std::string targets, layers;
                   for (const auto& mod : modules)
                       if (c.target_modules & mod.first) targets += (targets.empty() ? "" : ",") + std::string(mod.second);
                   for (int32_t i = 0; i < c.n_layers; ++i) layers += (i ? "," : "") + std::to_string(c.layers[i]);
                   return "<phonegpt.Adapter rank=" + std::to_string(c.rank) + " alpha=" +
                          std::string(py::str(py::float_(c.alpha))) + " targets=" + targets +
                          " layers=" + (layers.empty() ? "all" : layers) + " params=" + std::to_string(params) + ">";
               });
    add_method(ad, "merge",
               [](const AdapterArg& self, const ModelArg& base, int32_t n_threads) {
                   const AdapterPtr a = adapter_of(self);
                   const ModelPtr b = H.model_of(base);
                   pg_model* merged = nullptr;
                   H.call_nogil([&] { return pg_lora_merge(b.get(), a.get(), n_threads, &merged); });
                   return H.wrap_model(merged);
               },
               arg("base"), arg("n_threads") = 0,
               "A new Model: base's weights with scale * B A added (saves, loads, evaluates like any model).");
    add_method(ad, "merge_into",
               [](const AdapterArg& self, const ModelArg& model, int32_t n_threads) {
                   const AdapterPtr a = adapter_of(self);
                   const ModelPtr m = H.model_of(model);
                   H.call_nogil([&] { return pg_lora_merge_in_place(m.get(), a.get(), n_threads); });
               },
               arg("model"), arg("n_threads") = 0, "Merges into model's weights (model must be the adapter's base).");
    add_method(ad, "unmerge_from",
               [](const AdapterArg& self, const ModelArg& model, int32_t n_threads) {
                   const AdapterPtr a = adapter_of(self);
                   const ModelPtr m = H.model_of(model);
                   H.call_nogil([&] { return pg_lora_unmerge_in_place(m.get(), a.get(), n_threads); });
               },
               arg("model"), arg("n_threads") = 0, "Subtracts scale * B A again (within fp32 rounding).");
    ad.attr("import_peft") = py::staticmethod(py::cpp_function(
        [](const PathArg& folder, const ModelArg& base) {
            const std::string f = H.to_path(folder);
            const ModelPtr b = H.model_of(base);
            pg_lora_adapter* a = nullptr;
            H.call_nogil([&] { return pg_lora_import_peft(f.c_str(), b.get(), &a); });
            return wrap_adapter(a);
        },
        py::name("import_peft"), arg("folder"), arg("base"),
        "A PEFT adapter (adapter_config.json + adapter_model.safetensors in folder) for base; the geometry\n"
        "is read from the files and checked against the base (GeometryError naming both sides)."));

    py::class_<LoraTrainer> lt(m, "LoraTrainer",
        "Trains an adapter over a frozen base (the base is never written): the full trainer's step\n"
        "(schedule, clipping, accumulation, AdamW) on the adapter's A and B only.");
    lt.def(py::init<ModelArg, AdapterArg, const py::object&, const py::kwargs&>(), arg("model"), arg("adapter"),
           arg("config") = py::none(), "TrainConfig fields as keywords.")
        .def_static("resume", &LoraTrainer::resume, arg("path"), arg("model"),
                    "Resumes from an adapter training checkpoint against model (the same base); .adapter is the\n"
                    "new adapter. Call set_data with the same tokens to continue bit for bit.")
        .def_property_readonly("model", &LoraTrainer::model)
        .def_property_readonly("adapter", &LoraTrainer::adapter)
        .def_property_readonly("config", &LoraTrainer::config, "The TrainConfig it runs (seq_len 0 resolved).")
        .def_property("n_threads", &LoraTrainer::n_threads, &LoraTrainer::set_n_threads,
                      "Threads of later steps (setting it changes the arithmetic's rounding).")
        .def_property_readonly("step_count", &LoraTrainer::step_count)
        .def("lr_at", &LoraTrainer::lr_at, arg("step"), "The schedule's learning rate at step.")
        .def("set_data", &LoraTrainer::set_data, arg("tokens"))
        .def("step", &LoraTrainer::step, "One optimizer step on sampled batches; appends to the adapter's record.")
        .def("step_batch", &LoraTrainer::step_batch, arg("inputs"), arg("targets"))
        .def("train", &LoraTrainer::train, arg("steps"), arg("callback") = py::none())
        .def("compute_gradients", &LoraTrainer::compute_gradients, arg("inputs"), arg("targets"),
             "Forward and backward only: the mean loss; gradients() then holds dA and dB.")
        .def("gradients", &LoraTrainer::gradients, "{name: read-only view} of the last gradients.")
        .def("grad", &LoraTrainer::grad, arg("name"))
        .def("save", &LoraTrainer::save, arg("path"), "The adapter training checkpoint (atomic, read back).")
        .def("evaluate", &LoraTrainer::evaluate, arg("tokens"), arg("config") = py::none(), arg("n_threads") = 0,
             "Whole-split loss of base + adapter (EvalResult).");
    add_lifetime<LoraTrainer>(lt, "LoRA trainer");
}

}  // namespace pg_py
