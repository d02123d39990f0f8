// bench_lora (and `phonegpt-bench lora`): one training configuration per process, so its peak
// RSS is its own: a LoRA step over a frozen base held in fp32, fp16, bf16, q8_0 or q4_0
// (--base-storage, also spelt --base), multiplied in --arithmetic exact|bf16|int8 (bf16-arith:
// bf16 storage with bf16 arithmetic, where the CPU has AVX512_BF16), or a full
// fine-tuning step, at the Ailoos shape (vocab 50,257, 12 layers, width 512, 8 heads, context
// 256: 63.7M weights), GPT-2 small (124M, context 1024 or less) or a model preset's shape
// (--shape smollm2-135m, qwen2.5-0.5b, ...: the Llama family, random weights). --targets is
// all (every linear of the base's family), or a comma list of the adapted modules (GPT-2's
// c_attn, attn.c_proj, c_fc, mlp.c_proj; the Llama family's q_proj ... down_proj, each with its
// own A and B as in PEFT). Prints one JSON line: the
// median and every timed step's wall ms and CPU ms, and the memory:
//   rss_ready_mb   resident after the model (and its conversion) is ready, before any step
//   peak_train_mb  the peak while training (VmHWM reset through /proc/self/clear_refs once the
//                  base is ready, so a conversion's transient fp32 copy is not counted)
//   peak_process_mb the process's whole peak (getrusage), conversion included
//   weights_mb, activations_mb, trained_state_mb  the breakdown the library itself holds
//   smaps_ready / smaps_train  /proc/self/smaps_rollup after the base is ready and after the
//                  steps (MB): rss, anonymous (private memory the process made), file_rss = rss -
//                  anonymous (file-backed pages: a mapped base's, shared with every process that
//                  maps the file and droppable by the kernel), shared_clean, private_clean,
//                  private_dirty
// The base is made in memory (random weights), or read from a checkpoint: --write-base PATH saves
// the shape's base in --base's storage with the mapping layout and exits (bf16-arith: as bf16, the
// values it holds); --base-file PATH loads it (copied), --map-base with it maps it read-only
// (docs/performance.md, "a mapped base"), as stored, except that --base bf16-arith switches a bf16
// file's base to bf16 arithmetic.
// --profile N then runs N more steps with a StepProfile attached and prints its per-phase table
// (benchmarks/profile_table.hpp) to stderr, after the JSON line.
// benchmarks/run_lora_bench.sh runs it interleaved with the PyTorch twin
// (benchmarks/lora_torch_twin.py, which prints the same fields) and summarises.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "io/checkpoint.hpp"
#include "core/json.hpp"
#include "lora/adapter.hpp"
#include "lora/config.hpp"
#include "lora/lora_trainer.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "median.hpp"
#include "process_stats.hpp"
#include "profile_table.hpp"
#include "train/trainer.hpp"

