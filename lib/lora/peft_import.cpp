// PEFT import (peft.hpp): adapter_config.json + adapter_model.safetensors as PEFT saves them for
// a Hugging Face GPT-2 or Llama-family base. The adapted (layer, module) pairs, the rank and every shape are read
// from the files; the configuration and the tensors must agree with each other (PG_ERR_FORMAT
// naming both) and with the base (PG_ERR_GEOMETRY naming both sides). What PEFT can express but a
// libphonegpt adapter cannot (DoRA, per-module ranks, LoRA biases, ...) is PG_ERR_UNSUPPORTED.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "io/safetensors.hpp"
#include "lora/adapter_file.hpp"
#include "lora/peft.hpp"
#include "model/model.hpp"

namespace pg::lora {

namespace {

using Site = std::pair<int, Target>;  // (layer, module)

// The module's key in the Hugging Face model, as PEFT matches it: "transformer.h.3.attn.c_attn",
// "model.layers.3.self_attn.q_proj".
std::string module_key(const Site& s) {
    const bool gpt2 = int(s.second) < int(Target::q_proj);
    return (gpt2 ? "transformer.h." : "model.layers.") + std::to_string(s.first) + "." + target_module(s.second);
}

// The adapter table's stem: "h.3.attn.c_attn", "model.layers.3.self_attn.q_proj".
std::string site_name(const Site& s) {
    const std::string key = module_key(s);
    return key.compare(0, 12, "transformer.") == 0 ? key.substr(12) : key;
}

std::string sites_text(const std::set<Site>& sites) {
    std::string out;
    int shown = 0;
    for (const Site& s : sites) {
        if (shown++ == 6) return out + ", ... (" + std::to_string(sites.size()) + " in all)";
        out += (out.empty() ? "" : ", ") + site_name(s);
    }
    return out.empty() ? "none" : out;
}

// A metadata key that looks like one of this library's: its first 9 bytes differ from
// "phonegpt." in at most one (any single flipped bit of any of its keys), or it names phonegpt
// in any letter case.
bool resembles_phonegpt_key(const std::string& key) {
    static const std::string prefix = "phonegpt.";
    int differing = 0;
    for (std::size_t i = 0; i < prefix.size(); ++i) differing += i >= key.size() || key[i] != prefix[i];
    if (differing <= 1) return true;
    std::string lower(key);
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    return lower.find("phonegpt") != std::string::npos;
}

// A key for a message: bytes outside printable ASCII as \xNN.
std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7f) {
            out += char(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        }
    }
    return out;
}

// What adapter_config.json says, with PEFT's defaults for absent keys.
struct PeftConfig {
    int64_t r = 8;
    double alpha = 8;
    bool use_rslora = false;
    double dropout = 0;
    bool fan_in_fan_out = false;
    std::set<Site> sites;  // the base's modules it targets (target_modules, layers_to_transform)
};

// PEFT's matching of a module key ("transformer.h.3.attn.c_attn"): a string is a regular
// expression that must match the whole key ("all-linear": every linear but the output layer);
// a list matches a key equal to an entry or ending in "." + entry.
bool targets_key(const io::JsonValue& targets, const std::string& key, const std::string& what) {
    if (targets.is_string()) {
        const std::string& pattern = targets.as_string(what);
        if (pattern == "all-linear") return true;  // every block linear of the family (the head is not)
        try {
            return std::regex_match(key, std::regex(pattern));
        } catch (const std::regex_error&) {
            throw Error(PG_ERR_UNSUPPORTED, what + ": the regular expression \"" + pattern +
                                                "\" is not one this library can evaluate (give a list of module names)");
        }
    }
    for (const io::JsonValue& t : targets.as_array(what)) {
        const std::string& name = t.as_string(what + " entry");
        if (key == name || (key.size() > name.size() && key.compare(key.size() - name.size(), name.size(), name) == 0 &&
                            key[key.size() - name.size() - 1] == '.'))
            return true;
    }
    return false;
}

