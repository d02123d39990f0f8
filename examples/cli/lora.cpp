// phonegpt lora train|merge|unmerge|info|export-peft|import-peft: LoRA adapters over a native
// base checkpoint (docs/lora.md), over the public C API.
#include <cstdio>
#include <cstring>

#include "train.hpp"

namespace cli {

namespace {

struct AdapterDeleter {
    void operator()(pg_lora_adapter* a) const { pg_lora_adapter_free(a); }
};
struct LoraTrainerDeleter {
    void operator()(pg_lora_trainer* t) const { pg_lora_trainer_free(t); }
};
using AdapterPtr = std::unique_ptr<pg_lora_adapter, AdapterDeleter>;
using LoraTrainerPtr = std::unique_ptr<pg_lora_trainer, LoraTrainerDeleter>;

const char* const kLoraUsage =
    "usage: phonegpt lora <subcommand> [options]\n"
    "\n"
    "  train        train an adapter over a frozen base checkpoint on a text file\n"
    "  merge        write base + adapter as a new native checkpoint\n"
    "  unmerge      subtract an adapter from a merged checkpoint again\n"
    "  info         describe an adapter file (configuration, tensors, its base, training record)\n"
    "  export-peft  write adapter_config.json + adapter_model.safetensors for PEFT\n"
    "  import-peft  read a PEFT adapter folder into an adapter file for a base\n"
    "\n"
    "phonegpt lora <subcommand> --help shows its options.\n";

std::vector<OptionSpec> with_common(std::vector<OptionSpec> own) {
    own.push_back({"json", nullptr, "print one JSON object of results on stdout"});
    own.push_back({"help", nullptr, "this help"});
    return own;
}

std::string required(const Options& opt, const char* name, const char* what) {
    if (!opt.has(name)) throw UsageError{std::string("--") + name + " " + what + " is required"};
    return opt.text(name, "");
}

std::string required_file(const Options& opt, const char* name, const char* what) {
    const std::string path = required(opt, name, what);
    if (!file_exists(path)) throw UsageError{std::string("--") + name + ": no file at \"" + path + "\""};
    return path;
}

AdapterPtr load_adapter(const std::string& path, pg_model* base) {
    pg_lora_adapter* a = nullptr;
    check(pg_lora_adapter_load(path.c_str(), base, &a), "pg_lora_adapter_load");
    return AdapterPtr(a);
}

// The module names of pg_lora_target's bits, in the library's order: GPT-2's, then the Llama family's.
const std::pair<uint32_t, const char*> kTargetNames[] = {
    {PG_LORA_ATTN_C_ATTN, "attn.c_attn"}, {PG_LORA_ATTN_C_PROJ, "attn.c_proj"}, {PG_LORA_MLP_C_FC, "mlp.c_fc"},
    {PG_LORA_MLP_C_PROJ, "mlp.c_proj"},   {PG_LORA_Q_PROJ, "q_proj"},           {PG_LORA_K_PROJ, "k_proj"},
    {PG_LORA_V_PROJ, "v_proj"},           {PG_LORA_O_PROJ, "o_proj"},           {PG_LORA_GATE_PROJ, "gate_proj"},
    {PG_LORA_UP_PROJ, "up_proj"},         {PG_LORA_DOWN_PROJ, "down_proj"}};

// "q_proj,v_proj", "c_attn,mlp.c_proj" (or "all": every linear of the base's family) as
// pg_lora_target bits; the library refuses a name of another family, naming the base's.
uint32_t parse_targets(const std::string& list, const pg_model* base) {
    if (list == "all") {
        pg_model_config mc;
        pg_model_config_default(&mc);
        check(pg_model_get_config(base, &mc), "pg_model_get_config");
        return mc.mlp == PG_MLP_SWIGLU ? PG_LORA_LLAMA_ALL_LINEARS : PG_LORA_ALL_LINEARS;
    }
    uint32_t bits = 0;
    for (size_t pos = 0; pos <= list.size();) {
        const size_t comma = std::min(list.find(',', pos), list.size());
        std::string t = list.substr(pos, comma - pos);
        if (t == "c_attn" || t == "c_fc") t = (t == "c_attn" ? "attn." : "mlp.") + t;  // PEFT's short names
        for (const char* block : {"self_attn.", "mlp."})  // "self_attn.q_proj", "mlp.up_proj" as PEFT's keys end
            if (t.compare(0, std::strlen(block), block) == 0 && t.find("_proj") != std::string::npos &&
                t.find("c_proj") == std::string::npos)
                t = t.substr(std::strlen(block));
        uint32_t bit = 0;
        for (const auto& n : kTargetNames)
            if (t == n.second) bit = n.first;
        if (!bit)
            throw UsageError{"--targets: \"" + t +
                             "\" is not a module name (GPT-2: c_attn, attn.c_proj, c_fc, mlp.c_proj; Llama family: "
                             "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj) or all"};
        bits |= bit;
        pos = comma + 1;
    }
    return bits;
}

// The pg_lora_target bits as module names, in the library's order.
std::vector<std::string> target_names(uint32_t bits) {
    std::vector<std::string> out;
    for (const auto& n : kTargetNames)
        if (bits & n.first) out.push_back(n.second);
    return out;
}

// Lets `base` be used although it was never trained (--allow-untrained-base), or refuses such a
// base here with the option's name: the library's refusal names its C function instead.
void accept_base(const Options& opt, pg_model* base, const std::string& path) {
    if (opt.has("allow-untrained-base")) {
        check(pg_model_allow_untrained_base(base, 1), "pg_model_allow_untrained_base");
        return;
    }
    pg_provenance_kind kind = PG_PROVENANCE_UNKNOWN;
    check(pg_model_provenance(base, &kind, nullptr, nullptr, nullptr, nullptr), "pg_model_provenance");
    if (kind == PG_PROVENANCE_INITIALISED)
        throw RuntimeError{"the base " + path +
                               " was never trained (its weights are random: an adapter over it learns noise); "
                               "--allow-untrained-base uses it anyway",
                           "PG_ERR_STATE", std::nullopt};
}

const OptionSpec kAllowUntrainedBase = {"allow-untrained-base", nullptr,
                                        "accept a base that was never trained (its weights are random)"};

std::vector<int32_t> parse_layers(const std::string& list) {
    std::vector<int32_t> out;
    for (size_t pos = 0; pos <= list.size();) {
        const size_t comma = std::min(list.find(',', pos), list.size());
        const std::string t = list.substr(pos, comma - pos);
        char* end = nullptr;
        const long v = std::strtol(t.c_str(), &end, 10);
        if (t.empty() || *end || v < 0 || v > 100000) throw UsageError{"--layers: \"" + t + "\" is not a layer index"};
        out.push_back(int32_t(v));
        pos = comma + 1;
    }
    return out;
}

std::string base_json(pg_lora_adapter* a) {
    size_t len = 0;
    const pg_status s = pg_lora_adapter_base_json(a, nullptr, 0, &len);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_lora_adapter_base_json");
    std::string out(len + 1, '\0');
    check(pg_lora_adapter_base_json(a, &out[0], out.size(), &len), "pg_lora_adapter_base_json");
    out.resize(len);
    return out;
}

Json config_json(pg_lora_adapter* a) {
    pg_lora_config c;
    pg_lora_config_default(&c);
    check(pg_lora_adapter_get_config(a, &c), "pg_lora_adapter_get_config");
    float scale = 0;
    check(pg_lora_adapter_scale(a, &scale), "pg_lora_adapter_scale");
    int64_t params = 0;
    check(pg_lora_adapter_num_params(a, &params), "pg_lora_adapter_num_params");
    Json j;
    j.integer("rank", c.rank).num("alpha", c.alpha).boolean("use_rslora", c.use_rslora != 0).num("scale", scale)
        .num("dropout", c.dropout).strings("target_modules", target_names(c.target_modules)).integer("params", params);
    std::vector<long long> layers(c.layers, c.layers + c.n_layers);
    j.integers("layers", layers);
    return j;
}

// The recorded base for --json: its description, fingerprint and provenance.
Json base_summary(const std::string& text) {
    const pg::io::JsonValue b = pg::io::parse_json(text.data(), text.size(), "the adapter's base");
    const pg::io::JsonValue* prov = b.find("provenance");
    Json j;
    j.str("description", b.find("description")->as_string("description"))
        .str("fingerprint", b.find("fingerprint")->as_string("fingerprint"))
        .str("provenance", prov ? prov->find("description")->as_string("provenance") : "unknown (not recorded)");
    return j;
}

int lora_train(int argc, char** argv) {
    std::vector<OptionSpec> specs = {
        {"base", "PATH", "the base checkpoint (frozen, never written)"},
        {"data", "PATH", "the training text (default: Tiny Shakespeare, as phonegpt train)"},
        {"out", "PATH", "the adapter file to write"},
        {"checkpoint", "PATH", "also write the adapter training checkpoint here (to resume)"},
        {"resume", "PATH", "continue from an adapter training checkpoint (its configuration)"},
        {"rank", "N", "r (default 8)"},
        {"alpha", "X", "lora_alpha (default: the rank)"},
        {"rslora", nullptr, "scale alpha / sqrt(r) instead of alpha / r"},
        {"lora-dropout", "P", "dropout on the LoRA branch (default 0)"},
        {"targets", "LIST", "module names, comma-separated: c_attn, attn.c_proj, c_fc, mlp.c_proj (GPT-2) or q_proj, "
                            "k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (Llama family); or all (default: "
                            "PEFT's for the base, c_attn or q_proj,v_proj)"},
        {"layers", "LIST", "layer indices to adapt (default: every layer)"},
        {"init-seed", "N", "seed of A's initialisation (default 1337)"},
        {"steps", "N", "optimizer steps to run (default 200)"},
        {"batch", "N", "batch size (default 8)"},
        {"seq-len", "N", "sequence length (default: the base's context)"},
        {"lr", "X", "peak learning rate (default 1e-3)"},
        {"warmup", "N", "warmup steps (default 10)"},
        {"seed", "N", "the run's seed (batches, dropout; default 1337)"},
        {"threads", "N", "threads (default: all cores)"},
        {"log-interval", "N", "steps between progress lines (default 10)"},
        kAllowUntrainedBase,
        kBaseStorage,
        kWeightsSpelling,
        kArithmetic,
        {"map-base", nullptr,
         "map the base's weights read-only from its file instead of copying them (a raw checkpoint saved with "
         "the mapping layout: phonegpt import --weights fp16, or --align-for-mapping)"},
    };
    Options opt("lora train", with_common(specs), argc, argv);
    if (opt.handle_help_and_output("--base PATH --out PATH [--data PATH] [--rank N] [--targets LIST] [--steps N] ...",
                                   "Trains a LoRA adapter over a frozen base; the progress line is phonegpt train's."))
        return 0;
    const std::string base_path = required_file(opt, "base", "PATH");
    const std::string out = required(opt, "out", "PATH");
    const bool map_base = opt.has("map-base");
    ModelPtr base = load_base(opt, base_path, map_base);
    accept_base(opt, base.get(), base_path);
    const pg_arithmetic arithmetic = arithmetic_named(opt);
    if (opt.has("resume") && arithmetic != PG_ARITHMETIC_EXACT)
        throw UsageError{"--arithmetic chooses how a new run multiplies; a resumed run (--resume) multiplies exactly"};
    const pg_tokenizer* tok = tokenizer_of(base.get(), "lora train");
    pg_weight_storage storage = PG_WEIGHTS_FP32;
    check(pg_model_weight_storage(base.get(), &storage, nullptr), "pg_model_weight_storage");
    // A mapped, 16-bit or quantized base is scored on a session with the adapter attached, not
    // merged into a new fp32 model (the same figures within the merge bound, without the copy).
    const bool score_on_session = map_base || storage != PG_WEIGHTS_FP32;
    const Corpus corpus = load_corpus(resolve_data_path(opt), tok, 0.9);
    const long long steps = opt.integer("steps", 200, 0, 100000000);

    AdapterPtr adapter;
    LoraTrainerPtr trainer;
    if (opt.has("resume")) {
        pg_lora_adapter* a = nullptr;
        pg_lora_trainer* t = nullptr;
        check(pg_lora_trainer_resume(opt.text("resume", "").c_str(), base.get(), &a, &t), "pg_lora_trainer_resume");
        adapter.reset(a);
        trainer.reset(t);
    } else {
        pg_lora_config lc;
        pg_lora_config_default(&lc);
        lc.rank = int32_t(opt.integer("rank", 8, 1, PG_LORA_MAX_RANK));
        lc.alpha = float(opt.real("alpha", lc.rank, 1e-6, 1e6));
        lc.use_rslora = opt.has("rslora") ? 1 : 0;
        lc.dropout = float(opt.real("lora-dropout", 0.0, 0.0, 0.99));
        lc.target_modules = opt.has("targets") ? parse_targets(opt.text("targets", ""), base.get()) : 0;
        const std::vector<int32_t> layers = opt.has("layers") ? parse_layers(opt.text("layers", "")) : std::vector<int32_t>{};
        lc.layers = layers.empty() ? nullptr : layers.data();
        lc.n_layers = int32_t(layers.size());
        lc.init_seed = uint64_t(opt.integer("init-seed", 1337, 0, INT64_MAX));
        pg_lora_adapter* a = nullptr;
        check_flags(pg_lora_adapter_create(base.get(), &lc, &a), "pg_lora_adapter_create");
        adapter.reset(a);
        pg_train_config tc;
        pg_train_config_default(&tc);
        tc.batch_size = int32_t(opt.integer("batch", 8, 1, 65536));
        tc.seq_len = int32_t(opt.integer("seq-len", 0, 0, 1 << 20));
        tc.lr_max = float(opt.real("lr", 1e-3, 0.0, 10.0));
        tc.lr_min = tc.lr_max / 10;
        tc.warmup_steps = int32_t(opt.integer("warmup", 10, 0, 1 << 30));
        tc.total_steps = steps;
        tc.seed = uint64_t(opt.integer("seed", 1337, 0, INT64_MAX));
        tc.n_threads = int32_t(opt.integer("threads", 0, 0, 1024));
        tc.arithmetic = arithmetic;
        clamp_warmup(tc, opt.has("warmup"), "lora train");
        pg_lora_trainer* t = nullptr;
        check_flags(pg_lora_trainer_create(base.get(), adapter.get(), &tc, &t), "pg_lora_trainer_create");
        trainer.reset(t);
    }
    check(pg_lora_trainer_set_data(trainer.get(), corpus.tokens.data(), corpus.n_train), "pg_lora_trainer_set_data");
    int64_t done = 0;
    check(pg_lora_adapter_training_record(adapter.get(), &done, nullptr, nullptr, nullptr),
          "pg_lora_adapter_training_record");
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    const int32_t* val = corpus.tokens.data() + corpus.n_train;
    const size_t n_val = corpus.tokens.size() - corpus.n_train;
    auto val_loss = [&](const char* what) {
        if (score_on_session) return evaluate(base.get(), val, n_val, ec, what, adapter.get(), arithmetic);
        pg_model* merged = nullptr;
        check(pg_lora_merge(base.get(), adapter.get(), 0, &merged), "pg_lora_merge");
        ModelPtr m(merged);
        return evaluate(m.get(), val, n_val, ec, what);
    };
    const EvalFigures before = val_loss("scoring base + adapter before training");
    say("lora train: %s, %zu train / %zu val tokens, val loss %.4f before\n", base_path.c_str(), corpus.n_train, n_val,
        before.loss);
    ProgressLine progress(done, done + steps, opt.integer("log-interval", 10, 1, 1 << 30));
    for (long long i = 0; i < steps; ++i) {
        pg_step_result r = {};
        r.struct_size = sizeof r;
        const double t0 = now_seconds();
        check(pg_lora_trainer_step(trainer.get(), &r), "pg_lora_trainer_step");
        progress.add(r, now_seconds() - t0);
    }
    const EvalFigures after = val_loss("scoring base + adapter after training");
    check(pg_lora_adapter_save(adapter.get(), out.c_str()), "pg_lora_adapter_save");
    if (opt.has("checkpoint"))
        check(pg_lora_trainer_save(trainer.get(), opt.text("checkpoint", "").c_str()), "pg_lora_trainer_save");
    say("wrote %s: val loss %.4f -> %.4f in %lld steps (%s)\n", out.c_str(), before.loss, after.loss, steps,
        duration(progress.train_seconds()).c_str());
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "lora train").str("base", base_path).boolean("base_mapped", map_base)
            .str("base_weights", weight_storage_kind(storage))
            .str("arithmetic", opt.text("arithmetic", "exact"))
            .str("out", out)
            .object("config", config_json(adapter.get())).integer("steps", steps).integer("step", done + steps)
            .integer("tokens", progress.tokens()).num("val_loss_before", before.loss).num("val_loss_after", after.loss)
            .object("val_before", eval_json(before)).object("val_after", eval_json(after))
            .num("train_seconds", progress.train_seconds());
        print_result(j);
    }
    return 0;
}

