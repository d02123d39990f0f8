// The Python binding of the federated loop's library parts (docs/federated.md), over the public
// C API only: the phone's data filter; LoRA adapters as a flat list of numpy arrays in the
// adapter's fixed tensor order (get_weights / set_weights) with fit / evaluate helpers, the
// shape of Flower's NumPyClient contract; Ed25519 keys and adapter signatures (from bytes and
// from files); averaging; and the coordinator's validation report.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <phonegpt/phonegpt_coordinator.h>  // the coordinator's tier: verify, average, validate

#include "binding_hooks.hpp"

namespace pg_py {

namespace {

Hooks H;  // set once by bind_coord

using AdapterPtr = std::shared_ptr<pg_lora_adapter>;
using ModelPtr = std::shared_ptr<pg_model>;

AdapterPtr own_adapter(pg_lora_adapter* a) { return AdapterPtr(a, pg_lora_adapter_free); }

std::string as_bytes(const py::object& obj, const char* what) { return text_bytes(obj, what); }

// Writes `text` to `path` through a temporary file and a rename (never a half-written file).
void write_text_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) H.raise_status(PG_ERR_IO, path + ": cannot open " + tmp + " for writing");
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        H.raise_status(PG_ERR_IO, path + ": writing the signature file failed");
    }
}

// ---------------------------------------------------------------------------------------
// The data filter.
// ---------------------------------------------------------------------------------------

class DataFilter {
public:
    DataFilter(const py::object& config, const py::object& replacement, const py::object& regions,
               const py::object& custom_rule)
        : rule_(custom_rule) {
        pg_data_filter_config c;
        pg_data_filter_config_default(&c);
        if (!config.is_none()) {
            const auto given = config.cast<pg_data_filter_config>();
            c.kinds = given.kinds;
            c.placeholder_kinds = given.placeholder_kinds;
        }
        if (!replacement.is_none()) {
            replacement_ = replacement.cast<std::string>();
            c.replacement = replacement_.c_str();
        }
        if (!regions.is_none()) {
            regions_ = regions.cast<std::string>();
            c.regions = regions_.c_str();
        }
        if (!rule_.is_none()) {
            if (!PyCallable_Check(rule_.ptr())) throw py::type_error("custom_rule must be callable");
            c.custom_rule = &DataFilter::call_rule;
            c.custom_user = this;
        }
        pg_data_filter* f = nullptr;
        H.check(pg_data_filter_create(&c, &f));
        p_.reset(f, pg_data_filter_free);
    }

    // (filtered text, DataFilterReport, [(begin, end, kind name)]) for UTF-8 `text`.
    py::tuple apply(const py::object& text_obj) {
        pg_data_filter* f = get();
        const std::string text = as_bytes(text_obj, "text");
        pending_.reset();
        pg_data_filter_report rep = sized<pg_data_filter_report>();
        const pg_status s = pg_data_filter_apply(f, text.data(), text.size(), &rep);
        if (pending_) {
            py::error_already_set e = std::move(*pending_);
            pending_.reset();
            throw e;
        }
        H.check(s);
        const std::string out =
            sized_output([&](char* t, size_t cap, size_t* len) { return pg_data_filter_output(f, t, cap, len); }, H.check);
        size_t n = 0;
        pg_status sn = pg_data_filter_spans(f, nullptr, 0, &n);
        if (sn != PG_OK && sn != PG_ERR_BUFFER_TOO_SMALL) H.check(sn);
        std::vector<pg_pii_span> spans(n);
        H.check(pg_data_filter_spans(f, spans.data(), spans.size(), &n));
        py::list items;
        for (const pg_pii_span& sp : spans)
            items.append(py::make_tuple(sp.begin, sp.end, pg_pii_kind_name(pg_pii_kind(sp.kind))));
        const bool as_str = py::isinstance<py::str>(text_obj);
        py::object filtered = as_str ? py::object(py::str(out)) : py::object(py::bytes(out));
        return py::make_tuple(filtered, rep, items);
    }

