/*
 * libphonegpt: train, fine-tune, evaluate and sample small GPT models on a phone's CPU.
 *
 * This header is the whole public API and its manual. It is plain C (C99) and stable:
 *
 *  - Handles are opaque. Creation functions return the handle through an out-parameter and
 *    a status; every pg_*_free(NULL) is a no-op.
 *  - Every call returns a pg_status. No call aborts, asserts or exits on bad input: a bad
 *    argument, file or text gives a status and a message. pg_last_error() is the message of
 *    the calling thread's last failed call, whatever it was called on (it covers calls that
 *    fail before a handle exists). A call never writes a handle it takes as const, failures
 *    included, so the per-handle *_last_error(h) calls mean:
 *      - for the read-only handles (pg_model, pg_tokenizer, pg_lora_adapter): the calling
 *        thread's last failure on h; "" if this thread has not failed on h lately (the last
 *        few handles a thread failed on are remembered);
 *      - for the handles calls change (pg_session, pg_trainer, pg_lora_trainer,
 *        pg_token_stream, pg_data_filter, pg_validator): the newer of the last failure of a
 *        call that took h non-const (from any thread) and the calling thread's last failure
 *        on h.
 *    The returned string stays valid until the calling thread's next failing call.
 *  - Option structs are passed by pointer, start with a `struct_size` field and have a
 *    *_default() initialiser. Set struct_size = sizeof(struct) (the initialiser does); the
 *    library reads only the fields that the caller's struct_size covers and uses defaults for
 *    the rest, so adding fields at the end never breaks a compiled caller.
 *  - Strings are UTF-8 and NUL-terminated unless a length is given. Token ids are int32_t.
 *  - Thread-safety: a handle may be used by one thread at a time unless a declaration says
 *    otherwise. Calls that take a const pg_model*, pg_tokenizer* or pg_lora_adapter* may run on
 *    many threads at once on one handle (evaluation, forward, sampling, sessions over one
 *    model; encode and decode on one tokenizer) as long as no call that takes it non-const
 *    (a trainer step, set_tokenizer, a merge in place) runs at the same time. Distinct handles
 *    are independent. tests/unit/test_concurrent_readers.cpp checks this under ThreadSanitizer.
 *
 * Contents (sections of this header, in order):
 *   Versions; Status codes, errors, thread counts; Tokenizers (byte-level BPE; training a BPE
 *   tokenizer); Data; Models (architectures, provenance, weight storage); Training; Trainer
 *   threads; Checkpoints; Evaluation; Sampling; Sessions; LoRA adapters; The data filter;
 *   Signing an upload; Client-side differential privacy; Training sessions.
 * The coordinator's side (trusted keys, verification, validation, averaging) is
 * phonegpt_coordinator.h, in its own library.
 *
 * Tiers. What this header declares outside the experimental blocks is stable within a major
 * version: a declaration is only removed after a minor release in which it was PG_DEPRECATED.
 * What may still change (Muon, the arithmetic modes of a frozen base, the training sessions'
 * per-core-class rates) is declared inside blocks marked
 *     #ifdef PG_EXPERIMENTAL_API   ... experimental ...   #endif
 * and is visible only to a program that defines PG_EXPERIMENTAL_API before including this
 * header (the library, its tools and its Python and Kotlin bindings do); it may change or go
 * in any minor release, and the library keeps exporting what it declares. Struct fields cannot
 * be hidden without changing the struct's layout: the experimental ones (pg_train_config's
 * optimizer, muon_momentum, muon_lr_scale, dropout_ramp_steps and arithmetic,
 * pg_session_config's arithmetic) are marked "Experimental" at their declaration; their default
 * keeps the stable behaviour, and their meaning may change with the experimental names.
 *
 * Naming: getters that fill a struct or an enum are pg_<handle>_get_<what> (get_config,
 * get_kind); those that give a number are named by it (vocab_size, num_params, step_count,
 * n_threads). A declaration wrapped in PG_DEPRECATED still works and warns at compile time,
 * naming its replacement; it goes in a later minor release.
 *
 * Model vs trainer: a pg_model holds the configuration and the weights and is read-only to
 * evaluation and sampling. A pg_trainer holds everything that training mutates besides the
 * weights (gradients, AdamW moments, step, RNG and data-sampler state); it borrows its model,
 * which must outlive it, and is the only thing that writes the model's weights.
 */
#ifndef PHONEGPT_H
#define PHONEGPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(PHONEGPT_BUILDING)
#    define PG_API __declspec(dllexport)
#  else
#    define PG_API
#  endif
#else
#  define PG_API __attribute__((visibility("default")))
#endif

/* PG_DEPRECATED(declaration, "what to use instead"): the declaration still works; a call to it
 * warns at compile time with the hint (-Wdeprecated-declarations). */
#if defined(__GNUC__) || defined(__clang__)
#  define PG_DEPRECATED(func, hint) func __attribute__((deprecated(hint)))
#elif defined(_MSC_VER)
#  define PG_DEPRECATED(func, hint) __declspec(deprecated(hint)) func
#else
#  define PG_DEPRECATED(func, hint) func
#endif

/* ------------------------------------------------------------------------------------------ */
/* Versions                                                                                   */
/* ------------------------------------------------------------------------------------------ */

#define PG_VERSION_MAJOR 0
#define PG_VERSION_MINOR 3
#define PG_VERSION_PATCH 0
/* major*10000 + minor*100 + patch, comparable with pg_version_number(). */
#define PG_VERSION_NUMBER (PG_VERSION_MAJOR * 10000 + PG_VERSION_MINOR * 100 + PG_VERSION_PATCH)

/* The version of the library actually loaded (may differ from the header's). */
PG_API unsigned pg_version_number(void);
/* "0.3.0"; static storage, never NULL. */
PG_API const char* pg_version_string(void);
/* The instruction set the kernels dispatched to on this CPU: "avx512bw", "fma3+avx2", "sse2",
 * "arm64+neon", ...; static storage, never NULL. */
PG_API const char* pg_simd_arch(void);

/* ------------------------------------------------------------------------------------------ */
/* Status codes (values are pinned: never renumbered)                                         */
/* ------------------------------------------------------------------------------------------ */

typedef enum pg_status {
    PG_OK = 0,
    PG_ERR_INVALID_ARGUMENT = 1,   /* NULL, out of range or inconsistent argument */
    PG_ERR_OUT_OF_MEMORY = 2,      /* an allocation failed; nothing was changed */
    PG_ERR_IO = 3,                 /* open/read/write/fsync/rename failed (message has errno text) */
    PG_ERR_FORMAT = 4,             /* a file or buffer is malformed (message names what and where) */
    PG_ERR_VERSION = 5,            /* a file's format version is newer than this library reads */
    PG_ERR_CHECKSUM = 6,           /* stored and computed checksums differ */
    PG_ERR_GEOMETRY = 7,           /* shapes/configurations that must agree do not (names both) */
    PG_ERR_TOKENIZE = 8,           /* text that the tokenizer cannot encode (message has position) */
    PG_ERR_CANCELLED = 9,          /* a callback asked to stop; the state is consistent */
    PG_ERR_STATE = 10,             /* the call is not valid in the handle's current state */
    PG_ERR_BUFFER_TOO_SMALL = 11,  /* an output buffer is too small; the needed size is reported */
    PG_ERR_UNSUPPORTED = 12,       /* a valid request this build cannot serve (e.g. no zstd) */
    PG_ERR_INTERNAL = 13,          /* a bug in libphonegpt: please report the message */
    /* A number that must be finite is NaN or infinite: a loss or gradient norm computed by
     * training or evaluation (the run diverged), or a weight or optimizer moment in a file
     * being loaded (the file holds a diverged model). The message names the value (tensor and
     * element for weights). Nothing was changed: no result is reported as a score, a refused
     * training step leaves the trainer and the model exactly as before the call, and a refused
     * load creates nothing. */
    PG_ERR_NOT_FINITE = 14
} pg_status;

/* "PG_OK", "PG_ERR_INVALID_ARGUMENT", ...; "PG_ERR_UNKNOWN" for other values. Never NULL. */
PG_API const char* pg_status_name(pg_status status);

/* The message of the last failed call on this thread ("" if none). Valid until the next
 * libphonegpt call on this thread. */
PG_API const char* pg_last_error(void);

/* Thread counts: every n_threads argument or field (trainers, LoRA trainers and merges,
 * sessions, BPE training, validation) follows one rule: <= 0 means all cores
 * (std::thread::hardware_concurrency), and a positive count runs on at most min(4 x cores, 256)
 * threads (a larger one is capped, not refused: on 2 cores, 100000
 * runs on 8). A thread that cannot be started (RLIMIT_NPROC, address space) is
 * PG_ERR_OUT_OF_MEMORY naming the thread; the threads already started are stopped first and
 * nothing was changed. Results are bit-identical for the same count of threads actually run. */

/* Progress callbacks: return 0 to go on, non-zero to stop (the call then returns
 * PG_ERR_CANCELLED). `done` and `total` are in the unit the calling function documents. */
typedef int (*pg_progress_fn)(void* user, int64_t done, int64_t total);

/* ------------------------------------------------------------------------------------------ */
/* Tokenizers                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct pg_tokenizer pg_tokenizer;

typedef enum pg_tokenizer_kind {
    PG_TOKENIZER_CHAR = 1,  /* one token per Unicode code point, vocabulary = sorted set */
    PG_TOKENIZER_BPE = 2    /* byte-level BPE (GPT-2, cl100k, o200k; see "Byte-level BPE" below) */
} pg_tokenizer_kind;

/* Builds a character tokenizer from `text` (UTF-8, `len` bytes): the vocabulary is the sorted
 * set of its code points (id order = code point order). Invalid UTF-8 is PG_ERR_TOKENIZE with
 * the byte offset. The text is not retained. */
PG_API pg_status pg_tokenizer_create_char(const char* text, size_t len, pg_tokenizer** out);
/* Restores a tokenizer from the bytes pg_tokenizer_serialize produced. */
PG_API pg_status pg_tokenizer_deserialize(const void* data, size_t len, pg_tokenizer** out);
PG_API void pg_tokenizer_free(pg_tokenizer* tok);

PG_API pg_status pg_tokenizer_get_kind(const pg_tokenizer* tok, pg_tokenizer_kind* out);
PG_DEPRECATED(PG_API pg_status pg_tokenizer_kind_of(const pg_tokenizer* tok, pg_tokenizer_kind* out),
              "use pg_tokenizer_get_kind (the same call)");
PG_API pg_status pg_tokenizer_vocab_size(const pg_tokenizer* tok, int32_t* out);

/* Encodes UTF-8 text. Writes at most `capacity` ids to `ids` and the number of ids the whole
 * text needs to *n_ids; if capacity is too small returns PG_ERR_BUFFER_TOO_SMALL and writes
 * nothing to `ids` (call with ids = NULL, capacity = 0 to size). A character outside the vocabulary is PG_ERR_TOKENIZE
 * naming the character and its byte offset: never a silent substitution. */
PG_API pg_status pg_tokenizer_encode(const pg_tokenizer* tok, const char* text, size_t len,
                                           int32_t* ids, size_t capacity, size_t* n_ids);
/* Decodes ids to UTF-8 into `text` (capacity bytes, NUL-terminated when it fits); *len gets
 * the byte length without the NUL. An id outside the vocabulary is PG_ERR_INVALID_ARGUMENT.
 * Sizing works as for encode (the NUL needs one more byte). */
PG_API pg_status pg_tokenizer_decode(const pg_tokenizer* tok, const int32_t* ids, size_t n_ids,
                                           char* text, size_t capacity, size_t* len);
/* Serialises the tokenizer (kind, version, vocabulary; docs/tokenizer-format.md) into `data`;
 * sizing as for encode. */
PG_API pg_status pg_tokenizer_serialize(const pg_tokenizer* tok, void* data, size_t capacity,
                                              size_t* len);
PG_API const char* pg_tokenizer_last_error(const pg_tokenizer* tok);

/* ---- Byte-level BPE (PG_TOKENIZER_BPE): loading, writing, special tokens, streaming ------ */
/* GPT-2 style BPE over bytes after a regex pre-split: any byte string encodes (invalid UTF-8
 * too) and decoding gives back exactly the bytes. The pre-split follows tiktoken's patterns for
 * gpt2 (= r50k_base, p50k_base), cl100k_base and o200k_base exactly (docs/tokenizer-format.md).
 * pg_tokenizer_encode treats special tokens (<|endoftext|>, ...) as ordinary text; use
 * pg_tokenizer_encode_with to have them recognised. Encode and decode on one tokenizer may run
 * on many threads at once. Malformed files are PG_ERR_FORMAT, valid files asking for something
 * unsupported (another model type, a normalizer, an unknown pattern) PG_ERR_UNSUPPORTED; the
 * message names the line, entry or field. */

/* From a tiktoken rank file (lines "base64 rank", ranks 0..n-1) and `encoding`: one of
 * "gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base" (which also give the
 * encoding's special tokens), or the exact regex of one of their pre-tokenizers (no special
 * tokens). Ids are ranks. */
PG_API pg_status pg_tokenizer_create_tiktoken(const void* ranks, size_t len, const char* encoding,
                                              pg_tokenizer** out);
/* From GPT-2's encoder.json and vocab.bpe (a.k.a. vocab.json and merges.txt). */
PG_API pg_status pg_tokenizer_create_gpt2(const char* encoder_json, size_t encoder_len,
                                          const char* vocab_bpe, size_t vocab_len, pg_tokenizer** out);
/* From a Hugging Face tokenizer.json: model BPE, pre_tokenizer ByteLevel or [Split, ByteLevel]
 * on one of the patterns above, ByteLevel decoder; its added_tokens are the special tokens. */