// merge and unmerge: a model file with the adapter added or taken away.
int lora_merge(int argc, char** argv, bool unmerge) {
    const char* name = unmerge ? "lora unmerge" : "lora merge";
    Options opt(name,
                with_common({{"model", "PATH", unmerge ? "the merged checkpoint" : "the base checkpoint"},
                             {"adapter", "PATH", "the adapter file"},
                             {"out", "PATH", "the checkpoint to write"},
                             {"threads", "N", "threads (default: all cores)"},
                             kAllowUntrainedBase}),
                argc, argv);
    if (opt.handle_help_and_output("--model PATH --adapter PATH --out PATH",
                                   unmerge ? "Subtracts scale * B A from a merged checkpoint (within fp32 rounding)."
                                           : "Writes base + scale * B A as a new checkpoint."))
        return 0;
    const std::string model_path = required_file(opt, "model", "PATH");
    const std::string adapter_path = required_file(opt, "adapter", "PATH");
    const std::string out = required(opt, "out", "PATH");
    const int32_t threads = int32_t(opt.integer("threads", 0, 0, 1024));
    ModelPtr model = load_model(model_path);
    accept_base(opt, model.get(), model_path);
    AdapterPtr adapter = load_adapter(adapter_path, nullptr);
    pg_weight_storage storage = PG_WEIGHTS_FP32;
    check(pg_model_weight_storage(model.get(), &storage, nullptr), "pg_model_weight_storage");
    if (unmerge) {
        check(pg_lora_unmerge_in_place(model.get(), adapter.get(), threads), "pg_lora_unmerge_in_place");
    } else if (storage != PG_WEIGHTS_FP32) {  // a 16-bit or quantized file: merged into a new fp32 model
        pg_model* merged = nullptr;
        check(pg_lora_merge(model.get(), adapter.get(), threads, &merged), "pg_lora_merge");
        model.reset(merged);
    } else {
        check(pg_lora_merge_in_place(model.get(), adapter.get(), threads), "pg_lora_merge_in_place");
    }
    check(pg_model_save(model.get(), out.c_str(), nullptr), "pg_model_save");
    say("%s: %s %s %s -> %s\n", name, model_path.c_str(), unmerge ? "-" : "+", adapter_path.c_str(), out.c_str());
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", name).str("model", model_path).str("adapter", adapter_path).str("out", out);
        print_result(j);
    }
    return 0;
}