// Keys PEFT writes whose non-default values ask for something a libphonegpt adapter is not.
void refuse_unsupported(const io::JsonValue& v, const std::string& what, const ModelConfig& base) {
    auto flag = [&](const char* key) {
        const io::JsonValue* f = v.find(key);
        require(!f || f->is_null() || !f->as_bool(what + " " + key), PG_ERR_UNSUPPORTED,
                what + ": " + key + " = true is not supported (plain LoRA only)");
    };
    flag("use_dora");
    flag("lora_bias");
    auto empty = [&](const char* key) {
        const io::JsonValue* f = v.find(key);
        const bool none = !f || f->is_null() || (f->is_object() && f->as_object("").empty()) ||
                          (f->is_array() && f->as_array("").empty());
        require(none, PG_ERR_UNSUPPORTED, what + ": " + key + " is not supported (one rank and alpha for every module, "
                                                              "no extra trained modules)");
    };
    empty("rank_pattern");
    empty("alpha_pattern");
    empty("modules_to_save");
    const io::JsonValue* bias = v.find("bias");
    require(!bias || bias->is_null() || bias->as_string(what + " bias") == "none", PG_ERR_UNSUPPORTED,
            what + ": bias = \"" + (bias && bias->is_string() ? bias->as_string("") : std::string()) +
                "\" is not supported (LoRA adapters here train no biases)");
    const io::JsonValue* pattern = v.find("layers_pattern");
    if (pattern && !pattern->is_null()) {
        const std::string blocks = base.is_gpt2() ? "h" : "layers";
        bool ok = pattern->is_string() && pattern->as_string("") == blocks;
        if (pattern->is_array()) {
            ok = true;
            for (const io::JsonValue& p : pattern->as_array("")) ok = ok && p.is_string() && p.as_string("") == blocks;
        }
        require(ok, PG_ERR_UNSUPPORTED,
                what + ": layers_pattern must be \"" + blocks + "\" (" + (base.is_gpt2() ? "GPT-2's" : "the Llama family's") +
                    " blocks)");
    }
}

PeftConfig parse_peft_config(const std::string& text, const std::string& what, const ModelConfig& base) {
    const io::JsonValue v = io::parse_json(text.data(), text.size(), what);
    v.as_object(what);
    const io::JsonValue* type = v.find("peft_type");
    require(!type || type->as_string(what + " peft_type") == "LORA", PG_ERR_UNSUPPORTED,
            what + ": peft_type \"" + (type ? type->as_string("") : std::string()) + "\" is not LORA");
    refuse_unsupported(v, what, base);
    PeftConfig c;
    auto get = [&](const char* key) { return v.find(key); };
    if (const io::JsonValue* r = get("r")) c.r = int64_t(std::min<uint64_t>(r->as_u64(what + " r"), uint64_t(1) << 40));
    if (const io::JsonValue* a = get("lora_alpha")) c.alpha = a->as_double(what + " lora_alpha");
    if (const io::JsonValue* d = get("lora_dropout")) c.dropout = d->as_double(what + " lora_dropout");
    if (const io::JsonValue* s = get("use_rslora")) c.use_rslora = s->as_bool(what + " use_rslora");
    // GPT-2's linears are Conv1D (weights [in, out]), the Llama family's nn.Linear; PEFT sets
    // fan_in_fan_out to fit the layer whatever the file says (with a warning), and A [r, in],
    // B [out, r] are the same either way.
    if (const io::JsonValue* f = get("fan_in_fan_out")) c.fan_in_fan_out = f->as_bool(what + " fan_in_fan_out");
    const io::JsonValue* targets = get("target_modules");
    require(targets && !targets->is_null(), PG_ERR_FORMAT, what + ": target_modules is missing");
    std::set<int> layers;
    bool all_layers = true;
    if (const io::JsonValue* l = get("layers_to_transform"); l && !l->is_null()) {
        all_layers = false;
        if (l->is_number()) {
            layers.insert(int(std::min<uint64_t>(l->as_u64(what + " layers_to_transform"), kMaxLayers)));
        } else {
            for (const io::JsonValue& x : l->as_array(what + " layers_to_transform"))
                layers.insert(int(std::min<uint64_t>(x.as_u64(what + " layers_to_transform entry"), kMaxLayers)));
        }
        for (int layer : layers)
            require(layer < base.n_layer, PG_ERR_GEOMETRY,
                    what + ": layers_to_transform holds layer " + std::to_string(layer) + ", the base has n_layer = " +
                        std::to_string(base.n_layer));
    }
    for (int layer = 0; layer < base.n_layer; ++layer) {
        if (!all_layers && !layers.count(layer)) continue;
        for (int t = 0; t < kNumTargets; ++t) {
            const Site site{layer, static_cast<Target>(t)};
            if ((family_targets(base) & target_bit(site.second)) &&
                targets_key(*targets, module_key(site), what + " target_modules"))
                c.sites.insert(site);
        }
    }
    require(!c.sites.empty(), PG_ERR_FORMAT, what + ": target_modules matches none of the base's block linears");
    return c;
}