PG_API pg_status pg_tokenizer_create_hf(const char* tokenizer_json, size_t len, pg_tokenizer** out);

typedef enum pg_tokenizer_file {
    PG_TOKENIZER_FILE_TIKTOKEN = 1,     /* a .tiktoken rank file (tiktoken-rule tokenizers only) */
    PG_TOKENIZER_FILE_GPT2_ENCODER = 2, /* GPT-2's encoder.json (gpt2 pattern only) */
    PG_TOKENIZER_FILE_GPT2_MERGES = 3,  /* GPT-2's vocab.bpe (gpt2 pattern only) */
    PG_TOKENIZER_FILE_HF_JSON = 4       /* a Hugging Face tokenizer.json */
} pg_tokenizer_file;
/* Writes a BPE tokenizer as `file` into `data` (sizing as for encode; no NUL is added). A
 * format that cannot express the tokenizer is PG_ERR_UNSUPPORTED naming why. */
PG_API pg_status pg_tokenizer_write_file(const pg_tokenizer* tok, pg_tokenizer_file file, void* data,
                                         size_t capacity, size_t* len);

typedef struct pg_encode_options {
    uint32_t struct_size;                /* sizeof(pg_encode_options) */
    int32_t allow_all_special;           /* 1: every special token is recognised (default 0) */
    const char* const* allowed_special;  /* texts of the special tokens recognised, e.g.
                                            "<|endoftext|>" (one that is no special token of the
                                            tokenizer is PG_ERR_INVALID_ARGUMENT) */
    int32_t n_allowed_special;
    int32_t add_special_tokens;          /* 1: also the tokens the file's post-processor puts
                                            around the text (a tokenizer.json TemplateProcessing:
                                            Llama 3's <|begin_of_text|> before it), as Hugging
                                            Face's add_special_tokens; default 0: the text's ids
                                            alone */
} pg_encode_options;
PG_API void pg_encode_options_default(pg_encode_options* opts);
/* pg_tokenizer_encode with options (NULL = defaults = pg_tokenizer_encode). Recognised special
 * tokens are matched leftmost first (the longest at one position) and become their ids; the
 * text between them is encoded as ordinary text. */
PG_API pg_status pg_tokenizer_encode_with(const pg_tokenizer* tok, const char* text, size_t len,
                                          const pg_encode_options* opts, int32_t* ids,
                                          size_t capacity, size_t* n_ids);
/* The id of the special token whose text is `text` (NUL-terminated); PG_ERR_INVALID_ARGUMENT
 * if there is none. */
PG_API pg_status pg_tokenizer_special_id(const pg_tokenizer* tok, const char* text, int32_t* id);

/* A streaming decoder for generated tokens: each push emits the text that became complete
 * UTF-8, and keeps the first bytes of a character split across tokens for the next push. Bytes
 * that can never become valid UTF-8 are emitted as U+FFFD, one per maximal subpart (Unicode 3.9;
 * as Python's errors="replace": E2 82 41 is U+FFFD then "A"). The tokenizer is borrowed and must
 * outlive the stream. */
typedef struct pg_token_stream pg_token_stream;
PG_API pg_status pg_token_stream_create(const pg_tokenizer* tok, pg_token_stream** out);
PG_API void pg_token_stream_free(pg_token_stream* stream);
/* Adds one token; writes the newly complete text into `text` (NUL-terminated, sizing as for
 * decode; if the capacity is too small nothing changes and the token is not consumed). */
PG_API pg_status pg_token_stream_push(pg_token_stream* stream, int32_t id, char* text,
                                      size_t capacity, size_t* len);
/* Ends the stream: writes what is still held (an unfinished character becomes U+FFFD) and
 * empties it, ready for a new text. */
PG_API pg_status pg_token_stream_finish(pg_token_stream* stream, char* text, size_t capacity,
                                        size_t* len);
PG_API const char* pg_token_stream_last_error(const pg_token_stream* stream);
/* Training a byte-level BPE tokenizer. Each text is pre-split by the pattern and every piece
 * is a word of bytes; the most frequent adjacent pair merges next (ties: the smallest pair of
 * ids, ids numbered as Hugging Face's BpeTrainer numbers them), until vocab_size tokens (the
 * special tokens, the 256 bytes and the merged tokens), no pair is left, or the best pair
 * occurs fewer than min_frequency times. On the same words and settings the merges are those
 * of HF tokenizers' BpeTrainer (docs/tokenizer-format.md, "Training"); the result does not
 * depend on n_threads. Special tokens get ids 0.. in order and are ordinary text while
 * training. */
typedef enum pg_bpe_pattern {
    PG_BPE_PATTERN_GPT2 = 1,   /* GPT-2's (= HF's ByteLevel pre-tokenizer with its regex) */
    PG_BPE_PATTERN_CL100K = 2, /* cl100k_base's */
    PG_BPE_PATTERN_O200K = 3   /* o200k_base's */
} pg_bpe_pattern;
typedef struct pg_bpe_train_options {
    uint32_t struct_size;             /* sizeof(pg_bpe_train_options) */
    int64_t min_frequency;            /* pairs rarer than this never merge, default 2 (>= 0) */
    pg_bpe_pattern pattern;           /* default PG_BPE_PATTERN_GPT2 */
    const char* const* special_tokens; /* NUL-terminated texts, e.g. "<|endoftext|>" (default none) */
    int32_t n_special_tokens;
    int32_t n_threads;                /* <= 0: all cores (default) */
    pg_progress_fn progress;          /* optional, after each merge: done = tokens so far,
                                         total = vocab_size; non-zero return cancels */
    void* progress_user;
} pg_bpe_train_options;
PG_API void pg_bpe_train_options_default(pg_bpe_train_options* opts);
/* Trains on texts[0..n_texts) (lens[i] bytes each, any bytes; NULL opts = defaults) a
 * tokenizer of at most vocab_size tokens (256 + n_special_tokens .. 16,777,216) into *out. */
PG_API pg_status pg_bpe_train(const char* const* texts, const size_t* lens, size_t n_texts, int32_t vocab_size,
                              const pg_bpe_train_options* opts, pg_tokenizer** out);
/* ---- end of byte-level BPE ------------------------------------------------------------ */

/* ------------------------------------------------------------------------------------------ */
/* Data                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Splits `n` items at floor(n * train_fraction): the train part is [0, *n_train), the
 * validation part [*n_train, n). PhoneGPT: 1,115,394 chars at 0.9 -> 1,003,854 / 111,540. */
PG_API pg_status pg_split_index(size_t n, double train_fraction, size_t* n_train);

/* Reads a whole file into a malloc'd buffer that the caller releases with pg_buffer_free (a
 * NUL follows the *len bytes). Only regular files: a FIFO, a device (/dev/zero), a directory
 * or a socket is PG_ERR_IO naming what it is, refused before it is opened for reading, so
 * nothing blocks; every loader of the library (checkpoints, adapters, PEFT, safetensors,
 * llm.c, signatures) refuses them the same way. At most 1 GiB (2^30 bytes): a larger file is
 * PG_ERR_FORMAT naming its size and the cap. Checkpoints and adapters are not read whole but
 * in checked pieces or mapped, so this cap does not bound them. */
PG_API pg_status pg_read_file(const char* path, char** data, size_t* len);
PG_API void pg_buffer_free(void* buffer);

/* ------------------------------------------------------------------------------------------ */
/* Models                                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef struct pg_model pg_model;

/* The block's normalisation (pg_model_config.norm). */
typedef enum pg_norm_kind {
    PG_NORM_LAYERNORM = 0,  /* LayerNorm with weight and bias (GPT-2) */
    PG_NORM_RMSNORM = 1     /* RMSNorm, weight only (Llama, Qwen) */
} pg_norm_kind;

/* How positions enter the model (pg_model_config.positions). */
typedef enum pg_position_kind {
    PG_POSITIONS_LEARNED = 0,  /* a learned table wpe [n_ctx, C] added to the embedding (GPT-2) */
    PG_POSITIONS_ROTARY = 1    /* RoPE on queries and keys, Hugging Face's rotate-half pairing */
} pg_position_kind;

/* The MLP (pg_model_config.mlp). */
typedef enum pg_mlp_kind {
    PG_MLP_GELU = 0,   /* c_proj(gelu_tanh(c_fc(x))) */
    PG_MLP_SWIGLU = 1  /* down(silu(gate(x)) * up(x)) */
} pg_mlp_kind;

/* A decoder-only transformer. The defaults are GPT-2's architecture: learned positions,
 * pre-LayerNorm blocks, causal multi-head attention, 4x MLP with tanh GELU, biases everywhere,
 * final LayerNorm, head tied to the token embedding. The fields after layernorm_eps describe
 * the Llama family (Llama 3, SmolLM2, Qwen2.5, Qwen3: RMSNorm, RoPE, grouped-query attention,
 * SwiGLU); pg_model_create accepts the architectures the engine implements and refuses the
 * others naming the field. Rows vocab_size..padded_vocab_size-1 of the embedding are padding:
 * they are never predicted (their logits are excluded from the softmax) and never looked up. */
typedef struct pg_model_config {
    uint32_t struct_size;
    int32_t n_layer;            /* >= 1 */
    int32_t n_head;             /* >= 1, divides n_embd */
    int32_t n_embd;             /* channels, >= 1 */
    int32_t n_ctx;              /* maximum sequence length, >= 1 */
    int32_t vocab_size;         /* >= 2 */
    int32_t padded_vocab_size;  /* >= vocab_size; 0 = round vocab_size up to a multiple of 4 */
    float layernorm_eps;        /* the epsilon of every norm (LayerNorm or RMSNorm), 1e-5 */
    pg_norm_kind norm;          /* PG_NORM_LAYERNORM */
    int32_t qk_norm;            /* 0; 1: an RMSNorm over each query and key head before RoPE
                                 * (Qwen3; weight [head_dim]); needs PG_NORM_RMSNORM */
    pg_position_kind positions; /* PG_POSITIONS_LEARNED */
    float rope_theta;           /* RoPE's base, 10000 (config.json rope_theta) */
    float rope_scaling_factor;  /* 0: none; >= 1: Llama 3's frequency scaling with this factor
                                 * and the three fields below (rope_scaling, rope_type llama3) */
    float rope_low_freq_factor;          /* 1 */
    float rope_high_freq_factor;         /* 4; > rope_low_freq_factor */
    int32_t rope_original_max_positions; /* 8192 */
    int32_t n_kv_head;          /* key/value heads, dividing n_head; 0 = n_head (grouped-query
                                 * attention below n_head, multi-query at 1) */
    int32_t head_dim;           /* channels per head; 0 = n_embd / n_head */
    int32_t qkv_bias;           /* 1: biases on the query, key and value projections */
    int32_t linear_bias;        /* 1: biases on the attention output and MLP projections */
    pg_mlp_kind mlp;            /* PG_MLP_GELU */
    int32_t mlp_hidden;         /* the MLP's inner width (intermediate_size); 0 = 4 * n_embd */
    int32_t tied_head;          /* 1: logits from the token embedding; 0: a separate lm_head */
} pg_model_config;

/* Fills the PhoneGPT preset: 6 layers, 4 heads, width 128, context 128, vocab 65 padded to 68
 * (1,214,976 parameters). */
PG_API void pg_model_config_default(pg_model_config* config);
/* Named presets: "phonegpt" (the default above), "tiny" (2 layers, 2 heads, width 16,
 * context 16, vocab 65 padded to 68: for tests); the published shapes of "smollm2-135m"
 * (134,515,008 parameters), "smollm2-360m" (361,821,120), "qwen2.5-0.5b" (494,032,768),
 * "qwen3-0.6b" (596,049,920) and "llama3.2-1b" (1,235,814,400), as their config.json says;
 * and small test shapes of those families, "tiny-llama", "tiny-qwen2", "tiny-qwen3" (docs/api.md).
 * Unknown names are PG_ERR_INVALID_ARGUMENT. */
PG_API pg_status pg_model_config_preset(const char* name, pg_model_config* config);
/* Checks a configuration; the message names the first bad field. */
PG_API pg_status pg_model_config_validate(const pg_model_config* config);
/* Number of parameters for a configuration (including padding rows); 0 if invalid. */
PG_API int64_t pg_model_config_num_params(const pg_model_config* config);

/* Creates a model with GPT-2 initialisation from `seed`: weights ~ N(0, 0.02), residual
 * projections (attn.c_proj, mlp.c_proj) ~ N(0, 0.02/sqrt(2*n_layer)), biases 0, LayerNorm
 * gains 1, padding rows 0. Same seed, same weights, on every machine. */
PG_API pg_status pg_model_create(const pg_model_config* config, uint64_t seed, pg_model** out);
PG_API void pg_model_free(pg_model* model);
PG_API const char* pg_model_last_error(const pg_model* model);

PG_API pg_status pg_model_get_config(const pg_model* model, pg_model_config* config);
PG_API pg_status pg_model_num_params(const pg_model* model, int64_t* out);

/* The tokenizer that belongs to the model (saved and loaded with it). The model keeps its own
 * copy; set replaces it (its vocabulary must equal the model's vocab_size). get returns a
 * borrowed pointer valid while the model lives and its tokenizer is not replaced, or NULL
 * through *tok if the model has none; it is const, as the model is (set a changed copy). */
PG_API pg_status pg_model_set_tokenizer(pg_model* model, const pg_tokenizer* tok);
PG_API pg_status pg_model_get_tokenizer(const pg_model* model, const pg_tokenizer** tok);