int lora_info(int argc, char** argv) {
    Options opt("lora info",
                with_common({{"adapter", "PATH", "the adapter file"},
                             {"base", "PATH", "also check the adapter against this base checkpoint"},
                             kAllowUntrainedBase}),
                argc, argv);
    if (opt.handle_help_and_output("--adapter PATH [--base PATH]",
                                   "Describes an adapter file: configuration, tensors, its base and training record."))
        return 0;
    const std::string path = required_file(opt, "adapter", "PATH");
    ModelPtr base = opt.has("base") ? load_model(required_file(opt, "base", "PATH")) : ModelPtr();
    if (base) accept_base(opt, base.get(), opt.text("base", ""));
    AdapterPtr adapter = load_adapter(path, base.get());
    int32_t n = 0;
    check(pg_lora_adapter_num_tensors(adapter.get(), &n), "pg_lora_adapter_num_tensors");
    int64_t steps = 0, tokens = 0;
    const float* losses = nullptr;
    check(pg_lora_adapter_training_record(adapter.get(), &steps, &tokens, &losses, nullptr),
          "pg_lora_adapter_training_record");
    const Json config = config_json(adapter.get());
    const std::string base_text = base_json(adapter.get());
    say("%s: %d tensors, trained %lld steps (%lld tokens)%s\n", path.c_str(), n, (long long)steps, (long long)tokens,
        base ? ", fits the base" : "");
    say("config: %s\nbase: %s\n", config.text().c_str(), base_text.c_str());
    for (int32_t i = 0; i < n; ++i) {
        pg_tensor_info t = {};
        t.struct_size = sizeof t;
        check(pg_lora_adapter_tensor_info(adapter.get(), i, &t), "pg_lora_adapter_tensor_info");
        say("  %s [%lld, %lld]\n", t.name, (long long)t.shape[0], (long long)t.shape[1]);
    }
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "lora info").str("adapter", path).object("config", config)
            .integer("tensors", n).integer("steps", steps).integer("tokens", tokens)
            .num("last_loss", steps > 0 ? double(losses[steps - 1]) : 0.0).object("base", base_summary(base_text))
            .boolean("checked_against_base", base != nullptr);
        print_result(j);
    }
    return 0;
}

