#include "lora/peft.hpp"

#include "core/error.hpp"
#include "io/file_io.hpp"
#include "io/json.hpp"
#include "lora/adapter_file.hpp"

namespace pg::lora {

namespace {

// PEFT's target_modules for GPT-2 are the modules' last names.
const char* peft_module_name(LinearKind kind) {
    switch (kind) {
        case LinearKind::attn_qkv: return "c_attn";
        case LinearKind::attn_proj: return "attn.c_proj";  // "c_proj" alone would also match mlp.c_proj
        case LinearKind::mlp_fc: return "c_fc";
        case LinearKind::mlp_proj: return "mlp.c_proj";
    }
    return "?";
}

}  // namespace

std::string peft_adapter_config_json(const LoraConfig& cfg) {
    std::string targets;
    for (int k = 0; k < kNumLinearKinds; ++k) {
        const LinearKind kind = static_cast<LinearKind>(k);
        if (cfg.targets(kind)) targets += (targets.empty() ? "" : ",") + io::json_quote(peft_module_name(kind));
    }
    std::string layers = "null", pattern = "null";
    if (!cfg.layers.empty()) {
        layers.clear();
        for (int32_t l : cfg.layers) layers += (layers.empty() ? "[" : ",") + std::to_string(l);
        layers += "]";
        pattern = "\"h\"";
    }
    // Keys as PEFT's LoraConfig names them; values as it reads them.
    return "{\n  \"peft_type\": \"LORA\",\n  \"task_type\": \"CAUSAL_LM\",\n  \"base_model_name_or_path\": null,\n"
           "  \"r\": " + std::to_string(cfg.rank) + ",\n  \"lora_alpha\": " + io::json_float(cfg.alpha) +
           ",\n  \"lora_dropout\": " + io::json_float(cfg.dropout) + ",\n  \"target_modules\": [" + targets +
           "],\n  \"fan_in_fan_out\": true,\n  \"bias\": \"none\",\n  \"use_rslora\": " +
           (cfg.use_rslora ? "true" : "false") + ",\n  \"use_dora\": false,\n  \"init_lora_weights\": true,\n"
           "  \"layers_to_transform\": " + layers + ",\n  \"layers_pattern\": " + pattern +
           ",\n  \"rank_pattern\": {},\n  \"alpha_pattern\": {},\n  \"modules_to_save\": null,\n"
           "  \"inference_mode\": true\n}\n";
}

void export_peft(const Adapter& adapter, const std::string& folder) {
    const std::string config_path = folder + "/adapter_config.json";
    const std::string model_path = folder + "/adapter_model.safetensors";
    const std::string config = peft_adapter_config_json(adapter.config());
    save_adapter(adapter, model_path);  // reads the tensors back and compares them
    io::write_file_atomically(config_path, config.data(), config.size());
    const std::vector<uint8_t> back = io::read_small_file(config_path, 1 << 20);
    require(std::string(back.begin(), back.end()) == config, PG_ERR_IO,
            config_path + ": the file read back differs from what was written");
    const io::JsonValue v = io::parse_json(reinterpret_cast<const char*>(back.data()), back.size(), config_path);
    require(v.find("r") && v.find("r")->as_u64(config_path + " r") == uint64_t(adapter.config().rank), PG_ERR_IO,
            config_path + ": r read back differs");
}

}  // namespace pg::lora
