// The phonegpt tool's shared layer: failures and exit codes, output (--json), options, owned
// library handles, files and text, evaluation figures. Each command is one file (train*.cpp,
// eval*.cpp, sample.cpp, export.cpp, import.cpp) over this layer and the public C API.
// Results are written with the library's JSON writer and files with its atomic write
// (lib/io/json.hpp, lib/io/file_io.hpp): the tool links the static library on purpose
// (docs/architecture.md, "The phonegpt tool and the library").
#pragma once

#include <phonegpt/phonegpt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace cli {

using Json = pg::io::JsonObject;

// ------------------------------------------------------------------------------------------
// Failures, thrown to main: a usage error (exit 2) or a runtime failure (exit 1). A run that
// diverged is a runtime failure (PG_ERR_NOT_FINITE) with a "diverged" object in --json mode.

struct UsageError {
    std::string message;
};
struct RuntimeError {
    std::string message;
    std::string status;
    std::optional<Json> diverged;
};

// Throws RuntimeError naming the call, the status and the library's message when s != PG_OK.
void check(pg_status s, const char* call);
// For calls whose arguments come straight from the command line: PG_ERR_INVALID_ARGUMENT is
// the user's (a usage error); anything else a runtime failure.
void check_flags(pg_status s, const char* call);
// The library's last message, prefixed with the call's name unless it already starts with it.
std::string call_message(const char* call);

// ------------------------------------------------------------------------------------------
// Output: human-readable lines go to stdout, or to stderr with --json so that stdout holds
// exactly one JSON object (print_result).

struct Output {
    bool json = false;
    bool quiet = false;
};
extern Output g_output;

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void print_result(const Json& result);

// ------------------------------------------------------------------------------------------
// Options: --name VALUE or --name=VALUE; flags take no value.

struct OptionSpec {
    const char* name;
    const char* value;  // nullptr for a flag
    const char* help;
};

// " (did you mean PREFIX<name>?)" for the name in `names` closest to a misspelt `given` (at
// most a third of its letters, or two, edited, and closer than any other), or "" when none is.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& names, const char* prefix);

class Options {
public:
    Options(const char* command, std::vector<OptionSpec> specs, int argc, char** argv);

    bool has(const std::string& name) const { return values_.count(name) != 0; }
    std::string text(const std::string& name, const std::string& fallback) const;
    // The value as an integer / a finite number in [lo, hi] (a usage error otherwise).
    long long integer(const std::string& name, long long fallback, long long lo, long long hi) const;
    double real(const std::string& name, double fallback, double lo, double hi) const;
    // "usage: phonegpt COMMAND SYNOPSIS", the description and the option table.
    std::string help(const char* synopsis, const char* what) const;
    // Prints help() to stdout when --help was given; returns whether it was. Otherwise sets
    // up the output mode (--json, --quiet).
    bool handle_help_and_output(const char* synopsis, const char* what) const;

private:
    const OptionSpec* find(const std::string& name) const;
    const char* command_;
    std::vector<OptionSpec> specs_;
    std::map<std::string, std::string> values_;
};

// ------------------------------------------------------------------------------------------
// Owned library handles.

struct ModelDeleter {
    void operator()(pg_model* m) const { pg_model_free(m); }
};
struct TrainerDeleter {
    void operator()(pg_trainer* t) const { pg_trainer_free(t); }
};
struct TokenizerDeleter {
    void operator()(pg_tokenizer* t) const { pg_tokenizer_free(t); }
};
using ModelPtr = std::unique_ptr<pg_model, ModelDeleter>;
using TrainerPtr = std::unique_ptr<pg_trainer, TrainerDeleter>;
using TokenizerPtr = std::unique_ptr<pg_tokenizer, TokenizerDeleter>;

ModelPtr load_model(const std::string& path);
// A --weights KIND: fp32, fp16, bf16 and, for a frozen base (--base-storage), q8_0, q4_0 and the
// deprecated fp16-arithmetic and bf16-arithmetic (a UsageError naming the kinds allowed otherwise).
// `flag` names the option in the message.
pg_weight_storage weight_storage_named(const std::string& kind, bool frozen, const char* flag);
// The options of a frozen base's storage and arithmetic (eval, sample, lora train).
extern const OptionSpec kBaseStorage, kWeightsSpelling, kArithmetic;
// The frozen base at `path` (mapped when `map`) held as --base-storage (or its old spelling
// --weights) asks, as the file holds it without either: q8_0 / q4_0 quantize a raw fp32 file
// while reading it (pg_load_options.weight_storage: the fp32 model is never held whole), the
// other storages are set after loading (pg_model_set_weight_storage).
ModelPtr load_base(const Options& opt, const std::string& path, bool map = false);
// --arithmetic's pg_arithmetic (exact without it).
pg_arithmetic arithmetic_named(const Options& opt);
// The --weights KIND of a storage ("fp32", ..., "bf16-arithmetic").
const char* weight_storage_kind(pg_weight_storage storage);
// The model's tokenizer (borrowed); a runtime failure naming `needed_for` when it has none.
const pg_tokenizer* tokenizer_of(pg_model* model, const char* needed_for);