/* Parameters are named tensors in one allocation. Names follow Hugging Face GPT-2 without the
 * "transformer." prefix: "wte" [padded_vocab, C], "wpe" [n_ctx, C], "h.{i}.ln_1.weight" [C],
 * "h.{i}.ln_1.bias", "h.{i}.attn.c_attn.weight" [3C, C], "h.{i}.attn.c_attn.bias" [3C],
 * "h.{i}.attn.c_proj.weight" [C, C], "h.{i}.attn.c_proj.bias", "h.{i}.ln_2.*",
 * "h.{i}.mlp.c_fc.weight" [4C, C], "h.{i}.mlp.c_fc.bias" [4C], "h.{i}.mlp.c_proj.weight"
 * [C, 4C], "h.{i}.mlp.c_proj.bias" [C], "ln_f.weight", "ln_f.bias". Linear weights are
 * [out, in] (Hugging Face's Conv1D stores the transpose).
 * A Llama-family model's tensors are Hugging Face transformers' own, in its order, only those
 * the configuration has: "model.embed_tokens.weight", per layer "model.layers.{i}." +
 * "input_layernorm.weight", "self_attn.q_proj.weight" [n_head*head_dim, C] (and ".bias" with
 * qkv_bias), "self_attn.k_proj.*" and "self_attn.v_proj.*" [n_kv_head*head_dim, C],
 * "self_attn.q_norm.weight" and "self_attn.k_norm.weight" [head_dim] (qk_norm),
 * "self_attn.o_proj.weight" [C, n_head*head_dim], "post_attention_layernorm.weight",
 * "mlp.gate_proj.weight" and "mlp.up_proj.weight" [mlp_hidden, C], "mlp.down_proj.weight"
 * [C, mlp_hidden] (o/gate/up/down ".bias" with linear_bias), then "model.norm.weight" and,
 * untied, "lm_head.weight" [padded_vocab, C] (docs/models.md). */
#define PG_MAX_DIMS 4
typedef struct pg_tensor_info {
    uint32_t struct_size;
    const char* name;           /* static for the model's lifetime */
    int32_t n_dims;
    int64_t shape[PG_MAX_DIMS];
    int64_t numel;
    int64_t offset;             /* in floats, into the model's single parameter allocation */
    const float* data;          /* the weights (fp32), valid for the model's lifetime; NULL on a
                                 * 16-bit frozen base (pg_model_set_weight_storage) */
} pg_tensor_info;

PG_API pg_status pg_model_num_tensors(const pg_model* model, int32_t* out);
/* Tensors are numbered 0..n-1 in the order above (layer by layer). */
PG_API pg_status pg_model_tensor_info(const pg_model* model, int32_t index, pg_tensor_info* info);
PG_API pg_status pg_model_find_tensor(const pg_model* model, const char* name, int32_t* index);
/* Writable access to a tensor's weights (for bindings and tools that load weights). Invalid
 * while a trainer is stepping the model. */
PG_API pg_status pg_model_tensor_data_mutable(pg_model* model, int32_t index, float** data);
/* The whole parameter allocation (num_params floats, llm.c's tensor order). */
PG_API pg_status pg_model_params(const pg_model* model, const float** data, int64_t* n);

/* Where a model's weights come from, saved and loaded with it (checkpoint format 1.1, section
 * PROV): pg_model_create makes an INITIALISED model (its seed recorded, never trained); every
 * pg_trainer step makes it TRAINED and counts the step and its tokens; a checkpoint written
 * before 1.1 and a model imported from another format (llm.c, safetensors) are UNKNOWN; a
 * merged model has its base's. Writing weights through pg_model_tensor_data_mutable changes
 * nothing here. Any output pointer may be NULL. */
typedef enum pg_provenance_kind {
    PG_PROVENANCE_UNKNOWN = 0,
    PG_PROVENANCE_INITIALISED = 1,  /* initialised from *init_seed and never trained */
    PG_PROVENANCE_TRAINED = 2       /* trained for *steps optimizer steps over *tokens tokens */
} pg_provenance_kind;
PG_API pg_status pg_model_provenance(const pg_model* model, pg_provenance_kind* kind, int32_t* has_init_seed,
                                     uint64_t* init_seed, int64_t* steps, int64_t* tokens);
/* LoRA training (pg_lora_trainer_create) and adapter validation against a base
 * (pg_lora_adapter_load with a base, pg_lora_adapter_check_base) refuse a base that was never
 * trained (PG_PROVENANCE_INITIALISED: its weights are random, and an adapter over it learns
 * noise while its loss still goes down) with PG_ERR_STATE, unless this handle allows it
 * (allow = 1; tests and experiments). The permission belongs to this handle only: it is never
 * saved. A validator (pg_validator_create) reports the same rule as its "base trained" check,
 * governed by its own policy (pg_validation_policy.base_trained), not by this permission. */
PG_API pg_status pg_model_allow_untrained_base(pg_model* model, int32_t allow);

/* How a model holds its weights (storage only: how passes multiply by them is a pg_arithmetic,
 * chosen where the work is done, pg_session_config.arithmetic and pg_train_config.arithmetic).
 * A frozen base (LoRA training, sessions with or without an adapter, evaluation) may hold its
 * token embedding (also the tied head) and its four block linears in IEEE fp16 or bfloat16 (half
 * their bytes, about 49% of the whole model's fp32 size) or in blocks of 32 values with an fp16
 * scale (docs/quantization.md): PG_WEIGHTS_Q8_0, int8 codes, 34 bytes per 32 values (27% of
 * fp32); PG_WEIGHTS_Q4_0, 4-bit codes, 18 bytes per 32 values, with the token embedding and tied
 * head in q8_0 (they hit every logit). With PG_ARITHMETIC_EXACT every stored value is widened or
 * decoded to fp32 exactly while the GEMMs pack their panels, so every result equals the fp32
 * model's over the same stored values bit for bit. LayerNorms, biases and positions stay fp32. */
typedef enum pg_weight_storage {
    PG_WEIGHTS_FP32 = 0,
    PG_WEIGHTS_FP16 = 1,  /* round to nearest, ties to even; |w| beyond 65504 is refused */
    PG_WEIGHTS_BF16 = 2,  /* the top half of the fp32 value, rounded to nearest even */
    /* Deprecated spellings, kept for one release with the same results bit for bit: the fp16
     * (bf16) storage, and passes that choose no arithmetic (PG_ARITHMETIC_EXACT, and the calls
     * without a config: pg_model_forward, pg_evaluate) multiply in fp16 (bf16) as
     * PG_ARITHMETIC_FP16 (_BF16) says. pg_model_weight_storage reports them back while they are
     * in effect. Migration: pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) and
     * pg_session_config.arithmetic = PG_ARITHMETIC_FP16 (bf16: PG_WEIGHTS_BF16 and
     * pg_train_config.arithmetic / pg_session_config.arithmetic = PG_ARITHMETIC_BF16). */
    PG_WEIGHTS_FP16_ARITHMETIC = 3,
    PG_WEIGHTS_BF16_ARITHMETIC = 4,
    PG_WEIGHTS_Q8_0 = 5,  /* scale = max |w| of the block / 127, codes rounded to nearest */
    PG_WEIGHTS_Q4_0 = 6   /* scale = the block's value of largest magnitude / -8, codes -8..7 */
} pg_weight_storage;

/* How the passes of a session or a trainer multiply by a frozen base. Each arithmetic other than
 * EXACT applies to one kind of storage, and pg_session_create / pg_lora_trainer_create /
 * pg_trainer_create refuse it over any other (PG_ERR_INVALID_ARGUMENT naming the field); if the
 * model's storage changes later, passes over a storage the arithmetic does not fit are exact.
 * Adapter weights, their gradients and the optimizer always stay fp32. */
typedef enum pg_arithmetic {
    /* The fp32 products of the stored values (bit for bit the fp32 model's over them). */
    PG_ARITHMETIC_EXACT = 0,
#ifdef PG_EXPERIMENTAL_API  /* ---- experimental (see "Tiers" at the top) ---- */
    /* Over an fp16 base, inference passes (sessions' forward, evaluation, generation) multiply in
     * fp16 where the CPU has ARMv8.2 FP16 arithmetic (HWCAP asimdhp: FMLA .8h, twice the lanes
     * of fp32): activations rounded to fp16, partial sums of 16 products in fp16 added into fp32.
     * Logits' relative RMS error about 6e-4 (docs/phone.md). Training passes (LoRA gradients),
     * every CPU without FP16 arithmetic (x86, ARMv8.0 cores) and a GEMM whose partial sums could
     * overflow fp16 use the exact products. */
    PG_ARITHMETIC_FP16 = 1,
    /* Over a bf16 base, every pass (training ones too) multiplies in bfloat16 where the CPU has
     * AVX512_BF16 (VDPBF16PS): activations (and, in a training pass, their gradients) rounded to
     * bf16, products added into fp32 (PyTorch's bf16 autocast trade; relative error about 1e-3
     * to 1e-2). Exact on every CPU without AVX512_BF16 and on the reference kernels. */
    PG_ARITHMETIC_BF16 = 2,
    /* Over a q8_0 or q4_0 base, the forward products of the block linears (every pass,
     * generation included) run as int8 x int8 dot products (AVX512-VNNI, AVX-VNNI, AVX2, SMMLA,
     * SDOT, NEON; PG_INT8_KERNEL names one): activations quantized per row and block of 32 to
     * int8, block scales applied in fp32 (docs/quantization.md has the error). The input
     * gradients of training and the tied head's products stay exact (dequantized while packing):
     * an int8 input gradient would need a second, transposed copy of every weight. */
    PG_ARITHMETIC_INT8 = 3
#endif  /* PG_EXPERIMENTAL_API */
} pg_arithmetic;

/* Converts the model's weights to `storage`, in place, and frees the fp32 copy. The base's
 * fingerprint stays the one of the fp32 weights it came from, so adapters made for the fp32
 * model load against its 16-bit or quantized copy and the other way round (their outputs differ
 * by the rounding of the weights). Afterwards everything that needs the fp32 weights
 * (pg_trainer_create, pg_model_export, saving as fp32, merging in place, pg_model_tensor_data_mutable,
 * pg_model_params) is refused with PG_ERR_STATE (pg_model_save writes a 16-bit or quantized
 * model in its own storage: a 16-bit or quantized checkpoint); a 16-bit or quantized model
 * cannot go back (PG_ERR_STATE: load it again). The same storage again is a no-op (it keeps the
 * values; a deprecated _ARITHMETIC spelling and its plain storage switch between each other
 * freely). A 16-bit model (loaded, mapped or converted) quantizes to q8_0 or q4_0 from its
 * 16-bit values; between fp16 and bf16, between q8_0 and q4_0 and from quantized to 16 bits:
 * PG_ERR_STATE. PG_ERR_NOT_FINITE (naming the tensor) when a weight overflows fp16;
 * PG_ERR_UNSUPPORTED for quantized storage when a weight row's length is not a multiple of 32.
 * PG_ERR_STATE from fp32 while a pg_trainer of the model lives (it trains the fp32 weights this
 * would free). Not while another call uses the model (like pg_model_tensor_data_mutable);
 * sessions and LoRA trainers made before the call read the new storage from their next pass on. */
PG_API pg_status pg_model_set_weight_storage(pg_model* model, pg_weight_storage storage);
/* The model's storage and the bytes its weights take (either pointer may be NULL). */
PG_API pg_status pg_model_weight_storage(const pg_model* model, pg_weight_storage* storage,
                                         int64_t* weight_bytes);

/* Deprecated: pg_session_forward on a session made for the call (pg_session_create with
 * n_threads, pg_session_forward, pg_session_free) gives the same bits. */
PG_DEPRECATED(PG_API pg_status pg_model_forward(const pg_model* model, const int32_t* tokens, int32_t B,
                                                int32_t T, const int32_t* targets, float* logits,
                                                float* mean_loss, int32_t n_threads),
              "use pg_session_forward on a pg_session (pg_session_create with the n_threads)");

/* ------------------------------------------------------------------------------------------ */
/* Training                                                                                   */
/* ------------------------------------------------------------------------------------------ */

typedef struct pg_trainer pg_trainer;

typedef enum pg_lr_schedule {
    PG_LR_CONSTANT = 0,   /* lr_max after warm-up */
    PG_LR_COSINE = 1,     /* linear warm-up to lr_max, cosine to lr_min at total_steps */
    PG_LR_LINEAR = 2      /* linear warm-up to lr_max, linear to lr_min at total_steps */
} pg_lr_schedule;

/* The update rule of pg_train_config.optimizer. */
typedef enum pg_optimizer {
    PG_OPTIMIZER_ADAMW = 0,   /* AdamW on every parameter (default) */
#ifdef PG_EXPERIMENTAL_API  /* ---- experimental (see "Tiers" at the top) ---- */
    /* Muon on the 2-D weights of the blocks' linear layers (attn.c_attn, attn.c_proj, mlp.c_fc,
     * mlp.c_proj): per weight matrix, momentum m = mu m + (1 - mu) g, the Nesterov mix
     * u = (1 - mu) g + mu m, then five Newton-Schulz iterations that map u / |u|_F to an
     * approximately orthogonal O (singular values about 0.7-1.2; coefficients 3.4445, -4.7750,
     * 2.0315), and W -= lr' (0.2 sqrt(max(rows, cols)) O + weight_decay W) with
     * lr' = muon_lr_scale x the schedule's lr (the 0.2 sqrt factor gives O the update size of
     * AdamW, so the same schedule serves both). Embeddings, biases and LayerNorms keep AdamW.
     * Full training only: Muon updates the base's block matrices, which adapter training
     * (pg_lora_trainer_create) keeps frozen; an adapter's factors train with AdamW, and
     * optimizer = MUON there is PG_ERR_INVALID_ARGUMENT naming the field. */
    PG_OPTIMIZER_MUON = 1
#endif  /* PG_EXPERIMENTAL_API */
} pg_optimizer;