    void close() { p_.reset(); }
    bool closed() const { return !p_; }

private:
    pg_data_filter* get() const {
        if (!p_) H.raise_status(PG_ERR_STATE, "the DataFilter is closed");
        return p_.get();
    }
    // The app's rule: rule(text: bytes) -> iterable of (begin, end) byte offsets.
    static int call_rule(void* user, const char* text, size_t len, pg_pii_add_fn add, void* sink) {
        auto* self = static_cast<DataFilter*>(user);
        try {
            py::object spans = self->rule_(py::bytes(text, len));
            for (py::handle item : spans) {
                auto span = item.cast<std::pair<size_t, size_t>>();
                if (add(sink, span.first, span.second) != PG_OK) return 0;  // the apply fails with it
            }
            return 0;
        } catch (py::error_already_set& e) {
            self->pending_.emplace(std::move(e));
        } catch (const py::cast_error&) {
            PyErr_SetString(PyExc_TypeError, "custom_rule must return (begin, end) pairs");
            self->pending_.emplace();
        }
        return 1;
    }
    std::shared_ptr<pg_data_filter> p_;
    py::object rule_;
    std::string replacement_, regions_;
    std::optional<py::error_already_set> pending_;
};

// ---------------------------------------------------------------------------------------
// Adapters.
// ---------------------------------------------------------------------------------------

class Adapter {
public:
    explicit Adapter(AdapterPtr p) : p_(std::move(p)) {}

    static Adapter create(const ModelArg& model, const py::object& config, const py::object& layers,
                          const py::kwargs& fields) {
        const ModelPtr m = H.model_of(model);
        py::object cfg = config.is_none() ? py::module_::import("phonegpt._phonegpt").attr("LoraConfig")() : config;
        if (fields.size() > 0) cfg = cfg.attr("replace")(**fields);
        pg_lora_config c = cfg.cast<pg_lora_config>();
        std::vector<int32_t> ids;
        if (!layers.is_none()) ids = layers.cast<std::vector<int32_t>>();
        c.layers = ids.empty() ? nullptr : ids.data();
        c.n_layers = int32_t(ids.size());
        pg_lora_adapter* a = nullptr;
        H.check(pg_lora_adapter_create(m.get(), &c, &a));
        return Adapter(own_adapter(a));
    }
    static Adapter load(const PathArg& path, const ModelArg& base) {
        const std::string p = H.to_path(path);
        ModelPtr m = base.is_none() ? nullptr : H.model_of(base);
        pg_lora_adapter* a = nullptr;
        H.call_nogil([&] { return pg_lora_adapter_load(p.c_str(), m.get(), &a); });
        return Adapter(own_adapter(a));
    }
    void save(const PathArg& path) const {
        const std::string p = H.to_path(path);
        pg_lora_adapter* a = get();
        H.call_nogil([&] { return pg_lora_adapter_save(a, p.c_str()); });
    }

