// phonegpt.Model: creating, loading, importing, saving and exporting a model, its configuration
// (and ModelConfig's preset / validate / num_params), provenance, tokenizer, and its tensors as
// numpy views. Its forward, evaluation and generation calls are in inference_bindings.cpp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <phonegpt/phonegpt.h>

#include "binding_handles.hpp"
#include "struct_bindings.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace pg_py {

namespace {

pg_model_config config_from(const py::object& config_or_preset) {
    if (py::isinstance<py::str>(config_or_preset)) {
        pg_model_config c = defaults<pg_model_config>();
        check(pg_model_config_preset(std::string(py::str(config_or_preset)).c_str(), &c));
        return c;
    }
    return config_or_preset.cast<pg_model_config>();
}

}  // namespace

Model Model::create(const py::object& config, uint64_t seed) {
    pg_model_config c = config_from(config);
    pg_model* m = nullptr;
    call_nogil([&] { return pg_model_create(&c, seed, &m); });
    return Model(own_model(m));
}

Model Model::load(const PathArg& path, const py::object& options, const py::kwargs& fields) {
    std::string p = to_path(path);
    const pg_load_options o = options_from<pg_load_options>(options, fields);
    pg_model* m = nullptr;
    call_nogil([&] { return pg_model_load_with(p.c_str(), &o, &m); });
    return Model(own_model(m));
}

Model Model::from_bytes(const py::buffer& data, const py::object& options, const py::kwargs& fields) {
    const py::buffer_info b = data.request();  // bytes, bytearray, memoryview, numpy: read in place
    if (!PyBuffer_IsContiguous(b.view(), 'C')) throw py::value_error("Model.from_bytes: data must be contiguous");
    const pg_load_options o = options_from<pg_load_options>(options, fields);
    const auto size = std::size_t(b.size * b.itemsize);
    pg_model* m = nullptr;
    call_nogil([&] { return pg_model_load_from_memory(b.ptr, size, &o, &m); });
    return Model(own_model(m));
}

Model Model::from_fd(int fd, int64_t offset, int64_t length, const py::object& options, const py::kwargs& fields) {
    const pg_load_options o = options_from<pg_load_options>(options, fields);
    pg_model* m = nullptr;
    call_nogil([&] { return pg_model_load_from_fd(fd, offset, length, &o, &m); });
    return Model(own_model(m));
}

Model Model::import_from(const PathArg& path, const std::string& format, const py::object& options,
                         const py::kwargs& fields) {
    std::string p = to_path(path);
    pg_interop_format f = format_from_name(format);
    const pg_load_options o = options_from<pg_load_options>(options, fields);
    pg_model* m = nullptr;
    call_nogil([&] { return pg_model_import_with(f, p.c_str(), &o, &m); });
    return Model(own_model(m));
}

pg_model_config Model::config() const {
    pg_model_config c = defaults<pg_model_config>();
    check(pg_model_get_config(get(), &c));
    return c;
}

int64_t Model::num_params() const {
    int64_t n = 0;
    check(pg_model_num_params(get(), &n));
    return n;
}

bool Model::mapped() const {
    int32_t m = 0;
    check(pg_model_weights_mapped(get(), &m));
    return m == 1;
}