// "base_model.model.transformer.h.3.attn.c_attn.lora_A.weight" -> (3, attn_c_attn), A;
// "base_model.model.model.layers.3.self_attn.q_proj.lora_B.weight" -> (3, q_proj), B. False when
// the name is not a LoRA factor of one of the base family's block linears.
bool parse_factor_name(const std::string& full, const ModelConfig& base, Site& site, bool& is_a) {
    static const std::string model_prefix = "base_model.model.";
    if (full.compare(0, model_prefix.size(), model_prefix) != 0) return false;
    std::string name = full.substr(model_prefix.size());
    // GPT-2's blocks also without the "transformer." of GPT2LMHeadModel (a GPT2Model base).
    const std::vector<std::string> blocks =
        base.is_gpt2() ? std::vector<std::string>{"transformer.h.", "h."} : std::vector<std::string>{"model.layers."};
    std::size_t at = std::string::npos;
    for (const std::string& b : blocks)
        if (name.compare(0, b.size(), b) == 0) {
            at = b.size();
            break;
        }
    if (at == std::string::npos) return false;
    const std::size_t digits = at;
    int layer = 0;
    while (at < name.size() && at < digits + 6 && name[at] >= '0' && name[at] <= '9') layer = layer * 10 + (name[at++] - '0');
    if (at == digits || at >= name.size() || name[at] != '.' || (name[digits] == '0' && at > digits + 1)) return false;
    const std::string rest = name.substr(at + 1);
    for (int t = 0; t < kNumTargets; ++t) {
        if (!(family_targets(base) & target_bit(Target(t)))) continue;
        const std::string stem = target_module(Target(t));
        for (bool a : {true, false})
            if (rest == stem + (a ? ".lora_A.weight" : ".lora_B.weight")) {
                site = {layer, Target(t)};
                is_a = a;
                return true;
            }
    }
    return false;
}

// One tensor's values as fp32 (F32, F16, BF16, F64), each finite. The 16-bit ones are widened
// as the model widens its own 16-bit weights (widen_16_bits): lib/lora reaches no kernel itself.
void read_factor(const io::ByteSource& src, const io::SafetensorsHeader& file, const io::SafetensorsTensor& t,
                 float* dst, std::size_t count) {
    const std::string what = src.name() + ": tensor \"" + t.name + "\"";
    const std::size_t bytes = std::size_t(t.end - t.begin);
    const std::size_t width = t.dtype == "F32" ? 4 : t.dtype == "F64" ? 8 : 2;
    require(bytes == count * width, PG_ERR_FORMAT,
            what + ": " + std::to_string(bytes) + " bytes for " + std::to_string(count) + " " + t.dtype + " values");
    const uint64_t at = file.data_start + t.begin;
    if (t.dtype == "F32") {
        src.read_at(at, dst, bytes, "PEFT adapter tensor data");
    } else if (t.dtype == "F16" || t.dtype == "BF16") {
        std::vector<uint16_t> half(count);
        src.read_at(at, half.data(), bytes, "PEFT adapter tensor data");
        widen_16_bits(half.data(), dst, int64_t(count), t.dtype == "F16" ? WeightStorage::fp16 : WeightStorage::bf16);
    } else {
        std::vector<double> wide(count);
        src.read_at(at, wide.data(), bytes, "PEFT adapter tensor data");
        for (std::size_t i = 0; i < count; ++i) dst[i] = float(wide[i]);
    }
    for (std::size_t i = 0; i < count; ++i)
        require(std::isfinite(dst[i]), PG_ERR_FORMAT,
                what + " holds a value that is not finite in fp32 at element " + std::to_string(i));
}