    const AdapterPtr& ptr() const {
        if (!p_) H.raise_status(PG_ERR_STATE, "the Adapter is closed");
        return p_;
    }
    pg_lora_adapter* get() const { return ptr().get(); }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    // The configuration without its layer list (layers gives it).
    pg_lora_config config() const {
        pg_lora_config c;
        pg_lora_config_default(&c);
        H.check(pg_lora_adapter_get_config(get(), &c));
        c.layers = nullptr;
        c.n_layers = 0;
        return c;
    }
    std::vector<int32_t> layers() const {
        pg_lora_config c;
        pg_lora_config_default(&c);
        H.check(pg_lora_adapter_get_config(get(), &c));
        return std::vector<int32_t>(c.layers, c.layers + c.n_layers);
    }
    float scale() const {
        float s = 0;
        H.check(pg_lora_adapter_scale(get(), &s));
        return s;
    }
    int64_t num_params() const {
        int64_t n = 0;
        H.check(pg_lora_adapter_num_params(get(), &n));
        return n;
    }
    std::vector<pg_tensor_info> infos() const {
        int32_t n = 0;
        H.check(pg_lora_adapter_num_tensors(get(), &n));
        std::vector<pg_tensor_info> out(static_cast<std::size_t>(n));
        for (int32_t i = 0; i < n; ++i) {
            out[std::size_t(i)] = sized<pg_tensor_info>();
            H.check(pg_lora_adapter_tensor_info(get(), i, &out[std::size_t(i)]));
        }
        return out;
    }
    std::vector<std::string> tensor_names() const {
        std::vector<std::string> names;
        for (const auto& t : infos()) names.emplace_back(t.name);
        return names;
    }
    // Copies of every tensor, in the fixed order of tensor_names() (Flower's get_parameters).
    py::list get_weights() const {
        py::list out;
        for (const auto& t : infos()) {
            py::array_t<float> a({py::ssize_t(t.shape[0]), py::ssize_t(t.shape[1])});
            std::memcpy(a.mutable_data(), t.data, std::size_t(t.numel) * sizeof(float));
            out.append(a);
        }
        return out;
    }
    // Replaces every tensor (the same order and shapes; float32 or convertible). Checked first:
    // a wrong count, shape or a non-finite value changes nothing.
    void set_weights(const py::sequence& weights) {
        const std::vector<pg_tensor_info> ts = infos();
        if (py::len(weights) != ts.size())
            H.raise_status(PG_ERR_INVALID_ARGUMENT, "set_weights: " + std::to_string(py::len(weights)) +
                                                        " arrays for an adapter of " + std::to_string(ts.size()) + " tensors");
        using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;
        std::vector<F32> arrays;
        for (std::size_t i = 0; i < ts.size(); ++i) {
            F32 a = F32::ensure(weights[i]);
            if (!a) throw py::type_error("set_weights: item " + std::to_string(i) + " is not a float array");
            if (a.ndim() != 2 || a.shape(0) != ts[i].shape[0] || a.shape(1) != ts[i].shape[1])
                H.raise_status(PG_ERR_GEOMETRY, std::string("set_weights: ") + ts[i].name + " must have shape (" +
                                                    std::to_string(ts[i].shape[0]) + ", " + std::to_string(ts[i].shape[1]) +
                                                    "), got " + std::string(py::str(a.attr("shape"))));
            const float* d = a.data();
            for (py::ssize_t k = 0; k < a.size(); ++k)
                if (!std::isfinite(d[k]))
                    H.raise_status(PG_ERR_NOT_FINITE, std::string("set_weights: ") + ts[i].name +
                                                          " holds a non-finite value at element " + std::to_string(k));
            arrays.push_back(a);
        }
        for (std::size_t i = 0; i < ts.size(); ++i) {
            float* dst = nullptr;
            H.check(pg_lora_adapter_tensor_data_mutable(get(), int32_t(i), &dst));
            std::memcpy(dst, arrays[i].data(), std::size_t(ts[i].numel) * sizeof(float));
        }
    }
    // {"steps", "tokens", "losses" (float32 array), "learning_rates"}.
    py::dict training_record() const {
        int64_t steps = 0, tokens = 0;
        const float *losses = nullptr, *lrs = nullptr;
        H.check(pg_lora_adapter_training_record(get(), &steps, &tokens, &losses, &lrs));
        py::array_t<float> l(steps), r(steps);
        if (steps > 0) {
            std::memcpy(l.mutable_data(), losses, std::size_t(steps) * sizeof(float));
            std::memcpy(r.mutable_data(), lrs, std::size_t(steps) * sizeof(float));
        }
        py::dict d;
        d["steps"] = steps;
        d["tokens"] = tokens;
        d["losses"] = l;
        d["learning_rates"] = r;
        return d;
    }
    void check_base(const ModelArg& model) const {
        const ModelPtr m = H.model_of(model);
        H.check(pg_lora_adapter_check_base(get(), m.get()));
    }

    // Trains the adapter over the frozen base for `steps` steps on `tokens` (a new LoRA trainer
    // each call: give each round its own seed). Returns the StepResults.
    py::list fit(const ModelArg& model, const TokensArg& tokens_obj, int64_t steps, const py::object& config,
                 const py::kwargs& fields) {
        const ModelPtr m = H.model_of(model);
        py::object cfg = config.is_none() ? py::module_::import("phonegpt._phonegpt").attr("TrainConfig")() : config;
        if (fields.size() > 0) cfg = cfg.attr("replace")(**fields);
        pg_train_config c = cfg.cast<pg_train_config>();
        clamp_warmup(c, std::min<int64_t>(steps, c.total_steps), !config.is_none() || fields.contains("warmup_steps"));
        TokenArray tokens = H.as_tokens(tokens_obj, "tokens", 1);
        pg_lora_adapter* a = get();
        pg_lora_trainer* t = nullptr;
        H.check(pg_lora_trainer_create(m.get(), a, &c, &t));
        std::unique_ptr<pg_lora_trainer, void (*)(pg_lora_trainer*)> trainer(t, pg_lora_trainer_free);
        H.call_nogil([&] { return pg_lora_trainer_set_data(t, tokens.data(), std::size_t(tokens.size())); });
        py::list results;
        for (int64_t i = 0; i < steps; ++i) {
            pg_step_result r = sized<pg_step_result>();
            H.call_nogil([&] { return pg_lora_trainer_step(t, &r); });
            results.append(r);
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        }
        return results;
    }
    // The whole-split loss of base + adapter on `tokens` (the adapter merged into a copy of the
    // base, which is then freed).
    py::object evaluate(const ModelArg& model, const TokensArg& tokens_obj, const py::object& config,
                        int32_t n_threads) const {
        const ModelPtr m = H.model_of(model);
        TokenArray tokens = H.as_tokens(tokens_obj, "tokens", 1);
        pg_eval_config c;
        pg_eval_config_default(&c);
        if (!config.is_none()) c = config.cast<pg_eval_config>();
        if (n_threads != 0) c.n_threads = n_threads;
        pg_lora_adapter* a = get();
        pg_eval_result r = sized<pg_eval_result>();
        H.call_nogil([&] {
            pg_model* merged = nullptr;
            pg_status s = pg_lora_merge(m.get(), a, c.n_threads, &merged);
            if (s == PG_OK)
                s = on_call_session(merged, c.n_threads, [&](pg_session* session) {
                    return pg_session_evaluate(session, tokens.data(), std::size_t(tokens.size()), &c, &r);
                });
            pg_model_free(merged);
            return s;
        });
        return py::cast(r);
    }

