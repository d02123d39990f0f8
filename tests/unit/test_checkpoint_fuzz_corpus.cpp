// Writes the libFuzzer seed corpus (tests/fuzz/corpus/) from the library's own writers, with a
// 4-wide one-layer model so the seeds stay a few KB:
//   phonegpt_unit_tests "[.write-fuzz-corpus]"
// The seeds are committed; this test exists so they can be regenerated when formats change.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "io/llmc.hpp"
#include "io/safetensors.hpp"
#include "test_checkpoint_support.hpp"

using namespace ckpt_test;

TEST_CASE("write the fuzz seed corpus", "[.write-fuzz-corpus]") {
    pg::ModelConfig cfg;
    cfg.n_layer = 1;
    cfg.n_head = 1;
    cfg.n_embd = 4;
    cfg.n_ctx = 4;
    cfg.vocab_size = 4;
    cfg.padded_vocab_size = 4;
    pg::Model model(cfg);
    pg::init_gpt2_params(cfg, model.params(), 1);
    model.set_tokenizer(pg::CharTokenizer::from_text("abcd"));
    pg::Model bare(cfg);
    pg::init_gpt2_params(cfg, bare.params(), 2);
    const pg::TrainerState state = make_state(model, 1);

    const std::string root = pg_test::fixtures_dir() + "/../fuzz/corpus";
    for (const char* d : {"", "/native", "/llmc", "/safetensors"}) ::mkdir((root + d).c_str(), 0777);
    write_bytes(root + "/native/model_raw", encode(model, nullptr, 0));
    write_bytes(root + "/native/model_zstd", encode(model, nullptr, 1));
    write_bytes(root + "/native/train_raw", encode(model, &state, 0));
    write_bytes(root + "/native/train_zstd", encode(model, &state, 1));
    write_bytes(root + "/native/no_tokenizer", encode(bare, nullptr, 0));
    for (pg::WeightStorage s : {pg::WeightStorage::fp32, pg::WeightStorage::fp16}) {  // format 1.3's mapping layout
        pg::io::CheckpointOptions o;
        o.storage = s;
        o.mappable = true;
        pg::io::VectorSink sink;
        pg::io::write_checkpoint(model, nullptr, o, sink);
        write_bytes(root + (s == pg::WeightStorage::fp32 ? "/native/mappable_fp32" : "/native/mappable_fp16"), sink.bytes);
    }
    // Format 1.6's quantized storages: rows of 32, the smallest that blocks fit.
    pg::ModelConfig wide = cfg;
    wide.n_embd = 32;
    for (pg::WeightStorage s : {pg::WeightStorage::q8_0, pg::WeightStorage::q4_0}) {
        pg::Model q(wide);
        pg::init_gpt2_params(wide, q.params(), 3);
        q.set_tokenizer(pg::CharTokenizer::from_text("abcd"));
        q.hold_frozen_in(s);
        pg::io::VectorSink sink;
        pg::io::write_checkpoint(q, nullptr, pg::io::CheckpointOptions{}, sink);
        write_bytes(root + "/native/quantized_" + pg::weight_storage_name(s), sink.bytes);
    }

    pg::io::VectorSink llmc;
    pg::io::write_llmc(model, llmc);
    write_bytes(root + "/llmc/fp32", llmc.bytes);
    std::vector<uint8_t> bf16(llmc.bytes.begin(), llmc.bytes.begin() + 1024);
    bf16[4] = 5;
    for (std::size_t i = 1024; i < llmc.bytes.size(); i += 4) {
        bf16.push_back(llmc.bytes[i + 2]);
        bf16.push_back(llmc.bytes[i + 3]);
    }
    write_bytes(root + "/llmc/bf16", bf16);

    for (const pg::Model* m : {&model, &bare}) {
        pg::io::VectorSink st;
        pg::io::write_hf_gpt2_safetensors(*m, st);
        const std::string config = pg::io::hf_gpt2_config_json(cfg);
        std::vector<uint8_t> seed(4);
        const uint32_t n = uint32_t(config.size());
        std::memcpy(seed.data(), &n, 4);
        seed.insert(seed.end(), config.begin(), config.end());
        seed.insert(seed.end(), st.bytes.begin(), st.bytes.end());
        write_bytes(root + (m == &model ? "/safetensors/gpt2_with_tokenizer" : "/safetensors/gpt2"), seed);
    }
}