// The configuration of the imported adapter, in libphonegpt's terms (layers x modules).
LoraConfig lora_config_of(const PeftConfig& c, const std::set<Site>& sites, int n_layer, const std::string& what) {
    std::set<int> layers;
    uint32_t bits = 0;
    for (const Site& s : sites) {
        layers.insert(s.first);
        bits |= target_bit(s.second);
    }
    for (int layer : layers)
        for (int t = 0; t < kNumTargets; ++t)
            if (bits & target_bit(static_cast<Target>(t)))
                require(sites.count({layer, static_cast<Target>(t)}) != 0, PG_ERR_UNSUPPORTED,
                        what + ": " + site_name({layer, static_cast<Target>(t)}) +
                            " is not adapted while other layers' are: a libphonegpt adapter adapts the same modules "
                            "in every adapted layer");
    LoraConfig cfg;
    require(c.r >= 1 && c.r <= PG_LORA_MAX_RANK, PG_ERR_FORMAT,
            what + ": r = " + std::to_string(c.r) + " is outside [1, " + std::to_string(PG_LORA_MAX_RANK) + "]");
    cfg.rank = int(c.r);
    cfg.alpha = float(c.alpha);
    cfg.use_rslora = c.use_rslora;
    cfg.dropout = float(c.dropout);
    cfg.target_modules = bits;
    if (int(layers.size()) != n_layer) cfg.layers.assign(layers.begin(), layers.end());
    cfg.init_seed = 0;  // PEFT does not record it
    try {
        validate_lora_config(cfg);
    } catch (const Error& e) {
        throw Error(PG_ERR_FORMAT, what + ": " + e.what());
    }
    return cfg;
}

bool same_lora_shape(const LoraConfig& a, const LoraConfig& b) {
    return a.rank == b.rank && a.alpha == b.alpha && a.use_rslora == b.use_rslora && a.dropout == b.dropout &&
           a.target_modules == b.target_modules && a.layers == b.layers;
}

}  // namespace