    // (average, LoraAverageReport) of `adapters` with `weights` (None = equal).
    static py::tuple average(const std::vector<Adapter>& adapters, const py::object& weights, const py::object& config,
                             const py::kwargs& fields) {
        py::object cfg = config.is_none() ? py::module_::import("phonegpt._phonegpt").attr("LoraAverageConfig")() : config;
        if (fields.size() > 0) cfg = cfg.attr("replace")(**fields);
        const pg_lora_average_config c = cfg.cast<pg_lora_average_config>();
        std::vector<const pg_lora_adapter*> in;
        for (const Adapter& a : adapters) in.push_back(a.get());
        std::vector<double> w;
        if (!weights.is_none()) w = weights.cast<std::vector<double>>();
        if (!w.empty() && w.size() != in.size())
            H.raise_status(PG_ERR_INVALID_ARGUMENT, "average: " + std::to_string(w.size()) + " weights for " +
                                                        std::to_string(in.size()) + " adapters");
        pg_lora_adapter* out = nullptr;
        pg_lora_average_report rep = sized<pg_lora_average_report>();
        H.call_nogil([&] { return pg_lora_average(in.data(), in.size(), w.empty() ? nullptr : w.data(), &c, &out, &rep); });
        return py::make_tuple(Adapter(own_adapter(out)), rep);
    }

    // The phone's differential privacy: clips this adapter's update from `start` and adds noise
    // (pg_lora_adapter_privatize); the LoraPrivacyReport.
    py::object privatize(const Adapter& start, const py::object& config, const py::kwargs& fields) {
        py::object cfg = config.is_none() ? py::module_::import("phonegpt._phonegpt").attr("LoraPrivacyConfig")() : config;
        if (fields.size() > 0) cfg = cfg.attr("replace")(**fields);
        const pg_lora_privacy_config c = cfg.cast<pg_lora_privacy_config>();
        pg_lora_privacy_report rep = sized<pg_lora_privacy_report>();
        pg_lora_adapter* a = get();
        const pg_lora_adapter* s0 = start.get();
        H.call_nogil([&] { return pg_lora_adapter_privatize(a, s0, &c, &rep); });
        return py::cast(rep);
    }

private:
    AdapterPtr p_;
};

// ---------------------------------------------------------------------------------------
// Keys and signatures.
// ---------------------------------------------------------------------------------------

std::string read_whole_file(const std::string& path) {
    char* data = nullptr;
    size_t len = 0;
    H.call_nogil([&] { return pg_read_file(path.c_str(), &data, &len); });
    std::string out(data, len);
    pg_buffer_free(data);
    return out;
}