/* Training configuration. The learning rate of optimizer step s (0-based; the first step is
 * s = 0), with W = warmup_steps, N = total_steps:
 *   s < W:                 lr_max * (s + 1) / W                       (linear warm-up)
 *   CONSTANT, s >= W:      lr_max                                     (lr_min, N unused)
 *   s >= N:                lr_min
 *   W <= s < N, p = (s - W) / (N - W):
 *     COSINE:              lr_min + (lr_max - lr_min) * (1 + cos(pi * p)) / 2
 *     LINEAR:              lr_max + (lr_min - lr_max) * p
 * computed in double and rounded to float once. Valid ranges (pg_trainer_create rejects
 * anything else with PG_ERR_INVALID_ARGUMENT naming the field): batch_size 1..65536,
 * 0 <= seq_len <= n_ctx, grad_accum_steps 1..65536, 0 <= lr_min <= lr_max (finite),
 * warmup_steps >= 0, total_steps >= 1, beta1 and beta2 in [0, 1), eps in (0, 1],
 * weight_decay >= 0, decay_embeddings 0 or 1, grad_clip >= 0, dropout in [0, 1),
 * dropout_ramp_steps in [0, 2^30],
 * n_threads <= 1024 (then capped as every thread count is, see "Thread counts"), and
 * batch_size x seq_len (seq_len 0 = n_ctx) at most 65,536 tokens per
 * micro-batch (a bound on activation memory; caller batches of pg_trainer_step_batch too).
 * pg_trainer_resume holds a file's training configuration to the same limits (PG_ERR_FORMAT)
 * before it allocates anything.
 * One step: gradients zeroed; grad_accum_steps micro-batches of forward+backward, each adding
 * the gradient of its summed loss / (B * T * grad_accum_steps); the global L2 norm of all
 * gradients (double, fixed order) is reported and, if grad_clip > 0 and it exceeds grad_clip,
 * the gradients are scaled by grad_clip / norm; then AdamW with bias correction:
 * p -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p), the decay term only on the
 * decayed tensors. Same configuration, data, seed and n_threads give the same bits. */
typedef struct pg_train_config {
    uint32_t struct_size;
    int32_t batch_size;           /* sequences per micro-batch (B), default 32 */
    int32_t seq_len;              /* tokens per sequence (T <= n_ctx), 0 = n_ctx */
    int32_t grad_accum_steps;     /* micro-batches per optimizer step, default 1 */
    pg_lr_schedule schedule;      /* default PG_LR_COSINE */
    float lr_max;                 /* default 1e-3 */
    float lr_min;                 /* default 1e-4 */
    int32_t warmup_steps;         /* default 100; lr rises linearly from lr_max/warmup */
    int64_t total_steps;          /* schedule length, default 5000; lr_min after it */
    float beta1, beta2, eps;      /* AdamW, default 0.9, 0.95, 1e-8 */
    float weight_decay;           /* decoupled, default 0.1, on the 2-D linear weights only */
    int32_t decay_embeddings;     /* 1 = also decay wte and wpe, default 0 */
    float grad_clip;              /* global L2 norm bound, 0 = off, default 1.0 */
    float dropout;                /* nanoGPT's four places, 0 = off (default) */
    uint64_t seed;                /* batch sampling and dropout, default 1337 */
    int32_t n_threads;            /* <= 0: all cores (default) */
    /* 1 = keep only each layer's input during the forward pass and recompute the layer's
     * activations just before its backward pass: about a fifth more compute per step for a
     * fraction of the activation memory (docs/performance.md). Results are bit-identical to 0
     * (default), so checkpoints do not store it. */
    int32_t recompute_activations;
    /* Experimental ("Tiers"): the optimizer and Muon's two settings. */
    pg_optimizer optimizer;       /* default PG_OPTIMIZER_ADAMW */
    float muon_momentum;          /* Muon's mu, in [0, 1), default 0.95 (unused by AdamW) */
    float muon_lr_scale;          /* Muon's learning rate / the schedule's, in (0, 1000], default 1 */
    /* Experimental ("Tiers"). Dropout rises linearly from 0 over the first dropout_ramp_steps
     * optimizer steps: step s (0-based) uses dropout * s / dropout_ramp_steps while
     * s < dropout_ramp_steps, then dropout. 0 = the full rate from the first step (default);
     * in [0, 2^30]. A small model that overfits learns faster without dropout early and still
     * needs it late (docs/results.md). */
    int32_t dropout_ramp_steps;
    /* Experimental ("Tiers"). How the passes multiply by a frozen base (pg_lora_trainer_create;
     * see pg_arithmetic); default PG_ARITHMETIC_EXACT. Full training (pg_trainer_create) trains
     * fp32 weights and takes only EXACT; it is not saved with the training state. */
    pg_arithmetic arithmetic;
} pg_train_config;

PG_API void pg_train_config_default(pg_train_config* config);

/* What one optimizer step did. */
typedef struct pg_step_result {
    uint32_t struct_size;
    int64_t step;                 /* steps completed after this one (1 after the first) */
    float loss;                   /* mean training loss over the step's micro-batches */
    float lr;                     /* learning rate used */
    float grad_norm;              /* global gradient norm before clipping */
    int64_t tokens;               /* tokens processed by this step */
} pg_step_result;

/* Creates the training state for `model`, which it borrows (the model must outlive the
 * trainer and only this trainer may write it while it lives). `config` is required (fill it
 * with pg_train_config_default); seq_len 0 becomes n_ctx, which pg_trainer_get_config then
 * reports. */
PG_API pg_status pg_trainer_create(pg_model* model, const pg_train_config* config,
                                   pg_trainer** out);
PG_API void pg_trainer_free(pg_trainer* trainer);
PG_API const char* pg_trainer_last_error(const pg_trainer* trainer);
PG_API pg_status pg_trainer_get_config(const pg_trainer* trainer, pg_train_config* config);

/* Gives the trainer its training tokens (copied). Batches are windows of seq_len+1 tokens at
 * uniformly random offsets drawn from the trainer's seeded RNG. Needs at least seq_len+1
 * tokens, all in [0, vocab_size). */
PG_API pg_status pg_trainer_set_data(pg_trainer* trainer, const int32_t* tokens, size_t n);

/* One optimizer step on batches drawn from the data: grad_accum_steps micro-batches of
 * forward+backward, clipping, AdamW. `result` may be NULL. A step whose loss or gradient norm
 * is not finite is refused with PG_ERR_NOT_FINITE and changes nothing (weights, moments, step
 * count, batch sampler, dropout stream: a retry draws the same batches); this holds for
 * pg_trainer_step_batch too. */
PG_API pg_status pg_trainer_step(pg_trainer* trainer, pg_step_result* result);
/* One optimizer step on a batch given by the caller: inputs and targets [B, T] (grad_accum is
 * not applied: the batch is the step). 1 <= T <= n_ctx; inputs in [0, vocab_size); a target of
 * -1 is not scored (at least one must be); the loss is the mean over the scored positions. */
PG_API pg_status pg_trainer_step_batch(pg_trainer* trainer, const int32_t* inputs,
                                       const int32_t* targets, int32_t B, int32_t T,
                                       pg_step_result* result);
/* Forward and backward only, no update: the gradients of the mean loss over the batch are
 * left in the trainer (readable with pg_trainer_grad). Uses dropout if configured. Arguments
 * as for pg_trainer_step_batch; `mean_loss` may be NULL. A loss or gradient norm that is not
 * finite is PG_ERR_NOT_FINITE (mean_loss not written, dropout stream unchanged). */
PG_API pg_status pg_trainer_compute_gradients(pg_trainer* trainer, const int32_t* inputs,
                                              const int32_t* targets, int32_t B, int32_t T,
                                              float* mean_loss);
/* The gradient of tensor `index` (same numbering and shapes as the model's tensors), valid
 * until the next trainer call. */
PG_API pg_status pg_trainer_grad(const pg_trainer* trainer, int32_t index, const float** data);
/* Optimizer steps taken so far, and the learning rate the schedule gives at `step`. */
PG_API pg_status pg_trainer_step_count(const pg_trainer* trainer, int64_t* step);
PG_API pg_status pg_trainer_lr_at(const pg_trainer* trainer, int64_t step, float* lr);

/* ------------------------------------------------------------------------------------------ */
/* Trainer threads: continuing a run on another number of cores                              */
/* ------------------------------------------------------------------------------------------ */

/* The number of threads the trainer's steps run on (its n_threads resolved by the rule of
 * "Thread counts": <= 0 the cores of this machine, capped at min(4 x cores, 256)). */
PG_API pg_status pg_trainer_n_threads(const pg_trainer* trainer, int32_t* n_threads);
PG_DEPRECATED(PG_API pg_status pg_trainer_threads(const pg_trainer* trainer, int32_t* n_threads),
              "use pg_trainer_n_threads (the same call)");
/* Runs the trainer's later steps on n_threads (<= 0: all cores; at most 1024, then capped as
 * in "Thread counts"), e.g. to continue
 * a resumed run on the cores a busy phone has free. pg_trainer_get_config and the next
 * pg_trainer_save then record the new value. The kernels split their work by thread count, so
 * a run whose count changes matches the unchanged run only up to float rounding; setting the
 * count the trainer already runs on changes nothing. */
PG_API pg_status pg_trainer_set_threads(pg_trainer* trainer, int32_t n_threads);

/* ------------------------------------------------------------------------------------------ */
/* Checkpoints (native format: docs/formats.md)                                               */
/* ------------------------------------------------------------------------------------------ */

typedef struct pg_save_options {
    uint32_t struct_size;
    int32_t compression_level;    /* 0 = raw; 1..19 = zstd level (default 0) */
    /* The weights' storage in the file (checkpoint format 1.3): -1 (default) as the model holds
     * them; PG_WEIGHTS_FP16 / PG_WEIGHTS_BF16 from an fp32 model round its token embedding and
     * block linears while writing (as pg_model_set_weight_storage would; PG_ERR_NOT_FINITE
     * beyond fp16's range), so a phone downloads and maps a 16-bit base directly. A 16-bit or
     * quantized model saves in its own storage only (PG_ERR_STATE otherwise; a q8_0 / q4_0 model
     * as format 1.6's blocks, mappable); PG_WEIGHTS_Q8_0 / _Q4_0 need a model held in them
     * (PG_ERR_INVALID_ARGUMENT from fp32: quantize it first); a trainer state needs fp32
     * (PG_ERR_INVALID_ARGUMENT). */
    int32_t weight_storage;
    /* 1: write the mapping layout (format 1.3: tensors in llm.c's order, 64-byte aligned), so
     * pg_model_load_with can map the file; implied by a 16-bit storage. 0 (default): the file
     * is written as before (1.1, or 1.2 for a Muon state), byte for byte. */
    int32_t align_for_mapping;
} pg_save_options;
PG_API void pg_save_options_default(pg_save_options* options);

/* Saves the model (configuration, tokenizer if any, weights, per-tensor checksums)
 * atomically: a temporary file in the same folder, fsync, rename over `path`, fsync of the
 * folder. A failure up to the rename (PG_ERR_IO) leaves the previous file at `path` untouched;
 * a failing folder fsync after the rename is PG_ERR_IO too, with the new file complete at
 * `path` (the message says so) but not yet durable. Saves and loads remove the temporary files
 * that killed writers left in the folder (docs/formats.md 1.7). */
PG_API pg_status pg_model_save(const pg_model* model, const char* path,
                               const pg_save_options* options);
/* Loads and validates a native checkpoint (any version this library ever wrote). Training
 * state in the file, if any, is ignored here. Every loader (this one, pg_trainer_resume,
 * pg_model_import) refuses a file whose weights (or moments) hold NaN or infinity with
 * PG_ERR_NOT_FINITE naming the tensor and element: a diverged model is never loaded. */
PG_API pg_status pg_model_load(const char* path, pg_model** out);

typedef struct pg_load_options {
    uint32_t struct_size;
    /* 0 (default): read the weights into memory the model owns. 1: map the file read-only
     * (mmap, MAP_PRIVATE) and let the model's weights point into it, nothing copied: the pages
     * are file-backed, shared by every process and handle that maps the same file, and the
     * kernel may drop them under memory pressure and read them again. Needs a raw (uncompressed)
     * file with the mapping layout (pg_save_options.align_for_mapping, a 16-bit weight_storage,
     * or a quantized model); any other file is PG_ERR_UNSUPPORTED, naming how to save a mappable one. */
    int32_t map_weights;
    /* The model's storage: -1 (default) as the file holds the weights; else a pg_weight_storage.
     * pg_model_import_with fills a 16-bit storage straight from the file (no fp32 copy of the
     * model ever exists); pg_model_load_with reads the file, then converts as
     * pg_model_set_weight_storage would (its refusals included), except that PG_WEIGHTS_Q8_0 /
     * _Q4_0 quantize a raw fp32 file while reading it, a few rows at a time, so its fp32 model is
     * never held whole (a compressed one is read whole first). */
    int32_t weight_storage;
} pg_load_options;
PG_API void pg_load_options_default(pg_load_options* options);
/* pg_model_load with options (NULL = defaults). A 16-bit file loads as a 16-bit frozen base
 * (pg_model_weight_storage says which), mapped or not, and no fp32 copy of its weights ever
 * exists. Mapping validates the whole file first (size, every tensor's checksum, the fp32
 * weights' hash, finiteness), as a copy does. A mapped model is a frozen base: everything that
 * writes its weights or needs them as one fp32 array (pg_trainer_create, merging in place or
 * unmerging, pg_model_tensor_data_mutable, pg_model_params, pg_model_set_weight_storage to
 * another storage, pg_model_export) is refused with PG_ERR_STATE naming the file; sessions,
 * evaluation, LoRA trainers, pg_lora_merge (into a new fp32 model) and pg_model_save work, and pg_model_tensor_info gives the
 * mapped fp32 tensors' data. Adapter fingerprints and base descriptions are the same for a mapped
 * and a copied base. The file must stay as it is while mapped: replacing it by rename (as every
 * libphonegpt save does) or deleting it is safe (the mapping keeps the old file), but truncating
 * or rewriting it in place changes the weights under the model or kills the process with SIGBUS
 * (docs/formats.md 1.8). */
