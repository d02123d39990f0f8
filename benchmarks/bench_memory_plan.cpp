// bench_memory_plan: the training memory plan (pg_train_memory_plan) against what a training
// session really holds. One configuration per process, so the process's peak is its own: the
// plan is printed first, then the model is made (a 16-bit base is rounded from fp32, so the peak
// is reset through /proc/self/clear_refs once the model is ready, as bench_lora does), the
// session trains --steps steps with a checkpoint at the end, and VmHWM is the measured peak.
//   predicted_mb  the plan's peak_bytes
//   measured_mb   VmHWM since the model was ready (the whole process's if the reset failed)
//   error         predicted / measured - 1
// benchmarks/run_memory_plan.sh runs the table of docs/phone.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/json.hpp"
#include "lora/config.hpp"
#include "model/config.hpp"
#include "phonegpt/phonegpt.h"
#include "process_stats.hpp"

namespace {

struct Options {
    std::string shape = "phonegpt";  // a preset (phonegpt, smollm2-135m, qwen2.5-0.5b, ...) | 64m (Ailoos: vocab 50,257, 12 x 512, context 256)
    std::string mode = "full";       // full | lora
    std::string base = "fp32";       // fp32 | fp16 | bf16 (lora)
    int batch = 8, seq = 0, threads = 2, steps = 2, rank = 8;
    bool recompute = false;
};

[[noreturn]] void usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--shape PRESET|64m] [--mode full|lora] [--base fp32|fp16|bf16] [--batch 8]\n"
                 "          [--seq 0 (= n_ctx)] [--threads 2] [--rank 8] [--recompute] [--steps 2]\n",
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
        else if (a == "--mode") o.mode = value();
        else if (a == "--base") o.base = value();
        else if (a == "--batch") o.batch = std::atoi(value().c_str());
        else if (a == "--seq") o.seq = std::atoi(value().c_str());
        else if (a == "--threads") o.threads = std::atoi(value().c_str());
        else if (a == "--rank") o.rank = std::atoi(value().c_str());
        else if (a == "--steps") o.steps = std::atoi(value().c_str());
        else if (a == "--recompute") o.recompute = true;
        else usage(argv[0]);
    }
    const bool ok = (o.mode == "full" || o.mode == "lora") &&
                    (o.base == "fp32" || o.base == "fp16" || o.base == "bf16") && (o.mode == "lora" || o.base == "fp32") &&
                    o.steps >= 1;
    if (!ok) usage(argv[0]);
    return o;
}

void check(pg_status s, const char* what) {
    if (s == PG_OK) return;
    std::fprintf(stderr, "%s: %s: %s\n", what, pg_status_name(s), pg_last_error());
    std::exit(1);
}

double mib(int64_t bytes) { return double(bytes) / 1048576.0; }

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const double rss_start = double(pg_bench::status_kib("VmRSS")) / 1024.0;
    pg_model_config mc;
    check(pg_model_config_preset(o.shape == "64m" ? "phonegpt" : o.shape.c_str(), &mc), "preset");
    if (o.shape == "64m") {
        mc.vocab_size = 50257;
        mc.padded_vocab_size = 50304;
        mc.n_layer = 12;
        mc.n_embd = 512;
        mc.n_head = 8;
        mc.n_ctx = 256;
    }
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = o.batch;
    tc.seq_len = o.seq;
    tc.n_threads = o.threads;
    tc.recompute_activations = o.recompute ? 1 : 0;
    tc.warmup_steps = 0;
    tc.total_steps = o.steps;
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    lc.rank = o.rank;
    lc.alpha = float(o.rank);
    lc.target_modules = pg::lora::family_targets(pg::model_config_from_c(mc));  // every linear of the family
    const bool lora = o.mode == "lora";
    const pg_weight_storage storage = o.base == "fp16" ? PG_WEIGHTS_FP16 : o.base == "bf16" ? PG_WEIGHTS_BF16 : PG_WEIGHTS_FP32;
    const int64_t n_tokens = int64_t(1) << 20;
    pg_memory_plan plan;
    plan.struct_size = sizeof plan;
    check(pg_train_memory_plan(&mc, storage, lora ? &lc : nullptr, &tc, n_tokens, &plan), "pg_train_memory_plan");

    pg_model* model = nullptr;
    check(pg_model_create(&mc, 1, &model), "pg_model_create");
    pg_lora_adapter* adapter = nullptr;
    if (lora) {
        check(pg_model_allow_untrained_base(model, 1), "allow_untrained_base");
        check(pg_lora_adapter_create(model, &lc, &adapter), "pg_lora_adapter_create");
        check(pg_model_set_weight_storage(model, storage), "pg_model_set_weight_storage");
    }
    const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                             "/bench_memory_plan_" + std::to_string(long(getpid())) + (lora ? ".pgl" : ".pgc");
    std::remove(path.c_str());
    pg_train_session_config sc;
    pg_train_session_config_default(&sc);
    pg_train_session* session = nullptr;
    check(lora ? pg_train_session_create_lora(model, adapter, &tc, &sc, path.c_str(), &session)
               : pg_train_session_create(model, &tc, &sc, path.c_str(), &session),
          "pg_train_session_create");
    {
        std::vector<int32_t> data(static_cast<std::size_t>(n_tokens));  // the app's copy, freed after set_data
        for (std::size_t i = 0; i < data.size(); ++i) data[i] = int32_t((i * 2654435761u) % uint32_t(mc.vocab_size));
        check(pg_train_session_set_data(session, data.data(), data.size()), "pg_train_session_set_data");
    }
    const double rss_ready = double(pg_bench::status_kib("VmRSS")) / 1024.0;
    const bool reset = pg_bench::reset_peak_rss();
    pg_train_session_report r;
    r.struct_size = sizeof r;
    check(pg_train_session_run(session, &r), "pg_train_session_run");
    const double measured = double(pg_bench::status_kib("VmHWM")) / 1024.0;
    pg_train_session_free(session);
    pg_lora_adapter_free(adapter);
    pg_model_free(model);
    std::remove(path.c_str());

    pg::io::JsonObject j;
    j.str("shape", o.shape).str("mode", o.mode).str("base", o.base).integer("batch", plan.batch_size)
        .integer("seq", o.seq > 0 ? o.seq : mc.n_ctx).integer("threads", o.threads).boolean("recompute", o.recompute)
        .integer("steps", r.steps_run).num("predicted_mb", mib(plan.peak_bytes)).num("measured_mb", measured)
        .boolean("peak_reset", reset).num("error", mib(plan.peak_bytes) / measured - 1.0)
        .num("rss_start_mb", rss_start).num("rss_ready_mb", rss_ready).num("weights_mb", mib(plan.weights_bytes))
        .num("adapter_mb", mib(plan.adapter_bytes)).num("gradients_mb", mib(plan.gradient_bytes))
        .num("optimizer_mb", mib(plan.optimizer_bytes)).num("activations_mb", mib(plan.activation_bytes))
        .num("checkpoint_mb", mib(plan.checkpoint_bytes)).num("data_mb", mib(plan.data_bytes))
        .num("runtime_mb", mib(plan.runtime_bytes));
    std::printf("%s\n", j.text().c_str());
    return 0;
}
