// Models and scores shared by train, eval, export and import (cli.hpp).
#include "cli.hpp"

#include <cstdio>

namespace cli {

pg_model_config config_of(pg_model* model) {
    pg_model_config c;
    pg_model_config_default(&c);
    check(pg_model_get_config(model, &c), "pg_model_get_config");
    return c;
}

Json model_json(pg_model* model) {
    const pg_model_config c = config_of(model);
    int64_t params = 0;
    check(pg_model_num_params(model, &params), "pg_model_num_params");
    Json j;
    j.integer("n_layer", c.n_layer).integer("n_head", c.n_head).integer("n_embd", c.n_embd)
        .integer("n_ctx", c.n_ctx).integer("vocab_size", c.vocab_size)
        .integer("padded_vocab_size", c.padded_vocab_size).integer("params", params);
    return j;
}

EvalFigures evaluate(pg_model* model, const int32_t* tokens, size_t n, const pg_eval_config& config,
                     const std::string& what, const pg_lora_adapter* adapter, pg_arithmetic arithmetic) {
    pg_eval_result r{};
    r.struct_size = sizeof r;
    const double t0 = now_seconds();
    const char* call = "pg_session_evaluate";
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.n_threads = config.n_threads;
    sc.arithmetic = arithmetic;
    pg_session* session = nullptr;
    check(pg_session_create(model, &sc, &session), "pg_session_create");
    std::unique_ptr<pg_session, void (*)(pg_session*)> owned(session, pg_session_free);
    if (adapter) check(pg_session_attach_adapter(session, adapter), "pg_session_attach_adapter");
    const pg_status s = pg_session_evaluate(session, tokens, n, &config, &r);
    // The library refuses a loss that is not finite rather than return it as a score.
    if (s == PG_ERR_NOT_FINITE) throw RuntimeError{what + ": " + call_message(call), pg_status_name(s), std::nullopt};
    check(s, call);
    EvalFigures f;
    f.seconds = now_seconds() - t0;
    f.loss = r.mean_loss;
    f.bits = r.bits_per_token;
    f.scored = r.n_scored;
    f.windows = r.n_windows;
    f.bits_per_byte = r.bits_per_byte;
    f.bytes = r.n_bytes;
    return f;
}

Json& add_bits_per_byte(Json& j, const EvalFigures& f) {
    if (f.bytes > 0) j.num("bits_per_byte", f.bits_per_byte);
    else j.null("bits_per_byte");
    return j.integer("bytes", f.bytes);
}

Json eval_json(const EvalFigures& f) {
    Json j;
    j.num("loss", f.loss).num("bits_per_char", f.bits);
    add_bits_per_byte(j, f).integer("scored", f.scored).integer("windows", f.windows).num("seconds", f.seconds);
    return j;
}

std::string bits_text(const EvalFigures& f) {
    char buf[96];
    if (f.bytes > 0) std::snprintf(buf, sizeof buf, "%.4f bits/token, %.4f bits/byte", f.bits, f.bits_per_byte);
    else std::snprintf(buf, sizeof buf, "%.4f bits/token", f.bits);
    return buf;
}

}  // namespace cli