namespace {

struct Options {
    std::string shape = "ailoos";  // ailoos | gpt2 | a model preset
    int ctx = 0;                   // 0: the shape's (256 / 1024)
    int batch = 4, seq = 256, threads = 2, steps = 3, warmup = 1, rank = 8;
    int top_layers = 0;            // > 0: adapt only the top N layers (layers_to_transform)
    std::string mode = "lora";     // lora | full
    std::string targets = "all";   // all | comma list of module names (c_attn, ...; q_proj, ...)
    std::string base = "fp16";     // fp32 | fp16 | bf16 | q8_0 | q4_0 | bf16-arith
    std::string arithmetic = "exact";  // exact | fp16 | bf16 | int8
    std::string write_base;        // set: save the base there (mapping layout) and exit
    std::string base_file;         // set: read the base from this checkpoint
    bool map_base = false;         // with base_file: map it instead of copying
    int profile_steps = 0;         // > 0: that many more steps, profiled (table on stderr)
    bool recompute = false;
};

[[noreturn]] void usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--shape ailoos|gpt2|PRESET] [--ctx N] [--batch 4] [--seq 256] [--threads 2]\n"
                 "          [--mode lora|full] [--targets all|c_attn,attn.c_proj,...] [--top-layers N]\n"
                 "          [--base-storage fp32|fp16|bf16|q8_0|q4_0|bf16-arith] [--rank 8]\n"
                 "          [--arithmetic exact|fp16|bf16|int8]\n"
                 "          [--recompute] [--steps 3] [--warmup 1] [--profile STEPS]\n"
                 "          [--write-base PATH | --base-file PATH [--map-base]]\n",
                 argv0);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(argv[0]);
            return argv[++i];
        };
        if (a == "--shape") o.shape = value();
        else if (a == "--ctx") o.ctx = std::atoi(value().c_str());
        else if (a == "--batch") o.batch = std::atoi(value().c_str());
        else if (a == "--seq") o.seq = std::atoi(value().c_str());
        else if (a == "--threads") o.threads = std::atoi(value().c_str());
        else if (a == "--steps") o.steps = std::atoi(value().c_str());
        else if (a == "--warmup") o.warmup = std::atoi(value().c_str());
        else if (a == "--rank") o.rank = std::atoi(value().c_str());
        else if (a == "--mode") o.mode = value();
        else if (a == "--targets") o.targets = value();
        else if (a == "--top-layers") o.top_layers = std::atoi(value().c_str());
        else if (a == "--base" || a == "--base-storage") o.base = value();
        else if (a == "--arithmetic") o.arithmetic = value();
        else if (a == "--recompute") o.recompute = true;
        else if (a == "--write-base") o.write_base = value();
        else if (a == "--base-file") o.base_file = value();
        else if (a == "--map-base") o.map_base = true;
        else if (a == "--profile") o.profile_steps = std::atoi(value().c_str());
        else usage(argv[0]);
    }
    const bool ok = (o.mode == "lora" || o.mode == "full") && o.top_layers >= 0 &&
                    (o.base == "fp32" || o.base == "fp16" || o.base == "bf16" || o.base == "q8_0" || o.base == "q4_0" ||
                     o.base == "bf16-arith") &&
                    (o.arithmetic == "exact" || o.arithmetic == "fp16" || o.arithmetic == "bf16" ||
                     o.arithmetic == "int8") &&
                    (o.base != "bf16-arith" || o.arithmetic == "exact") &&
                    (o.write_base.empty() || !(o.base == "q8_0" || o.base == "q4_0")) && o.steps >= 1 && o.warmup >= 0 &&
                    (!o.map_base || !o.base_file.empty()) && (o.write_base.empty() || o.base_file.empty()) &&
                    (o.mode == "lora" || o.base == "fp32");
    if (!ok) usage(argv[0]);
    return o;
}

// The pg_lora_target bits of --targets for this base: "all" (every linear of its family) or
// module names as the library names them (c_attn, attn.c_proj, ...; q_proj, ..., down_proj,
// with or without their block); exits naming an unknown module.
uint32_t target_bits(const std::string& targets, const pg::ModelConfig& base) {
    if (targets == "all") return pg::lora::family_targets(base);
    uint32_t bits = 0;
    std::size_t at = 0;
    while (at <= targets.size()) {
        const std::size_t end = std::min(targets.find(',', at), targets.size());
        const std::string name = targets.substr(at, end - at);
        uint32_t bit = 0;
        int matches = 0;  // "c_attn" for attn.c_attn, but "c_proj" is two modules
        for (int t = 0; t < pg::lora::kNumTargets; ++t) {
            const auto target = static_cast<pg::lora::Target>(t);
            const std::string full = pg::lora::target_name(target), module = pg::lora::target_module(target);
            const std::string tail = "." + name;
            if (name == full || name == module ||
                (full.size() > tail.size() && full.compare(full.size() - tail.size(), tail.size(), tail) == 0)) {
                bit = pg::lora::target_bit(target);
                ++matches;
            }
        }
        if (matches != 1) {
            std::fprintf(stderr, "bench_lora: --targets: unknown module '%s' (this base's: %s)\n", name.c_str(),
                         pg::lora::family_target_names(base).c_str());
            std::exit(2);
        }
        bits |= bit;
        at = end + 1;
    }
    return bits;
}

pg::ModelConfig shape_config(const Options& o) {
    if (o.shape != "ailoos" && o.shape != "gpt2") {
        pg::ModelConfig c = pg::model_preset(o.shape.c_str());
        if (o.ctx > 0) c.n_ctx = o.ctx;
        return c;
    }
    pg::ModelConfig c;
    c.vocab_size = 50257;
    c.padded_vocab_size = 50304;
    c.n_layer = 12;
    c.n_embd = o.shape == "gpt2" ? 768 : 512;
    c.n_head = o.shape == "gpt2" ? 12 : 8;
    c.n_ctx = o.ctx > 0 ? o.ctx : (o.shape == "gpt2" ? 1024 : 256);
    return c;
}

