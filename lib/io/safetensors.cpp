#include "io/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/bytes.hpp"
#include "io/finite_weights.hpp"
#include "core/hex.hpp"
#include "core/json.hpp"

namespace pg::io {

namespace {

uint64_t dtype_bytes(const std::string& dtype) {
    static const std::map<std::string, uint64_t> sizes = {
        {"F64", 8},  {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I64", 8},
        {"I32", 4},  {"I16", 2}, {"I8", 1},  {"U64", 8},  {"U32", 4},     {"U16", 2},     {"U8", 1},
        {"BOOL", 1}};
    auto it = sizes.find(dtype);
    return it == sizes.end() ? 0 : it->second;
}

// One model tensor as Hugging Face names and lays it out.
struct HfTensor {
    std::string hf_name;  // without the "transformer." prefix
    const TensorEntry* entry;
    std::vector<uint64_t> shape;  // as stored in the safetensors file
    bool transposed;              // Conv1D weight: stored [in, out]
    uint64_t numel;
};

// `table` must outlive the result (entries point into it).
std::vector<HfTensor> hf_layout(const ModelConfig& c, const std::vector<TensorEntry>& table) {
    std::vector<HfTensor> out;
    for (const TensorEntry& e : table) {
        HfTensor t{e.name, &e, {}, e.is_linear_weight, 0};
        if (e.name == "wte" || e.name == "wpe") t.hf_name += ".weight";
        if (e.name == "wte") {
            t.shape = {uint64_t(c.vocab_size), uint64_t(c.n_embd)};  // padding rows dropped
        } else if (t.transposed) {
            t.shape = {uint64_t(e.shape[1]), uint64_t(e.shape[0])};
        } else {
            for (int d = 0; d < e.n_dims; ++d) t.shape.push_back(uint64_t(e.shape[d]));
        }
        t.numel = 1;
        for (uint64_t s : t.shape) t.numel *= s;
        out.push_back(std::move(t));
    }
    return out;
}

// dst[c][r] = src[r][c] for a rows x cols matrix.
void transpose(const float* src, float* dst, uint64_t rows, uint64_t cols) {
    for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

}  // namespace

std::string shape_text(const std::vector<uint64_t>& shape) {
    std::string s = "[";
    for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "]";
}

const SafetensorsTensor* SafetensorsHeader::find(const std::string& name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

const std::string* SafetensorsHeader::metadata_value(const std::string& key) const {
    for (const auto& kv : metadata)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

SafetensorsHeader read_safetensors_header(const ByteSource& src) {
    const std::string& name = src.name();
    require(src.size() >= 8, PG_ERR_FORMAT,
            name + ": " + std::to_string(src.size()) + " bytes is too short for a safetensors header length");
    uint64_t n = 0;
    src.read_at(0, &n, 8, "header length");
    require(n <= kMaxSafetensorsHeaderBytes, PG_ERR_FORMAT,
            name + ": safetensors header length " + std::to_string(n) + " exceeds the cap of " +
                std::to_string(kMaxSafetensorsHeaderBytes));
    require(n <= src.size() - 8, PG_ERR_FORMAT,
            name + ": safetensors header of " + std::to_string(n) + " bytes runs past the end of the file (" +
                std::to_string(src.size()) + " bytes)");
    require(n >= 2, PG_ERR_FORMAT, name + ": safetensors header of " + std::to_string(n) + " bytes is too short");
    std::string text(std::size_t(n), '\0');
    src.read_at(8, text.data(), text.size(), "header");
    require(text[0] == '{', PG_ERR_FORMAT, name + ": the safetensors header does not start with '{'");
    const std::string context = name + ": safetensors header";
    const JsonValue root = parse_json(text.data(), text.size(), context);

    SafetensorsHeader h;
    h.data_start = 8 + n;
    for (const auto& [key, value] : root.as_object(context)) {
        if (key == "__metadata__") {
            for (const auto& [mk, mv] : value.as_object(context + ": __metadata__"))
                h.metadata.emplace_back(mk, mv.as_string(context + ": __metadata__ value of \"" + mk + "\""));
            continue;
        }
        const std::string what = context + ": tensor \"" + key + "\"";
        SafetensorsTensor t;
        t.name = key;
        const auto& members = value.as_object(what);
        for (const auto& [field, _] : members)
            require(field == "dtype" || field == "shape" || field == "data_offsets", PG_ERR_FORMAT,
                    what + ": unknown field \"" + field + "\"");
        const JsonValue* dtype = value.find("dtype");
        const JsonValue* shape = value.find("shape");
        const JsonValue* offsets = value.find("data_offsets");
        require(dtype && shape && offsets, PG_ERR_FORMAT, what + ": needs dtype, shape and data_offsets");
        t.dtype = dtype->as_string(what + " dtype");
        const uint64_t esize = dtype_bytes(t.dtype);
        require(esize != 0, PG_ERR_FORMAT, what + ": unknown dtype \"" + t.dtype + "\"");
        uint64_t numel = 1;
        for (const JsonValue& d : shape->as_array(what + " shape")) {
            t.shape.push_back(d.as_u64(what + " shape entry"));
            numel = checked_mul(numel, t.shape.back(), what + " shape");
        }
        const auto& off = offsets->as_array(what + " data_offsets");
        require(off.size() == 2, PG_ERR_FORMAT, what + ": data_offsets must be [begin, end]");
        t.begin = off[0].as_u64(what + " data_offsets begin");
        t.end = off[1].as_u64(what + " data_offsets end");
        require(t.begin <= t.end, PG_ERR_FORMAT, what + ": data_offsets end before they begin");
        const uint64_t nbytes = checked_mul(numel, esize, what + " shape");
        require(t.end - t.begin == nbytes, PG_ERR_FORMAT,
                what + ": data_offsets span " + std::to_string(t.end - t.begin) + " bytes but shape " +
                    shape_text(t.shape) + " of " + t.dtype + " needs " + std::to_string(nbytes));
        h.tensors.push_back(std::move(t));
    }
    // The tensors must tile the data region exactly.
    std::sort(h.tensors.begin(), h.tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t next = 0;
    for (const SafetensorsTensor& t : h.tensors) {
        if (t.begin != next)
            throw Error(PG_ERR_FORMAT, context + ": tensor \"" + t.name + "\" starts at " + std::to_string(t.begin) +
                                           (t.begin < next ? ", overlapping the tensor before it" : ", leaving a gap") +
                                           " (expected " + std::to_string(next) + ")");
        next = t.end;
    }
    const uint64_t data_size = src.size() - h.data_start;
    require(next <= data_size, PG_ERR_FORMAT,
            name + ": truncated: the tensors need " + std::to_string(next) + " bytes of data, the file has " +
                std::to_string(data_size));
    require(next == data_size, PG_ERR_FORMAT,
            name + ": " + std::to_string(data_size - next) + " unexpected trailing bytes after the tensor data");
    return h;
}

// ---- GPT-2 -------------------------------------------------------------------------------

std::string hf_gpt2_config_json(const ModelConfig& c) {
    JsonObject o;
    o.strings("architectures", {"GPT2LMHeadModel"})
        .str("model_type", "gpt2")
        .str("activation_function", "gelu_new")
        .integer("n_layer", c.n_layer)
        .integer("n_head", c.n_head)
        .integer("n_embd", c.n_embd)
        .integer("n_positions", c.n_ctx)
        .integer("n_ctx", c.n_ctx)
        .null("n_inner")
        .integer("vocab_size", c.vocab_size)
        .flt("layer_norm_epsilon", c.layernorm_eps)
        .boolean("tie_word_embeddings", true)
        .boolean("scale_attn_weights", true)
        .num("embd_pdrop", 0.0)
        .num("attn_pdrop", 0.0)
        .num("resid_pdrop", 0.0)
        .num("initializer_range", 0.02)
        .str("torch_dtype", "float32");
    return o.indented_text() + "\n";
}

void write_safetensors_header(ByteSink& sink, const JsonObject& metadata,
                              const std::vector<SafetensorsTensor>& tensors) {
    JsonObject header;
    header.object("__metadata__", metadata);
    for (const SafetensorsTensor& t : tensors) {
        JsonObject entry;
        entry.str("dtype", t.dtype)
            .integers("shape", std::vector<long long>(t.shape.begin(), t.shape.end()))
            .integers("data_offsets", {static_cast<long long>(t.begin), static_cast<long long>(t.end)});
        header.object(t.name, entry);
    }
    std::string json = header.text();
    while (json.size() % 8 != 0) json += ' ';
    const uint64_t n = json.size();
    sink.write(&n, 8);
    sink.write(json.data(), json.size());
}

void write_hf_gpt2_safetensors(const Model& model, ByteSink& sink) {
    const std::vector<HfTensor> layout = hf_layout(model.config(), model.tensors());
    JsonObject metadata;
    metadata.str("format", "pt").str("phonegpt.padded_vocab_size", std::to_string(model.config().padded_vocab_size));
    if (model.tokenizer()) metadata.str("phonegpt.tokenizer", hex_encode(model.tokenizer()->serialize()));
    std::vector<SafetensorsTensor> tensors;
    uint64_t offset = 0;
    for (const HfTensor& t : layout) {
        tensors.push_back({"transformer." + t.hf_name, "F32", t.shape, offset, offset + t.numel * 4});
        offset = tensors.back().end;
    }
    write_safetensors_header(sink, metadata, tensors);
    std::vector<float> scratch;
    for (const HfTensor& t : layout) {
        const float* data = model.params() + t.entry->offset;
        if (t.transposed) {
            scratch.resize(std::size_t(t.numel));
            transpose(data, scratch.data(), uint64_t(t.entry->shape[0]), uint64_t(t.entry->shape[1]));
            data = scratch.data();
        }
        sink.write(data, std::size_t(t.numel) * 4);
    }
}

HfGpt2Import read_hf_gpt2_header(const ByteSource& src, const std::string& config_json) {
    const std::string& name = src.name();
    HfGpt2Import plan;
    plan.file = read_safetensors_header(src);

    // Geometry from config.json.
    const std::string cctx = "config.json beside " + name;
    const JsonValue cfg = parse_json(config_json.data(), config_json.size(), cctx);
    cfg.as_object(cctx);
    auto int_field = [&](const char* key, const JsonValue* v) -> int {
        require(v != nullptr, PG_ERR_FORMAT, cctx + ": missing \"" + key + "\"");
        const uint64_t x = v->as_u64(cctx + ": " + key);
        require(x <= uint64_t(INT32_MAX), PG_ERR_GEOMETRY, cctx + ": " + key + " = " + std::to_string(x) + " is too large");
        return int(x);
    };
    const JsonValue* positions = cfg.find("n_positions");
    if (!positions) positions = cfg.find("n_ctx");
    if (const JsonValue* type = cfg.find("model_type"))
        require(type->as_string(cctx + ": model_type") == "gpt2", PG_ERR_UNSUPPORTED,
                cctx + ": model_type \"" + type->as_string("") + "\" is not gpt2");
    if (const JsonValue* act = cfg.find("activation_function")) {
        const std::string& a = act->as_string(cctx + ": activation_function");
        require(a == "gelu_new" || a == "gelu_pytorch_tanh", PG_ERR_UNSUPPORTED,
                cctx + ": activation_function \"" + a + "\" is not the tanh GELU (gelu_new) this library computes");
    }
    if (const JsonValue* tie = cfg.find("tie_word_embeddings"))
        require(tie->as_bool(cctx + ": tie_word_embeddings"), PG_ERR_UNSUPPORTED,
                cctx + ": an untied output head is not supported");
    ModelConfig& c = plan.config;
    c.n_layer = int_field("n_layer", cfg.find("n_layer"));
    c.n_head = int_field("n_head", cfg.find("n_head"));
    c.n_embd = int_field("n_embd", cfg.find("n_embd"));
    c.n_ctx = int_field("n_positions", positions);
    c.vocab_size = int_field("vocab_size", cfg.find("vocab_size"));
    if (const JsonValue* inner = cfg.find("n_inner"); inner && !inner->is_null())
        require(inner->as_u64(cctx + ": n_inner") == 4 * uint64_t(c.n_embd), PG_ERR_UNSUPPORTED,
                cctx + ": n_inner must be 4 * n_embd (or null)");
    c.layernorm_eps = 1e-5f;
    if (const JsonValue* eps = cfg.find("layer_norm_epsilon")) c.layernorm_eps = float(eps->as_double(cctx + ": layer_norm_epsilon"));
    c.padded_vocab_size = 0;
    if (const std::string* padded = plan.file.metadata_value("phonegpt.padded_vocab_size")) {
        JsonValue v = parse_json(padded->data(), padded->size(), name + ": metadata phonegpt.padded_vocab_size");
        const uint64_t p = v.as_u64(name + ": metadata phonegpt.padded_vocab_size");
        require(p <= uint64_t(kMaxVocab), PG_ERR_GEOMETRY, name + ": phonegpt.padded_vocab_size is too large");
        c.padded_vocab_size = int(p);
    }
    if (c.padded_vocab_size == 0 && c.vocab_size > 0 && c.vocab_size <= kMaxVocab)
        c.padded_vocab_size = (c.vocab_size + 3) / 4 * 4;
    try {
        validate_model_config(c);
    } catch (const Error& e) {
        throw Error(PG_ERR_GEOMETRY, cctx + ": " + e.what());
    }
    // Padding rows are the only memory the file does not hold; keep them within its size too,
    // so a small file cannot make the importer allocate gigabytes.
    const uint64_t padding_bytes = uint64_t(c.padded_vocab_size - c.vocab_size) * uint64_t(c.n_embd) * 4;
    require(padding_bytes <= src.size(), PG_ERR_GEOMETRY,
            name + ": phonegpt.padded_vocab_size " + std::to_string(c.padded_vocab_size) + " adds " +
                std::to_string(padding_bytes) + " bytes of padding rows, more than the file's size");
    if (const std::string* tok = plan.file.metadata_value("phonegpt.tokenizer"))
        plan.tokenizer_bytes = parse_hex(*tok, name + ": metadata phonegpt.tokenizer");

    // Every tensor the geometry needs, with its shape and dtype; nothing else but the causal
    // mask buffers older exports carry (h.N.attn.bias / masked_bias) and a tied lm_head.
    const SafetensorsHeader& f = plan.file;
    const std::string prefix =
        std::any_of(f.tensors.begin(), f.tensors.end(),
                    [](const SafetensorsTensor& t) { return t.name.rfind("transformer.", 0) == 0; })
            ? "transformer."
            : "";
    const std::vector<TensorEntry> table = build_tensor_table(c);
    std::vector<std::string> expected;
    for (const HfTensor& t : hf_layout(c, table)) {
        const std::string full = prefix + t.hf_name;
        expected.push_back(full);
        const SafetensorsTensor* s = f.find(full);
        require(s != nullptr, PG_ERR_GEOMETRY, name + ": tensor \"" + full + "\" is missing (the geometry in " + cctx + " needs it)");
        require(s->dtype == "F32", PG_ERR_UNSUPPORTED,
                name + ": tensor \"" + full + "\" is " + s->dtype + "; only F32 is imported");
        require(s->shape == t.shape, PG_ERR_GEOMETRY,
                name + ": tensor \"" + full + "\" has shape " + shape_text(s->shape) + " but the geometry in " + cctx +
                    " needs " + shape_text(t.shape));
    }
    for (const SafetensorsTensor& s : f.tensors) {
        if (std::find(expected.begin(), expected.end(), s.name) != expected.end()) continue;
        const std::string local = s.name.substr(prefix.size());
        const bool mask_buffer = s.name.rfind(prefix, 0) == 0 && local.rfind("h.", 0) == 0 &&
                                 (local.size() > 10 && (local.compare(local.size() - 10, 10, ".attn.bias") == 0 ||
                                                        (local.size() > 17 && local.compare(local.size() - 17, 17, ".attn.masked_bias") == 0)));
        if (mask_buffer) continue;
        if (s.name == "lm_head.weight") {
            require(s.dtype == "F32" && s.shape == std::vector<uint64_t>{uint64_t(c.vocab_size), uint64_t(c.n_embd)},
                    PG_ERR_GEOMETRY, name + ": lm_head.weight must be F32 [vocab_size, n_embd] like wte");
            continue;
        }
        throw Error(PG_ERR_FORMAT, name + ": unexpected tensor \"" + s.name + "\" (not part of a GPT-2 model)");
    }
    plan.prefix = prefix;
    return plan;
}

void read_hf_gpt2_data(const ByteSource& src, const HfGpt2Import& plan, Model& model) {
    const ModelConfig& c = model.config();
    require(c.n_layer == plan.config.n_layer && c.n_embd == plan.config.n_embd && c.n_ctx == plan.config.n_ctx &&
                c.padded_vocab_size == plan.config.padded_vocab_size,
            PG_ERR_INTERNAL, "read_hf_gpt2_data: the model's geometry differs from the plan's");
    std::vector<float> scratch;
    for (const HfTensor& t : hf_layout(c, model.tensors())) {
        const SafetensorsTensor* s = plan.file.find(plan.prefix + t.hf_name);
        float* dst = model.params() + t.entry->offset;
        if (!t.transposed) {  // wte: the first vocab_size rows; padding rows stay 0
            src.read_at(plan.file.data_start + s->begin, dst, std::size_t(t.numel) * 4, "tensor data");
            continue;
        }
        scratch.resize(std::size_t(t.numel));
        src.read_at(plan.file.data_start + s->begin, scratch.data(), scratch.size() * 4, "tensor data");
        transpose(scratch.data(), dst, t.shape[0], t.shape[1]);
    }
    require_finite_weights(model, src.name());
    // A tied head must really be tied: the same values as wte.
    if (const SafetensorsTensor* head = plan.file.find("lm_head.weight")) {
        const uint64_t n = head->end - head->begin;
        std::vector<uint8_t> bytes(static_cast<std::size_t>(n));
        src.read_at(plan.file.data_start + head->begin, bytes.data(), bytes.size(), "lm_head.weight");
        require(std::memcmp(bytes.data(), model.params(), bytes.size()) == 0, PG_ERR_UNSUPPORTED,
                src.name() + ": lm_head.weight differs from wte: an untied output head is not supported");
    }
}

}  // namespace pg::io
