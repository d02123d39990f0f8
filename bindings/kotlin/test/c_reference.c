/* The C side of the Kotlin binding's bit-for-bit check: a short training run, a whole-split
 * evaluation, a sampled continuation and a LoRA training run through the public C API, written to
 * <dir>/reference.txt (one "key value" line each: floats and doubles as their bit patterns in
 * hex) together with the text it trained on (<dir>/text.txt). The JUnit test
 * (PhoneGptTest.trainingMatchesTheCApiBitForBit) repeats the same calls from Kotlin and
 * compares every value. Usage: kotlin_c_reference DIR */
#include <phonegpt/phonegpt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 12

static int check(pg_status s, const char* what) {
    if (s != PG_OK) {
        fprintf(stderr, "kotlin_c_reference: %s: %s: %s\n", what, pg_status_name(s), pg_last_error());
        exit(1);
    }
    return 0;
}

static unsigned float_bits(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static unsigned long long double_bits(double d) {
    unsigned long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}

int main(int argc, char** argv) {
    static const char paragraph[] =
        "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n";
    char path[4096];
    char* text;
    size_t text_len, n_ids = 0, n_out = 0, i;
    int32_t* ids;
    int32_t out[32];
    FILE* f;
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
    pg_lora_config lc;
    pg_lora_adapter* adapter = NULL;
    pg_lora_trainer* lora = NULL;
    if (argc != 2) {
        fprintf(stderr, "usage: kotlin_c_reference DIR\n");
        return 2;
    }
    text_len = 24 * (sizeof paragraph - 1);
    text = malloc(text_len + 1);
    for (i = 0; i < 24; ++i) memcpy(text + i * (sizeof paragraph - 1), paragraph, sizeof paragraph - 1);
    text[text_len] = 0;
    snprintf(path, sizeof path, "%s/text.txt", argv[1]);
    f = fopen(path, "wb");
    if (!f || fwrite(text, 1, text_len, f) != text_len || fclose(f) != 0) {
        fprintf(stderr, "kotlin_c_reference: cannot write %s\n", path);
        return 1;
    }

    check(pg_tokenizer_create_char(text, text_len, &tok), "tokenizer");
    pg_tokenizer_encode(tok, text, text_len, NULL, 0, &n_ids);
    ids = malloc(n_ids * sizeof *ids);
    check(pg_tokenizer_encode(tok, text, text_len, ids, n_ids, &n_ids), "encode");

    check(pg_model_config_preset("tiny", &mc), "preset");
    check(pg_tokenizer_vocab_size(tok, &mc.vocab_size), "vocab");
    mc.padded_vocab_size = 0;
    check(pg_model_create(&mc, 7, &model), "model");
    check(pg_model_set_tokenizer(model, tok), "set tokenizer");

    pg_train_config_default(&tc);
    tc.batch_size = 4;
    tc.warmup_steps = 3;
    tc.total_steps = STEPS;
    tc.n_threads = 2;
    tc.seed = 99;
    check(pg_trainer_create(model, &tc, &trainer), "trainer");
    check(pg_trainer_set_data(trainer, ids, n_ids), "set data");

    snprintf(path, sizeof path, "%s/reference.txt", argv[1]);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kotlin_c_reference: cannot write %s\n", path);
        return 1;
    }
    for (i = 0; i < STEPS; ++i) {
        pg_step_result r;
        r.struct_size = sizeof r;
        check(pg_trainer_step(trainer, &r), "step");
        fprintf(f, "step %08x %08x %08x\n", float_bits(r.loss), float_bits(r.lr), float_bits(r.grad_norm));
    }

    pg_eval_config_default(&ec);
    ec.n_threads = 2;
    er.struct_size = sizeof er;
    /* Model.evaluate and Model.generate each run on a session made for the call. */
    pg_session_config_default(&sessc);
    sessc.n_threads = ec.n_threads;
    check(pg_session_create(model, &sessc, &session), "session");
    check(pg_session_evaluate(session, ids, n_ids, &ec, &er), "evaluate");
    pg_session_free(session);
    fprintf(f, "eval %016llx %lld\n", double_bits(er.mean_loss), (long long)er.n_scored);

    pg_sample_config_default(&sc);
    sc.temperature = 0.8f;
    sc.top_k = 10;
    sc.seed = 5;
    sc.max_tokens = 32;
    sessc.n_threads = sc.n_threads;
    check(pg_session_create(model, &sessc, &session), "session");
    check(pg_session_append(session, ids, 5), "append");
    check(pg_session_generate(session, &sc, out, 32, &n_out), "generate");
    pg_session_free(session);
    fprintf(f, "generate");
    for (i = 0; i < n_out; ++i) fprintf(f, " %d", out[i]);
    fprintf(f, "\n");

    /* LoRA: a fresh adapter (default configuration) over the trained model, trained with the
     * same configuration (LoraTest.loraTrainingMatchesTheCApiBitForBit). */
    pg_lora_config_default(&lc);
    check(pg_lora_adapter_create(model, &lc, &adapter), "lora adapter");
    check(pg_lora_trainer_create(model, adapter, &tc, &lora), "lora trainer");
    check(pg_lora_trainer_set_data(lora, ids, n_ids), "lora set data");
    for (i = 0; i < STEPS; ++i) {
        pg_step_result r;
        r.struct_size = sizeof r;
        check(pg_lora_trainer_step(lora, &r), "lora step");
        fprintf(f, "lora %08x %08x %08x\n", float_bits(r.loss), float_bits(r.lr), float_bits(r.grad_norm));
    }
    if (fclose(f) != 0) return 1;

    pg_lora_trainer_free(lora);
    pg_lora_adapter_free(adapter);

    pg_trainer_free(trainer);
    pg_model_free(model);
    pg_tokenizer_free(tok);
    free(ids);
    free(text);
    printf("kotlin_c_reference: %d steps, eval and generate written to %s\n", STEPS, argv[1]);
    return 0;
}