class SigningKey {
public:
    explicit SigningKey(pg_signing_key* k) : p_(k, pg_signing_key_free) {}
    static SigningKey generate() {
        pg_signing_key* k = nullptr;
        H.check(pg_signing_key_generate(&k));
        return SigningKey(k);
    }
    static SigningKey from_seed(const py::bytes& seed) {
        const std::string s = seed;
        if (s.size() != 32) H.raise_status(PG_ERR_INVALID_ARGUMENT, "from_seed: the seed must be 32 bytes, got " + std::to_string(s.size()));
        pg_signing_key* k = nullptr;
        H.check(pg_signing_key_from_seed(reinterpret_cast<const uint8_t*>(s.data()), &k));
        return SigningKey(k);
    }
    static SigningKey load(const PathArg& path) {
        pg_signing_key* k = nullptr;
        H.check(pg_signing_key_load(H.to_path(path).c_str(), &k));
        return SigningKey(k);
    }
    void save(const PathArg& path) const { H.check(pg_signing_key_save(p_.get(), H.to_path(path).c_str())); }
    py::bytes public_key() const {
        uint8_t pub[32];
        H.check(pg_signing_key_public(p_.get(), pub));
        return py::bytes(reinterpret_cast<const char*>(pub), 32);
    }
    std::string key_id() const {
        uint8_t pub[32];
        H.check(pg_signing_key_public(p_.get(), pub));
        char id[17];
        H.check(pg_key_id(pub, id));
        return id;
    }
    // The signature file's text for the adapter file `file_bytes` holding `adapter`.
    std::string sign(const Adapter& adapter, const py::object& file_bytes) const {
        const std::string bytes = as_bytes(file_bytes, "file_bytes");
        return sized_output([&](char* t, size_t cap, size_t* len) {
            return pg_lora_adapter_sign(p_.get(), adapter.get(), bytes.data(), bytes.size(), t, cap, len);
        }, H.check);
    }
    // Signs the adapter file at `adapter_path` (loaded to read what it holds) and writes the
    // signature beside it (`signature_path`, default adapter_path + ".sig"); returns that path.
    std::string sign_file(const PathArg& adapter_path, const PathArg& signature_path) const {
        const std::string path = H.to_path(adapter_path);
        const std::string bytes = read_whole_file(path);
        const Adapter adapter = Adapter::load(adapter_path, py::none());
        const std::string sig = sign(adapter, py::bytes(bytes));
        const std::string out = signature_path.is_none() ? path + ".sig" : H.to_path(signature_path);
        write_text_file(out, sig);
        return out;
    }

private:
    std::shared_ptr<pg_signing_key> p_;
};

class TrustedKeys {
public:
    explicit TrustedKeys(const std::vector<py::bytes>& keys) {
        pg_trusted_keys* k = nullptr;
        H.check(pg_trusted_keys_create(&k));
        p_.reset(k, pg_trusted_keys_free);
        for (const py::bytes& key : keys) add(key);
    }
    void add(const py::bytes& public_key) {
        const std::string s = public_key;
        if (s.size() != 32) H.raise_status(PG_ERR_INVALID_ARGUMENT, "a public key is 32 bytes, got " + std::to_string(s.size()));
        H.check(pg_trusted_keys_add(p_.get(), reinterpret_cast<const uint8_t*>(s.data())));
    }
    // (valid, reason): reason is "check: detail" of the first failed check, "" when valid.
    py::tuple verify(const Adapter& adapter, const py::object& file_bytes, const py::object& signature) const {
        const std::string bytes = as_bytes(file_bytes, "file_bytes"), sig = as_bytes(signature, "signature");
        int32_t valid = 0;
        char reason[512];
        H.check(pg_lora_signature_verify(p_.get(), adapter.get(), bytes.data(), bytes.size(), sig.data(), sig.size(),
                                         &valid, reason, sizeof reason));
        return py::make_tuple(valid != 0, std::string(reason));
    }
    const pg_trusted_keys* get() const { return p_.get(); }

private:
    std::shared_ptr<pg_trusted_keys> p_;
};

// ---------------------------------------------------------------------------------------
// Validation.
// ---------------------------------------------------------------------------------------

