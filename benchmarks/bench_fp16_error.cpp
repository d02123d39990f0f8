// The error of fp16 inference arithmetic (PG_WEIGHTS_FP16_ARITHMETIC, the FMLA .8h GEMM) on a
// model's logits: the same model held as PG_WEIGHTS_FP16 (exact fp32 products of the fp16
// weights) against PG_WEIGHTS_FP16_ARITHMETIC, on the first windows of the validation split of a
// text. Prints one JSON line: the relative RMS error of the logits, the largest |difference| over
// the largest |logit|, and both mean losses. Meaningful only where the CPU has FP16 arithmetic
// (phones from ARMv8.2 on; qemu-aarch64 -cpu max): elsewhere both runs are the same bits, and
// "fp16_gemm" says "none".
//
// --storage q8_0 | q4_0 (with --arithmetic exact | int8) measures a quantized base instead,
// against the fp32 model (docs/quantization.md).
//
//   bench_fp16_error --checkpoint model.bin --data tinyshakespeare.txt [--windows 8]
//       [--storage fp16-arithmetic | q8_0 | q4_0] [--arithmetic exact | int8]
//   bench_fp16_error --preset phonegpt --data ... [--layers L --embd C --heads H] [--seed S]
//       (a model at GPT-2's initialisation, of the preset's shape or the one given)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/quant_gemm.hpp"
#include "phonegpt/phonegpt.h"

namespace {

void check(pg_status s, const char* what, const pg_model* m = nullptr) {
    if (s == PG_OK) return;
    std::fprintf(stderr, "bench_fp16_error: %s failed: %s: %s\n", what, pg_status_name(s),
                 m ? pg_model_last_error(m) : pg_last_error());
    std::exit(1);
}

const char* arg(int argc, char** argv, const char* name, const char* fallback) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
    return fallback;
}