PG_API pg_status pg_model_load_with(const char* path, const pg_load_options* options, pg_model** out);
/* pg_model_load_with of a checkpoint's `size` bytes at `data` (downloaded, decrypted, bundled),
 * copied into the model and checked exactly as a file is (sizes, checksums, finiteness); the
 * buffer may be freed on return. options->map_weights = 1 is PG_ERR_UNSUPPORTED (load the file
 * by its path to map it). */
PG_API pg_status pg_model_load_from_memory(const void* data, size_t size, const pg_load_options* options,
                                           pg_model** out);
/* The same for the `length` bytes at `offset` of an open regular file `fd` (length < 0: to its
 * end), as Android hands out an asset (AssetFileDescriptor: descriptor, start offset, length).
 * Read with pread: the descriptor's position is unchanged and it is not closed. A range outside
 * the file is PG_ERR_INVALID_ARGUMENT naming offset or length; a descriptor that is not a
 * readable regular file is PG_ERR_IO. */
PG_API pg_status pg_model_load_from_fd(int fd, int64_t offset, int64_t length, const pg_load_options* options,
                                       pg_model** out);
/* *mapped = 1 when the model's weights are a file mapping (pg_load_options.map_weights). */
PG_API pg_status pg_model_weights_mapped(const pg_model* model, int32_t* mapped);
/* Saves the model plus the trainer's state (step, AdamW moments, RNG and sampler state,
 * configuration) so that pg_trainer_resume continues the run bit for bit. */
PG_API pg_status pg_trainer_save(const pg_trainer* trainer, const char* path,
                                 const pg_save_options* options);
/* Loads a checkpoint written by pg_trainer_save into a new model and trainer. The trainer
 * needs its data again (pg_trainer_set_data with the same tokens) before stepping. */
PG_API pg_status pg_trainer_resume(const char* path, pg_model** model, pg_trainer** trainer);

typedef enum pg_interop_format {
    PG_FORMAT_LLMC = 1,           /* llm.c model file: 256 x int32 header, fp32 params */
    PG_FORMAT_SAFETENSORS = 2,    /* Hugging Face GPT-2 names; config.json beside it */
    /* A Hugging Face model folder: config.json (LlamaForCausalLM, Qwen2ForCausalLM,
     * Qwen3ForCausalLM or GPT2LMHeadModel), model.safetensors or model.safetensors.index.json
     * and its shards (F32, F16 or BF16 tensors under transformers' names), and tokenizer.json
     * when present (its vocabulary may be smaller than the embedding: the rows past it become
     * padding rows, never predicted). What the engine does not compute (sliding windows,
     * experts, other rope types, ...) is refused naming the config.json key. Export writes
     * config.json and model.safetensors into the folder (created if absent): matrices in the
     * model's storage, norms and biases in F32; an existing tokenizer.json is left as it is. */
    PG_FORMAT_HF_FOLDER = 3
} pg_interop_format;
/* Exports the weights. llm.c: `path` is the model file (padding rows kept, as llm.c expects).
 * safetensors: `path` is the .safetensors file and a Hugging Face GPT-2 config.json is written
 * beside it (same folder); padding rows are dropped and Conv1D weights transposed, so
 * transformers' GPT2LMHeadModel opens the folder. Import reverses either (the model gets the
 * padded_vocab_size rule of pg_model_config: round up to a multiple of 4 if the file has none). */
PG_API pg_status pg_model_export(const pg_model* model, pg_interop_format format,
                                 const char* path);
PG_API pg_status pg_model_import(pg_interop_format format, const char* path, pg_model** out);
/* pg_model_import with options (NULL = defaults): weight_storage chooses the model's storage
 * (map_weights must be 0: imports are read, not mapped). */
PG_API pg_status pg_model_import_with(pg_interop_format format, const char* path, const pg_load_options* options,
                                      pg_model** out);

/* ------------------------------------------------------------------------------------------ */
/* Evaluation                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* Whole-split evaluation. For a split of N tokens there are P = N-1 predictions (token i+1 from
 * tokens <= i, i = 0..N-2) and every one is scored exactly once. A window of length L starting
 * at s has inputs tokens [s, s+L) and targets [s+1, s+L]; it scores some of its positions.
 * With window W (0 = n_ctx) and stride S (0 = W, 1 <= S <= W):
 *  - P <= W: one window [0, P) scores everything.
 *  - Non-overlapping (S = W, PhoneGPT's protocol): windows [k*W, k*W + W) score all their
 *    positions; the last one is shorter, [k*W, P), if fewer than W predictions remain.
 *  - Sliding (S < W): window 0 = [0, W) scores all W positions; window k = [k*S, k*S + W),
 *    for every k >= 1 with k*S + W <= P, scores only its last S positions, each with W-S
 *    tokens of extra context. If predictions remain after the last of these (P - W is not a
 *    multiple of S), one final window [P-W, P) that ends at the split's end scores just them
 *    (its last P - (k*S + W) positions, fewer than S).
 * The mean is accumulated in double in window order, so the result does not depend on
 * batch_size or n_threads. docs/evaluation.md has worked examples. */
typedef struct pg_eval_config {
    uint32_t struct_size;
    int32_t window;               /* 0 = n_ctx */
    int32_t stride;               /* 0 = window */
    int32_t batch_size;           /* windows per forward pass, default 16 */
    int32_t n_threads;            /* read by the deprecated pg_evaluate only (a session's own
                                     threads run pg_session_evaluate) */
    pg_progress_fn progress;      /* optional, called after each forward pass; done/total in
                                     scored positions (total = N-1); non-zero return cancels */
    void* progress_user;
} pg_eval_config;
PG_API void pg_eval_config_default(pg_eval_config* config);

typedef struct pg_eval_result {
    uint32_t struct_size;
    double mean_loss;             /* natural log */
    double bits_per_token;        /* mean_loss / ln 2 */
    int64_t n_scored;             /* N - 1 */
    int64_t n_windows;
    /* Bits per byte, which compares models with different vocabularies on the same text: the
     * summed loss of the scored predictions in bits over n_bytes, the bytes their targets
     * decode to with the model's tokenizer (each scored target counted once per time it is
     * scored; a position that is context only, such as the split's first token, adds nothing).
     * Whole-split: the targets are tokens 1..N-1, so n_bytes is the length of the split's text
     * without its first token's bytes. With a character tokenizer on text of one-byte
     * characters bits_per_byte equals bits_per_token. A target id the tokenizer has no bytes
     * for (a gap in a BPE id range) is PG_ERR_INVALID_ARGUMENT. Both are 0 for a model
     * without a tokenizer. Appended last: a caller built with the older struct size gets the
     * fields above only. */
    double bits_per_byte;
    int64_t n_bytes;
} pg_eval_result;

/* Deprecated: pg_session_evaluate on a session made for the call with config->n_threads gives
 * the same bits (pg_eval_config.n_threads is read by this wrapper only). */
PG_DEPRECATED(PG_API pg_status pg_evaluate(const pg_model* model, const int32_t* tokens, size_t n,
                                           const pg_eval_config* config, pg_eval_result* result),
              "use pg_session_evaluate on a pg_session (pg_session_create with config->n_threads)");
/* Deprecated: pg_session_evaluate_sampled with pg_eval_sampled_config {n_batches, batch_size,
 * seed} on a session made for the call with n_threads gives the same bits. */
PG_DEPRECATED(PG_API pg_status pg_evaluate_sampled(const pg_model* model, const int32_t* tokens, size_t n,
                                                   int32_t n_batches, int32_t batch_size, uint64_t seed,
                                                   int32_t n_threads, pg_eval_result* result),
              "use pg_session_evaluate_sampled on a pg_session (pg_session_create with the n_threads)");

/* ------------------------------------------------------------------------------------------ */
/* Sampling                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Called with each generated token; return non-zero to stop (not an error). */
typedef int (*pg_token_fn)(void* user, int32_t token);

typedef struct pg_sample_config {
    uint32_t struct_size;
    float temperature;            /* >= 0; default 1.0; 0 = greedy */
    int32_t top_k;                /* 0 = off */
    float top_p;                  /* 1.0 = off */
    uint64_t seed;                /* default 1337 */
    int32_t max_tokens;           /* tokens to generate, default 256 */
    int32_t n_threads;            /* read by the deprecated pg_generate only (a session's own
                                     threads run pg_session_generate) */
    pg_token_fn on_token;         /* optional streaming callback */
    void* on_token_user;
    /* Stop strings (UTF-8, non-empty): generation stops after the token that completes one of
     * them in the generated text (the prompt is not searched); that token is emitted. Needs
     * the model's tokenizer (PG_ERR_STATE without one). */
    const char* const* stop_strings;
    int32_t n_stop_strings;
    /* Tokens kept when the window slides, 1..n_ctx; 0 = n_ctx (default). With n_ctx every
     * prediction sees exactly the last n_ctx tokens (nanoGPT's crop), but every token after the
     * window is full costs a rebuild of n_ctx positions; with K < n_ctx a slide keeps the last
     * K tokens and the next n_ctx - K tokens are cached steps (about n_ctx/(n_ctx-K+1) times
     * cheaper, predictions then see between K and n_ctx tokens). */
    int32_t slide_keep;
} pg_sample_config;
PG_API void pg_sample_config_default(pg_sample_config* config);

/* Deprecated: pg_session_append(prompt) then pg_session_generate on a session made for the call
 * with config->n_threads gives the same tokens (pg_sample_config.n_threads is read by this
 * wrapper only). */
PG_DEPRECATED(PG_API pg_status pg_generate(const pg_model* model, const int32_t* prompt, size_t n_prompt,
                                           const pg_sample_config* config, int32_t* out, size_t capacity,
                                           size_t* n_out),
              "use pg_session_append then pg_session_generate on a pg_session");

/* ------------------------------------------------------------------------------------------ */
/* Sessions                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* A session is the mutable inference state over a read-only model: its own threads (the count
 * is fixed at creation), scratch memory grown to the largest batch asked for, and one sequence
 * with its key/value cache, so generation can append tokens and continue without recomputing
 * what is cached (a chat app appends each turn). Forward passes and evaluation on a session
 * reuse its threads and scratch and leave its sequence alone. A session is the one entry for
 * forward passes, evaluation and generation (the deprecated pg_model_forward, pg_evaluate,
 * pg_evaluate_sampled and pg_generate each run on a session made for the one call).
 *
 * A session borrows its model, which must outlive it; many sessions may read one model at once
 * (one per thread). A session is used by one thread at a time. If the model's weights change
 * (a trainer step, pg_model_tensor_data_mutable), call pg_session_reset: the cache holds keys
 * and values computed from the old weights. Failed calls on a session set its own message
 * (pg_session_last_error) as well as the thread's. */
typedef struct pg_session pg_session;

typedef struct pg_session_config {
    uint32_t struct_size;
    int32_t n_threads;            /* <= 0: all cores; fixed for the session's life */
    int32_t slide_keep;           /* tokens kept when the window slides, 1..n_ctx; 0 = n_ctx
                                     (default; see pg_sample_config.slide_keep) */
    pg_arithmetic arithmetic;     /* experimental ("Tiers"): of every pass over the model's
                                     frozen weights; default PG_ARITHMETIC_EXACT */
} pg_session_config;
PG_API void pg_session_config_default(pg_session_config* config);

PG_API pg_status pg_session_create(const pg_model* model, const pg_session_config* config,
                                   pg_session** out);
PG_API void pg_session_free(pg_session* session);
PG_API const char* pg_session_last_error(const pg_session* session);
/* The number of threads the session runs on. */
PG_API pg_status pg_session_n_threads(const pg_session* session, int32_t* out);

/* Forward pass on a batch of B sequences of T tokens (T <= n_ctx; ids in [0, vocab_size)).
 * Writes logits [B, T, vocab_size] (padding columns dropped) when `logits` is not NULL.
 * If `targets` is not NULL, *mean_loss gets the mean cross-entropy (natural log) over all B*T
 * positions; a target of -1 is skipped (not scored). No dropout. Results do not depend on the
 * session's thread count beyond float rounding of the kernels' partition; they are
 * bit-identical for the same count. The session's sequence is left alone. */
PG_API pg_status pg_session_forward(pg_session* session, const int32_t* tokens, int32_t B,
                                    int32_t T, const int32_t* targets, float* logits,
                                    float* mean_loss);
/* Whole-split evaluation (the window rule above pg_eval_config; config->n_threads is not read:
 * the session's threads run it). A mean loss that is not finite (a model with NaN or infinite
 * weights) is PG_ERR_NOT_FINITE, never a score: `result` is not written. The same holds for
 * pg_session_evaluate_sampled. */
PG_API pg_status pg_session_evaluate(pg_session* session, const int32_t* tokens, size_t n,
                                     const pg_eval_config* config, pg_eval_result* result);