Adapter import_peft_from(const std::string& config_json, const std::string& config_name, const io::ByteSource& src,
                         const Model& base) {
    const ModelConfig& mc = base.config();
    const PeftConfig peft = parse_peft_config(config_json, config_name, mc);
    const std::string& name = src.name();
    const io::SafetensorsHeader file = io::read_safetensors_header(src);

    // The factors the file holds, by (layer, module).
    std::map<Site, std::pair<const io::SafetensorsTensor*, const io::SafetensorsTensor*>> factors;
    for (const io::SafetensorsTensor& t : file.tensors) {
        Site site;
        bool is_a = true;
        require(parse_factor_name(t.name, mc, site, is_a), PG_ERR_UNSUPPORTED,
                name + ": tensor \"" + t.name + "\" is not a LoRA factor of a block linear of this base (this library "
                       "imports " +
                    (mc.is_gpt2() ? std::string("base_model.model.transformer.h.{i}.{module}.lora_{A|B}.weight")
                                  : std::string("base_model.model.model.layers.{i}.{module}.lora_{A|B}.weight")) +
                    " for module " + family_target_names(mc) + ")");
        require(site.first < mc.n_layer, PG_ERR_GEOMETRY,
                name + ": tensor \"" + t.name + "\" adapts layer " + std::to_string(site.first) +
                    ", the base has n_layer = " + std::to_string(mc.n_layer));
        require(t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16" || t.dtype == "F64", PG_ERR_UNSUPPORTED,
                name + ": tensor \"" + t.name + "\" is " + t.dtype + " (F32, F16, BF16 or F64 are imported)");
        (is_a ? factors[site].first : factors[site].second) = &t;
    }
    std::set<Site> in_file;
    for (const auto& [site, ab] : factors) {
        require(ab.first && ab.second, PG_ERR_FORMAT,
                name + ": " + site_name(site) + " has lora_" + (ab.first ? "A" : "B") + " but no lora_" +
                    (ab.first ? "B" : "A"));
        in_file.insert(site);
    }
    require(in_file == peft.sites, PG_ERR_FORMAT,
            "the PEFT adapter's two files disagree: " + config_name + " targets " + sites_text(peft.sites) + "; " +
                name + " holds factors for " + sites_text(in_file));
    const LoraConfig cfg = lora_config_of(peft, in_file, mc.n_layer, config_name);

    // Shapes: A [r, in], B [out, r], r from the configuration, in and out from the base.
    for (const auto& [site, ab] : factors) {
        const int64_t in = target_in(site.second, mc), out = target_out(site.second, mc);
        for (const io::SafetensorsTensor* t : {ab.first, ab.second}) {
            const bool is_a = t == ab.first;
            const uint64_t want_r = uint64_t(cfg.rank), want_side = uint64_t(is_a ? in : out);
            require(t->shape.size() == 2, PG_ERR_FORMAT, name + ": tensor \"" + t->name + "\" is not 2-D");
            const uint64_t r = is_a ? t->shape[0] : t->shape[1], side = is_a ? t->shape[1] : t->shape[0];
            const std::string shape = "[" + std::to_string(t->shape[0]) + ", " + std::to_string(t->shape[1]) + "]";
            require(r == want_r, PG_ERR_FORMAT,
                    name + ": tensor \"" + t->name + "\" is " + shape + ", rank " + std::to_string(r) + "; " +
                        config_name + " has r = " + std::to_string(cfg.rank));
            require(side == want_side, PG_ERR_GEOMETRY,
                    name + ": tensor \"" + t->name + "\" is " + shape + "; the base's " + target_name(site.second) +
                        " (n_embd = " + std::to_string(mc.n_embd) + ") has " + (is_a ? "in = " : "out = ") +
                        std::to_string(want_side));
        }
    }

    Adapter adapter(cfg, identify_base(base));
    for (const AdaptedLinear& m : adapter.linears()) {
        const auto& ab = factors.at({m.layer, m.target});
        read_factor(src, file, *ab.first, adapter.a(m), std::size_t(cfg.rank * m.in));
        read_factor(src, file, *ab.second, adapter.b(m), std::size_t(m.out * cfg.rank));
    }
    // A pair pg_lora_export_peft wrote comes back whole (init seed, training record, base identity),
    // after the same checks as any other pair and those of the adapter file. A damaged key must
    // not turn such a file into plain PEFT, which would drop the record and the tensor checksums.
    if (!file.metadata_value("phonegpt.adapter_format"))
        for (const auto& entry : file.metadata)
            require(!resembles_phonegpt_key(entry.first), PG_ERR_FORMAT,
                    name + ": metadata key \"" + printable(entry.first) +
                        "\" looks like libphonegpt's but the file has no \"phonegpt.adapter_format\": a damaged "
                        "libphonegpt file is refused, not read as plain PEFT (its training record and tensor "
                        "checksums would be lost)");
    if (file.metadata_value("phonegpt.adapter_format")) {
        Adapter own = read_adapter(src);
        check_adapter_matches_base(own, base);
        require(same_lora_shape(own.config(), cfg), PG_ERR_FORMAT,
                name + ": its phonegpt metadata describes another adapter (rank " + std::to_string(own.config().rank) +
                    ", targets " + std::to_string(own.config().target_modules) + ") than " + config_name + " (r = " +
                    std::to_string(cfg.rank) + ", targets " + std::to_string(cfg.target_modules) + ")");
        return own;
    }
    return adapter;
}

Adapter import_peft(const std::string& folder, const Model& base) {
    const std::string config_path = folder + "/adapter_config.json";
    const std::vector<uint8_t> config = io::read_small_file(config_path, 1 << 20);
    io::FileSource src(folder + "/adapter_model.safetensors");
    return import_peft_from(std::string(config.begin(), config.end()), config_path, src, base);
}

}  // namespace pg::lora