class ValidationReport {
public:
    explicit ValidationReport(pg_validation_report* r) : p_(r, pg_validation_report_free) {}
    pg_validation_summary summary() const {
        pg_validation_summary s = sized<pg_validation_summary>();
        H.check(pg_validation_report_summary(p_.get(), &s));
        return s;
    }
    bool accepted() const { return summary().accepted != 0; }
    std::string key_id() const { return summary().key_id; }
    // [{"name", "outcome" ("passed" / "failed" / "skipped"), "message"}] in the report's order.
    py::list checks() const {
        static const char* const outcomes[] = {"passed", "failed", "skipped"};
        py::list out;
        const pg_validation_summary s = summary();
        for (int32_t i = 0; i < s.n_checks; ++i) {
            pg_validation_check c = sized<pg_validation_check>();
            H.check(pg_validation_report_check(p_.get(), i, &c));
            py::dict d;
            d["name"] = c.name;
            d["outcome"] = outcomes[c.outcome];
            d["message"] = c.message;
            out.append(d);
        }
        return out;
    }
    // "check: message" of the first failed check, or "".
    std::string first_failure() const {
        for (py::handle c : checks())
            if (c["outcome"].cast<std::string>() == "failed")
                return c["name"].cast<std::string>() + ": " + c["message"].cast<std::string>();
        return "";
    }
    std::string json() const {
        return sized_output([&](char* t, size_t cap, size_t* len) { return pg_validation_report_json(p_.get(), t, cap, len); },
                          H.check);
    }
    Adapter adapter() const {
        pg_lora_adapter* a = nullptr;
        H.check(pg_validation_report_adapter(p_.get(), &a));
        return Adapter(own_adapter(a));
    }
    pg_validation_report* get() const { return p_.get(); }

private:
    std::shared_ptr<pg_validation_report> p_;
};

class Validator {
public:
    Validator(const ModelArg& model, const py::object& policy, const py::object& trusted_keys, const py::kwargs& fields)
        : model_(H.model_of(model)) {
        py::object pol = policy.is_none() ? py::module_::import("phonegpt._phonegpt").attr("ValidationPolicy")() : policy;
        if (fields.size() > 0) pol = pol.attr("replace")(**fields);
        const pg_validation_policy c = pol.cast<pg_validation_policy>();
        pg_validator* v = nullptr;
        H.check(pg_validator_create(model_.get(), &c, &v));
        p_.reset(v, pg_validator_free);
        if (!trusted_keys.is_none()) set_trusted_keys(trusted_keys.cast<const TrustedKeys&>());
    }
    void set_trusted_keys(const TrustedKeys& keys) { H.check(pg_validator_set_trusted_keys(p_.get(), keys.get())); }
    void set_reference(const TokensArg& tokens_obj, const py::object& resumed_from) {
        TokenArray tokens = H.as_tokens(tokens_obj, "tokens", 1);
        const pg_lora_adapter* a = resumed_from.is_none() ? nullptr : resumed_from.cast<const Adapter&>().get();
        pg_validator* v = p_.get();
        H.call_nogil([&] { return pg_validator_set_reference(v, a, tokens.data(), std::size_t(tokens.size())); });
    }
    void set_heldout(const TokensArg& tokens_obj) {
        TokenArray tokens = H.as_tokens(tokens_obj, "tokens", 1);
        pg_validator* v = p_.get();
        H.call_nogil([&] { return pg_validator_set_heldout(v, tokens.data(), std::size_t(tokens.size())); });
    }
    ValidationReport validate(const py::object& data, const py::object& signature) const {
        const std::string bytes = as_bytes(data, "data");
        const bool has_sig = !signature.is_none();
        const std::string sig = has_sig ? as_bytes(signature, "signature") : std::string();
        pg_validation_report* r = nullptr;
        const pg_validator* v = p_.get();
        H.call_nogil([&] {
            return pg_lora_validate(v, bytes.data(), bytes.size(), has_sig ? sig.data() : nullptr, sig.size(), &r);
        });
        return ValidationReport(r);
    }
    ValidationReport validate_file(const PathArg& path, const PathArg& signature_path) const {
        const std::string p = H.to_path(path);
        const bool has_sig = !signature_path.is_none();
        const std::string sp = has_sig ? H.to_path(signature_path) : std::string();
        pg_validation_report* r = nullptr;
        const pg_validator* v = p_.get();
        H.call_nogil([&] { return pg_lora_validate_file(v, p.c_str(), has_sig ? sp.c_str() : nullptr, &r); });
        return ValidationReport(r);
    }
    void compare_round(const std::vector<ValidationReport>& reports) const {
        std::vector<pg_validation_report*> in;
        for (const ValidationReport& r : reports) in.push_back(r.get());
        const pg_validator* v = p_.get();
        H.call_nogil([&] { return pg_validation_reports_compare_round(v, in.data(), in.size()); });
    }

private:
    ModelPtr model_;  // borrowed by the validator: kept alive with it
    std::shared_ptr<pg_validator> p_;
};

template <class C, class PyC>
void add_close(PyC& cls, const char* what) {
    cls.def("close", &C::close, (std::string("Frees the native ") + what + " now.").c_str())
        .def_property_readonly("closed", &C::closed)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](C& self, py::args) { self.close(); });
}

}  // namespace