/* The options of the sampled estimate (pg_session_evaluate_sampled). */
typedef struct pg_eval_sampled_config {
    uint32_t struct_size;
    int32_t n_batches;            /* >= 1, default 20 */
    int32_t batch_size;           /* windows per batch, >= 1, default 8 */
    uint64_t seed;                /* offsets are drawn from it, default 1337 */
} pg_eval_sampled_config;
PG_API void pg_eval_sampled_config_default(pg_eval_sampled_config* config);
/* nanoGPT-style estimate: the mean loss over n_batches batches of batch_size windows of n_ctx
 * inputs (n_ctx+1 tokens, every position scored) at offsets drawn uniformly from
 * [0, n - n_ctx - 1] by pg::Rng(seed); needs n >= n_ctx + 1. An estimate, not the whole-split
 * score (windows overlap and miss positions; the first positions of a window see little
 * context). n_scored = n_batches*batch_size*n_ctx, n_windows = n_batches*batch_size. */
PG_API pg_status pg_session_evaluate_sampled(pg_session* session, const int32_t* tokens, size_t n,
                                             const pg_eval_sampled_config* config,
                                             pg_eval_result* result);

/* The sequence. append adds tokens (ids in [0, vocab_size)) to it; they are computed, all
 * pending ones in one batched pass, when logits are next needed. The window holds the last at
 * most n_ctx tokens of the sequence; when pending tokens do not fit, it slides to the last
 * max(slide_keep, pending) tokens (at most n_ctx) and the cache is rebuilt over them.
 * logits writes the vocab_size logits for the token after the sequence (capacity >= vocab_size;
 * PG_ERR_STATE if the sequence is empty). position is the sequence's length (tokens appended,
 * generated ones included, since creation or the last reset); reset empties it. */
PG_API pg_status pg_session_append(pg_session* session, const int32_t* tokens, size_t n);
PG_API pg_status pg_session_logits(pg_session* session, float* logits, size_t capacity);
PG_API pg_status pg_session_reset(pg_session* session);
PG_API pg_status pg_session_position(const pg_session* session, int64_t* position);

/* Generates up to max_tokens tokens after the session's sequence (PG_ERR_STATE if it is empty;
 * append a prompt of at least one token first) with the key/value cache: one cached position
 * per token, no recomputation of the window. When appending to a full window (n_ctx tokens) the
 * window slides: the cache is rebuilt over the last slide_keep tokens (see pg_sample_config).
 * Every generated token is appended to the sequence, so a later append + generate continues the
 * conversation without recomputing it. config->slide_keep, if not 0, applies to this call's
 * slides instead of the session's; config->n_threads is not read. The same session state, seed
 * and configuration give the same tokens. Every generated token goes to on_token; the first
 * `capacity` of them are written to `out` (NULL if capacity is 0, e.g. when only streaming)
 * and *n_out gets how many were written. */
PG_API pg_status pg_session_generate(pg_session* session, const pg_sample_config* config,
                                     int32_t* out, size_t capacity, size_t* n_out);

/* ------------------------------------------------------------------------------------------ */
/* LoRA adapters (docs/lora.md)                                                               */
/* ------------------------------------------------------------------------------------------ */

/* A LoRA adapter adds a trainable low-rank term to chosen linear layers of a frozen base model,
 * with PEFT's semantics: for a target linear y = W x + b (W [out, in]),
 *   y = W x + b + scale * B (A dropout(x)),   A [rank, in], B [out, rank],
 *   scale = alpha / rank, or alpha / sqrt(rank) with rsLoRA,
 * dropout on the LoRA branch only. A starts kaiming-uniform with a = sqrt(5) (that is
 * U(-1/sqrt(in), 1/sqrt(in))) drawn from init_seed, B starts at zero, so a fresh adapter leaves
 * the base's outputs unchanged. The adapter stores its configuration and the base's geometry;
 * nothing about it is assumed in code. */
typedef struct pg_lora_adapter pg_lora_adapter;

/* The block linears an adapter can target, by Hugging Face module name. GPT-2 bases take the
 * first four (its fused modules), Llama-family bases (Llama, Qwen2, Qwen3) the next seven, each
 * with its own A [rank, in] and B [out, rank] as in PEFT; a target of the other family is
 * PG_ERR_INVALID_ARGUMENT naming the base's module names. Inside the engine q/k/v and gate/up
 * are one fused product each; a sliced target's term lands on its rows (docs/lora.md). */
typedef enum pg_lora_target {
    PG_LORA_ATTN_C_ATTN = 1,   /* attn.c_attn: in C, out 3C (q, k, v) */
    PG_LORA_ATTN_C_PROJ = 2,   /* attn.c_proj: in C, out C */
    PG_LORA_MLP_C_FC = 4,      /* mlp.c_fc: in C, out 4C */
    PG_LORA_MLP_C_PROJ = 8,    /* mlp.c_proj: in 4C, out C */
    PG_LORA_ALL_LINEARS = 15,  /* GPT-2's four */
    PG_LORA_Q_PROJ = 16,       /* self_attn.q_proj: in C, out n_head * head_dim */
    PG_LORA_K_PROJ = 32,       /* self_attn.k_proj: in C, out n_kv_head * head_dim */
    PG_LORA_V_PROJ = 64,       /* self_attn.v_proj: in C, out n_kv_head * head_dim */
    PG_LORA_O_PROJ = 128,      /* self_attn.o_proj: in n_head * head_dim, out C */
    PG_LORA_GATE_PROJ = 256,   /* mlp.gate_proj: in C, out intermediate */
    PG_LORA_UP_PROJ = 512,     /* mlp.up_proj: in C, out intermediate */
    PG_LORA_DOWN_PROJ = 1024,  /* mlp.down_proj: in intermediate, out C */
    PG_LORA_LLAMA_ALL_LINEARS = 2032 /* the Llama family's seven */
} pg_lora_target;

/* Largest rank an adapter may have (also bounded by the smaller side of each target). */
#define PG_LORA_MAX_RANK 4096

typedef struct pg_lora_config {
    uint32_t struct_size;
    int32_t rank;                 /* r, 1..PG_LORA_MAX_RANK and <= min(in, out); default 8 */
    float alpha;                  /* lora_alpha, finite and > 0; default 8 */
    int32_t use_rslora;           /* 0: scale = alpha / r (default); 1: alpha / sqrt(r) */
    float dropout;                /* on the LoRA branch's input while training, [0, 1); default 0 */
    uint32_t target_modules;      /* OR of pg_lora_target of the base's family, or 0 (default):
                                     PEFT's default for the base's family, PG_LORA_ATTN_C_ATTN on
                                     GPT-2, PG_LORA_Q_PROJ | PG_LORA_V_PROJ on the Llama family
                                     (the adapter's configuration holds the bits chosen) */
    /* The layers to adapt (PEFT's layers_to_transform): n_layers distinct indices in
     * [0, n_layer), any order (stored sorted). NULL / 0 = every layer (default). The list is
     * copied at creation; pg_lora_adapter_get_config returns a pointer to the adapter's copy,
     * valid while the adapter lives. */
    const int32_t* layers;
    int32_t n_layers;
    uint64_t init_seed;           /* seed of A's initialisation; default 1337 */
    int32_t freeze_a;             /* 1 = FFA-LoRA: A keeps its initialisation and only B trains
                                     (so averaging B across clients is exact); default 0 */
} pg_lora_config;

PG_API void pg_lora_config_default(pg_lora_config* config);
/* Checks a configuration on its own (layer indices against a base are checked at creation);
 * the message names the first bad field. */
PG_API pg_status pg_lora_config_validate(const pg_lora_config* config);

/* Creates an adapter for `base` (which it does not keep: the adapter records the base's
 * geometry, and a fingerprint of its configuration, weights and tokenizer). A rank larger than
 * a target's smaller side, or a layer outside the base, is PG_ERR_GEOMETRY naming both. */
PG_API pg_status pg_lora_adapter_create(const pg_model* base, const pg_lora_config* config,
                                        pg_lora_adapter** out);
PG_API void pg_lora_adapter_free(pg_lora_adapter* adapter);
PG_API const char* pg_lora_adapter_last_error(const pg_lora_adapter* adapter);
/* The adapter's configuration (layers sorted as stored; NULL / 0 when every layer is adapted). */
PG_API pg_status pg_lora_adapter_get_config(const pg_lora_adapter* adapter,
                                            pg_lora_config* config);
/* scale = alpha / r, or alpha / sqrt(r) with rsLoRA (computed in double, rounded once). */
PG_API pg_status pg_lora_adapter_scale(const pg_lora_adapter* adapter, float* scale);
/* Trainable parameters: the floats of every A and B (with freeze_a, A still counts: it is part
 * of the adapter). */
PG_API pg_status pg_lora_adapter_num_params(const pg_lora_adapter* adapter, int64_t* out);

/* The adapter's tensors, layer by layer, in pg_lora_target order within a layer, A then B:
 * "h.{i}.attn.c_attn.lora_A.weight" [rank, in], "h.{i}.attn.c_attn.lora_B.weight" [out, rank],
 * and likewise for attn.c_proj, mlp.c_fc, mlp.c_proj (PEFT's names without the
 * "base_model.model.transformer." prefix); on a Llama-family base
 * "model.layers.{i}.self_attn.q_proj.lora_A.weight", ... "model.layers.{i}.mlp.down_proj..."
 * (without "base_model.model."). pg_tensor_info's offset counts floats into the
 * adapter's single allocation. */
PG_API pg_status pg_lora_adapter_num_tensors(const pg_lora_adapter* adapter, int32_t* out);
PG_API pg_status pg_lora_adapter_tensor_info(const pg_lora_adapter* adapter, int32_t index,
                                             pg_tensor_info* info);
PG_API pg_status pg_lora_adapter_find_tensor(const pg_lora_adapter* adapter, const char* name,
                                             int32_t* index);
/* Writable access to a tensor (for tools and bindings; invalid while it is being trained). */
PG_API pg_status pg_lora_adapter_tensor_data_mutable(pg_lora_adapter* adapter, int32_t index,
                                                     float** data);

/* Merging: W += scale * B A for every adapted linear (unmerge: W -= scale * B A), in fp32.
 * pg_lora_merge makes a new model (the base's configuration, tokenizer and merged weights; it
 * saves, loads and evaluates like any model), in fp32 also from a 16-bit, quantized or mapped
 * base: its weights are the values the base holds (widened, or the blocks dequantized) with the
 * update added, and pg_model_set_weight_storage makes a 16-bit copy of it; merge_in_place
 * changes `model`. Both need the
 * adapter's own base (PG_ERR_GEOMETRY naming the difference otherwise: geometry, tokenizer or
 * weights), so merging twice is refused. unmerge_in_place checks geometry and tokenizer and
 * restores the weights within fp32 rounding (a few ulp of max(|W|, |scale B A|)), not bit for
 * bit. Merged and unmerged-applied logits agree within 1e-5 of the largest logit
 * (tests/unit/test_lora_merge.cpp). n_threads <= 0: all cores. */
PG_API pg_status pg_lora_merge(const pg_model* base, const pg_lora_adapter* adapter,
                               int32_t n_threads, pg_model** merged);
PG_API pg_status pg_lora_merge_in_place(pg_model* model, const pg_lora_adapter* adapter,
                                        int32_t n_threads);
PG_API pg_status pg_lora_unmerge_in_place(pg_model* model, const pg_lora_adapter* adapter,
                                          int32_t n_threads);

/* Adapter files (docs/formats.md, "Adapter file"): a safetensors file with PEFT's tensor names
 * whose metadata holds the format version, the configuration, the base's identity and
 * description, the training record, a checksum per tensor and one over the metadata. Saving is
 * atomic and reads the file back, comparing it with the adapter, before it reports success.
 * Loading validates everything and reads the geometry from the file; with `base` (may be NULL)
 * it also checks that the adapter was made for that base: another geometry, tokenizer or base
 * weights is PG_ERR_GEOMETRY naming both sides, a never-trained base PG_ERR_STATE (see
 * pg_model_allow_untrained_base). Files of every format version this library
 * ever wrote load; a newer major is PG_ERR_VERSION. */
PG_API pg_status pg_lora_adapter_save(const pg_lora_adapter* adapter, const char* path);
PG_API pg_status pg_lora_adapter_load(const char* path, const pg_model* base,
                                      pg_lora_adapter** out);
/* PG_OK when `base` is the adapter's base; PG_ERR_GEOMETRY naming the difference otherwise;
 * PG_ERR_STATE when `base` was never trained (pg_model_allow_untrained_base). */
PG_API pg_status pg_lora_adapter_check_base(const pg_lora_adapter* adapter, const pg_model* base);
/* Exports for PEFT into `folder` (which must exist): adapter_config.json (peft_type LORA, r,
 * lora_alpha, lora_dropout, target_modules "c_attn" / "attn.c_proj" / "c_fc" / "mlp.c_proj"
 * or "q_proj" ... "down_proj", fan_in_fan_out true as GPT-2's Conv1D needs and false for the
 * Llama family, use_rslora, layers_to_transform with layers_pattern "h" or "layers") and
 * adapter_model.safetensors (the adapter file: its tensors carry PEFT's names
 * base_model.model.transformer.h.{i}.{module}.lora_A.weight [r, in] / lora_B.weight [out, r],
 * or base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight ...). For a base exported
 * with pg_model_export(PG_FORMAT_SAFETENSORS) or as a Hugging Face folder. Both files are
 * written atomically and read back and checked before success. */
