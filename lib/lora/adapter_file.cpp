#include "lora/adapter_file.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "core/error.hpp"
#include "core/bytes.hpp"
#include "io/checkpoint.hpp"
#include "core/checksum.hpp"
#include "core/hex.hpp"
#include "core/json.hpp"
#include "io/safetensors.hpp"

namespace pg::lora {

namespace {

constexpr const char* kPeftPrefix = "base_model.model.transformer.";
constexpr const char* kLlamaPeftPrefix = "base_model.model.";
// Metadata keys, in the order the metadata checksum covers them.
constexpr const char* kKeyFormat = "phonegpt.adapter_format";
constexpr const char* kKeyConfig = "phonegpt.lora_config";
constexpr const char* kKeyBase = "phonegpt.base";
constexpr const char* kKeyTraining = "phonegpt.training";
constexpr const char* kKeyChecksums = "phonegpt.checksums";
constexpr const char* kKeyMetaSum = "phonegpt.metadata_xxh64";
constexpr const char* kCoveredKeys[] = {kKeyFormat, kKeyConfig, kKeyBase, kKeyTraining, kKeyChecksums};
// Since 1.1, only in adapter training checkpoints (covered by the metadata checksum when present,
// so files without it hash as 1.0 files did): the trainer state's TRAN bytes in hex, and the
// AdamW moments as two more tensors after the adapter's.
constexpr const char* kKeyTrainState = "phonegpt.train_state";
constexpr const char* kAdamM = "phonegpt.optimizer.adam_m";
constexpr const char* kAdamV = "phonegpt.optimizer.adam_v";

uint64_t parse_u64_text(const std::string& s, const std::string& what) {
    require(!s.empty() && s.size() <= 20, PG_ERR_FORMAT, what + ": \"" + s + "\" is not a decimal integer");
    uint64_t v = 0;
    for (char c : s) {
        require(c >= '0' && c <= '9', PG_ERR_FORMAT, what + ": \"" + s + "\" is not a decimal integer");
        const uint64_t d = uint64_t(c - '0');
        require(v <= (UINT64_MAX - d) / 10, PG_ERR_FORMAT, what + ": \"" + s + "\" does not fit 64 bits");
        v = v * 10 + d;
    }
    return v;
}

uint64_t metadata_checksum(const std::map<std::string, std::string>& meta) {
    io::Xxh64 h;
    for (const char* key : kCoveredKeys) {
        auto it = meta.find(key);
        const std::string& v = it == meta.end() ? std::string() : it->second;
        h.update(key, std::strlen(key) + 1);
        h.update(v.data(), v.size());
        h.update("", 1);
    }
    auto state = meta.find(kKeyTrainState);
    if (state != meta.end()) {
        h.update(kKeyTrainState, std::strlen(kKeyTrainState) + 1);
        h.update(state->second.data(), state->second.size());
        h.update("", 1);
    }
    return h.digest();
}

// phonegpt.train_state's bytes: TRAN's (io::encode_train_state), then, for a run whose dropout
// ramps up, the ramp's length as DRMP stores it in a checkpoint (int32 > 0). A reader that
// predates the ramp refuses the trailing bytes rather than resume the run without it.
std::vector<uint8_t> train_state_bytes(const TrainerState& s) {
    io::ByteWriter w;
    io::encode_train_state(w, s);
    if (s.config.dropout_ramp_steps > 0) w.put<int32_t>(s.config.dropout_ramp_steps);
    return w.bytes();
}

TrainerState decode_train_state_bytes(const std::vector<uint8_t>& bytes, const std::string& what) {
    const std::size_t tran_size = train_state_bytes(TrainerState{}).size();
    io::ByteReader reader(bytes.data(), bytes.size() < tran_size ? bytes.size() : tran_size, what);
    TrainerState s = io::decode_train_state(reader);
    if (bytes.size() > tran_size) {
        io::ByteReader ramp(bytes.data() + tran_size, bytes.size() - tran_size, what + " (dropout ramp)");
        s.config.dropout_ramp_steps = ramp.get<int32_t>("dropout_ramp_steps");
        ramp.expect_end();
        // The range is checked with the rest of the configuration when the trainer resumes.
        require(s.config.dropout_ramp_steps != 0, PG_ERR_FORMAT, what + ": a dropout ramp of 0 steps is never written");
    }
    return s;
}

std::string config_json(const LoraConfig& c) {
    io::JsonObject o;
    o.integer("rank", c.rank).num("alpha", double(c.alpha)).boolean("use_rslora", c.use_rslora);
    o.num("dropout", double(c.dropout)).integer("target_modules", c.target_modules);
    if (c.layers.empty()) {
        o.null("layers");
    } else {
        std::vector<long long> layers(c.layers.begin(), c.layers.end());
        o.integers("layers", layers);
    }
    o.str("init_seed", std::to_string(c.init_seed)).boolean("freeze_a", c.freeze_a);
    return o.text();
}

const char* provenance_kind_name(Provenance::Kind k) {
    switch (k) {
        case Provenance::Kind::initialised: return "initialised";
        case Provenance::Kind::trained: return "trained";
        case Provenance::Kind::unknown: break;
    }
    return "unknown";
}

std::string base_json(const BaseIdentity& b) {
    const ModelConfig& m = b.config;
    io::JsonObject o;
    o.integer("n_layer", m.n_layer).integer("n_head", m.n_head).integer("n_embd", m.n_embd);
    o.integer("n_ctx", m.n_ctx).integer("vocab_size", m.vocab_size).integer("padded_vocab_size", m.padded_vocab_size);
    o.num("layernorm_eps", double(m.layernorm_eps));
    const auto arch = architecture_fields(m);
    if (!arch.empty()) {  // 1.4: a Llama-family base
        io::JsonObject a;
        for (const ArchitectureField& field : arch)
            field.real ? a.num(field.name, field.value) : a.integer(field.name, int64_t(field.value));
        o.object("architecture", a);
    }
    o.str("weights_xxh64", io::hex64(b.weights_hash));
    if (b.has_tokenizer) {
        io::JsonObject t;
        t.integer("kind", b.tokenizer_kind).integer("vocab_size", b.tokenizer_vocab).str("xxh64", io::hex64(b.tokenizer_hash));
        o.object("tokenizer", t);
    } else {
        o.null("tokenizer");
    }
    o.str("fingerprint", io::hex64(b.fingerprint())).str("description", b.describe());
    const Provenance& p = b.provenance;
    io::JsonObject prov;
    prov.str("kind", provenance_kind_name(p.kind));
    if (p.has_init_seed)
        prov.str("init_seed", std::to_string(p.init_seed));
    else
        prov.null("init_seed");
    prov.integer("steps", p.steps).integer("tokens", p.tokens).str("description", p.describe());
    o.object("provenance", prov);
    return o.text();
}

std::string training_json(const TrainingRecord& r) {
    io::JsonObject o;
    o.integer("steps", r.steps).integer("tokens", r.tokens).str("seed", std::to_string(r.seed));
    o.floats_or_tokens("losses", r.losses);
    o.floats_or_tokens("learning_rates", r.learning_rates);
    return o.text();
}


// Equal floats, any NaN equal to any NaN (a NaN's payload is not kept by the file).
bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    return true;
}

// Readers of the metadata's JSON values: each names the key and field on failure.
struct Fields {
    const io::JsonValue& v;
    std::string what;
    const io::JsonValue& get(const char* key) const {
        const io::JsonValue* f = v.find(key);
        require(f != nullptr, PG_ERR_FORMAT, what + ": field \"" + key + "\" is missing");
        return *f;
    }
    std::string at(const char* key) const { return what + " " + key; }
    long long integer(const char* key, long long lo, long long hi) const {
        const uint64_t x = get(key).as_u64(at(key));
        require(x >= uint64_t(lo) && x <= uint64_t(hi), PG_ERR_FORMAT,
                at(key) + " = " + std::to_string(x) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return static_cast<long long>(x);
    }
    float real(const char* key) const {
        const double d = get(key).as_double(at(key));
        const float f = static_cast<float>(d);
        require(double(f) == d, PG_ERR_FORMAT, at(key) + " is not a float32 value");
        return f;
    }
    bool flag(const char* key) const { return get(key).as_bool(at(key)); }
    std::string text(const char* key) const { return get(key).as_string(at(key)); }
    void only(std::initializer_list<const char*> keys) const {
        for (const auto& [k, _] : v.as_object(what)) {
            bool known = false;
            for (const char* key : keys) known = known || k == key;
            require(known, PG_ERR_FORMAT, what + ": unknown field \"" + k + "\"");
        }
    }
};

io::JsonValue parse_value(const std::map<std::string, std::string>& meta, const char* key, const std::string& name) {
    auto it = meta.find(key);
    require(it != meta.end(), PG_ERR_FORMAT, name + ": the metadata has no \"" + std::string(key) + "\"");
    io::JsonValue v = io::parse_json(it->second.data(), it->second.size(), name + ": " + key);
    v.as_object(name + ": " + key);
    return v;
}

LoraConfig decode_config(const io::JsonValue& v, const std::string& what, int minor) {
    Fields f{v, what};
    f.only({"rank", "alpha", "use_rslora", "dropout", "target_modules", "layers", "init_seed", "freeze_a"});
    LoraConfig c;
    c.rank = int(f.integer("rank", 1, PG_LORA_MAX_RANK));
    c.alpha = f.real("alpha");
    c.use_rslora = f.flag("use_rslora");
    c.dropout = f.real("dropout");
    c.target_modules = uint32_t(f.integer("target_modules", 1,
                                          minor >= kAdapterLlamaMinor ? PG_LORA_ALL_LINEARS | PG_LORA_LLAMA_ALL_LINEARS
                                                                      : PG_LORA_ALL_LINEARS));
    const io::JsonValue& layers = f.get("layers");
    if (!layers.is_null())
        for (const io::JsonValue& l : layers.as_array(f.at("layers"))) {
            const uint64_t layer = l.as_u64(f.at("layers entry"));
            require(layer < uint64_t(kMaxLayers), PG_ERR_FORMAT, f.at("layers") + " holds " + std::to_string(layer));
            c.layers.push_back(int32_t(layer));
        }
    c.init_seed = parse_u64_text(f.text("init_seed"), f.at("init_seed"));
    c.freeze_a = f.flag("freeze_a");
    try {
        validate_lora_config(c);
    } catch (const Error& e) {
        throw Error(PG_ERR_FORMAT, what + ": " + e.what());
    }
    require(layers.is_null() || !c.layers.empty(), PG_ERR_FORMAT, f.at("layers") + " is empty (null means every layer)");
    return c;
}

// The base's provenance (format 1.2): a kind and the numbers that go with it, consistent with it.
Provenance decode_provenance(const io::JsonValue& v, const std::string& what) {
    Fields f{v, what};
    f.only({"kind", "init_seed", "steps", "tokens", "description"});
    Provenance p;
    const std::string kind = f.text("kind");
    if (kind == "initialised") p.kind = Provenance::Kind::initialised;
    else if (kind == "trained") p.kind = Provenance::Kind::trained;
    else require(kind == "unknown", PG_ERR_FORMAT, f.at("kind") + " \"" + kind + "\" is not initialised, trained or unknown");
    const io::JsonValue& seed = f.get("init_seed");
    p.has_init_seed = !seed.is_null();
    if (p.has_init_seed) p.init_seed = parse_u64_text(seed.as_string(f.at("init_seed")), f.at("init_seed"));
    p.steps = f.integer("steps", 0, int64_t(1) << 50);
    p.tokens = f.integer("tokens", 0, int64_t(1) << 62);
    const bool consistent = p.kind == Provenance::Kind::trained ? p.steps > 0
                                                                : p.steps == 0 && p.tokens == 0 &&
                                                                      (p.kind != Provenance::Kind::initialised || p.has_init_seed);
    require(consistent, PG_ERR_FORMAT, what + ": kind " + kind + " with " + std::to_string(p.steps) + " steps, " +
                                           std::to_string(p.tokens) + " tokens" + (p.has_init_seed ? "" : ", no seed"));
    f.text("description");  // for people
    return p;
}

// A Llama-family base's architecture fields (1.4) over the GPT-2 geometry `m` read before them.
ModelConfig decode_architecture(const io::JsonValue& v, const std::string& what, const ModelConfig& m) {
    Fields f{v, what};
    f.only({"norm", "qk_norm", "positions", "rope_theta", "rope_scaling_factor", "rope_low_freq_factor",
            "rope_high_freq_factor", "rope_original_max_positions", "n_kv_head", "head_dim", "qkv_bias", "linear_bias",
            "mlp", "mlp_hidden", "tied_head"});
    pg_model_config c = model_config_to_c(m);
    auto whole = [&](const char* name) { return int32_t(f.integer(name, 0, INT32_MAX)); };
    c.norm = pg_norm_kind(whole("norm"));
    c.qk_norm = whole("qk_norm");
    c.positions = pg_position_kind(whole("positions"));
    c.rope_theta = f.real("rope_theta");
    c.rope_scaling_factor = f.real("rope_scaling_factor");
    c.rope_low_freq_factor = f.real("rope_low_freq_factor");
    c.rope_high_freq_factor = f.real("rope_high_freq_factor");
    c.rope_original_max_positions = whole("rope_original_max_positions");
    c.n_kv_head = whole("n_kv_head");
    c.head_dim = whole("head_dim");
    c.qkv_bias = whole("qkv_bias");
    c.linear_bias = whole("linear_bias");
    c.mlp = pg_mlp_kind(whole("mlp"));
    c.mlp_hidden = whole("mlp_hidden");
    c.tied_head = whole("tied_head");
    ModelConfig out = model_config_from_c(c);  // checks each enumeration and flag
    out.padded_vocab_size = m.padded_vocab_size;
    require(!out.is_gpt2(), PG_ERR_FORMAT, what + " describes GPT-2's block, which has none");
    return out;
}

BaseIdentity decode_base(const io::JsonValue& v, const std::string& what, int minor) {
    Fields f{v, what};
    f.only({"n_layer", "n_head", "n_embd", "n_ctx", "vocab_size", "padded_vocab_size", "layernorm_eps",
            "architecture", "weights_xxh64", "tokenizer", "fingerprint", "description", "provenance"});
    BaseIdentity b;
    ModelConfig& m = b.config;
    m.n_layer = int(f.integer("n_layer", 1, kMaxLayers));
    m.n_head = int(f.integer("n_head", 1, kMaxEmbd));
    m.n_embd = int(f.integer("n_embd", 1, kMaxEmbd));
    m.n_ctx = int(f.integer("n_ctx", 1, kMaxCtx));
    m.vocab_size = int(f.integer("vocab_size", 1, kMaxVocab));
    m.padded_vocab_size = int(f.integer("padded_vocab_size", 1, kMaxVocab));
    m.layernorm_eps = f.real("layernorm_eps");
    const io::JsonValue* arch = v.find("architecture");
    require(!arch || minor >= kAdapterLlamaMinor, PG_ERR_FORMAT,
            what + ": an architecture, which format 1." + std::to_string(kAdapterLlamaMinor) + " introduced");
    try {
        if (arch) m = decode_architecture(*arch, what + " architecture", m);
        validate_model_config(m);
    } catch (const Error& e) {
        throw Error(PG_ERR_FORMAT, what + ": " + e.what());
    }
    b.weights_hash = io::parse_hex64(f.text("weights_xxh64"), f.at("weights_xxh64"));
    const io::JsonValue& tok = f.get("tokenizer");
    if (!tok.is_null()) {
        Fields t{tok, what + " tokenizer"};
        t.only({"kind", "vocab_size", "xxh64"});
        b.has_tokenizer = true;
        b.tokenizer_kind = static_cast<pg_tokenizer_kind>(t.integer("kind", 1, 255));
        b.tokenizer_vocab = int32_t(t.integer("vocab_size", 1, kMaxVocab));
        b.tokenizer_hash = io::parse_hex64(t.text("xxh64"), t.at("xxh64"));
    }
    const uint64_t stored = io::parse_hex64(f.text("fingerprint"), f.at("fingerprint"));
    require(stored == b.fingerprint(), PG_ERR_CHECKSUM,
            what + ": fingerprint " + io::hex64(stored) + " does not match the base identity it summarises (" +
                io::hex64(b.fingerprint()) + ")");
    f.text("description");  // for people; the identity above is what is compared
    // Since 1.3 the base's provenance is always there; before, it was not recorded (unknown).
    if (minor >= kAdapterProvenanceMinor || v.find("provenance"))
        b.provenance = decode_provenance(f.get("provenance"), what + " provenance");
    return b;
}

// `tokens_allowed`: the file's version is 1.2 or later, so a non-finite value may be recorded as
// "nan" / "inf" / "-inf".
TrainingRecord decode_training(const io::JsonValue& v, const std::string& what, bool tokens_allowed) {
    Fields f{v, what};
    f.only({"steps", "tokens", "seed", "losses", "learning_rates"});
    TrainingRecord r;
    r.steps = f.integer("steps", 0, int64_t(1) << 50);
    r.tokens = f.integer("tokens", 0, int64_t(1) << 62);
    r.seed = parse_u64_text(f.text("seed"), f.at("seed"));
    auto floats = [&](const char* key, std::vector<float>& out) {
        const auto& items = f.get(key).as_array(f.at(key));
        require(int64_t(items.size()) == r.steps, PG_ERR_FORMAT,
                f.at(key) + " has " + std::to_string(items.size()) + " entries for " + std::to_string(r.steps) + " steps");
        for (const io::JsonValue& x : items) {
            float token = 0.0f;
            if (x.is_string()) {
                const std::string& text = x.as_string(f.at(key));
                require(io::parse_nonfinite_token(text, &token), PG_ERR_FORMAT,
                        f.at(key) + " holds the string \"" + text + "\", not a number, \"nan\", \"inf\" or \"-inf\"");
                require(tokens_allowed, PG_ERR_FORMAT,
                        f.at(key) + " holds \"" + text + "\": a non-finite value, which format 1." +
                            std::to_string(kAdapterNonFiniteMinor) + " introduced");
                out.push_back(token);
                continue;
            }
            const double d = x.as_double(f.at(key));
            require(double(float(d)) == d, PG_ERR_FORMAT, f.at(key) + " holds a value that is not a float32");
            out.push_back(float(d));
        }
    };
    floats("losses", r.losses);
    floats("learning_rates", r.learning_rates);
    return r;
}

}  // namespace

std::string peft_tensor_name(const AdapterTensor& t) {
    // A Llama-family table name already starts at the model ("model.layers.{i}...").
    return t.name.compare(0, 6, "model.") == 0 ? kLlamaPeftPrefix + t.name : kPeftPrefix + t.name;
}

std::string base_identity_json(const BaseIdentity& base) { return base_json(base); }

int written_minor(const Adapter& adapter) {
    return adapter.base().config.is_gpt2() ? kAdapterProvenanceMinor : kAdapterLlamaMinor;
}

namespace {

// The adapter file, and with `state` the adapter training checkpoint (format 1.1).
void write_adapter_file(const Adapter& adapter, const TrainerState* state, io::ByteSink& sink) {
    const std::size_t n = std::size_t(adapter.num_params());
    if (state)
        require(state->adam_m.size() == n && state->adam_v.size() == n, PG_ERR_INTERNAL,
                "adapter training checkpoint: the moments do not match the adapter");
    std::map<std::string, std::string> meta;
    meta[kKeyFormat] = std::to_string(kAdapterFormatMajor) + "." + std::to_string(written_minor(adapter));
    meta[kKeyConfig] = config_json(adapter.config());
    meta[kKeyBase] = base_json(adapter.base());
    meta[kKeyTraining] = training_json(adapter.record());
    io::JsonObject sums;
    for (const AdapterTensor& t : adapter.tensors())
        sums.str(peft_tensor_name(t), io::hex64(io::xxh64(adapter.params() + t.offset, std::size_t(t.numel) * 4)));
    if (state) {
        sums.str(kAdamM, io::hex64(io::xxh64(state->adam_m.data(), n * 4)));
        sums.str(kAdamV, io::hex64(io::xxh64(state->adam_v.data(), n * 4)));
        meta[kKeyTrainState] = io::hex_encode(train_state_bytes(*state));
    }
    meta[kKeyChecksums] = sums.text();
    const uint64_t meta_sum = metadata_checksum(meta);

    io::JsonObject metadata;
    metadata.str("format", "pt");
    for (const char* key : kCoveredKeys) metadata.str(key, meta[key]);
    if (state) metadata.str(kKeyTrainState, meta[kKeyTrainState]);
    metadata.str(kKeyMetaSum, io::hex64(meta_sum));
    std::vector<io::SafetensorsTensor> tensors;
    for (const AdapterTensor& t : adapter.tensors()) {
        const uint64_t begin = uint64_t(t.offset) * 4;
        tensors.push_back({peft_tensor_name(t), "F32", {uint64_t(t.shape[0]), uint64_t(t.shape[1])}, begin,
                           begin + uint64_t(t.numel) * 4});
    }
    if (state) {
        tensors.push_back({kAdamM, "F32", {uint64_t(n)}, uint64_t(n) * 4, uint64_t(n) * 8});
        tensors.push_back({kAdamV, "F32", {uint64_t(n)}, uint64_t(n) * 8, uint64_t(n) * 12});
    }
    io::write_safetensors_header(sink, metadata, tensors);
    // The allocation is the tensors back to back in table order: one write (then the moments).
    sink.write(adapter.params(), n * 4);
    if (state) {
        sink.write(state->adam_m.data(), n * 4);
        sink.write(state->adam_v.data(), n * 4);
    }
}

}  // namespace

void write_adapter(const Adapter& adapter, io::ByteSink& sink) { write_adapter_file(adapter, nullptr, sink); }

void write_adapter_training(const Adapter& adapter, const TrainerState& state, io::ByteSink& sink) {
    write_adapter_file(adapter, &state, sink);
}

namespace {

// Reads a tensor of `count` floats named `name` into dst and checks its checksum from `sums`.
void read_checked_tensor(const io::ByteSource& src, const io::SafetensorsHeader& file, const io::JsonValue& sums,
                         const std::string& peft, float* dst, std::size_t count) {
    const std::string& name = src.name();
    const io::SafetensorsTensor* ft = file.find(peft);
    require(ft != nullptr, PG_ERR_FORMAT, name + ": the file lacks tensor \"" + peft + "\"");
    require(ft->dtype == "F32", PG_ERR_FORMAT, name + ": tensor \"" + peft + "\" is " + ft->dtype + ", not F32");
    const io::JsonValue* stored = sums.find(peft);
    require(stored != nullptr, PG_ERR_FORMAT, name + ": no checksum for tensor \"" + peft + "\"");
    src.read_at(file.data_start + ft->begin, dst, count * 4, "adapter tensor data");
    const uint64_t computed = io::xxh64(dst, count * 4);
    const uint64_t want = io::parse_hex64(stored->as_string(name + ": checksum"), name + ": checksum of " + peft);
    require(computed == want, PG_ERR_CHECKSUM,
            name + ": tensor \"" + peft + "\" checksum mismatch (stored " + io::hex64(want) + ", computed " +
                io::hex64(computed) + "): the file is corrupt");
}

Adapter read_adapter_file(const io::ByteSource& src, TrainerState* state);

}  // namespace

Adapter read_adapter(const io::ByteSource& src) { return read_adapter_file(src, nullptr); }

Adapter read_adapter_training(const io::ByteSource& src, TrainerState& state) { return read_adapter_file(src, &state); }

namespace {

Adapter read_adapter_file(const io::ByteSource& src, TrainerState* state) {
    const std::string& name = src.name();
    const io::SafetensorsHeader file = io::read_safetensors_header(src);
    std::map<std::string, std::string> meta(file.metadata.begin(), file.metadata.end());
    const auto version = meta.find(kKeyFormat);
    require(version != meta.end(), PG_ERR_FORMAT,
            name + ": not a phonegpt adapter file (no \"" + std::string(kKeyFormat) +
                "\" in the safetensors metadata; a PEFT adapter is imported with pg_lora_import_peft)");
    int major = 0, minor = 0;
    char tail = 0;
    require(std::sscanf(version->second.c_str(), "%d.%d%c", &major, &minor, &tail) == 2 && major >= 0 && minor >= 0,
            PG_ERR_FORMAT, name + ": adapter format version \"" + version->second + "\" is not MAJOR.MINOR");
    require(major != 0, PG_ERR_FORMAT, name + ": adapter format version " + version->second + " was never written");
    require(major <= kAdapterFormatMajor, PG_ERR_VERSION,
            name + ": adapter format version " + version->second + " is newer than this library reads (majors up to " +
                std::to_string(kAdapterFormatMajor) + "); use a newer libphonegpt");
    const auto stored_sum = meta.find(kKeyMetaSum);
    require(stored_sum != meta.end(), PG_ERR_FORMAT, name + ": the metadata has no \"" + std::string(kKeyMetaSum) + "\"");
    const uint64_t sum = metadata_checksum(meta);
    require(io::parse_hex64(stored_sum->second, name + ": " + kKeyMetaSum) == sum, PG_ERR_CHECKSUM,
            name + ": metadata checksum mismatch (stored " + stored_sum->second + ", computed " + io::hex64(sum) +
                "): the file is corrupt");

    const LoraConfig cfg = decode_config(parse_value(meta, kKeyConfig, name), name + ": " + kKeyConfig,
                                         major > 1 ? kAdapterFormatMinor : minor);
    const BaseIdentity base = decode_base(parse_value(meta, kKeyBase, name), name + ": " + kKeyBase, minor);
    Adapter adapter = [&] {
        try {
            return Adapter(cfg, base);
        } catch (const Error& e) {
            throw Error(PG_ERR_FORMAT, name + ": the configuration does not fit the base it names: " + e.what());
        }
    }();
    adapter.record() = decode_training(parse_value(meta, kKeyTraining, name), name + ": " + kKeyTraining,
                                       major > 1 || minor >= kAdapterNonFiniteMinor);
    const io::JsonValue sums = parse_value(meta, kKeyChecksums, name);
    const auto train_state = meta.find(kKeyTrainState);
    const bool has_state = train_state != meta.end();
    require(!has_state || major > 1 || minor >= kAdapterTrainingMinor, PG_ERR_FORMAT,
            name + ": adapter format " + version->second + " has a training state, which 1." +
                std::to_string(kAdapterTrainingMinor) + " introduced");
    if (state)
        require(has_state, PG_ERR_STATE,
                name + ": an adapter file without training state (saved with pg_lora_adapter_save; "
                       "a training checkpoint is saved with pg_lora_trainer_save)");

    // The configuration and the base geometry decide the tensors; the file must hold exactly those
    // (and the two moments in a training checkpoint).
    const auto& expected = adapter.tensors();
    const std::size_t n_tensors = expected.size() + (has_state ? 2 : 0);
    const std::string geometry = "its configuration (rank " + std::to_string(cfg.rank) + ", target_modules " +
                                 std::to_string(cfg.target_modules) + ", " +
                                 (cfg.layers.empty() ? std::string("every layer") : std::to_string(cfg.layers.size()) + " layers") +
                                 " of a base with n_layer " + std::to_string(base.config.n_layer) + ", n_embd " +
                                 std::to_string(base.config.n_embd) + ")";
    require(file.tensors.size() == n_tensors, PG_ERR_FORMAT,
            name + ": the file holds " + std::to_string(file.tensors.size()) + " tensors but " + geometry + " has " +
                std::to_string(expected.size()) + (has_state ? " plus the 2 AdamW moments" : ""));
    require(sums.as_object(name + ": checksums").size() == n_tensors, PG_ERR_FORMAT,
            name + ": " + kKeyChecksums + " has " + std::to_string(sums.as_object("").size()) + " entries for " +
                std::to_string(n_tensors) + " tensors");
    for (const AdapterTensor& t : expected) {
        const std::string peft = peft_tensor_name(t);
        const io::SafetensorsTensor* ft = file.find(peft);
        require(ft != nullptr, PG_ERR_FORMAT, name + ": " + geometry + " needs tensor \"" + peft + "\", which the file lacks");
        require(ft->shape.size() == 2 && ft->shape[0] == uint64_t(t.shape[0]) && ft->shape[1] == uint64_t(t.shape[1]),
                PG_ERR_FORMAT,
                name + ": tensor \"" + peft + "\" does not have the shape [" + std::to_string(t.shape[0]) + ", " +
                    std::to_string(t.shape[1]) + "] that " + geometry + " gives it");
        float* dst = adapter.params() + t.offset;
        read_checked_tensor(src, file, sums, peft, dst, std::size_t(t.numel));
        for (int64_t i = 0; i < t.numel; ++i)
            require(std::isfinite(dst[i]), PG_ERR_FORMAT,
                    name + ": tensor \"" + peft + "\" holds a non-finite value at element " + std::to_string(i));
    }
    if (!has_state) return adapter;

    // The training state: TRAN's bytes, then the moments (their values are the trainer's to check).
    const std::vector<uint8_t> tran = io::parse_hex(train_state->second, name + ": " + kKeyTrainState);
    TrainerState s = decode_train_state_bytes(tran, name + ": " + kKeyTrainState);
    const std::size_t n = std::size_t(adapter.num_params());
    for (const char* moment : {kAdamM, kAdamV}) {
        const io::SafetensorsTensor* ft = file.find(moment);
        require(ft != nullptr && ft->shape.size() == 1 && ft->shape[0] == uint64_t(n), PG_ERR_FORMAT,
                name + ": tensor \"" + std::string(moment) + "\" must be [" + std::to_string(n) + "] (one per adapter parameter)");
    }
    if (!state) return adapter;  // a training checkpoint loaded as an adapter: the moments are not wanted
    s.adam_m.resize(n);
    s.adam_v.resize(n);
    read_checked_tensor(src, file, sums, kAdamM, s.adam_m.data(), n);
    read_checked_tensor(src, file, sums, kAdamV, s.adam_v.data(), n);
    *state = std::move(s);
    return adapter;
}

}  // namespace

bool same_adapter(const Adapter& a, const Adapter& b) {
    const LoraConfig &x = a.config(), &y = b.config();
    const bool same_config = x.rank == y.rank && x.alpha == y.alpha && x.use_rslora == y.use_rslora &&
                             x.dropout == y.dropout && x.target_modules == y.target_modules && x.layers == y.layers &&
                             x.init_seed == y.init_seed && x.freeze_a == y.freeze_a;
    const TrainingRecord &r = a.record(), &s = b.record();
    const bool same_record = r.steps == s.steps && r.tokens == s.tokens && r.seed == s.seed &&
                             same_floats(r.losses, s.losses) && same_floats(r.learning_rates, s.learning_rates);
    const Provenance &p = a.base().provenance, &q = b.base().provenance;
    const bool same_provenance = p.kind == q.kind && p.has_init_seed == q.has_init_seed &&
                                 p.init_seed == q.init_seed && p.steps == q.steps && p.tokens == q.tokens;
    return same_config && same_record && same_provenance && a.base().fingerprint() == b.base().fingerprint() &&
           a.num_params() == b.num_params() &&
           std::memcmp(a.params(), b.params(), std::size_t(a.num_params()) * 4) == 0;
}

void save_adapter(const Adapter& adapter, const std::string& path) {
    {
        io::AtomicFileWriter out(path);
        write_adapter(adapter, out);
        out.commit();
    }
    // Read back what is now on disk: the field's exporter wrote a file that was never checked.
    const Adapter back = load_adapter(path);
    require(same_adapter(adapter, back), PG_ERR_IO,
            path + ": the adapter read back from the saved file differs from the one saved");
}

Adapter load_adapter(const std::string& path) {
    io::FileSource src(path);
    return read_adapter(src);
}

namespace {

bool same_state(const TrainerState& a, const TrainerState& b) {
    return train_state_bytes(a) == train_state_bytes(b) && a.adam_m.size() == b.adam_m.size() && a.adam_v.size() == b.adam_v.size() &&
           std::memcmp(a.adam_m.data(), b.adam_m.data(), a.adam_m.size() * 4) == 0 &&
           std::memcmp(a.adam_v.data(), b.adam_v.data(), a.adam_v.size() * 4) == 0;
}

}  // namespace

void save_adapter_training(const Adapter& adapter, const TrainerState& state, const std::string& path) {
    {
        io::AtomicFileWriter out(path);
        write_adapter_training(adapter, state, out);
        out.commit();
    }
    TrainerState back_state;
    const Adapter back = load_adapter_training(path, back_state);
    require(same_adapter(adapter, back) && same_state(state, back_state), PG_ERR_IO,
            path + ": the adapter training checkpoint read back from the saved file differs from the one saved");
}

Adapter load_adapter_training(const std::string& path, TrainerState& state) {
    io::FileSource src(path);
    return read_adapter_training(src, state);
}

}  // namespace pg::lora