py::dict Model::provenance() const {
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

void Model::allow_untrained_base(bool allow) { check(pg_model_allow_untrained_base(get(), allow ? 1 : 0)); }

// Weight storage ----------------------------------------------------------------------------

namespace {

// One pin per native model, found by its address (a pin keeps its model alive, so the address is
// not reused while the pin lives). Leaked on purpose, like the exception classes: views may be
// freed after the static destructors ran.
struct Fp32Pins {
    std::mutex mutex;
    std::unordered_map<const pg_model*, std::weak_ptr<void>> pins;
};
Fp32Pins& fp32_pins() {
    static Fp32Pins* pins = new Fp32Pins;
    return *pins;
}

}  // namespace

std::shared_ptr<void> Model::fp32_pin() const {
    const ModelPtr& m = ptr();
    Fp32Pins& t = fp32_pins();
    std::lock_guard<std::mutex> lock(t.mutex);
    std::weak_ptr<void>& slot = t.pins[m.get()];
    if (std::shared_ptr<void> pin = slot.lock()) return pin;
    const pg_model* key = m.get();
    std::shared_ptr<void> pin(new ModelPtr(m), [key](void* p) {
        {
            Fp32Pins& pins = fp32_pins();
            std::lock_guard<std::mutex> erase_lock(pins.mutex);
            const auto it = pins.pins.find(key);
            if (it != pins.pins.end() && it->second.expired()) pins.pins.erase(it);
        }
        delete static_cast<ModelPtr*>(p);  // may free the model: outside the lock
    });
    slot = pin;
    return pin;
}

std::string Model::weight_storage() const {
    pg_weight_storage s = PG_WEIGHTS_FP32;
    check(pg_model_weight_storage(get(), &s, nullptr));
    return enum_name(s);
}

int64_t Model::weight_bytes() const {
    int64_t n = 0;
    check(pg_model_weight_storage(get(), nullptr, &n));
    return n;
}

void Model::set_weight_storage(const std::string& storage) {
    const pg_weight_storage to = enum_from_name<pg_weight_storage>(storage, "storage");
    pg_model* m = get();
    auto keep = p_;
    pg_weight_storage from = PG_WEIGHTS_FP32;
    check(pg_model_weight_storage(m, &from, nullptr));
    if (from == PG_WEIGHTS_FP32 && to != PG_WEIGHTS_FP32) {  // the fp32 weights will be freed
        long users = 0;
        {
            Fp32Pins& t = fp32_pins();
            std::lock_guard<std::mutex> lock(t.mutex);
            const auto it = t.pins.find(m);
            if (it != t.pins.end()) users = it->second.use_count();
        }
        if (users > 0)
            raise_state("Model.set_weight_storage('" + storage + "') frees the fp32 weights, which " +
                        std::to_string(users) +
                        " numpy view(s) (parameter, parameters, flat_parameters) of this model still use: drop "
                        "them first");
    }
    call_nogil([&] { return pg_model_set_weight_storage(m, to); });
}

py::object Model::tokenizer() const {
    const pg_tokenizer* t = nullptr;
    check(pg_model_get_tokenizer(get(), &t));
    if (!t) return py::none();
    return py::cast(Tokenizer::copy_of(t));
}

void Model::set_tokenizer(const Tokenizer& tok) { check(pg_model_set_tokenizer(get(), tok.get())); }

void Model::save(const PathArg& path, const py::object& options, const py::kwargs& fields) const {
    std::string p = to_path(path);
    pg_model* m = get();
    auto keep = p_;
    const pg_save_options o = options_from<pg_save_options>(options, fields);
    call_nogil([&] { return pg_model_save(m, p.c_str(), &o); });
}

void Model::export_to(const PathArg& path, const std::string& format) const {
    std::string p = to_path(path);
    pg_interop_format f = format_from_name(format);
    pg_model* m = get();
    auto keep = p_;
    call_nogil([&] { return pg_model_export(m, f, p.c_str()); });
}

// Tensors --------------------------------------------------------------------------------

int Model::num_tensors() const {
    int32_t n = 0;
    check(pg_model_num_tensors(get(), &n));
    return n;
}

pg_tensor_info Model::info(int32_t index) const {
    pg_tensor_info i = defaults<pg_tensor_info>();
    check(pg_model_tensor_info(get(), index, &i));
    return i;
}

pg_tensor_info Model::tensor_info(const std::string& name) const {
    pg_tensor_info i = info(index_of(name));
    i.name = nullptr;
    i.data = nullptr;
    return i;
}

int32_t Model::index_of(const std::string& name) const {
    int32_t idx = -1;
    check(pg_model_find_tensor(get(), name.c_str(), &idx));
    return idx;
}

std::vector<std::string> Model::tensor_names() const {
    std::vector<std::string> out;
    for (int i = 0, n = num_tensors(); i < n; ++i) out.push_back(info(i).name);
    return out;
}

py::array Model::tensor_view(int32_t index, bool writable) {
    pg_tensor_info i = info(index);
    const float* data = i.data;
    if (writable) {
        float* w = nullptr;
        check(pg_model_tensor_data_mutable(get(), index, &w));
        data = w;
    }
    if (!data)  // a 16-bit tensor: no fp32 values to view
        raise_state(std::string("Model.parameter: \"") + i.name + "\" is held in " + weight_storage() +
                    " (set_weight_storage): it has no fp32 weights to view");
    return float_view(fp32_pin(), data, shape_of(i), writable);
}

py::array Model::parameter(const std::string& name, bool writable) {
    return tensor_view(index_of(name), writable);
}

py::dict Model::parameters(bool writable) {
    py::dict d;
    for (int i = 0, n = num_tensors(); i < n; ++i) d[py::str(info(i).name)] = tensor_view(i, writable);
    return d;
}

py::array Model::flat_parameters() const {
    const float* data = nullptr;
    int64_t n = 0;
    check(pg_model_params(get(), &data, &n));
    return float_view(fp32_pin(), data, {py::ssize_t(n)}, false);
}

pg_interop_format Model::format_from_name(const std::string& f) {
    if (f == "llmc") return PG_FORMAT_LLMC;
    if (f == "safetensors") return PG_FORMAT_SAFETENSORS;
    if (f == "hf") return PG_FORMAT_HF_FOLDER;
    raise_invalid("format must be 'llmc', 'safetensors' or 'hf', got '" + f + "'");
}

// What coord_bindings.cpp and lora_bindings.cpp borrow (binding_hooks.hpp).
Hooks binding_hooks() {
    Hooks h;
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

void bind_model(py::module_& m) {
    // ModelConfig, generated by bind_structs: its presets, validation and size.
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
        .def_static("from_bytes", &Model::from_bytes, py::arg("data"), py::arg("options") = py::none(),
                    "Loads a native checkpoint from a bytes-like object (read in place, checked as a file is).")
        .def_static("from_fd", &Model::from_fd, py::arg("fd"), py::arg("offset") = 0, py::arg("length") = -1,
                    py::arg("options") = py::none(),
                    "Loads the checkpoint in length bytes at offset of an open file descriptor (length -1: to\n"
                    "the end), read with pread: the descriptor is neither moved nor closed.")
        .def_static("import_from", &Model::import_from, py::arg("path"), py::arg("format"),
                    py::arg("options") = py::none(),
                    "Imports an 'llmc' model file, a 'safetensors' file (config.json beside it) or an 'hf'\n"
                    "model folder (Llama, Qwen2, Qwen3, GPT-2; its tokenizer.json too); options: a LoadOptions,\n"
                    "keyword arguments change its fields (weight_storage=PG_WEIGHTS_BF16 reads a 16-bit base\n"
                    "without an fp32 copy; default: as the file stores its matrices).")
        .def("save", &Model::save, py::arg("path"), py::arg("options") = py::none(),
             "Saves atomically; options: a SaveOptions, keyword arguments change its fields\n"
             "(compression_level: 0 = raw, 1..19 = zstd level).")
        .def("export", &Model::export_to, py::arg("path"), py::arg("format"),
             "Exports the weights as 'llmc', 'safetensors' (+ config.json) or an 'hf' model folder.")
        .def_property_readonly("config", &Model::config)
        .def_property_readonly("num_params", &Model::num_params)
        .def_property_readonly("mapped", &Model::mapped, "True when the weights are a read-only file mapping.")
        .def_property_readonly("provenance", &Model::provenance,
                               "Where the weights come from: {'kind': 'unknown' | 'initialised' | 'trained',\n"
                               "'init_seed': int or None, 'steps': int, 'tokens': int} (saved with the model).")
        .def_property_readonly("weight_storage", &Model::weight_storage,
                               "How the weights are held: 'fp32', or for a frozen base 'fp16', 'bf16',\n"
                               "'q8_0', 'q4_0' (or the deprecated 'fp16_arithmetic', 'bf16_arithmetic';\n"
                               "set_weight_storage).")
        .def_property_readonly("weight_bytes", &Model::weight_bytes, "The bytes the weights take.")
        .def("set_weight_storage", &Model::set_weight_storage, py::arg("storage"),
             "Holds the token embedding and the block linears in 16 bits ('fp16', 'bf16': half their\n"
             "bytes) or in quantized blocks of 32 ('q8_0': int8, 'q4_0': 4-bit), in place, for a frozen\n"
             "base (sessions, evaluation, LoRA training), with the fp32 model's results over the stored\n"
             "values unless a SessionConfig / TrainConfig chooses another arithmetic ('fp16_arithmetic'\n"
             "and 'bf16_arithmetic' are deprecated spellings of 'fp16' / 'bf16' with that arithmetic as\n"
             "the default). One way: the fp32 weights are freed, so training, merging, fp32 views\n"
             "and saving as fp32 then raise StateError, and so does going back (load the model again).\n"
             "A 16-bit model may still be quantized. Refused while numpy\n"
             "views of the fp32 weights or a Trainer of the model are alive; NotFinite when a weight\n"
             "overflows fp16. Not while another thread uses the model.")
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
}

}  // namespace pg_py
