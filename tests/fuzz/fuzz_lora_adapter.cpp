// libFuzzer target: the adapter file reader (pg::lora::read_adapter, what pg_lora_adapter_load
// runs) and the PEFT importer (pg::lora::import_peft_from, what pg_lora_import_peft runs). An
// input is the whole file: read as an adapter file, then as a PEFT adapter_model.safetensors
// beside a fixed adapter_config.json, and as a PEFT adapter_config.json beside a fixed valid
// tensor file, both over a fixed base of the corpus's geometry. Any input must give an adapter
// or a pg::Error, never a crash, a sanitizer report or an unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "lora/adapter_file.hpp"
#include "lora/peft.hpp"
#include "model/params.hpp"
#include "tokenizer/char_tokenizer.hpp"

namespace {

// The corpus adapters' base: 2 layers, width 16, context 16, vocabulary 11.
const pg::Model& fixed_base() {
    static const pg::Model base = [] {
        pg::ModelConfig c;
        c.n_layer = 2;
        c.n_head = 2;
        c.n_embd = 16;
        c.n_ctx = 16;
        c.vocab_size = 11;
        c.padded_vocab_size = 12;
        pg::Model m(c);
        pg::init_gpt2_params(m.config(), m.params(), 1234);
        m.set_tokenizer(pg::CharTokenizer::from_text("abcdefghijk"));
        return m;
    }();
    return base;
}

// A PEFT pair for fixed_base(): c_attn and mlp.c_proj of both layers, rank 2.
const pg::lora::Adapter& fixed_adapter() {
    static const pg::lora::Adapter adapter = [] {
        pg::lora::LoraConfig cfg;
        cfg.rank = 2;
        cfg.target_modules = PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_PROJ;
        return pg::lora::Adapter::create(fixed_base(), cfg);
    }();
    return adapter;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    try {
        pg::io::MemorySource src(data, size);
        const pg::lora::Adapter adapter = pg::lora::read_adapter(src);
        (void)adapter.num_params();
    } catch (const pg::Error&) {
    }
    static const std::string config = pg::lora::peft_adapter_config_json(fixed_adapter().config(), fixed_adapter().base().config);
    static const std::vector<uint8_t> tensors = [] {
        pg::io::VectorSink sink;
        pg::lora::write_adapter(fixed_adapter(), sink);
        return sink.bytes;
    }();
    try {
        pg::io::MemorySource src(data, size, "adapter_model.safetensors");
        (void)pg::lora::import_peft_from(config, "adapter_config.json", src, fixed_base()).num_params();
    } catch (const pg::Error&) {
    }
    try {
        pg::io::MemorySource src(tensors.data(), tensors.size(), "adapter_model.safetensors");
        const std::string text(reinterpret_cast<const char*>(data), size);
        (void)pg::lora::import_peft_from(text, "adapter_config.json", src, fixed_base()).num_params();
    } catch (const pg::Error&) {
    }
    return 0;
}