PG_API pg_status pg_lora_export_peft(const pg_lora_adapter* adapter, const char* folder);
/* Imports a PEFT LoRA adapter for `base` from `folder`: adapter_config.json (peft_type LORA, r,
 * lora_alpha, lora_dropout, use_rslora, target_modules as a list of module names or a regular
 * expression or "all-linear", matched as PEFT matches them, layers_to_transform,
 * fan_in_fan_out, which GPT-2's Conv1D makes irrelevant to A and B) and
 * adapter_model.safetensors (base_model.model.transformer.h.{i}.{module}.lora_A.weight
 * [r, in] / lora_B.weight [out, r] for module attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj;
 * on a Llama-family base base_model.model.model.layers.{i}.{module}... for self_attn.q_proj,
 * k_proj, v_proj, o_proj, mlp.gate_proj, up_proj, down_proj, layers_pattern "layers";
 * F32, F16, BF16 or F64, converted to fp32). The adapted layers and modules, the rank and every
 * shape are read from the files: the two files disagreeing is PG_ERR_FORMAT naming both, a shape
 * or layer that does not fit the base PG_ERR_GEOMETRY naming both sides, and what this library's
 * adapters cannot be (use_dora, rank_pattern / alpha_pattern, a LoRA bias, modules_to_save,
 * another module, different modules in different layers) PG_ERR_UNSUPPORTED. The adapter's
 * base identity is `base`'s, its init_seed 0 and its training record empty; a pair written by
 * pg_lora_export_peft comes back whole (seed, record, base identity: it must be that base). */
PG_API pg_status pg_lora_import_peft(const char* folder, const pg_model* base,
                                     pg_lora_adapter** out);
/* The identity of the base the adapter was made for, as the adapter file stores it (JSON:
 * geometry, weights_xxh64, tokenizer, fingerprint, description, and provenance: kind
 * "trained" / "initialised" / "unknown", init_seed, steps, tokens, description; docs/formats.md
 * §5). Sizing as for pg_tokenizer_decode (text may be NULL with capacity 0). */
PG_API pg_status pg_lora_adapter_base_json(const pg_lora_adapter* adapter, char* text,
                                           size_t capacity, size_t* len);

/* The adapter's training record: *n_steps optimizer steps, with one loss and one learning rate
 * each (borrowed arrays, valid until the adapter is trained further or freed; NULL when there
 * are no steps), *tokens tokens processed. Any output pointer may be NULL. */
PG_API pg_status pg_lora_adapter_training_record(const pg_lora_adapter* adapter, int64_t* n_steps,
                                                 int64_t* tokens, const float** losses,
                                                 const float** learning_rates);

/* Training an adapter over a frozen base. A step is pg_trainer_step's (sampled micro-batches,
 * grad_accum_steps, the schedule, clipping, AdamW with bias correction, the configuration's
 * dropout in the base) with the base frozen: no base gradient or optimizer memory and no base
 * weight-gradient products; only the adapter's A and B are updated (only B with freeze_a;
 * weight_decay applies to every trained factor), the LoRA branch's dropout is the adapter's.
 * Each step appends its loss and learning rate to the adapter's training record. The trainer
 * borrows the base (never written) and the adapter (written only by this trainer while it
 * lives); the adapter must be the base's (PG_ERR_GEOMETRY otherwise) and the base must have
 * been trained (PG_ERR_STATE for a never-trained one unless pg_model_allow_untrained_base).
 * Same configuration, data, seed and n_threads give the same bits. */
typedef struct pg_lora_trainer pg_lora_trainer;
PG_API pg_status pg_lora_trainer_create(const pg_model* base, pg_lora_adapter* adapter,
                                        const pg_train_config* config, pg_lora_trainer** out);
PG_API void pg_lora_trainer_free(pg_lora_trainer* trainer);
PG_API const char* pg_lora_trainer_last_error(const pg_lora_trainer* trainer);
/* As pg_trainer_set_data / pg_trainer_step / pg_trainer_step_batch. */
PG_API pg_status pg_lora_trainer_set_data(pg_lora_trainer* trainer, const int32_t* tokens,
                                          size_t n);
PG_API pg_status pg_lora_trainer_step(pg_lora_trainer* trainer, pg_step_result* result);
PG_API pg_status pg_lora_trainer_step_batch(pg_lora_trainer* trainer, const int32_t* inputs,
                                            const int32_t* targets, int32_t B, int32_t T,
                                            pg_step_result* result);
/* Forward and backward only, no update and nothing recorded: the gradients of the batch's mean
 * loss with respect to every factor (A's too with freeze_a) are left in the trainer, readable
 * with pg_lora_trainer_grad (tensor `index` in the adapter's numbering and shapes; valid until
 * the next step or computation). As pg_trainer_compute_gradients otherwise. */
PG_API pg_status pg_lora_trainer_compute_gradients(pg_lora_trainer* trainer, const int32_t* inputs,
                                                   const int32_t* targets, int32_t B, int32_t T,
                                                   float* mean_loss);
PG_API pg_status pg_lora_trainer_grad(const pg_lora_trainer* trainer, int32_t index,
                                      const float** data);
/* As pg_trainer_get_config, pg_trainer_step_count, pg_trainer_lr_at, pg_trainer_n_threads and
 * pg_trainer_set_threads: the configuration the trainer runs (seq_len 0 resolved to n_ctx), the
 * optimizer steps taken (the adapter's training record counts the same steps), the schedule's
 * learning rate at a step, and the thread count of later steps (a checkpoint of a run resumes
 * bit for bit only on the count it was saved with). */
PG_API pg_status pg_lora_trainer_get_config(const pg_lora_trainer* trainer, pg_train_config* config);
PG_API pg_status pg_lora_trainer_step_count(const pg_lora_trainer* trainer, int64_t* step);
PG_API pg_status pg_lora_trainer_lr_at(const pg_lora_trainer* trainer, int64_t step, float* lr);
PG_API pg_status pg_lora_trainer_n_threads(const pg_lora_trainer* trainer, int32_t* n_threads);
PG_API pg_status pg_lora_trainer_set_threads(pg_lora_trainer* trainer, int32_t n_threads);
/* Adapters on sessions: attaching makes every pass on `session` (pg_session_forward,
 * _evaluate, _evaluate_sampled, _append/_logits, _generate) compute base + adapter, as the
 * merged model would within fp32 rounding (docs/lora.md states the bound), while the model is
 * never written: several sessions of one base may each have their own adapter (or none) and run
 * concurrently. The adapter must be the session's model's (PG_ERR_GEOMETRY naming both sides);
 * it is borrowed: it must outlive the attachment and must not be trained or written while
 * attached (reads of it are unsynchronised). Attaching replaces an attached adapter; attaching
 * and detaching keep the sequence, whose keys and values are recomputed with the new weights at
 * the next pg_session_logits. Detaching with nothing attached does nothing. pg_session_adapter gives the attached adapter, or NULL. */
PG_API pg_status pg_session_attach_adapter(pg_session* session, const pg_lora_adapter* adapter);
PG_API pg_status pg_session_detach_adapter(pg_session* session);
PG_API pg_status pg_session_adapter(const pg_session* session, const pg_lora_adapter** adapter);

/* Adapter training checkpoints (docs/formats.md §5, format 1.1): save writes the trainer's
 * adapter (factors, configuration, base identity, training record) and everything the run
 * changes besides it (step, AdamW moments, sampler state, dropout stream, the configuration
 * with n_threads) into one file, atomically, read back and checked before success. resume
 * loads it against `base` (checked as pg_lora_adapter_load with a base, and as
 * pg_lora_trainer_create) and returns a new adapter and a trainer over it (free the trainer
 * before the adapter); after pg_lora_trainer_set_data with the same tokens, the run continues
 * bit for bit: N steps straight equal k steps, save, resume, N - k steps. A plain adapter file
 * is PG_ERR_STATE (it has no training state). */
PG_API pg_status pg_lora_trainer_save(const pg_lora_trainer* trainer, const char* path);
PG_API pg_status pg_lora_trainer_resume(const char* path, const pg_model* base,
                                        pg_lora_adapter** adapter_out, pg_lora_trainer** trainer_out);

/* ------------------------------------------------------------------------------------------ */
/* The data filter: personal data out of training text                                       */
/* ------------------------------------------------------------------------------------------ */

/* What the data filter finds. The built-in detectors (docs/privacy.md states each rule):
 * e-mail addresses (RFC 5322/6531, internationalised); phone numbers (numbering plans of the
 * EU, UK, NANP, India; national numbers by the app's regions); payment card numbers (issuer
 * range and length, Luhn); IBANs (ISO 13616 country lengths, mod-97, any case); IPv4 and IPv6
 * addresses. PG_PII_CUSTOM marks spans reported by the caller's rule. */
typedef enum pg_pii_kind {
    PG_PII_EMAIL = 0,
    PG_PII_PHONE = 1,
    PG_PII_PAYMENT_CARD = 2,
    PG_PII_IBAN = 3,
    PG_PII_IPV4 = 4,
    PG_PII_IPV6 = 5,
    PG_PII_CUSTOM = 6,
    PG_PII_KIND_COUNT = 7
} pg_pii_kind;
#define PG_PII_ALL_BUILTIN 0x3Fu   /* (1u << kind) for every built-in kind */

/* "email", "phone", "payment_card", "iban", "ipv4", "ipv6", "custom"; "unknown" otherwise. */
PG_API const char* pg_pii_kind_name(pg_pii_kind kind);

/* The caller's rule reports each span [begin, end) (bytes of `text`) with add(sink, begin,
 * end); add returns PG_ERR_INVALID_ARGUMENT for a span that is empty, out of range or not on
 * UTF-8 character boundaries (the filter call then fails with that status). The rule returns 0
 * to go on, non-zero to cancel (the filter call returns PG_ERR_CANCELLED). It sees the
 * original text, before the built-in detectors. */
typedef pg_status (*pg_pii_add_fn)(void* sink, size_t begin, size_t end);
typedef int (*pg_pii_rule_fn)(void* user, const char* text, size_t len, pg_pii_add_fn add,
                              void* sink);

typedef struct pg_data_filter_config {
    uint32_t struct_size;
    uint32_t kinds;                /* bit (1u << kind) per built-in detector; default all */
    const char* replacement;       /* UTF-8 written in place of every removed span; NULL or ""
                                      (default): the span is removed */
    pg_pii_rule_fn custom_rule;    /* optional: the app's own rule (PG_PII_CUSTOM spans) */
    void* custom_user;
    /* The policy per kind: a kind in `kinds` is acted on (else kept); of those, a kind in
     * placeholder_kinds is written as a typed placeholder ("<EMAIL>", "<PHONE>", "<CARD>",
     * "<IBAN>", "<IP>", "<PII>" for custom), the others as `replacement`. Default 0. */
    uint32_t placeholder_kinds;
    /* The app's regions for phone numbers written without '+': ISO 3166 codes, "DE,GB"
     * (pg_data_filter_create refuses an unknown one, naming the known). NULL or "" (default):
     * every plan whose national numbers start with 0, NANP's ten digits, Indian mobiles. */
    const char* regions;
} pg_data_filter_config;
PG_API void pg_data_filter_config_default(pg_data_filter_config* config);

/* What the last pg_data_filter_apply removed: counts and sizes, never the removed text. */
typedef struct pg_data_filter_report {
    uint32_t struct_size;
    uint64_t bytes_in;
    uint64_t bytes_out;
    uint64_t bytes_removed;        /* sum of the spans' lengths */
    uint64_t n_spans;
    uint64_t n_email;              /* spans by kind */
    uint64_t n_phone;
    uint64_t n_payment_card;
    uint64_t n_iban;
    uint64_t n_ipv4;
    uint64_t n_ipv6;
    uint64_t n_custom;
} pg_data_filter_report;

/* One removed range of the input: bytes [begin, end). */
typedef struct pg_pii_span {
    uint64_t begin;
    uint64_t end;
    int32_t kind;                  /* a pg_pii_kind */
} pg_pii_span;

typedef struct pg_data_filter pg_data_filter;
PG_API pg_status pg_data_filter_create(const pg_data_filter_config* config, pg_data_filter** out);
PG_API void pg_data_filter_free(pg_data_filter* filter);
/* Filters `text` (UTF-8, `len` bytes; invalid UTF-8 is PG_ERR_INVALID_ARGUMENT with the byte
 * offset, and nothing is kept). Spans found by several detectors or overlapping are unioned
 * (the earliest-starting span keeps its kind). The filtered text and the spans stay in the
 * handle until the next apply; `report` (optional) gets the summary. Linear in len. */
PG_API pg_status pg_data_filter_apply(pg_data_filter* filter, const char* text, size_t len,
                                      pg_data_filter_report* report);
/* The last apply's filtered text into `text` (NUL-terminated when it fits; *len without the
 * NUL); sizing as for pg_tokenizer_decode. */
PG_API pg_status pg_data_filter_output(const pg_data_filter* filter, char* text, size_t capacity,
                                       size_t* len);
/* The last apply's spans, sorted by begin; sizing as for pg_tokenizer_encode. */
PG_API pg_status pg_data_filter_spans(const pg_data_filter* filter, pg_pii_span* spans,
                                      size_t capacity, size_t* n_spans);
PG_API const char* pg_data_filter_last_error(const pg_data_filter* filter);

/* ------------------------------------------------------------------------------------------ */
/* Signing an upload (the phone signs; the coordinator verifies: phonegpt_coordinator.h)     */
/* ------------------------------------------------------------------------------------------ */

/* Ed25519 keys (libsodium). The key id is the first 8 bytes of SHA-256(public key) as 16
 * lower-case hex digits. A key file holds the 32-byte seed in hex after a header line and is
 * written atomically with mode 0600. */
typedef struct pg_signing_key pg_signing_key;
PG_API pg_status pg_signing_key_generate(pg_signing_key** out);
/* The same seed gives the same key (tests, keys kept in a hardware store). */
PG_API pg_status pg_signing_key_from_seed(const uint8_t seed[32], pg_signing_key** out);
PG_API pg_status pg_signing_key_save(const pg_signing_key* key, const char* path);
PG_API pg_status pg_signing_key_load(const char* path, pg_signing_key** out);
PG_API pg_status pg_signing_key_public(const pg_signing_key* key, uint8_t public_key[32]);
PG_API void pg_signing_key_free(pg_signing_key* key);
/* Writes the key id and a NUL into id[17]. */
PG_API pg_status pg_key_id(const uint8_t public_key[32], char id[17]);

