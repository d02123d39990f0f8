/* train_char_model: the whole C API in one page.
 *
 * Reads a UTF-8 text file, builds a character tokenizer from it, trains a GPT on the first 90%,
 * scores the last 10% (whole-split evaluation), saves a checkpoint and samples from it.
 *
 *   train_char_model TEXT_FILE [STEPS] [PRESET] [OUT.pgc]
 *
 * Defaults: 200 steps of the "tiny" preset, checkpoint "char_model.pgc". Every call's status is
 * checked; on failure the library's message is printed and the program exits with 1.
 */
#include <phonegpt/phonegpt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the failed call's message and exits. Any handle's *_last_error() has the same text as
 * pg_last_error() on the calling thread. */
#define TRY(call)                                                                          \
    do {                                                                                   \
        pg_status status_ = (call);                                                        \
        if (status_ != PG_OK) {                                                            \
            fprintf(stderr, "%s failed: %s: %s\n", #call, pg_status_name(status_), pg_last_error()); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static int print_token(void* user, int32_t token) {
    char text[16];
    size_t len = 0;
    if (pg_tokenizer_decode((const pg_tokenizer*)user, &token, 1, text, sizeof text, &len) == PG_OK)
        fwrite(text, 1, len, stdout);
    return 0; /* go on */
}

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : NULL;
    long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
    const char* preset = argc > 3 ? argv[3] : "tiny";
    const char* out_path = argc > 4 ? argv[4] : "char_model.pgc";
    char* text = NULL;
    size_t text_len = 0, n_tokens = 0, n_train = 0, n_generated = 0;
    int32_t *tokens = NULL, vocab = 0, generated[200];
    pg_tokenizer* tok = NULL;
    pg_model_config mc;
    pg_model* model = NULL;
    pg_train_config tc;
    pg_trainer* trainer = NULL;
    pg_eval_config ec;
    pg_eval_result er;
    pg_sample_config sc;
    pg_session_config sessc;
    pg_session* session = NULL;
    long i;

    if (!path || steps < 1) {
        fprintf(stderr, "usage: %s TEXT_FILE [STEPS] [PRESET] [OUT.pgc]\n", argv[0]);
        return 2;
    }
    printf("libphonegpt %s, kernels: %s\n", pg_version_string(), pg_simd_arch());

    /* text -> tokenizer -> token ids (sizing call first, then the real one) */
    TRY(pg_read_file(path, &text, &text_len));
    TRY(pg_tokenizer_create_char(text, text_len, &tok));
    TRY(pg_tokenizer_vocab_size(tok, &vocab));
    {
        pg_status sizing = pg_tokenizer_encode(tok, text, text_len, NULL, 0, &n_tokens);
        if (sizing != PG_ERR_BUFFER_TOO_SMALL || n_tokens < 2) {
            fprintf(stderr, "%s: need a text of at least 2 characters (%s)\n", path, pg_last_error());
            return 1;
        }
    }
    tokens = malloc(n_tokens * sizeof *tokens);
    if (!tokens) return 1;
    TRY(pg_tokenizer_encode(tok, text, text_len, tokens, n_tokens, &n_tokens));
    TRY(pg_split_index(n_tokens, 0.9, &n_train));
    printf("%zu characters, vocabulary %d, train %zu, validation %zu\n", n_tokens, vocab, n_train,
           n_tokens - n_train);

    /* model: a preset with this text's vocabulary; the tokenizer travels with the weights */
    TRY(pg_model_config_preset(preset, &mc));
    mc.vocab_size = vocab;
    mc.padded_vocab_size = 0; /* round up to a multiple of 4 */
    TRY(pg_model_create(&mc, 1337, &model));
    TRY(pg_model_set_tokenizer(model, tok));

    /* trainer: the mutable state; it borrows the model */
    pg_train_config_default(&tc);
    tc.batch_size = 16;
    tc.lr_max = 2e-3f;
    tc.lr_min = 2e-4f;
    tc.warmup_steps = steps / 10 + 1;
    tc.total_steps = steps;
    TRY(pg_trainer_create(model, &tc, &trainer));
    TRY(pg_trainer_set_data(trainer, tokens, n_train));
    for (i = 0; i < steps; ++i) {
        pg_step_result r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        TRY(pg_trainer_step(trainer, &r));
        if (r.step % 50 == 0 || r.step == steps)
            printf("step %lld  loss %.4f  lr %.2e  grad norm %.3f\n", (long long)r.step, r.loss,
                   r.lr, r.grad_norm);
    }

    /* whole-split evaluation of the last 10% */
    pg_eval_config_default(&ec);
    memset(&er, 0, sizeof er);
    er.struct_size = sizeof er;
    pg_session_config_default(&sessc);
    TRY(pg_session_create(model, &sessc, &session));
    TRY(pg_session_evaluate(session, tokens + n_train, n_tokens - n_train, &ec, &er));
    pg_session_free(session);
    printf("validation: %.4f nats/char (%.4f bits), %lld positions scored\n", er.mean_loss,
           er.bits_per_token, (long long)er.n_scored);

    /* checkpoint, then sample from what was saved */
    TRY(pg_model_save(model, out_path, NULL));
    pg_trainer_free(trainer);
    pg_model_free(model);
    model = NULL;
    TRY(pg_model_load(out_path, &model));
    pg_sample_config_default(&sc);
    sc.max_tokens = 200;
    sc.temperature = 0.8f;
    sc.on_token = print_token;
    sc.on_token_user = tok;
    printf("sample from %s:\n", out_path);
    TRY(pg_session_create(model, &sessc, &session));
    TRY(pg_session_append(session, tokens + n_train, 1));
    TRY(pg_session_generate(session, &sc, generated, 200, &n_generated));
    pg_session_free(session);
    printf("\n");

    pg_model_free(model);
    pg_tokenizer_free(tok);
    free(tokens);
    pg_buffer_free(text);
    return 0;
}
