#include "lora/peft.hpp"

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "lora/adapter_file.hpp"

namespace pg::lora {

namespace {

// PEFT's target_modules are the modules' last names: "q_proj"; for GPT-2 "c_attn", "c_fc", and
// "attn.c_proj" / "mlp.c_proj", since "c_proj" alone would match both.
const char* peft_module_name(Target t) {
    switch (t) {
        case Target::attn_c_attn: return "c_attn";
        case Target::mlp_c_fc: return "c_fc";
        default: return target_name(t);
    }
}

}  // namespace

std::string peft_adapter_config_json(const LoraConfig& cfg, const ModelConfig& base) {
    std::vector<std::string> targets;
    for (int t = 0; t < kNumTargets; ++t)
        if (cfg.targets(Target(t))) targets.push_back(peft_module_name(Target(t)));
    // Keys as PEFT's LoraConfig names them; values as it reads them.
    io::JsonObject o;
    o.str("peft_type", "LORA")
        .str("task_type", "CAUSAL_LM")
        .null("base_model_name_or_path")
        .integer("r", cfg.rank)
        .flt("lora_alpha", cfg.alpha)
        .flt("lora_dropout", cfg.dropout)
        .strings("target_modules", targets)
        .boolean("fan_in_fan_out", base.is_gpt2())  // GPT-2's Conv1D; the Llama family's nn.Linear
        .str("bias", "none")
        .boolean("use_rslora", cfg.use_rslora)
        .boolean("use_dora", false)
        .boolean("init_lora_weights", true);
    if (cfg.layers.empty())
        o.null("layers_to_transform").null("layers_pattern");
    else
        o.integers("layers_to_transform", std::vector<long long>(cfg.layers.begin(), cfg.layers.end()))
            .str("layers_pattern", base.is_gpt2() ? "h" : "layers");
    o.object("rank_pattern", io::JsonObject())
        .object("alpha_pattern", io::JsonObject())
        .null("modules_to_save")
        .boolean("inference_mode", true);
    return o.indented_text() + "\n";
}

void export_peft(const Adapter& adapter, const std::string& folder) {
    const std::string config_path = folder + "/adapter_config.json";
    const std::string model_path = folder + "/adapter_model.safetensors";
    const std::string config = peft_adapter_config_json(adapter.config(), adapter.base().config);
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
