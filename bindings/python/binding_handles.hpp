// phonegpt.Tokenizer and phonegpt.Model, the handle classes the other binding files build on
// (a Model carries its Tokenizer; Session and Trainer borrow a Model). Their members are
// defined in tokenizer_bindings.cpp and model_bindings.cpp, except the Model's forward,
// evaluation and generation calls, which inference_bindings.cpp defines beside Session's
// (they share its call runners).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <phonegpt/phonegpt.h>

#include "binding_common.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pg_py {

class Tokenizer {
public:
    explicit Tokenizer(TokenizerPtr p) : p_(std::move(p)) {}

    static Tokenizer from_text(const std::string& text);
    static Tokenizer from_bytes(const py::bytes& data);
    // A copy owned by Python of a tokenizer owned by someone else (e.g. a model).
    static Tokenizer copy_of(const pg_tokenizer* borrowed);

    // The native handle; raises StateError after close().
    const TokenizerPtr& ptr() const {
        if (!p_) raise_state("the Tokenizer is closed");
        return p_;
    }
    pg_tokenizer* get() const { return ptr().get(); }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    std::string kind() const;
    int vocab_size() const;

    py::array_t<int32_t> encode(const py::object& text) const;  // str or bytes
    py::bytes decode_bytes(const TokensArg& ids_obj) const;
    py::str decode(const TokensArg& ids) const;

    // ---- byte-level BPE (owner: bpe) ------------------------------------------------------
    // Each file as its path (str, os.PathLike) or its contents (bytes).
    static Tokenizer from_tiktoken(const py::object& ranks, const std::string& encoding);
    static Tokenizer from_gpt2(const py::object& encoder_json, const py::object& vocab_bpe);
    static Tokenizer from_hf(const py::object& tokenizer_json);
    // text: str or bytes; allowed_special: "all", a list of special-token texts, or None (the
    // options `o` alone decide).
    py::array_t<int32_t> encode_special(const py::object& text, const py::object& allowed, pg_encode_options o) const;
    // file: "tiktoken", "gpt2_encoder", "gpt2_merges" or "hf_json".
    py::bytes write_file(const std::string& file) const;
    int32_t special_id(const std::string& text) const;
    // ---- end of byte-level BPE -------------------------------------------------------------

    py::bytes to_bytes() const;

private:
    TokenizerPtr p_;
};

class Model {
public:
    explicit Model(ModelPtr p) : p_(std::move(p)) {}

    static Model create(const py::object& config, uint64_t seed);
    static Model load(const PathArg& path, const py::object& options, const py::kwargs& fields);
    static Model import_from(const PathArg& path, const std::string& format, const py::object& options,
                             const py::kwargs& fields);
    static Model from_bytes(const py::buffer& data, const py::object& options, const py::kwargs& fields);
    static Model from_fd(int fd, int64_t offset, int64_t length, const py::object& options, const py::kwargs& fields);

    // The native handle; raises StateError after close().
    const ModelPtr& ptr() const {
        if (!p_) raise_state("the Model is closed");
        return p_;
    }
    pg_model* get() const { return ptr().get(); }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    pg_model_config config() const;
    int64_t num_params() const;
    bool mapped() const;
    // {"kind": "unknown" | "initialised" | "trained", "init_seed": int or None, "steps", "tokens"}.
    py::dict provenance() const;
    void allow_untrained_base(bool allow);
    // "fp32", "fp16", "bf16", "fp16_arithmetic" or "bf16_arithmetic", and the bytes they take.
    std::string weight_storage() const;
    int64_t weight_bytes() const;
    // Refused (StateError) while fp32_pin() is held and the conversion would free the fp32 weights.
    void set_weight_storage(const std::string& storage);
    // Numpy views of the fp32 weights keep this: it keeps the model alive, and set_weight_storage,
    // which frees those weights, is refused while it lives (the library itself refuses while a
    // trainer of the model lives).
    std::shared_ptr<void> fp32_pin() const;

    py::object tokenizer() const;
    void set_tokenizer(const Tokenizer& tok);

    void save(const PathArg& path, const py::object& options, const py::kwargs& fields) const;
    void export_to(const PathArg& path, const std::string& format) const;

    // Tensors (model_bindings.cpp) --------------------------------------------------------

    int num_tensors() const;
    pg_tensor_info info(int32_t index) const;
    // For Python: the name and data pointers point into the model, which the object may
    // outlive, so they are dropped (the name is the argument; Model.parameter gives the data).
    pg_tensor_info tensor_info(const std::string& name) const;
    int32_t index_of(const std::string& name) const;
    static std::vector<py::ssize_t> shape_of(const pg_tensor_info& i) {
        return std::vector<py::ssize_t>(i.shape, i.shape + i.n_dims);
    }
    std::vector<std::string> tensor_names() const;
    py::array tensor_view(int32_t index, bool writable);
    py::array parameter(const std::string& name, bool writable);
    py::dict parameters(bool writable);
    py::array flat_parameters() const;

    // Forward, evaluation and generation (inference_bindings.cpp) ---------------------------

    py::tuple forward(const TokensArg& tokens_obj, const TokensArg& targets_obj, int n_threads) const;
    pg_eval_result evaluate(const TokensArg& tokens_obj, const py::object& config, const py::object& progress,
                            const py::kwargs& fields) const;
    pg_eval_result evaluate_sampled(const TokensArg& tokens_obj, int n_batches, int batch_size,
                                    uint64_t seed, int n_threads) const;
    // The options come whole from Python (phonegpt/__init__.py builds them), the callable and
    // the stop strings beside them.
    py::array_t<int32_t> generate(const py::object& prompt_obj, const pg_sample_config& options,
                                  const std::vector<std::string>& stop, const py::object& on_token) const;

    static pg_interop_format format_from_name(const std::string& f);

private:
    ModelPtr p_;
};

// Each file's part of the module (module.cpp calls them in this order).
void bind_tokenizer(py::module_& m);
void bind_model(py::module_& m);      // after bind_structs (it extends ModelConfig)
void bind_session(py::module_& m);    // inference_bindings.cpp
void bind_trainer(py::module_& m);    // training_bindings.cpp
// What coord_bindings.cpp and lora_bindings.cpp borrow (binding_hooks.hpp; model_bindings.cpp).
Hooks binding_hooks();

}  // namespace pg_py