// /proc/self/smaps_rollup's resident memory split (MB), as a JSON object; empty without it.
pg::io::JsonObject smaps_rollup() {
    std::ifstream f("/proc/self/smaps_rollup");
    std::string line;
    double rss = 0, anon = 0, shared_clean = 0, private_clean = 0, private_dirty = 0;
    auto field = [&](const char* key, double* out) {
        const std::size_t n = std::strlen(key);
        if (line.compare(0, n, key) == 0) *out = std::atof(line.c_str() + n) / 1024.0;
    };
    while (std::getline(f, line)) {
        field("Rss:", &rss);
        field("Anonymous:", &anon);
        field("Shared_Clean:", &shared_clean);
        field("Private_Clean:", &private_clean);
        field("Private_Dirty:", &private_dirty);
    }
    pg::io::JsonObject j;
    j.num("rss", rss).num("anonymous", anon).num("file_rss", rss - anon).num("shared_clean", shared_clean)
        .num("private_clean", private_clean).num("private_dirty", private_dirty);
    return j;
}

pg::WeightStorage storage_of(const std::string& base) {
    return base == "fp16"                            ? pg::WeightStorage::fp16
           : base == "bf16" || base == "bf16-arith" ? pg::WeightStorage::bf16
           : base == "q8_0"                          ? pg::WeightStorage::q8_0
           : base == "q4_0"                          ? pg::WeightStorage::q4_0
                                                     : pg::WeightStorage::fp32;
}

pg_arithmetic arithmetic_of(const Options& o) {
    if (o.base == "bf16-arith" || o.arithmetic == "bf16") return PG_ARITHMETIC_BF16;
    return o.arithmetic == "int8" ? PG_ARITHMETIC_INT8 : o.arithmetic == "fp16" ? PG_ARITHMETIC_FP16 : PG_ARITHMETIC_EXACT;
}

// The shape's base with random weights, or the checkpoint's (copied or mapped).
pg::Model make_base(const Options& o) {
    if (o.base_file.empty()) {
        pg::Model model(shape_config(o));
        pg::init_gpt2_params(model.config(), model.params(), 1);
        return model;
    }
    if (o.map_base) {
        auto file = std::make_shared<const pg::io::MappedFile>(o.base_file);
        return pg::io::map_checkpoint(file, pg::io::read_checkpoint_header(*file));
    }
    pg::io::FileSource src(o.base_file);
    const pg::io::CheckpointHeader h = pg::io::read_checkpoint_header(src);
    pg::Model model = pg::io::make_model_for(h);
    pg::io::read_checkpoint_data(src, h, model, nullptr);
    return model;
}

}  // namespace

