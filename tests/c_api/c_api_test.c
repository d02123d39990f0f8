/* The C ABI test: plain C99, only the public header, linked to the shared library. It proves
 * the API is usable from C and prints "N passed, N failed". */
#include <phonegpt/phonegpt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed = 0, failed = 0;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            ++passed;                                                            \
        } else {                                                                 \
            ++failed;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

/* A forward pass, an evaluation or a generation on a session made for the call with `n_threads`
 * (config->n_threads for the last two): the session is the C API's one entry for each job. */
static pg_status call_session(const pg_model* model, int32_t n_threads, pg_session** out) {
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.n_threads = n_threads;
    return pg_session_create(model, &sc, out);
}

static pg_status forward_once(const pg_model* model, const int32_t* tokens, int32_t B, int32_t T,
                              const int32_t* targets, float* logits, float* mean_loss, int32_t n_threads) {
    pg_session* s = NULL;
    pg_status st = call_session(model, n_threads, &s);
    if (st == PG_OK) st = pg_session_forward(s, tokens, B, T, targets, logits, mean_loss);
    pg_session_free(s);
    return st;
}

static pg_status evaluate_once(const pg_model* model, const int32_t* tokens, size_t n, const pg_eval_config* config,
                               pg_eval_result* result) {
    pg_session* s = NULL;
    pg_status st = call_session(model, config->n_threads, &s);
    if (st == PG_OK) st = pg_session_evaluate(s, tokens, n, config, result);
    pg_session_free(s);
    return st;
}

static pg_status generate_once(const pg_model* model, const int32_t* prompt, size_t n_prompt,
                               const pg_sample_config* config, int32_t* out, size_t capacity, size_t* n_out) {
    pg_session* s = NULL;
    pg_status st = call_session(model, config->n_threads, &s);
    if (st == PG_OK) st = pg_session_append(s, prompt, n_prompt);
    if (st == PG_OK) st = pg_session_generate(s, config, out, capacity, n_out);
    pg_session_free(s);
    return st;
}

static void test_versions(void) {
    CHECK(pg_version_number() == PG_VERSION_NUMBER);
    CHECK(strcmp(pg_version_string(), "0.3.0") == 0);
    CHECK(pg_simd_arch() != NULL && pg_simd_arch()[0] != '\0');
    CHECK(strcmp(pg_status_name(PG_OK), "PG_OK") == 0);
    CHECK(strcmp(pg_status_name(PG_ERR_CHECKSUM), "PG_ERR_CHECKSUM") == 0);
    CHECK(strcmp(pg_status_name((pg_status)999), "PG_ERR_UNKNOWN") == 0);
}

/* Same seed, same tokens: all max_tokens of them, twice, and through the streaming callback;
 * another seed gives another sequence (so the comparison can fail). */
typedef struct token_log {
    int32_t tokens[64];
    size_t n;
} token_log;

static int log_token(void* user, int32_t token) {
    token_log* log = (token_log*)user;
    if (log->n < sizeof log->tokens / sizeof log->tokens[0]) log->tokens[log->n] = token;
    ++log->n;
    return 0;
}

static void check_same_seed_same_tokens(const pg_model* model, const int32_t* prompt, size_t n_prompt,
                                        pg_sample_config sc) {
    int32_t first[32], again[32], other[32];
    size_t n_first = 0, n_again = 0, n_other = 0;
    token_log streamed;
    memset(&streamed, 0, sizeof streamed);
    sc.max_tokens = 32;
    sc.on_token = NULL;
    CHECK(generate_once(model, prompt, n_prompt, &sc, first, 32, &n_first) == PG_OK);
    CHECK(n_first == 32);
    sc.on_token = log_token;
    sc.on_token_user = &streamed;
    CHECK(generate_once(model, prompt, n_prompt, &sc, again, 32, &n_again) == PG_OK);
    CHECK(n_again == 32 && memcmp(first, again, sizeof first) == 0);
    CHECK(streamed.n == 32 && memcmp(first, streamed.tokens, sizeof first) == 0);
    sc.on_token = NULL;
    sc.seed += 1;
    CHECK(generate_once(model, prompt, n_prompt, &sc, other, 32, &n_other) == PG_OK);
    CHECK(n_other == 32 && memcmp(first, other, sizeof first) != 0);
}

static void test_model(void) {
    pg_model_config c;
    pg_model* m = NULL;
    int64_t n = 0;
    pg_model_config_default(&c);
    CHECK(c.struct_size == sizeof c);
    CHECK(pg_model_create(&c, 7, &m) == PG_OK);
    CHECK(pg_model_num_params(m, &n) == PG_OK && n == 1214976);
    CHECK(pg_model_create(NULL, 7, &m) == PG_ERR_INVALID_ARGUMENT);
    CHECK(m == NULL);
    CHECK(strlen(pg_last_error()) > 0);
    pg_model_free(m);
    pg_model_free(NULL);
}


static const char* kText =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n";

/* The whole life of a model from C: tokenizer, model, training, checkpoint, evaluation, sampling. */
static void test_whole_flow(void) {
    pg_tokenizer* tok = NULL;
    int32_t vocab = 0, ids[512];
    size_t n_ids = 0, len = 0, n_gen = 0;
    char text[1024], path[512];
    const char* dir = getenv("PG_TEST_TMPDIR");
    pg_model_config mc;
    pg_model *model = NULL, *loaded = NULL;
    pg_train_config tc;
    pg_trainer* trainer = NULL;
    pg_step_result r;
    pg_eval_config ec;
    pg_eval_result er, er2;
    pg_sample_config sc;
    int32_t gen[32];
    float first_loss = 0.0f, last_loss = 0.0f, loss_a = 0.0f, loss_b = 0.0f;
    int i;

    CHECK(pg_tokenizer_create_char(kText, strlen(kText), &tok) == PG_OK);
    CHECK(pg_tokenizer_vocab_size(tok, &vocab) == PG_OK && vocab > 10);
    CHECK(pg_tokenizer_encode(tok, kText, strlen(kText), ids, 512, &n_ids) == PG_OK);
    CHECK(n_ids == strlen(kText));
    CHECK(pg_tokenizer_decode(tok, ids, n_ids, text, sizeof text, &len) == PG_OK);
    CHECK(len == strlen(kText) && memcmp(text, kText, len) == 0);
    /* 'Z' is not in the text: a clear error, never a substitution. */
    CHECK(pg_tokenizer_encode(tok, "aZ", 2, ids, 512, &n_ids) == PG_ERR_TOKENIZE);
    CHECK(strlen(pg_tokenizer_last_error(tok)) > 0);
    CHECK(pg_tokenizer_encode(tok, kText, strlen(kText), ids, 512, &n_ids) == PG_OK);

    CHECK(pg_model_config_preset("tiny", &mc) == PG_OK);
    mc.vocab_size = vocab;
    mc.padded_vocab_size = 0;
    CHECK(pg_model_create(&mc, 1, &model) == PG_OK);
    CHECK(pg_model_set_tokenizer(model, tok) == PG_OK);

    pg_train_config_default(&tc);
    tc.batch_size = 4;
    tc.lr_max = 3e-3f;
    tc.warmup_steps = 5;
    tc.total_steps = 60;
    tc.n_threads = 2;
    CHECK(pg_trainer_create(model, &tc, &trainer) == PG_OK);
    CHECK(pg_trainer_set_data(trainer, ids, n_ids) == PG_OK);
    for (i = 0; i < 60; ++i) {
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        if (pg_trainer_step(trainer, &r) != PG_OK) {
            CHECK(!"pg_trainer_step failed");
            fprintf(stderr, "%s\n", pg_trainer_last_error(trainer));
            break;
        }
        if (i == 0) first_loss = r.loss;
        last_loss = r.loss;
    }
    CHECK(r.step == 60);
    CHECK(last_loss < first_loss - 0.5f);

    snprintf(path, sizeof path, "%s/c_api_test_model.pgc", dir ? dir : "/tmp");
    CHECK(pg_model_save(model, path, NULL) == PG_OK);
    CHECK(pg_model_load(path, &loaded) == PG_OK);
    {
        const float *pa = NULL, *pb = NULL;
        int64_t na = 0, nb = 0;
        CHECK(pg_model_params(model, &pa, &na) == PG_OK && pg_model_params(loaded, &pb, &nb) == PG_OK);
        CHECK(na == nb && memcmp(pa, pb, (size_t)na * sizeof(float)) == 0);
    }
    CHECK(forward_once(model, ids, 1, 16, ids + 1, NULL, &loss_a, 1) == PG_OK);
    CHECK(forward_once(loaded, ids, 1, 16, ids + 1, NULL, &loss_b, 1) == PG_OK);
    CHECK(loss_a == loss_b);
    {
        /* The same model saved in fp16 with the mapping layout, mapped read-only. */
        pg_save_options so;
        pg_load_options lo;
        pg_model* mapped = NULL;
        int32_t is_mapped = 0;
        float loss_m = 0;
        pg_save_options_default(&so);
        so.weight_storage = PG_WEIGHTS_FP16;
        CHECK(pg_model_save(model, path, &so) == PG_OK);
        pg_load_options_default(&lo);
        lo.map_weights = 1;
        CHECK(pg_model_load_with(path, &lo, &mapped) == PG_OK);
        CHECK(pg_model_weights_mapped(mapped, &is_mapped) == PG_OK && is_mapped == 1);
        CHECK(forward_once(mapped, ids, 1, 16, ids + 1, NULL, &loss_m, 1) == PG_OK);
        CHECK((loss_m > loss_a ? loss_m - loss_a : loss_a - loss_m) < 1e-2f); /* the weights' rounding only */
        pg_model_free(mapped);
    }

    pg_eval_config_default(&ec);
    memset(&er, 0, sizeof er);
    er.struct_size = sizeof er;
    er2 = er;
    CHECK(evaluate_once(loaded, ids, n_ids, &ec, &er) == PG_OK);
    CHECK(er.n_scored == (int64_t)n_ids - 1);
    ec.batch_size = 1;
    ec.n_threads = 1;
    CHECK(evaluate_once(loaded, ids, n_ids, &ec, &er2) == PG_OK);
    CHECK(er.mean_loss == er2.mean_loss);  /* independent of batch size and threads */

    pg_sample_config_default(&sc);
    sc.max_tokens = 32;
    sc.seed = 5;
    check_same_seed_same_tokens(loaded, ids, 4, sc);
    CHECK(generate_once(loaded, ids, 4, &sc, gen, 32, &n_gen) == PG_OK);
    CHECK(n_gen == 32);
    CHECK(pg_tokenizer_decode(tok, gen, n_gen, text, sizeof text, &len) == PG_OK);

    /* Bad input: statuses and messages, no crash. */
    {
        pg_model* missing = (pg_model*)&mc; /* must be reset to NULL on failure */
        CHECK(pg_model_load("/nonexistent/dir/model.pgc", &missing) == PG_ERR_IO);
        CHECK(missing == NULL);
    }
    CHECK(pg_trainer_step(NULL, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(evaluate_once(model, NULL, 10, &ec, &er) == PG_ERR_INVALID_ARGUMENT);
    CHECK(generate_once(model, ids, 0, &sc, gen, 32, &n_gen) == PG_ERR_STATE); /* nothing to continue */

    pg_trainer_free(trainer);
    pg_model_free(loaded);
    pg_model_free(model);
    pg_tokenizer_free(tok);
    pg_trainer_free(NULL);
    pg_tokenizer_free(NULL);
}

/* A session over a model: a prompt appended, greedy generation continued across two turns,
 * the logits after the sequence, evaluation on the session, and its own error message. */
static void test_session(void) {
    pg_model_config mc;
    pg_model* model = NULL;
    pg_session_config sc;
    pg_session* session = NULL;
    pg_sample_config gen;
    pg_eval_sampled_config ec;
    pg_eval_result r;
    int32_t prompt[3] = {1, 2, 3}, out[8], direct[8];
    int32_t turn[2] = {4, 5}, bad = 9999;
    size_t n_out = 0, n_direct = 0;
    int64_t position = 0;
    float logits[65];
    int32_t tokens[200];
    int i;
    for (i = 0; i < 200; ++i) tokens[i] = (int32_t)((i * 7) % 65);

    CHECK(pg_model_config_preset("tiny", &mc) == PG_OK);
    CHECK(pg_model_create(&mc, 3, &model) == PG_OK);
    pg_session_config_default(&sc);
    CHECK(sc.struct_size == sizeof sc);
    sc.n_threads = 1;
    CHECK(pg_session_create(model, &sc, &session) == PG_OK);
    pg_sample_config_default(&gen);
    gen.temperature = 0.0f;
    gen.max_tokens = 8;
    gen.n_threads = 1;
    CHECK(pg_session_append(session, prompt, 3) == PG_OK);
    CHECK(pg_session_generate(session, &gen, out, 8, &n_out) == PG_OK && n_out == 8);
    CHECK(generate_once(model, prompt, 3, &gen, direct, 8, &n_direct) == PG_OK && n_direct == 8);
    CHECK(memcmp(out, direct, sizeof out) == 0);
    CHECK(pg_session_append(session, turn, 2) == PG_OK);
    CHECK(pg_session_position(session, &position) == PG_OK && position == 13);
    CHECK(pg_session_logits(session, logits, 65) == PG_OK);
    CHECK(pg_session_generate(session, &gen, out, 8, &n_out) == PG_OK && n_out == 8);
    CHECK(pg_session_append(session, &bad, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(strlen(pg_session_last_error(session)) > 0);
    pg_eval_sampled_config_default(&ec);
    ec.n_batches = 2;
    ec.batch_size = 2;
    r.struct_size = sizeof r;
    CHECK(pg_session_evaluate_sampled(session, tokens, 200, &ec, &r) == PG_OK && r.n_windows == 4);
    CHECK(pg_session_reset(session) == PG_OK);
    CHECK(pg_session_position(session, &position) == PG_OK && position == 0);
    pg_session_free(session);
    pg_session_free(NULL);
    pg_model_free(model);
}

int main(void) {
    test_versions();
    test_model();
    test_whole_flow();
    test_session();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