/* Signs an adapter file: `file_bytes` are the file's exact bytes, `adapter` the adapter they
 * hold (its base fingerprint and training record go into the signed manifest). Writes the
 * signature file's text (JSON, docs/formats.md "Adapter signatures"; kept beside the adapter
 * file) into `signature`; sizing as for pg_tokenizer_decode. */
PG_API pg_status pg_lora_adapter_sign(const pg_signing_key* key, const pg_lora_adapter* adapter,
                                      const void* file_bytes, size_t n, char* signature,
                                      size_t capacity, size_t* len);

/* ------------------------------------------------------------------------------------------ */
/* Client-side differential privacy for a LoRA update (docs/federated.md, "Differential privacy") */
/* ------------------------------------------------------------------------------------------ */

typedef struct pg_lora_privacy_config {
    uint32_t struct_size;
    double clip_norm;                /* C: the update's L2 bound, > 0; default 1.0 */
    double noise_multiplier;         /* sigma: noise std is sigma * C, >= 0; default 1.0 */
    uint64_t seed;                   /* the noise's draw; default 0 */
} pg_lora_privacy_config;
PG_API void pg_lora_privacy_config_default(pg_lora_privacy_config* config);

typedef struct pg_lora_privacy_report {
    uint32_t struct_size;
    double delta_norm;               /* ||update|| before clipping */
    int32_t clipped;                 /* 1 when delta_norm > clip_norm */
    double noise_stddev;             /* sigma * C */
    int64_t noised;                  /* parameters that got noise (B, and A unless freeze_a) */
} pg_lora_privacy_report;

/* On the phone, before saving and signing: the round's update of `adapter`, its parameters
 * minus those of `start` (the adapter the round began from: same base and configuration),
 * is clipped to clip_norm and gets N(0, (noise_multiplier * clip_norm)^2) on every trained
 * parameter (A stays the shared one under freeze_a). `report` may be NULL. */
PG_API pg_status pg_lora_adapter_privatize(pg_lora_adapter* adapter, const pg_lora_adapter* start,
                                           const pg_lora_privacy_config* config,
                                           pg_lora_privacy_report* report);
/* The privacy a phone has spent: (epsilon, delta)-DP after taking part in `rounds` rounds at
 * noise_multiplier sigma > 0 (the Gaussian mechanism's Renyi DP alpha / (2 sigma^2) per round,
 * composed, converted at the best order, written to *order, which may be NULL; no subsampling
 * amplification). delta in (0, 1). */
PG_API pg_status pg_privacy_epsilon(double noise_multiplier, int64_t rounds, double delta,
                                    double* epsilon, double* order);

/* ------------------------------------------------------------------------------------------ */
/* Training sessions: runs that survive the operating system (docs/android.md)               */
/* ------------------------------------------------------------------------------------------ */

/* The training memory plan: the peak resident memory of a training configuration, predicted
 * from the configuration alone before anything is allocated, as the sum of what training
 * holds: the weights in their storage (the model for full training, the frozen base for an
 * adapter), an adapter's values, the trained tensors' gradients and AdamW moments, the
 * engine's activations for one micro-batch with its per-thread scratch (recompute_activations
 * and n_threads change it), the copy of the moments a checkpoint holds while it writes, the
 * trainer's copy of the training tokens and the process's runtime. bench_memory_plan measures
 * it against a training session's peak resident memory (VmHWM); docs/phone.md gives the table. */
typedef struct pg_memory_plan {
    uint32_t struct_size;
    int64_t weights_bytes;
    int64_t adapter_bytes;           /* 0 for full training (its values are the weights) */
    int64_t gradient_bytes;
    int64_t optimizer_bytes;
    int64_t activation_bytes;
    int64_t checkpoint_bytes;
    int64_t data_bytes;
    int64_t runtime_bytes;
    int64_t peak_bytes;              /* the sum of the above: the predicted peak */
    int32_t batch_size;              /* the batch the plan is for */
} pg_memory_plan;
/* The plan of full training (lora NULL; storage must be PG_WEIGHTS_FP32) or of an adapter with
 * `lora`'s configuration over a base of `model`'s geometry held in `storage`, with `train`
 * (required; its n_threads <= 0 = this machine's cores) and n_data_tokens training tokens.
 * Invalid configurations are refused as pg_trainer_create / pg_lora_adapter_create refuse them. */
PG_API pg_status pg_train_memory_plan(const pg_model_config* model, pg_weight_storage storage,
                                      const pg_lora_config* lora, const pg_train_config* train,
                                      int64_t n_data_tokens, pg_memory_plan* plan);
/* The plan of the largest batch_size (train's other fields as given) whose peak fits
 * budget_bytes; plan->batch_size is that batch. When not even batch_size 1 fits:
 * PG_ERR_OUT_OF_MEMORY with a message giving batch 1's predicted peak, its terms and the budget. */
PG_API pg_status pg_train_memory_max_batch(const pg_model_config* model, pg_weight_storage storage,
                                           const pg_lora_config* lora, const pg_train_config* train,
                                           int64_t n_data_tokens, int64_t budget_bytes,
                                           pg_memory_plan* plan);

/* Android's PowerManager thermal status levels (THERMAL_STATUS_NONE .. _SHUTDOWN), same values. */
typedef enum pg_thermal_status {
    PG_THERMAL_NONE = 0,
    PG_THERMAL_LIGHT = 1,
    PG_THERMAL_MODERATE = 2,
    PG_THERMAL_SEVERE = 3,
    PG_THERMAL_CRITICAL = 4,
    PG_THERMAL_EMERGENCY = 5,
    PG_THERMAL_SHUTDOWN = 6
} pg_thermal_status;

/* Why pg_train_session_run returned. */
typedef enum pg_train_stop {
    PG_TRAIN_STOP_NONE = 0,        /* not stopped yet (a run in progress, or none ran) */
    PG_TRAIN_STOP_STEPS = 1,       /* the step budget is reached: the run is complete */
    PG_TRAIN_STOP_TIME = 2,        /* this run's time budget is spent (paused or not) */
    PG_TRAIN_STOP_CANCELLED = 3    /* pg_train_session_cancel */
} pg_train_stop;

/* A training session steps a trainer it owns (full training of a model, or an adapter over a
 * frozen base) until a step budget, a time budget or a cancel, and keeps one checkpoint file
 * current: written atomically (pg_trainer_save / pg_lora_trainer_save: temporary file, fsync,
 * rename) every checkpoint_every_steps steps, every checkpoint_every_ms, and when a run stops.
 * The file holds everything the run changes (weights or adapter, AdamW moments, the sampler's
 * RNG that is the data cursor, the dropout stream, the step that is the schedule's position),
 * so a process killed at any moment, even while writing, is created again over the same file
 * and data and continues the run: with the same thread count the result is bit for bit the
 * uninterrupted run's (tests/unit/test_train_session.cpp kills it with SIGKILL at random
 * points). Conditions (battery, charging, thermal status) reported by the app pause training,
 * lower its thread count or space its steps as the policy fields say; lowering the thread count
 * changes the arithmetic's rounding, so a throttled run matches an unthrottled one only up to
 * float rounding. */
typedef struct pg_train_session pg_train_session;

typedef struct pg_train_session_config {
    uint32_t struct_size;
    int64_t max_steps;               /* the step budget: the run is complete when the trainer's
                                        step count reaches it; 0 (default) = total_steps */
    int64_t time_budget_ms;          /* each pg_train_session_run stops after it; 0 = none (default) */
    int64_t checkpoint_every_steps;  /* 0 = off; default 50 */
    int64_t checkpoint_every_ms;     /* 0 = off; default 30000 */
    /* > 0: creation is refused with PG_ERR_OUT_OF_MEMORY, giving the predicted peak and the
     * budget, when pg_train_memory_plan's peak for this configuration exceeds it; 0 = unchecked
     * (default). */
    int64_t memory_budget_bytes;
    int64_t throughput_window_ms;    /* tokens/s are over this sliding window; default 300000 */
    /* The policy. At thermal status >= pause_thermal, or with the battery below
     * battery_floor_percent while not charging, or while not charging with
     * pause_unless_charging = 1, no step runs (the run waits, woken by new conditions or a
     * cancel, until its time budget). At >= throttle_thermal (below pause_thermal) steps run on
     * min(n_threads, throttle_threads) threads with throttle_sleep_ms between them. */
    int32_t throttle_thermal;        /* pg_thermal_status; default PG_THERMAL_MODERATE */
    int32_t throttle_threads;        /* >= 1; default 1 */
    int32_t throttle_sleep_ms;       /* >= 0; default 500 */
    int32_t pause_thermal;           /* pg_thermal_status, >= throttle_thermal; default PG_THERMAL_SEVERE */
    int32_t battery_floor_percent;   /* 0..100; default 20 */
    int32_t pause_unless_charging;   /* 0 (default) or 1 */
} pg_train_session_config;
PG_API void pg_train_session_config_default(pg_train_session_config* config);

/* What the app reports of the device (pg_train_session_set_conditions). */
typedef struct pg_device_conditions {
    uint32_t struct_size;
    int32_t battery_percent;         /* 0..100, or -1 = unknown (default; never below the floor) */
    int32_t charging;                /* 0 or 1; default 1 */
    int32_t thermal_status;          /* pg_thermal_status; default PG_THERMAL_NONE */
} pg_device_conditions;
PG_API void pg_device_conditions_default(pg_device_conditions* conditions);

typedef struct pg_train_session_report {
    uint32_t struct_size;
    pg_train_stop stop;              /* why the last run returned */
    int64_t step;                    /* the trainer's step count */
    int64_t steps_run;               /* steps of the last (or current) run */
    float last_loss;                 /* of the last step run (0 before one) */
    int64_t checkpoints;             /* checkpoints this session wrote */
    int64_t checkpoint_step;         /* the step of the last one it wrote, -1 = none yet */
    double tokens_per_second;        /* sustained: tokens of the steps in the throughput window
                                        over its wall time, pauses and spacing included */
    int32_t threads;                 /* the threads steps run on now */
    int32_t paused;                  /* 1 while the conditions hold training */
    int64_t paused_ms;               /* time the last (or current) run spent paused */
} pg_train_session_report;

/* Full training of `model` (borrowed; it must outlive the session, and only the session writes
 * it while it lives). `train` is required; `config` NULL = defaults. If `checkpoint_path` holds
 * a training checkpoint, the run resumes from it: its weights replace the model's (the geometry
 * must be the model's: PG_ERR_GEOMETRY naming both) and its state is the trainer's, with
 * `train`'s n_threads (every other field of `train` must equal the file's: PG_ERR_STATE naming
 * the first that differs). A file without training state is PG_ERR_STATE; a missing file starts
 * a new run. */
PG_API pg_status pg_train_session_create(pg_model* model, const pg_train_config* train,
                                         const pg_train_session_config* config,
                                         const char* checkpoint_path, pg_train_session** out);
/* Adapter training over a frozen base (as pg_lora_trainer_create; both borrowed). Resuming from
 * an adapter training checkpoint replaces the adapter's factors and training record with the
 * file's (its configuration must be the adapter's: PG_ERR_GEOMETRY otherwise). */
PG_API pg_status pg_train_session_create_lora(const pg_model* base, pg_lora_adapter* adapter,
                                              const pg_train_config* train,
                                              const pg_train_session_config* config,
                                              const char* checkpoint_path, pg_train_session** out);
PG_API void pg_train_session_free(pg_train_session* session);
PG_API const char* pg_train_session_last_error(const pg_train_session* session);
/* The training tokens (copied), as pg_trainer_set_data: give the same tokens again after a
 * resume, since the checkpoint holds the data cursor, not the data. */
PG_API pg_status pg_train_session_set_data(pg_train_session* session, const int32_t* tokens, size_t n);
/* Runs until the step budget, the time budget or a cancel; checkpoints as configured and when
 * it stops. `report` may be NULL. A step that fails (e.g. PG_ERR_NOT_FINITE) returns its status
 * after checkpointing the state before it. */
PG_API pg_status pg_train_session_run(pg_train_session* session, pg_train_session_report* report);
/* The three calls below may be made from any thread, also while another runs
 * pg_train_session_run. Cancel: the run stops after the step in progress (at most one step's
 * time), checkpoints and returns PG_TRAIN_STOP_CANCELLED; a cancel with no run in progress
 * makes the next run return at once. */
PG_API pg_status pg_train_session_cancel(pg_train_session* session);
PG_API pg_status pg_train_session_set_conditions(pg_train_session* session,
                                                 const pg_device_conditions* conditions);
PG_API pg_status pg_train_session_get_report(pg_train_session* session, pg_train_session_report* report);
#ifdef PG_EXPERIMENTAL_API  /* ---- experimental (see "Tiers" at the top) ---- */
/* Tokens per second while stepping, per core class over the throughput window: capacities[i]
 * is the capacity (cpu_capacity, 1024 = the fastest) of the slowest core the threads were pinned
 * to (PG_PIN_THREADS=big, docs/phone.md), -1 for unpinned threads; fastest class first. Sizing
 * as pg_tokenizer_encode: *n is set to the number of classes; PG_ERR_BUFFER_TOO_SMALL writes
 * nothing when capacity < *n. */
PG_API pg_status pg_train_session_core_rates(pg_train_session* session, int32_t* capacities,
                                             double* tokens_per_second, int32_t capacity, int32_t* n);
#endif  /* PG_EXPERIMENTAL_API */

#ifdef __cplusplus
}
#endif

#endif /* PHONEGPT_H */
