/* A small command-line driver of the BPE C API for the exactness tests (the scripts in tests/npm run it
 * beside the npm peers) and the tokenizer benchmark. Plain C, public header only.
 *   bpe_tool encode tiktoken RANKS ENCODING   INPUT OUT_IDS [special]
 *   bpe_tool encode gpt2     ENCODER VOCAB    INPUT OUT_IDS [special]
 *   bpe_tool encode hf       TOKENIZER_JSON - INPUT OUT_IDS [MODE] [OUT_TEXT]
 *   bpe_tool write-hf  tiktoken|gpt2|hf A B OUT_FILE       (a tokenizer.json)
 *   bpe_tool write-gpt2 tiktoken|gpt2|hf A B OUT_ENCODER OUT_VOCAB
 *   bpe_tool train gpt2|cl100k|o200k VOCAB_SIZE MIN_FREQUENCY THREADS INPUT OUT_TOKENIZER_JSON [lines]
 *     (pg_bpe_train on INPUT as one text, or with "lines" each line with its '\n' a text of
 *     its own, as HF's trainer reads files)
 * OUT_IDS gets the ids as little-endian int32; "special" recognises every special token. */
#include <phonegpt/phonegpt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char* slurp(const char* path, size_t* len) {
    FILE* f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "bpe_tool: cannot open %s\n", path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* buf = (char*)malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "bpe_tool: cannot read %s\n", path); exit(2); }
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static void spill(const char* path, const void* data, size_t len) {
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) { fprintf(stderr, "bpe_tool: cannot write %s\n", path); exit(2); }
}

static void check(pg_status s, const char* what) {
    if (s != PG_OK) { fprintf(stderr, "bpe_tool: %s: %s: %s\n", what, pg_status_name(s), pg_last_error()); exit(1); }
}

static pg_tokenizer* load(const char* kind, const char* a, const char* b) {
    pg_tokenizer* tok = NULL;
    size_t la, lb;
    char* da = slurp(a, &la);
    if (strcmp(kind, "tiktoken") == 0) {
        check(pg_tokenizer_create_tiktoken(da, la, b, &tok), "pg_tokenizer_create_tiktoken");
    } else if (strcmp(kind, "gpt2") == 0) {
        char* db = slurp(b, &lb);
        check(pg_tokenizer_create_gpt2(da, la, db, lb, &tok), "pg_tokenizer_create_gpt2");
        free(db);
    } else if (strcmp(kind, "hf") == 0) {
        check(pg_tokenizer_create_hf(da, la, &tok), "pg_tokenizer_create_hf");
    } else {
        fprintf(stderr, "bpe_tool: unknown kind %s\n", kind);
        exit(2);
    }
    free(da);
    return tok;
}

static void write_file(pg_tokenizer* tok, pg_tokenizer_file file, const char* path) {
    size_t len = 0;
    pg_status s = pg_tokenizer_write_file(tok, file, NULL, 0, &len);
    if (s != PG_ERR_BUFFER_TOO_SMALL && s != PG_OK) check(s, "pg_tokenizer_write_file");
    char* buf = (char*)malloc(len ? len : 1);
    check(pg_tokenizer_write_file(tok, file, buf, len, &len), "pg_tokenizer_write_file");
    spill(path, buf, len);
    free(buf);
}