// A warm-up at least as long as the run keeps the learning rate below --lr the whole run: a
// default one (not given with --warmup) becomes a tenth of the run; either way a warning on
// stderr says so.
void clamp_warmup(pg_train_config& tc, bool chosen, const char* command);

// ------------------------------------------------------------------------------------------
// Files, text and time.

bool file_exists(const std::string& path);
bool folder_exists(const std::string& path);
// Creates `dir` and its missing parents (mkdir -p); an existing folder is fine.
void make_dir(const std::string& dir);
std::string read_file(const std::string& path);
// Atomically (the library's AtomicFileWriter): a run killed at any moment leaves the old file
// or the new one, never a torn one.
void write_file_atomically(const std::string& path, const std::string& text);
// --data, else $PG_DATA_PATH, else ../shared/data/tinyshakespeare.txt relative to the current
// folder and to each folder above the executable; a usage error naming --data when none exists.
std::string resolve_data_path(const Options& opt);

std::vector<int32_t> encode(const pg_tokenizer* tok, const std::string& text);
// Exactly the bytes of the ids (a byte-level BPE's may be any bytes, invalid UTF-8 included).
std::string decode(const pg_tokenizer* tok, const int32_t* ids, size_t n);

// Decoded text that is always valid UTF-8, token by token (pg_token_stream): a character split
// across tokens comes out whole with the token that completes it, and bytes that never become
// a character are U+FFFD. For generated text as it streams, and for JSON strings.
class TextStream {
public:
    explicit TextStream(const pg_tokenizer* tok);
    std::string push(int32_t id);  // the text this token completed
    std::string finish();          // what is still held
private:
    struct Free {
        void operator()(pg_token_stream* s) const { pg_token_stream_free(s); }
    };
    std::unique_ptr<pg_token_stream, Free> stream_;
};
std::string decode_utf8(const pg_tokenizer* tok, const int32_t* ids, size_t n);

// The data file, encoded with the model's tokenizer and split at train_fraction.
struct Corpus {
    std::string path;
    std::vector<int32_t> tokens;
    size_t n_train = 0;
};
Corpus load_corpus(const std::string& path, const pg_tokenizer* tok, double train_fraction);

double now_seconds();
std::string duration(double seconds);  // "42s", "3m05s", "1h02m"

// ------------------------------------------------------------------------------------------
// Models and scores.

pg_model_config config_of(pg_model* model);
Json model_json(pg_model* model);

// One pg_session_evaluate call on a session of the model in `arithmetic` (config.n_threads
// threads), timed, with `adapter` attached if not NULL (a base that cannot be merged into, such
// as a mapped, 16-bit or quantized one, is scored this way with its adapter). A
// loss that is not finite is never a score: the library refuses it (PG_ERR_NOT_FINITE), and
// evaluate() throws a RuntimeError with that status, its message prefixed with `what`
// ("scoring x.bin on the val split").
struct EvalFigures {
    double loss = 0, bits = 0, seconds = 0;  // bits: per token
    int64_t scored = 0, windows = 0;
    double bits_per_byte = 0;  // over the scored targets' bytes (pg_eval_result)
    int64_t bytes = 0;         // 0: the model has no tokenizer, so no bits per byte
};
EvalFigures evaluate(pg_model* model, const int32_t* tokens, size_t n, const pg_eval_config& config,
                     const std::string& what, const pg_lora_adapter* adapter = nullptr,
                     pg_arithmetic arithmetic = PG_ARITHMETIC_EXACT);
// loss, bits_per_char (per token, the name from the character-only days), the two below,
// scored, windows, seconds.
Json eval_json(const EvalFigures& f);
// "bits_per_byte" (null without a tokenizer) and "bytes" added to j.
Json& add_bits_per_byte(Json& j, const EvalFigures& f);
// "2.1665 bits/token, 3.1256 bits/byte" (the second only with a tokenizer), for the text lines.
std::string bits_text(const EvalFigures& f);

}  // namespace cli