std::shared_ptr<pg_lora_adapter> adapter_of(const py::handle& adapter) {
    if (!py::isinstance<Adapter>(adapter)) throw py::type_error("expected a phonegpt.Adapter");
    return adapter.cast<const Adapter&>().ptr();
}

py::object wrap_adapter(pg_lora_adapter* adapter) { return py::cast(Adapter(own_adapter(adapter))); }

void bind_coord(py::module_& m, const Hooks& hooks) {
    H = hooks;
    using py::arg;

    py::class_<DataFilter> df(m, "DataFilter",
        "The phone's data filter, applied to text before tokenization (docs/privacy.md): removes\n"
        "e-mail addresses, phone numbers, payment cards, IBANs, IPv4/IPv6 addresses and whatever\n"
        "custom_rule(text: bytes) -> [(begin, end), ...] reports. config.kinds: the kinds acted on\n"
        "(others kept); config.placeholder_kinds: those written as <EMAIL>, <PHONE>, ...; regions:\n"
        "\"DE,GB\", how the app's national phone numbers are written.");
    df.def(py::init<const py::object&, const py::object&, const py::object&, const py::object&>(),
           arg("config") = py::none(), py::kw_only(), arg("replacement") = py::none(), arg("regions") = py::none(),
           arg("custom_rule") = py::none())
        .def("apply", &DataFilter::apply, arg("text"),
             "(filtered text, DataFilterReport, [(begin, end, kind)]): byte ranges of the input, never\n"
             "the removed text.");
    add_close<DataFilter>(df, "data filter");

    py::class_<Adapter> ad(m, "Adapter",
        "A LoRA adapter of a base model. get_weights() / set_weights() give its tensors as a flat\n"
        "list of float32 arrays in a fixed order (tensor_names()), with fit() / evaluate(): the\n"
        "shape of Flower's NumPyClient (docs/federated.md).");
    ad.def_static("create", &Adapter::create, arg("model"), arg("config") = py::none(), py::kw_only(),
                  arg("layers") = py::none(),
                  "A fresh adapter for model (LoraConfig fields as keywords; layers: the indices to adapt).")
        .def_static("load", &Adapter::load, arg("path"), arg("base") = py::none(),
                    "Loads an adapter file (with base: checks it is that base's).")
        .def_static("average", &Adapter::average, arg("adapters"), arg("weights") = py::none(),
                    arg("config") = py::none(),
                    "(average, LoraAverageReport); LoraAverageConfig fields (method, svd_rank, clip, clip_norm,\n"
                    "trim_fraction) as keywords.")
        .def("save", &Adapter::save, arg("path"), "Saves atomically and reads the file back before returning.")
        .def_property_readonly("config", &Adapter::config, "The LoraConfig (layers: see .layers).")
        .def_property_readonly("layers", &Adapter::layers, "The adapted layers ([] = every layer).")
        .def_property_readonly("scale", &Adapter::scale)
        .def_property_readonly("num_params", &Adapter::num_params)
        .def("tensor_names", &Adapter::tensor_names, "The tensors' names in the fixed order of get_weights().")
        .def("get_weights", &Adapter::get_weights, "Copies of every tensor (float32, [rank, in] / [out, rank]).")
        .def("set_weights", &Adapter::set_weights, arg("weights"),
             "Replaces every tensor (same order and shapes); checked before anything changes.")
        .def("training_record", &Adapter::training_record, "{'steps', 'tokens', 'losses', 'learning_rates'}.")
        .def("check_base", &Adapter::check_base, arg("model"), "Raises GeometryError unless model is the adapter's base.")
        .def("privatize", &Adapter::privatize, arg("start"), arg("config") = py::none(),
             "Differential privacy on the phone: clips the update from start (the round's starting adapter)\n"
             "and adds Gaussian noise; LoraPrivacyConfig fields (clip_norm, noise_multiplier, seed) as\n"
             "keywords. Returns the LoraPrivacyReport.")
        .def("fit", &Adapter::fit, arg("model"), arg("tokens"), arg("steps"), arg("config") = py::none(),
             "Trains the adapter over the frozen model for steps steps on tokens (TrainConfig fields as\n"
             "keywords). Returns the StepResults.")
        .def("evaluate", &Adapter::evaluate, arg("model"), arg("tokens"), arg("config") = py::none(),
             arg("n_threads") = 0, "The EvalResult of model + adapter on tokens (whole split).");
    add_close<Adapter>(ad, "adapter");

    py::class_<SigningKey>(m, "SigningKey", "An Ed25519 key (libsodium) that signs adapter files.")
        .def_static("generate", &SigningKey::generate)
        .def_static("from_seed", &SigningKey::from_seed, arg("seed"), "The key of a 32-byte seed (the same every time).")
        .def_static("load", &SigningKey::load, arg("path"))
        .def("save", &SigningKey::save, arg("path"), "Writes the key file (mode 0600, atomically).")
        .def_property_readonly("public_key", &SigningKey::public_key, "32 bytes.")
        .def_property_readonly("key_id", &SigningKey::key_id, "16 hex digits of SHA-256(public key).")
        .def("sign", &SigningKey::sign, arg("adapter"), arg("file_bytes"),
             "The signature file's text for the adapter file's bytes (the adapter they hold).")
        .def("sign_file", &SigningKey::sign_file, arg("adapter_path"), arg("signature_path") = py::none(),
             "Signs an adapter file and writes the signature beside it (default path + '.sig');\n"
             "returns the signature file's path.");

    py::class_<TrustedKeys>(m, "TrustedKeys", "The public keys a coordinator accepts.")
        .def(py::init<const std::vector<py::bytes>&>(), arg("keys") = std::vector<py::bytes>{})
        .def("add", &TrustedKeys::add, arg("public_key"))
        .def("verify", &TrustedKeys::verify, arg("adapter"), arg("file_bytes"), arg("signature"),
             "(valid, reason) of a signature for the adapter file's bytes.");

    py::class_<ValidationReport>(m, "ValidationReport", "Every check of one upload and its outcome.")
        .def_property_readonly("accepted", &ValidationReport::accepted, "True when no check failed.")
        .def_property_readonly("key_id", &ValidationReport::key_id, "The signer's key id ('' when unsigned).")
        .def_property_readonly("summary", &ValidationReport::summary, "The ValidationSummary (counts and figures).")
        .def_property_readonly("checks", &ValidationReport::checks, "[{'name', 'outcome', 'message'}], in order.")
        .def_property_readonly("first_failure", &ValidationReport::first_failure)
        .def("json", &ValidationReport::json, "The report as JSON text.")
        .def("adapter", &ValidationReport::adapter, "The adapter the upload holds (StateError if it did not load).")
        .def("__repr__", [](const ValidationReport& r) {
            const std::string why = r.first_failure();
            return std::string("ValidationReport(") + (r.accepted() ? "accepted" : "refused: " + why) + ")";
        });

    py::class_<Validator>(m, "Validator",
        "The coordinator's validator for one base (docs/federated.md): Validator(base, policy,\n"
        "trusted_keys=..., **ValidationPolicy fields).")
        .def(py::init<const ModelArg&, const py::object&, const py::object&, const py::kwargs&>(), arg("model"),
             arg("policy") = py::none(), py::kw_only(), arg("trusted_keys") = py::none())
        .def("set_trusted_keys", &Validator::set_trusted_keys, arg("keys"))
        .def("set_reference", &Validator::set_reference, arg("tokens"), arg("resumed_from") = py::none(),
             "Where trajectories must start: the loss of the base (+ resumed_from) on tokens.")
        .def("set_heldout", &Validator::set_heldout, arg("tokens"), "The held-out split (the base is evaluated now).")
        .def("validate", &Validator::validate, arg("data"), arg("signature") = py::none(),
             "The ValidationReport of an upload: the adapter file's bytes and the signature text.")
        .def("validate_file", &Validator::validate_file, arg("path"), arg("signature_path") = py::none())
        .def("compare_round", &Validator::compare_round, arg("reports"),
             "Adds the 'round norm' check to every report of the round (update norm over the round's median).");
    m.def("privacy_epsilon", [](double noise_multiplier, int64_t rounds, double delta) {
            double eps = 0.0, order = 0.0;
            H.check(pg_privacy_epsilon(noise_multiplier, rounds, delta, &eps, &order));
            return py::make_tuple(eps, order);
        }, arg("noise_multiplier"), arg("rounds"), arg("delta"),
        "(epsilon, order): the (epsilon, delta)-DP a phone has spent after `rounds` rounds of\n"
        "privatize() at noise_multiplier (Gaussian mechanism, RDP composition, no subsampling).");
}

}  // namespace pg_py