pg_model* open_model(int argc, char** argv) {
    pg_model* m = nullptr;
    if (const char* path = arg(argc, argv, "--checkpoint", nullptr)) {
        check(pg_model_load(path, &m), "pg_model_load");
        return m;
    }
    pg_model_config mc;
    check(pg_model_config_preset(arg(argc, argv, "--preset", "phonegpt"), &mc), "pg_model_config_preset");
    mc.n_layer = std::atoi(arg(argc, argv, "--layers", std::to_string(mc.n_layer).c_str()));
    mc.n_embd = std::atoi(arg(argc, argv, "--embd", std::to_string(mc.n_embd).c_str()));
    mc.n_head = std::atoi(arg(argc, argv, "--heads", std::to_string(mc.n_head).c_str()));
    check(pg_model_create(&mc, uint64_t(std::atoll(arg(argc, argv, "--seed", "1"))), &m), "pg_model_create");
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    const char* data = arg(argc, argv, "--data", nullptr);
    if (!data) {
        std::fprintf(stderr, "usage: bench_fp16_error (--checkpoint PATH | --preset NAME [--layers L --embd C "
                             "--heads H --seed S]) --data TEXT [--windows N]\n");
        return 2;
    }
    const int windows = std::atoi(arg(argc, argv, "--windows", "8"));
    pg_model* half = open_model(argc, argv);
    pg_model* fast = open_model(argc, argv);
    pg_model_config mc;
    pg_model_config_default(&mc);
    check(pg_model_get_config(half, &mc), "pg_model_get_config", half);
    // The tokens: the model's tokenizer, or a character one built from the text.
    char* bytes = nullptr;
    size_t n_bytes = 0;
    check(pg_read_file(data, &bytes, &n_bytes), "reading --data");
    const std::string s(bytes, n_bytes);
    pg_buffer_free(bytes);
    const pg_tokenizer* tok = nullptr;
    check(pg_model_get_tokenizer(half, &tok), "pg_model_get_tokenizer", half);
    pg_tokenizer* own = nullptr;
    if (!tok) {
        check(pg_tokenizer_create_char(s.data(), s.size(), &own), "pg_tokenizer_create_char");
        tok = own;
    }
    size_t n = 0;
    pg_tokenizer_encode(tok, s.data(), s.size(), nullptr, 0, &n);
    std::vector<int32_t> ids(n);
    check(pg_tokenizer_encode(tok, s.data(), s.size(), ids.data(), ids.size(), &n), "pg_tokenizer_encode");
    const size_t first = size_t(0.9 * double(n));  // the validation split, as training leaves it
    const int T = mc.n_ctx, V = mc.vocab_size;
    if (first + size_t(windows) * T + 1 > n) {
        std::fprintf(stderr, "bench_fp16_error: the validation split holds fewer than %d windows\n", windows);
        return 1;
    }
    std::vector<int32_t> inputs(size_t(windows) * T), targets(inputs.size());
    for (int w = 0; w < windows; ++w)
        for (int t = 0; t < T; ++t) {
            inputs[size_t(w) * T + t] = ids[first + size_t(w) * T + t];
            targets[size_t(w) * T + t] = ids[first + size_t(w) * T + t + 1];
        }
    const std::string storage = arg(argc, argv, "--storage", "fp16-arithmetic");
    const std::string arithmetic = arg(argc, argv, "--arithmetic", "exact");
    const bool quantized = storage == "q8_0" || storage == "q4_0";
    if (!quantized && storage != "fp16-arithmetic") {
        std::fprintf(stderr, "bench_fp16_error: --storage must be fp16-arithmetic, q8_0 or q4_0\n");
        return 2;
    }
    // The reference: the fp16 model for fp16 arithmetic, the fp32 one for a quantized base.
    if (!quantized) check(pg_model_set_weight_storage(half, PG_WEIGHTS_FP16), "pg_model_set_weight_storage", half);
    check(pg_model_set_weight_storage(fast, !quantized ? PG_WEIGHTS_FP16_ARITHMETIC
                                            : storage == "q8_0" ? PG_WEIGHTS_Q8_0 : PG_WEIGHTS_Q4_0),
          "pg_model_set_weight_storage", fast);
    std::vector<float> exact(inputs.size() * V), got(inputs.size() * V);
    float loss_exact = 0, loss_fast = 0;
    pg_session_config sc;
    pg_session_config_default(&sc);
    pg_session* reference = nullptr;
    check(pg_session_create(half, &sc, &reference), "pg_session_create");
    check(pg_session_forward(reference, inputs.data(), windows, T, targets.data(), exact.data(), &loss_exact),
          "pg_session_forward");
    pg_session_free(reference);
    sc.arithmetic = arithmetic == "int8" ? PG_ARITHMETIC_INT8 : PG_ARITHMETIC_EXACT;
    pg_session* session = nullptr;
    check(pg_session_create(fast, &sc, &session), "pg_session_create");
    check(pg_session_forward(session, inputs.data(), windows, T, targets.data(), got.data(), &loss_fast),
          "pg_session_forward");
    pg_session_free(session);
    double num = 0, den = 0, max_diff = 0, max_logit = 0;
    for (size_t i = 0; i < exact.size(); ++i) {
        const double d = double(got[i]) - exact[i];
        num += d * d;
        den += double(exact[i]) * exact[i];
        max_diff = std::fmax(max_diff, std::fabs(d));
        max_logit = std::fmax(max_logit, std::fabs(double(exact[i])));
    }
    int64_t params = 0;
    pg_model_num_params(half, &params);
    pg::io::JsonObject out;
    out.str("storage", storage).str("arithmetic", arithmetic).str("int8_gemm", pg::kernels::int8_gemm_name())
        .str("fp16_gemm", pg::kernels::fp16_arithmetic_gemm()).integer("params", params).integer("n_layer", mc.n_layer)
        .integer("n_embd", mc.n_embd).integer("windows", windows).integer("T", T)
        .num("logits_relative_rms", std::sqrt(num / den)).num("logits_max_diff_over_max", max_diff / max_logit)
        .num("loss_reference", loss_exact).num("loss", loss_fast);
    std::printf("%s\n", out.text().c_str());
    pg_tokenizer_free(own);
    pg_model_free(half);
    pg_model_free(fast);
    return 0;
}