int lora_peft(int argc, char** argv, bool to_peft) {
    const char* name = to_peft ? "lora export-peft" : "lora import-peft";
    Options opt(name,
                with_common(to_peft ? std::vector<OptionSpec>{{"adapter", "PATH", "the adapter file"},
                                                             {"out", "DIR", "the folder to write (created if missing)"}}
                                    : std::vector<OptionSpec>{{"in", "DIR", "the PEFT adapter folder"},
                                                             {"base", "PATH", "the base checkpoint it is for"},
                                                             {"out", "PATH", "the adapter file to write"}}),
                argc, argv);
    if (opt.handle_help_and_output(to_peft ? "--adapter PATH --out DIR" : "--in DIR --base PATH --out PATH",
                                   to_peft ? "Writes adapter_config.json and adapter_model.safetensors for PEFT."
                                           : "Reads a PEFT adapter (geometry from its files, checked against the base)."))
        return 0;
    const std::string out = required(opt, "out", to_peft ? "DIR" : "PATH");
    AdapterPtr adapter;
    if (to_peft) {
        adapter = load_adapter(required_file(opt, "adapter", "PATH"), nullptr);
        if (!folder_exists(out)) make_dir(out);
        check(pg_lora_export_peft(adapter.get(), out.c_str()), "pg_lora_export_peft");
    } else {
        const std::string in = required(opt, "in", "DIR");
        if (!folder_exists(in)) throw UsageError{"--in: no folder at \"" + in + "\""};
        ModelPtr base = load_model(required_file(opt, "base", "PATH"));
        pg_lora_adapter* a = nullptr;
        check(pg_lora_import_peft(in.c_str(), base.get(), &a), "pg_lora_import_peft");
        adapter.reset(a);
        check(pg_lora_adapter_save(adapter.get(), out.c_str()), "pg_lora_adapter_save");
    }
    say("%s: wrote %s\n", name, out.c_str());
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", name).str("out", out).object("config", config_json(adapter.get()));
        print_result(j);
    }
    return 0;
}

}  // namespace

int cmd_lora(int argc, char** argv) {
    const std::string sub = argc > 0 ? argv[0] : "";
    if (sub == "train") return lora_train(argc - 1, argv + 1);
    if (sub == "merge") return lora_merge(argc - 1, argv + 1, false);
    if (sub == "unmerge") return lora_merge(argc - 1, argv + 1, true);
    if (sub == "info") return lora_info(argc - 1, argv + 1);
    if (sub == "export-peft") return lora_peft(argc - 1, argv + 1, true);
    if (sub == "import-peft") return lora_peft(argc - 1, argv + 1, false);
    if (sub == "--help" || sub == "help") {
        std::printf("%s", kLoraUsage);
        return 0;
    }
    throw UsageError{sub.empty() ? "a subcommand is required: train, merge, unmerge, info, export-peft or import-peft"
                                 : "unknown subcommand \"" + sub + "\" (train, merge, unmerge, info, export-peft, import-peft)"};
}

}  // namespace cli