#ifdef PG_BENCH_SUBCOMMANDS
int bench_lora_main(int argc, char** argv) {
#else
int main(int argc, char** argv) {
#endif
    const Options o = parse(argc, argv);
    try {
        pg::Model model = make_base(o);
        if (!o.write_base.empty()) {
            pg::io::CheckpointOptions co;
            co.storage = storage_of(o.base);
            co.mappable = true;
            pg::io::save_checkpoint(model, nullptr, co, o.write_base);
            std::printf("%s\n", pg::io::JsonObject().str("wrote", o.write_base).text().c_str());
            return 0;
        }
        // Tokens: a fixed pseudo-random stream (the speed does not depend on the text).
        std::vector<int32_t> data(size_t(1) << 20);
        pg::Rng rng(7);
        for (int32_t& t : data) t = int32_t(rng.next_u64() % uint64_t(model.config().vocab_size));
        pg::TrainConfig tc;
        tc.batch_size = o.batch;
        tc.seq_len = o.seq;
        tc.n_threads = o.threads;
        tc.recompute_activations = o.recompute;
        tc.arithmetic = o.mode == "lora" ? arithmetic_of(o) : PG_ARITHMETIC_EXACT;
        tc.warmup_steps = 0;
        tc.lr_max = 1e-4f;

        std::unique_ptr<pg::lora::Adapter> adapter;
        std::unique_ptr<pg::lora::LoraTrainer> lora;
        std::unique_ptr<pg::Trainer> full;
        int64_t trained = model.num_params();
        if (o.mode == "lora") {
            pg::lora::LoraConfig lc;
            lc.rank = o.rank;
            lc.alpha = float(o.rank);
            lc.target_modules = target_bits(o.targets, model.config());
            const int n_layer = model.config().n_layer;
            for (int l = n_layer - o.top_layers; o.top_layers > 0 && l < n_layer; ++l) lc.layers.push_back(l);
            adapter = std::make_unique<pg::lora::Adapter>(pg::lora::Adapter::create(model, lc));
            // A file's base is as stored, unless it is to be quantized (from the values it holds).
            if (o.base_file.empty() || pg::is_quantized(storage_of(o.base))) model.hold_frozen_in(storage_of(o.base));
            lora = std::make_unique<pg::lora::LoraTrainer>(model, *adapter, tc, true);
            lora->set_data(data.data(), data.size());
            trained = adapter->num_params();
        } else {
            full = std::make_unique<pg::Trainer>(model, tc);
            full->set_data(data.data(), data.size());
        }
        const double rss_ready = double(pg_bench::status_kib("VmRSS")) / 1024.0;
        const pg::io::JsonObject smaps_ready = smaps_rollup();
        const bool peak_reset = pg_bench::reset_peak_rss();
        std::vector<double> wall, cpu;
        float last_loss = 0.0f;
        for (int s = 0; s < o.warmup + o.steps; ++s) {
            const auto t0 = std::chrono::steady_clock::now();
            const double c0 = pg_bench::process_cpu_seconds();
            last_loss = (lora ? lora->step() : full->step()).loss;
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (s < o.warmup) continue;
            wall.push_back(ms);
            cpu.push_back((pg_bench::process_cpu_seconds() - c0) * 1e3);
        }
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        const double activations = double(lora ? lora->activation_bytes() : full->activation_bytes());
        // Trained tensors: values are the adapter's (the model's for full training, inside
        // weights_mb), gradients and two AdamW moments.
        const double trained_state = double(trained) * 4.0 * (lora ? 4.0 : 3.0);
        pg::io::JsonObject j;
        j.str("peer", "phonegpt").str("shape", o.shape).integer("ctx", model.config().n_ctx)
            .integer("params", model.num_params()).str("mode", o.mode)
            .str("targets", o.mode == "lora" ? o.targets : "-")
            .integer("top_layers", o.mode == "lora" && o.top_layers > 0 ? o.top_layers : model.config().n_layer)
            .str("base", pg::weight_storage_name(model.storage()))
            .str("arithmetic", pg::arithmetic_name(pg::Arithmetic(tc.arithmetic)))
            .str("base_source", o.base_file.empty() ? "memory" : o.map_base ? "mapped" : "copied")
            .boolean("recompute", o.recompute).integer("batch", o.batch).integer("seq", o.seq)
            .integer("threads", o.threads).integer("trained_params", trained)
            .num("ms_median", median_of(wall)).num("cpu_ms_median", median_of(cpu)).numbers("ms", wall)
            .numbers("cpu_ms", cpu).num("rss_ready_mb", rss_ready)
            .num("peak_train_mb", peak_reset ? double(pg_bench::status_kib("VmHWM")) / 1024.0 : double(u.ru_maxrss) / 1024.0)
            .boolean("peak_reset", peak_reset).num("peak_process_mb", double(u.ru_maxrss) / 1024.0)
            .num("weights_mb", double(model.weight_bytes()) / 1048576.0)
            .num("activations_mb", activations / 1048576.0).num("trained_state_mb", trained_state / 1048576.0)
            .flt("last_loss", last_loss).object("smaps_ready", smaps_ready).object("smaps_train", smaps_rollup());
        std::printf("%s\n", j.text().c_str());
        std::fflush(stdout);
        if (o.profile_steps > 0) {
            pg::StepProfile prof(lora ? lora->threads() : full->threads());
            if (lora) lora->set_profile(&prof);
            else full->set_profile(&prof);
            const auto t0 = std::chrono::steady_clock::now();
            for (int s = 0; s < o.profile_steps; ++s) lora ? lora->step() : full->step();
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (lora) lora->set_profile(nullptr);
            else full->set_profile(nullptr);
            std::fprintf(stderr, "%s", format_profile(prof, o.profile_steps, ms / o.profile_steps,
                                                     "of the whole trainer step").c_str());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_lora: %s\n", e.what());
        return 1;
    }
    return 0;
}