int main(int argc, char** argv) {
    if (argc >= 7 && strcmp(argv[1], "encode") == 0) {
        pg_tokenizer* tok = load(argv[2], argv[3], argv[4]);
        size_t len, n = 0;
        char* text = slurp(argv[5], &len);
        pg_encode_options opts;
        pg_encode_options_default(&opts);
        /* MODE: "special" recognises the special tokens, "template" adds the post-processor's
         * tokens (add_special_tokens), "special+template" both, "-" neither */
        opts.allow_all_special = argc >= 8 && strncmp(argv[7], "special", 7) == 0;
        opts.add_special_tokens = argc >= 8 && strstr(argv[7], "template") != NULL;
        /* sized first: a normalizer (NFC) may lengthen the text */
        pg_status sized = pg_tokenizer_encode_with(tok, text, len, &opts, NULL, 0, &n);
        if (sized != PG_ERR_BUFFER_TOO_SMALL) check(sized, "pg_tokenizer_encode_with");
        int32_t* ids = (int32_t*)malloc((n + 1) * sizeof(int32_t));
        check(pg_tokenizer_encode_with(tok, text, len, &opts, ids, n + 1, &n), "pg_tokenizer_encode_with");
        spill(argv[6], ids, n * sizeof(int32_t));
        size_t back_len = 0;
        pg_status need = pg_tokenizer_decode(tok, ids, n, NULL, 0, &back_len);
        if (need != PG_ERR_BUFFER_TOO_SMALL) check(need, "pg_tokenizer_decode");
        char* back = (char*)malloc(back_len + 1);
        check(pg_tokenizer_decode(tok, ids, n, back, back_len + 1, &back_len), "pg_tokenizer_decode");
        if (argc >= 9) {
            spill(argv[8], back, back_len); /* the caller compares (normalized text) */
        } else if (back_len != len || memcmp(back, text, len) != 0) {
            /* decode(encode(x)) == x */
            fprintf(stderr, "bpe_tool: decode(encode(x)) != x\n");
            return 1;
        }
        printf("%zu bytes -> %zu ids\n", len, n);
        free(back); free(ids); free(text);
        pg_tokenizer_free(tok);
        return 0;
    }
    if (argc >= 6 && strcmp(argv[1], "write-hf") == 0) {
        pg_tokenizer* tok = load(argv[2], argv[3], argv[4]);
        write_file(tok, PG_TOKENIZER_FILE_HF_JSON, argv[5]);
        pg_tokenizer_free(tok);
        return 0;
    }
    if (argc >= 7 && strcmp(argv[1], "write-gpt2") == 0) {
        pg_tokenizer* tok = load(argv[2], argv[3], argv[4]);
        write_file(tok, PG_TOKENIZER_FILE_GPT2_ENCODER, argv[5]);
        write_file(tok, PG_TOKENIZER_FILE_GPT2_MERGES, argv[6]);
        pg_tokenizer_free(tok);
        return 0;
    }
    if (argc >= 8 && strcmp(argv[1], "train") == 0) {
        pg_bpe_train_options opts;
        pg_bpe_train_options_default(&opts);
        opts.pattern = strcmp(argv[2], "cl100k") == 0  ? PG_BPE_PATTERN_CL100K
                       : strcmp(argv[2], "o200k") == 0 ? PG_BPE_PATTERN_O200K
                                                       : PG_BPE_PATTERN_GPT2;
        opts.min_frequency = atoll(argv[4]);
        opts.n_threads = atoi(argv[5]);
        size_t len, n_texts = 0;
        char* text = slurp(argv[6], &len);
        const char** texts = (const char**)malloc((len + 1) * sizeof(char*));
        size_t* lens = (size_t*)malloc((len + 1) * sizeof(size_t));
        if (argc >= 9 && strcmp(argv[8], "lines") == 0) {
            size_t pos = 0;
            while (pos < len) {
                const char* nl = (const char*)memchr(text + pos, '\n', len - pos);
                size_t end = nl ? (size_t)(nl - text) + 1 : len;
                texts[n_texts] = text + pos;
                lens[n_texts++] = end - pos;
                pos = end;
            }
        } else {
            texts[0] = text;
            lens[0] = len;
            n_texts = 1;
        }
        pg_tokenizer* tok = NULL;
        check(pg_bpe_train(texts, lens, n_texts, atoi(argv[3]), &opts, &tok), "pg_bpe_train");
        write_file(tok, PG_TOKENIZER_FILE_HF_JSON, argv[7]);
        int32_t vocab = 0;
        check(pg_tokenizer_vocab_size(tok, &vocab), "pg_tokenizer_vocab_size");
        printf("trained %d tokens on %zu texts\n", vocab, n_texts);
        pg_tokenizer_free(tok);
        free(lens); free((void*)texts); free(text);
        return 0;
    }
    fprintf(stderr, "usage: see the comment at the top of tests/bpe/bpe_tool.c\n");
    return 2;
}
