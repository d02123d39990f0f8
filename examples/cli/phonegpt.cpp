// phonegpt: the command-line tool. Trains a character-level GPT on a text file, evaluates a
// checkpoint (or a folder of them) on the whole validation split, samples text from it, and
// exports/imports llm.c and safetensors files. Written against the public C API only
// (docs/cli.md is its manual).
//
//   phonegpt train  [--preset phonegpt|tiny|phonegpt-shakespeare] [--data PATH] [--steps N] ... [--out DIR] [--json]
//   phonegpt eval   --checkpoint PATH | --checkpoints DIR [--out scores.csv] [--data PATH] [--json]
//   phonegpt sample --checkpoint PATH [--prompt TEXT] [--tokens N] ... [--json]
//   phonegpt export --checkpoint PATH --format llmc|safetensors --out PATH [--json]
//   phonegpt import --format llmc|safetensors --in PATH --out PATH [--tokenizer-from PATH] [--json]
//
// Exit codes: 0 success, 1 a runtime failure (a library call failed: the message names it),
// 2 a usage error (unknown option, bad value, missing file argument).
#include <phonegpt/phonegpt.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

// ------------------------------------------------------------------------------------------
// Failures: a usage error (exit 2) or a runtime failure (exit 1), thrown to main.

struct UsageError {
    std::string message;
};
struct RuntimeError {
    std::string message;
    std::string status;
};

// Checks a library call: on failure throws RuntimeError naming the call, the status and the
// library's message for it.
// The library's message, prefixed with the call's name unless it already starts with it.
std::string call_message(const char* call) {
    std::string msg = pg_last_error();
    if (msg.rfind(call, 0) == 0) return msg;
    return std::string(call) + ": " + msg;
}

void check(pg_status s, const char* call) {
    if (s != PG_OK) throw RuntimeError{call_message(call), pg_status_name(s)};
}

// For calls whose arguments come straight from the command line: an invalid argument is the
// user's (a usage error, exit 2); anything else is a runtime failure.
void check_flags(pg_status s, const char* call) {
    if (s == PG_ERR_INVALID_ARGUMENT) throw UsageError{call_message(call)};
    check(s, call);
}

// ------------------------------------------------------------------------------------------
// Output: human-readable lines go to stdout, or to stderr with --json so that stdout holds
// exactly one JSON object.

bool g_json = false;
bool g_quiet = false;

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
    if (g_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(g_json ? stderr : stdout, fmt, ap);
    va_end(ap);
    std::fflush(g_json ? stderr : stdout);
}

// A JSON object built field by field, printed once at the end.
class Json {
public:
    Json& str(const std::string& key, const std::string& v) { return raw(key, quote(v)); }
    Json& num(const std::string& key, double v) { return raw(key, number(v)); }
    Json& numbers(const std::string& key, const std::vector<double>& vs) {
        std::string s = "[";
        for (size_t i = 0; i < vs.size(); ++i) s += (i ? "," : "") + number(vs[i]);
        return raw(key, s + "]");
    }
    Json& integers(const std::string& key, const std::vector<long long>& vs) {
        std::string s = "[";
        for (size_t i = 0; i < vs.size(); ++i) s += (i ? "," : "") + std::to_string(vs[i]);
        return raw(key, s + "]");
    }
    Json& null(const std::string& key) { return raw(key, "null"); }
    // A float setting: 7 significant digits print 2e-3f as 0.002, not 0.002000000095.
    Json& flt(const std::string& key, float v) {
        if (!std::isfinite(v)) return raw(key, "null");
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.7g", double(v));
        return raw(key, buf);
    }
    Json& integer(const std::string& key, long long v) { return raw(key, std::to_string(v)); }
    Json& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
    Json& object(const std::string& key, const Json& v) { return raw(key, v.text()); }
    Json& array(const std::string& key, const std::vector<Json>& items) {
        std::string s = "[";
        for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + items[i].text();
        return raw(key, s + "]");
    }
    std::string text() const { return "{" + body_ + "}"; }

    static std::string number(double v) {
        if (!std::isfinite(v)) return "null";
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.10g", v);
        return buf;
    }

    static std::string quote(const std::string& s) {
        std::string out = "\"";
        for (unsigned char c : s) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                default:
                    if (c < 0x20) {
                        char buf[8];
                        std::snprintf(buf, sizeof buf, "\\u%04x", c);
                        out += buf;
                    } else {
                        out += char(c);  // UTF-8 bytes pass through
                    }
            }
        }
        return out + "\"";
    }

private:
    Json& raw(const std::string& key, const std::string& value) {
        body_ += (body_.empty() ? "" : ",") + quote(key) + ":" + value;
        return *this;
    }
    std::string body_;
};

// ------------------------------------------------------------------------------------------
// Options: --name VALUE or --name=VALUE; flags take no value.

struct OptionSpec {
    const char* name;
    const char* value;  // nullptr for a flag
    const char* help;
};

class Options {
public:
    Options(const char* command, std::vector<OptionSpec> specs, int argc, char** argv)
        : command_(command), specs_(std::move(specs)) {
        for (int i = 0; i < argc; ++i) {
            std::string arg = argv[i];
            if (arg.rfind("--", 0) != 0)
                throw UsageError{"unexpected argument \"" + arg + "\" (options start with --)"};
            std::string name = arg.substr(2), value;
            bool has_inline = false;
            size_t eq = name.find('=');
            if (eq != std::string::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                has_inline = true;
            }
            const OptionSpec* spec = find(name);
            if (!spec) throw UsageError{"unknown option --" + name};
            if (!spec->value) {
                if (has_inline) throw UsageError{"--" + name + " takes no value"};
                values_[name] = "1";
                continue;
            }
            if (!has_inline) {
                if (i + 1 >= argc) throw UsageError{"--" + name + " needs a value (" + spec->value + ")"};
                value = argv[++i];
            }
            values_[name] = value;
        }
    }

    bool has(const std::string& name) const { return values_.count(name) != 0; }
    std::string text(const std::string& name, const std::string& fallback) const {
        auto it = values_.find(name);
        return it == values_.end() ? fallback : it->second;
    }
    long long integer(const std::string& name, long long fallback, long long lo, long long hi) const {
        auto it = values_.find(name);
        if (it == values_.end()) return fallback;
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(it->second.c_str(), &end, 10);
        if (errno || end == it->second.c_str() || *end != '\0')
            throw UsageError{"--" + name + " needs an integer, got \"" + it->second + "\""};
        if (v < lo || v > hi)
            throw UsageError{"--" + name + " = " + it->second + " is outside [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]"};
        return v;
    }
    double real(const std::string& name, double fallback, double lo, double hi) const {
        auto it = values_.find(name);
        if (it == values_.end()) return fallback;
        errno = 0;
        char* end = nullptr;
        double v = std::strtod(it->second.c_str(), &end);
        if (errno || end == it->second.c_str() || *end != '\0' || !std::isfinite(v))
            throw UsageError{"--" + name + " needs a number, got \"" + it->second + "\""};
        if (v < lo || v > hi) {
            std::ostringstream m;
            m << "--" << name << " = " << it->second << " is outside [" << lo << ", " << hi << "]";
            throw UsageError{m.str()};
        }
        return v;
    }

    std::string help(const char* synopsis, const char* what) const {
        std::string s = std::string("usage: phonegpt ") + command_ + " " + synopsis + "\n\n" + what + "\n\noptions:\n";
        for (const auto& o : specs_) {
            std::string left = std::string("  --") + o.name + (o.value ? std::string(" ") + o.value : "");
            if (left.size() < 26) left.resize(26, ' ');
            else left += "\n" + std::string(26, ' ');
            s += left + o.help + "\n";
        }
        return s;
    }

private:
    const OptionSpec* find(const std::string& name) const {
        for (const auto& o : specs_)
            if (name == o.name) return &o;
        return nullptr;
    }
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

// ------------------------------------------------------------------------------------------
// Files and text.

bool file_exists(const std::string& path) {
    struct stat st;
    return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string parent_dir(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// The default training text: $PG_DATA_PATH, then ../shared/data/tinyshakespeare.txt relative to
// the current folder, then relative to each folder above the executable (the repository a
// build tree lives in). Throws a usage error naming --data when none exists.
std::string resolve_data_path(const Options& opt) {
    if (opt.has("data")) {
        std::string p = opt.text("data", "");
        if (!file_exists(p)) throw UsageError{"--data: no file at \"" + p + "\""};
        return p;
    }
    std::vector<std::string> tried;
    if (const char* env = std::getenv("PG_DATA_PATH")) {
        if (file_exists(env)) return env;
        tried.push_back(std::string(env) + " ($PG_DATA_PATH)");
    }
    const std::string rel = "../shared/data/tinyshakespeare.txt";
    if (file_exists(rel)) return rel;
    tried.push_back(rel);
    char exe[4096];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (std::string dir = parent_dir(exe); dir != "/" && dir != "."; dir = parent_dir(dir)) {
            std::string p = dir + "/" + rel;
            if (file_exists(p)) return p;
        }
        tried.push_back("../shared/data/tinyshakespeare.txt beside the folders above " + std::string(exe));
    }
    std::string msg = "no training text found: pass --data PATH (or set PG_DATA_PATH); looked for";
    for (const auto& t : tried) msg += "\n  " + t;
    throw UsageError{msg};
}

std::string read_file(const std::string& path) {
    char* data = nullptr;
    size_t len = 0;
    check(pg_read_file(path.c_str(), &data, &len), "pg_read_file");
    std::string s(data, len);
    pg_buffer_free(data);
    return s;
}

std::vector<int32_t> encode(pg_tokenizer* tok, const std::string& text) {
    size_t n = 0;
    pg_status s = pg_tokenizer_encode(tok, text.data(), text.size(), nullptr, 0, &n);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_tokenizer_encode");
    std::vector<int32_t> ids(n);
    check(pg_tokenizer_encode(tok, text.data(), text.size(), ids.data(), ids.size(), &n), "pg_tokenizer_encode");
    ids.resize(n);
    return ids;
}

std::string decode(pg_tokenizer* tok, const int32_t* ids, size_t n) {
    size_t len = 0;
    pg_status s = pg_tokenizer_decode(tok, ids, n, nullptr, 0, &len);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_tokenizer_decode");
    std::string text(len + 1, '\0');
    check(pg_tokenizer_decode(tok, ids, n, &text[0], text.size(), &len), "pg_tokenizer_decode");
    text.resize(len);
    return text;
}

void make_dir(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw RuntimeError{"cannot create folder \"" + dir + "\": " + std::strerror(errno), "PG_ERR_IO"};
}

// Writes `text` to `path` atomically (a temporary file beside it, fsync, rename over `path`), so
// a run killed at any moment leaves the old file or the new one, never a torn one.
void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    auto fail = [&](const char* what) {
        const std::string reason = std::strerror(errno);
        ::unlink(tmp.c_str());
        throw RuntimeError{std::string("cannot ") + what + " \"" + path + "\": " + reason, "PG_ERR_IO"};
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) fail("create a temporary file beside");
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ::close(fd);
            fail("write");
        }
        done += size_t(n);
    }
    if (::fsync(fd) != 0) {
        ::close(fd);
        fail("flush");
    }
    if (::close(fd) != 0) fail("close");
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("replace");
}

std::string duration(double seconds) {
    char buf[32];
    long s = long(seconds + 0.5);
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%lds", s);
    return buf;
}

double now_seconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Ctrl-C during training: finish the current step, save, and report.
volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

// ------------------------------------------------------------------------------------------
// Evaluation shared by train and eval.

struct EvalFigures {
    double loss = 0, bits = 0, seconds = 0;
    int64_t scored = 0, windows = 0;
};

EvalFigures evaluate(pg_model* model, const std::vector<int32_t>& tokens, size_t begin, size_t end,
                     long long max_windows, int window, int threads) {
    // max_windows > 0 limits the evaluation to the split's first windows (a quicker, partial
    // score); 0 scores the whole split.
    size_t n = end - begin;
    if (max_windows > 0) n = std::min(n, size_t(max_windows) * size_t(window) + 1);
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.n_threads = threads;
    pg_eval_result r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    double t0 = now_seconds();
    check(pg_evaluate(model, tokens.data() + begin, n, &ec, &r), "pg_evaluate");
    EvalFigures f;
    f.loss = r.mean_loss;
    f.bits = r.bits_per_token;
    f.scored = r.n_scored;
    f.windows = r.n_windows;
    f.seconds = now_seconds() - t0;
    return f;
}

Json eval_json(const EvalFigures& f) {
    Json j;
    j.num("loss", f.loss).num("bits_per_char", f.bits).integer("scored", f.scored).integer("windows", f.windows)
        .num("seconds", f.seconds);
    return j;
}

pg_model_config config_of(pg_model* model) {
    pg_model_config c;
    pg_model_config_default(&c);
    check(pg_model_get_config(model, &c), "pg_model_get_config");
    return c;
}

Json model_json(const pg_model_config& c, int64_t params) {
    Json j;
    j.integer("n_layer", c.n_layer).integer("n_head", c.n_head).integer("n_embd", c.n_embd)
        .integer("n_ctx", c.n_ctx).integer("vocab_size", c.vocab_size)
        .integer("padded_vocab_size", c.padded_vocab_size).integer("params", params);
    return j;
}

// The data file, encoded with the model's tokenizer and split at train_fraction.
struct Corpus {
    std::string path;
    std::vector<int32_t> tokens;
    size_t n_train = 0;
};

Corpus load_corpus(const std::string& path, pg_tokenizer* tok, double train_fraction) {
    Corpus c;
    c.path = path;
    c.tokens = encode(tok, read_file(path));
    check(pg_split_index(c.tokens.size(), train_fraction, &c.n_train), "pg_split_index");
    return c;
}

// ------------------------------------------------------------------------------------------
// phonegpt train

// Training presets: a model shape (a pg_model_config_preset name) and the recipe's defaults.
// Explicit flags override any of them; a change of recipe is an edit of its row.
struct TrainPreset {
    const char* name;
    const char* model;        // pg_model_config_preset name
    long long steps;
    int batch;
    double lr, lr_min;        // lr_min NAN: lr / 10
    int warmup;
    double weight_decay, dropout, clip;
    long long eval_interval;  // -1: steps / 4
    double eval_seconds;      // 0: no time-based evaluations
    uint64_t seed;
    double target;            // NAN: no target rule
};
const TrainPreset kTrainPresets[] = {
    // name                  model       steps  batch lr    lr_min warmup wd   drop clip eval  eval_s seed      target
    {"phonegpt",             "phonegpt", 2000,  32,   2e-3, NAN,   100,   0.1, 0.0, 1.0, -1,   0,     1337,     NAN},
    {"tiny",                 "tiny",     2000,  32,   2e-3, NAN,   100,   0.1, 0.0, 1.0, -1,   0,     1337,     NAN},
    {"phonegpt-shakespeare", "phonegpt", 16000, 32,   2e-3, 1e-4,  200,   0.1, 0.1, 1.0, 500,  300,   20261105, 1.4697},
};

const TrainPreset& find_train_preset(const std::string& name) {
    std::string names;
    for (const TrainPreset& p : kTrainPresets) {
        if (name == p.name) return p;
        names += std::string(names.empty() ? "" : ", ") + p.name;
    }
    throw UsageError{"--preset must be one of " + names + ", got \"" + name + "\""};
}

// The target rule: the run reaches `target` when the validation loss is <= target at two
// consecutive evaluations; the first such pair is kept. Also tracks the best evaluation.
struct TargetRule {
    double target = NAN;  // NAN: no target given (only the best is tracked)
    bool met = false;
    int64_t pair_steps[2] = {0, 0};
    double pair_losses[2] = {0, 0};
    double seconds_to_pair = 0;
    bool have_previous = false;
    int64_t previous_step = 0;
    double previous_loss = 0;
    bool have_best = false;
    int64_t best_step = 0;
    double best_loss = 0;

    // Returns true when this evaluation completes the first pair.
    bool add(int64_t step, double loss, double seconds_since_start) {
        if (!have_best || loss < best_loss) {
            have_best = true;
            best_step = step;
            best_loss = loss;
        }
        bool first_met = false;
        if (!std::isnan(target) && !met && have_previous && previous_loss <= target && loss <= target) {
            met = first_met = true;
            pair_steps[0] = previous_step;
            pair_steps[1] = step;
            pair_losses[0] = previous_loss;
            pair_losses[1] = loss;
            seconds_to_pair = seconds_since_start;
        }
        have_previous = true;
        previous_step = step;
        previous_loss = loss;
        return first_met;
    }

    Json json() const {
        Json best;
        if (have_best) best.integer("step", best_step).num("loss", best_loss);
        Json j;
        j.num("target", target).boolean("met", met);
        if (met) {
            j.integers("first_pair_steps", {pair_steps[0], pair_steps[1]})
                .numbers("first_pair_scores", {pair_losses[0], pair_losses[1]})
                .num("seconds_to_pair", seconds_to_pair);
        } else {
            j.null("first_pair_steps").null("first_pair_scores").null("seconds_to_pair");
        }
        return j.object("best", best);
    }
};

const char* kTrainSynopsis = "[options]";
const char* kTrainWhat =
    "Trains a character-level GPT on a text file. The vocabulary is the sorted set of the whole\n"
    "file's characters; the first 90% is the training split, the last 10% the validation split.\n"
    "At every evaluation and at the end writes OUT/model.bin (the model and its tokenizer),\n"
    "OUT/trainer.bin (plus the training state, for --resume), OUT/checkpoints/step-NNNNNN.bin\n"
    "(that evaluation's model) and a row of OUT/scores.csv.";

std::vector<OptionSpec> train_options() {
    return {
        {"preset", "NAME",
         "phonegpt (default: 6 layers, 4 heads, width 128, context 128), tiny, or phonegpt-shakespeare "
         "(a recipe: the phonegpt shape, and defaults that replace those below: see docs/cli.md)"},
        {"layers", "N", "override the preset's layer count"},
        {"heads", "N", "override the preset's head count"},
        {"embd", "N", "override the preset's width"},
        {"ctx", "N", "override the preset's context length (also the training sequence length)"},
        {"data", "PATH", "training text (default: $PG_DATA_PATH, else ../shared/data/tinyshakespeare.txt)"},
        {"train-fraction", "F", "fraction of the text used for training (default 0.9)"},
        {"steps", "N", "optimizer steps (default 2000); also the schedule length"},
        {"batch", "B", "sequences per micro-batch (default 32)"},
        {"accum", "N", "micro-batches per step (default 1)"},
        {"lr", "LR", "peak learning rate (default 2e-3)"},
        {"lr-min", "LR", "final learning rate (default lr/10)"},
        {"schedule", "KIND", "cosine (default), linear or constant"},
        {"warmup", "N", "warm-up steps (default 100)"},
        {"weight-decay", "W", "AdamW weight decay on the linear weights (default 0.1)"},
        {"dropout", "P", "dropout probability (default 0)"},
        {"clip", "C", "global gradient-norm bound, 0 = off (default 1.0)"},
        {"recompute", nullptr, "recompute each layer's activations before its backward pass: less memory, "
                               "about a fifth more compute, identical results"},
        {"eval-interval", "N", "evaluate and save every N steps (default: steps/4); 0 = only at the end"},
        {"eval-seconds", "S", "also evaluate and save once S seconds have passed since the last evaluation "
                              "(default 0 = off)"},
        {"eval-windows", "N", "score only the first N validation windows (default: the whole split)"},
        {"eval-train", nullptr, "also score the whole training split at the end"},
        {"target", "LOSS", "target rule: report when the validation loss is <= LOSS at two consecutive "
                           "evaluations"},
        {"stop-at-target", nullptr, "stop once the target rule is met (default: continue to --steps)"},
        {"log-interval", "N", "steps between progress lines (default 10)"},
        {"seed", "S", "seed for the weights, batches and dropout (default 1337)"},
        {"threads", "N", "threads (default: all cores)"},
        {"out", "DIR", "output folder (default: out)"},
        {"resume", "PATH", "continue the run saved in a trainer.bin (its model and settings)"},
        {"json", nullptr, "print one JSON object of results on stdout (progress on stderr)"},
        {"quiet", nullptr, "no progress lines"},
        {"help", nullptr, "this help"},
    };
}

const char* kScoresHeader = "step,val_loss,val_bits,elapsed_s,train_loss\n";

int cmd_train(int argc, char** argv) {
    Options opt("train", train_options(), argc, argv);
    if (opt.has("help")) {
        std::printf("%s", opt.help(kTrainSynopsis, kTrainWhat).c_str());
        return 0;
    }
    g_json = opt.has("json");
    g_quiet = opt.has("quiet");

    // A resumed run keeps its own settings; the preset then only supplies the defaults of the
    // options that may change (steps, evaluation, target).
    const TrainPreset& preset = find_train_preset(opt.text("preset", "phonegpt"));
    const std::string data_path = resolve_data_path(opt);
    const double train_fraction = opt.real("train-fraction", 0.9, 0.0, 1.0);
    const long long steps = opt.integer("steps", preset.steps, 1, 1LL << 40);
    const int threads = int(opt.integer("threads", 0, 0, 1024));
    const long long eval_interval =
        opt.integer("eval-interval", preset.eval_interval >= 0 ? preset.eval_interval : std::max(1LL, steps / 4), 0,
                    1LL << 40);
    const double eval_seconds = opt.real("eval-seconds", preset.eval_seconds, 0.0, 1e9);
    const long long eval_windows = opt.integer("eval-windows", 0, 0, 1LL << 40);
    const long long log_interval = opt.integer("log-interval", 10, 1, 1LL << 40);
    const std::string out_dir = opt.text("out", "out");
    const std::string schedule = opt.text("schedule", "cosine");
    const uint64_t seed = uint64_t(opt.integer("seed", (long long)preset.seed, 0, INT64_MAX));
    TargetRule rule;
    rule.target = opt.real("target", preset.target, 0.0, 1e9);
    const bool stop_at_target = opt.has("stop-at-target");
    if (stop_at_target && std::isnan(rule.target))
        throw UsageError{"--stop-at-target needs a target (--target LOSS)"};
    if (!std::isnan(rule.target) && eval_windows > 0)
        throw UsageError{"the target rule needs whole-split evaluations: drop --eval-windows"};

    ModelPtr model;
    TrainerPtr trainer;
    pg_tokenizer* tok = nullptr;  // borrowed from the model
    const std::string text = read_file(data_path);

    if (opt.has("resume")) {
        // The run continues bit for bit only with its own settings (threads included).
        for (const char* o : {"preset", "layers", "heads", "embd", "ctx", "batch", "accum", "lr", "lr-min",
                              "schedule", "warmup", "weight-decay", "dropout", "clip", "seed", "threads"})
            if (opt.has(o)) throw UsageError{std::string("--") + o + " cannot be changed when resuming (--resume)"};
        if (opt.has("recompute"))
            throw UsageError{"--recompute cannot be applied to a resumed run (pg_trainer_resume sets up the trainer)"};
        pg_model* m = nullptr;
        pg_trainer* t = nullptr;
        check(pg_trainer_resume(opt.text("resume", "").c_str(), &m, &t), "pg_trainer_resume");
        model.reset(m);
        trainer.reset(t);
        check(pg_model_get_tokenizer(model.get(), &tok), "pg_model_get_tokenizer");
        if (!tok) throw RuntimeError{"the checkpoint has no tokenizer", "PG_ERR_FORMAT"};
    } else {
        // The vocabulary is the whole file's characters, so validation text never holds a
        // character the model cannot represent.
        pg_tokenizer* built = nullptr;
        check(pg_tokenizer_create_char(text.data(), text.size(), &built), "pg_tokenizer_create_char");
        TokenizerPtr owned(built);
        pg_model_config mc;
        pg_model_config_default(&mc);
        check_flags(pg_model_config_preset(preset.model, &mc), "pg_model_config_preset");
        mc.n_layer = int32_t(opt.integer("layers", mc.n_layer, 1, 1024));
        mc.n_head = int32_t(opt.integer("heads", mc.n_head, 1, 65536));
        mc.n_embd = int32_t(opt.integer("embd", mc.n_embd, 1, 65536));
        mc.n_ctx = int32_t(opt.integer("ctx", mc.n_ctx, 1, 65536));
        check(pg_tokenizer_vocab_size(built, &mc.vocab_size), "pg_tokenizer_vocab_size");
        mc.padded_vocab_size = 0;  // round up to a multiple of 4
        pg_model* m = nullptr;
        check_flags(pg_model_create(&mc, seed, &m), "pg_model_create");
        model.reset(m);
        check(pg_model_set_tokenizer(model.get(), built), "pg_model_set_tokenizer");
        check(pg_model_get_tokenizer(model.get(), &tok), "pg_model_get_tokenizer");

        pg_train_config tc;
        pg_train_config_default(&tc);
        tc.batch_size = int32_t(opt.integer("batch", preset.batch, 1, 65536));
        tc.grad_accum_steps = int32_t(opt.integer("accum", 1, 1, 65536));
        tc.lr_max = float(opt.real("lr", preset.lr, 0.0, 10.0));
        tc.lr_min = float(opt.real("lr-min", std::isnan(preset.lr_min) ? tc.lr_max / 10.0 : preset.lr_min, 0.0, 10.0));
        if (schedule == "cosine") tc.schedule = PG_LR_COSINE;
        else if (schedule == "linear") tc.schedule = PG_LR_LINEAR;
        else if (schedule == "constant") tc.schedule = PG_LR_CONSTANT;
        else throw UsageError{"--schedule must be cosine, linear or constant, got \"" + schedule + "\""};
        tc.warmup_steps = int32_t(opt.integer("warmup", preset.warmup, 0, 1 << 30));
        tc.total_steps = steps;
        tc.weight_decay = float(opt.real("weight-decay", preset.weight_decay, 0.0, 10.0));
        tc.dropout = float(opt.real("dropout", preset.dropout, 0.0, 0.99));
        tc.grad_clip = float(opt.real("clip", preset.clip, 0.0, 1e9));
        tc.seed = seed;
        tc.n_threads = threads;
        tc.recompute_activations = opt.has("recompute") ? 1 : 0;
        pg_trainer* t = nullptr;
        check_flags(pg_trainer_create(model.get(), &tc, &t), "pg_trainer_create");
        trainer.reset(t);
    }

    pg_model_config mc = config_of(model.get());
    int64_t n_params = 0;
    check(pg_model_num_params(model.get(), &n_params), "pg_model_num_params");
    pg_train_config tc;
    tc.struct_size = sizeof tc;
    check(pg_trainer_get_config(trainer.get(), &tc), "pg_trainer_get_config");

    Corpus corpus = load_corpus(data_path, tok, train_fraction);
    const size_t n_val = corpus.tokens.size() - corpus.n_train;
    if (corpus.n_train < size_t(tc.seq_len) + 1)
        throw UsageError{"--data: the training split has " + std::to_string(corpus.n_train) +
                         " tokens, fewer than the sequence length + 1 = " + std::to_string(tc.seq_len + 1)};
    if (!std::isnan(rule.target) && n_val < 2)
        throw UsageError{"--target: the validation split has fewer than 2 tokens, nothing to score"};
    check(pg_trainer_set_data(trainer.get(), corpus.tokens.data(), corpus.n_train), "pg_trainer_set_data");
    int64_t start_step = 0;
    check(pg_trainer_step_count(trainer.get(), &start_step), "pg_trainer_step_count");
    if (start_step >= steps)
        throw UsageError{"--steps " + std::to_string(steps) + " is not beyond the resumed step " + std::to_string(start_step)};

    make_dir(out_dir);
    const std::string checkpoint_dir = out_dir + "/checkpoints";
    make_dir(checkpoint_dir);
    const std::string model_path = out_dir + "/model.bin", trainer_path = out_dir + "/trainer.bin";
    const std::string scores_path = out_dir + "/scores.csv";
    // A resumed run appends to its scores; a new run starts them afresh.
    std::string scores = kScoresHeader;
    if (opt.has("resume") && file_exists(scores_path)) {
        std::string previous = read_file(scores_path);
        if (previous.rfind(kScoresHeader, 0) == 0) scores = previous;
    }
    write_file_atomically(scores_path, scores);

    say("phonegpt train: %s, %zu tokens (train %zu, validation %zu), vocabulary %d\n", data_path.c_str(),
        corpus.tokens.size(), corpus.n_train, n_val, mc.vocab_size);
    say("model: %d layers, %d heads, width %d, context %d, %" PRId64 " parameters; kernels: %s\n", mc.n_layer,
        mc.n_head, mc.n_embd, mc.n_ctx, n_params, pg_simd_arch());
    if (opt.has("resume")) say("resuming %s: its own settings\n", opt.text("resume", "").c_str());
    else say("preset %s (model shape %s; explicit options override its defaults)\n", preset.name, preset.model);
    say("training: %lld steps from %" PRId64 ", batch %d x %d tokens x %d accum, lr %g -> %g, warm-up %d, "
        "weight decay %g, dropout %g, clip %g, seed %" PRIu64 ", threads %d%s\n",
        steps, start_step, tc.batch_size, tc.seq_len, tc.grad_accum_steps, tc.lr_max, tc.lr_min, tc.warmup_steps,
        tc.weight_decay, tc.dropout, tc.grad_clip, tc.seed, tc.n_threads,
        tc.recompute_activations ? ", recomputing activations" : "");
    {
        std::string when = eval_interval > 0 ? "every " + std::to_string(eval_interval) + " steps" : "";
        if (eval_seconds > 0) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%severy %g s", when.empty() ? "" : " or ", eval_seconds);
            when += buf;
            if (eval_interval > 0) when += " (whichever comes first)";
        }
        if (when.empty()) when = "only at the end";
        char target[128] = "none";
        if (!std::isnan(rule.target))
            std::snprintf(target, sizeof target, "loss <= %g at two consecutive evaluations%s", rule.target,
                          stop_at_target ? ", then stop" : "");
        say("evaluation: %s, %s; target rule: %s\n", when.c_str(),
            eval_windows > 0 ? ("first " + std::to_string(eval_windows) + " windows").c_str() : "whole split",
            target);
    }

    auto save = [&] {
        pg_save_options so;
        pg_save_options_default(&so);
        check(pg_model_save(model.get(), model_path.c_str(), &so), "pg_model_save");
        check(pg_trainer_save(trainer.get(), trainer_path.c_str(), &so), "pg_trainer_save");
    };

    // Timing covers pg_trainer_step only (evaluations and saves are reported separately), so
    // ms/step and tokens/s are the training speed.
    std::signal(SIGINT, on_sigint);
    const double t_start = now_seconds();
    double step_seconds = 0, window_seconds = 0;
    int64_t window_steps = 0, tokens_done = 0, step = start_step;
    const size_t recent_window = 50;
    std::vector<float> recent;  // the last recent_window step losses
    double loss_sum_since_eval = 0;
    int64_t steps_since_eval = 0;
    double last_eval_end = t_start;
    int64_t last_eval_step = -1;

    std::vector<Json> evals;
    EvalFigures last_val;
    bool have_val = false;
    // Evaluates (when there is a validation split), keeps this step's checkpoint, appends the
    // scores row, applies the target rule and saves model.bin and trainer.bin.
    auto evaluate_and_save = [&](int64_t at_step) {
        const double train_loss = steps_since_eval ? loss_sum_since_eval / double(steps_since_eval) : NAN;
        loss_sum_since_eval = 0;
        steps_since_eval = 0;
        bool scored = false;
        if (n_val >= 2) {
            last_val = evaluate(model.get(), corpus.tokens, corpus.n_train, corpus.tokens.size(), eval_windows,
                                mc.n_ctx, tc.n_threads);
            have_val = scored = true;
            say("eval at step %" PRId64 ": validation loss %.4f (%.4f bits/char) over %" PRId64 " positions, %.1f s\n",
                at_step, last_val.loss, last_val.bits, last_val.scored, last_val.seconds);
        }
        const double elapsed = now_seconds() - t_start;
        char name[64];
        std::snprintf(name, sizeof name, "step-%06" PRId64 ".bin", at_step);
        const std::string checkpoint = checkpoint_dir + "/" + name;
        pg_save_options so;
        pg_save_options_default(&so);
        check(pg_model_save(model.get(), checkpoint.c_str(), &so), "pg_model_save");

        char row[256];
        if (scored)
            std::snprintf(row, sizeof row, "%" PRId64 ",%.6f,%.6f,%.3f,%s\n", at_step, last_val.loss, last_val.bits,
                          elapsed, std::isnan(train_loss) ? "" : std::to_string(train_loss).c_str());
        else
            std::snprintf(row, sizeof row, "%" PRId64 ",,,%.3f,%s\n", at_step, elapsed,
                          std::isnan(train_loss) ? "" : std::to_string(train_loss).c_str());
        scores += row;
        write_file_atomically(scores_path, scores);

        Json e;
        if (scored) e = eval_json(last_val);
        e.integer("step", at_step).num("train_loss", train_loss).num("elapsed_seconds", elapsed)
            .str("checkpoint", checkpoint);
        evals.push_back(e);

        if (scored) {
            const bool first_met = rule.add(at_step, last_val.loss, elapsed);
            if (first_met) {
                say("TARGET RULE MET at step %" PRId64 ": validation loss %.4f (step %" PRId64 ") and %.4f (step %" PRId64
                    ") <= %g, %s (%.1f s) after the start\n",
                    at_step, rule.pair_losses[0], rule.pair_steps[0], rule.pair_losses[1], rule.pair_steps[1],
                    rule.target, duration(elapsed).c_str(), elapsed);
            } else if (!std::isnan(rule.target)) {
                if (rule.met)
                    say("target %g: met earlier (steps %" PRId64 " and %" PRId64 "); this evaluation %s\n", rule.target,
                        rule.pair_steps[0], rule.pair_steps[1], last_val.loss <= rule.target ? "<= target" : "> target");
                else
                    say("target %g: not met yet (this evaluation %s; best %.4f at step %" PRId64 ")\n", rule.target,
                        last_val.loss <= rule.target ? "<= target, one more needed" : "> target", rule.best_loss,
                        rule.best_step);
            }
        }
        save();
        last_eval_step = at_step;
        last_eval_end = now_seconds();
    };

    pg_step_result r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    bool stopped_at_target = false;
    while (step < steps && !g_interrupted) {
        const double t0 = now_seconds();
        check(pg_trainer_step(trainer.get(), &r), "pg_trainer_step");
        const double dt = now_seconds() - t0;
        step_seconds += dt;
        window_seconds += dt;
        step = r.step;
        tokens_done += r.tokens;
        ++window_steps;
        loss_sum_since_eval += r.loss;
        ++steps_since_eval;
        recent.push_back(r.loss);
        if (recent.size() > recent_window) recent.erase(recent.begin());
        if (step % log_interval == 0 || step == start_step + 1 || step == steps) {
            const double per_step = window_seconds / double(window_steps);
            say("step %" PRId64 "/%lld | loss %.4f | lr %.2e | grad norm %.3f | %.1f ms/step | %.0f tok/s | ETA %s\n",
                step, steps, r.loss, r.lr, r.grad_norm, per_step * 1e3, double(tokens_done) / step_seconds,
                duration(per_step * double(steps - step)).c_str());
            window_seconds = 0;
            window_steps = 0;
        }
        const bool due_by_steps = eval_interval > 0 && step % eval_interval == 0;
        const bool due_by_time = eval_seconds > 0 && now_seconds() - last_eval_end >= eval_seconds;
        if ((due_by_steps || due_by_time) && step < steps) {
            evaluate_and_save(step);
            if (stop_at_target && rule.met) {
                stopped_at_target = true;
                say("stopping at step %" PRId64 ": the target rule is met (--stop-at-target)\n", step);
                break;
            }
        }
    }
    std::signal(SIGINT, SIG_DFL);
    if (g_interrupted) say("interrupted at step %" PRId64 ": saving\n", step);
    if (last_eval_step != step) evaluate_and_save(step);
    double recent_loss_sum = 0;
    for (float l : recent) recent_loss_sum += l;
    const int recent_n = int(recent.size());

    EvalFigures train_eval;
    if (opt.has("eval-train")) {
        train_eval = evaluate(model.get(), corpus.tokens, 0, corpus.n_train, 0, mc.n_ctx, tc.n_threads);
        say("training split: loss %.4f (%.4f bits/char) over %" PRId64 " positions, %.1f s\n", train_eval.loss,
            train_eval.bits, train_eval.scored, train_eval.seconds);
    }
    const int64_t steps_run = step - start_step;
    const double ms_per_step = steps_run ? step_seconds * 1e3 / double(steps_run) : 0.0;
    const double total_seconds = now_seconds() - t_start;
    say("done: %" PRId64 " steps, %.1f ms/step (%s of training, %s in all); saved %s, %s, %s and %s\n", steps_run,
        ms_per_step, duration(step_seconds).c_str(), duration(total_seconds).c_str(), model_path.c_str(),
        trainer_path.c_str(), (checkpoint_dir + "/").c_str(), scores_path.c_str());
    if (!std::isnan(rule.target)) {
        if (rule.met)
            say("target rule (loss <= %g twice in a row): met at steps %" PRId64 " and %" PRId64
                " (%.4f, %.4f), %.1f s after the start; best %.4f at step %" PRId64 "\n",
                rule.target, rule.pair_steps[0], rule.pair_steps[1], rule.pair_losses[0], rule.pair_losses[1],
                rule.seconds_to_pair, rule.best_loss, rule.best_step);
        else
            say("target rule (loss <= %g twice in a row): not met; best %.4f at step %" PRId64 "\n", rule.target,
                rule.best_loss, rule.best_step);
    }

    if (g_json) {
        Json cfg;
        cfg.integer("batch", tc.batch_size).integer("seq_len", tc.seq_len).integer("accum", tc.grad_accum_steps)
            .flt("lr", tc.lr_max).flt("lr_min", tc.lr_min).integer("warmup", tc.warmup_steps)
            .integer("total_steps", tc.total_steps).flt("weight_decay", tc.weight_decay).flt("dropout", tc.dropout)
            .flt("clip", tc.grad_clip).integer("seed", (long long)tc.seed).integer("threads", tc.n_threads)
            .boolean("recompute", tc.recompute_activations != 0);
        // The recipe as resolved: the preset's defaults with the explicit options applied.
        Json recipe;
        recipe.str("preset", opt.has("resume") ? "resumed" : preset.name).str("model", preset.model)
            .integer("steps", steps).integer("batch", tc.batch_size).flt("lr", tc.lr_max).flt("lr_min", tc.lr_min)
            .integer("warmup", tc.warmup_steps).flt("weight_decay", tc.weight_decay).flt("dropout", tc.dropout)
            .flt("clip", tc.grad_clip).integer("eval_interval", eval_interval).num("eval_seconds", eval_seconds)
            .integer("seed", (long long)tc.seed).num("target", rule.target).boolean("stop_at_target", stop_at_target);
        Json j;
        j.boolean("ok", true).str("command", "train").str("data", data_path)
            .integer("train_tokens", (long long)corpus.n_train).integer("val_tokens", (long long)n_val)
            .object("model", model_json(mc, n_params)).object("config", cfg).object("recipe", recipe)
            .str("simd", pg_simd_arch())
            .integer("start_step", start_step).integer("step", step).boolean("interrupted", g_interrupted != 0)
            .boolean("stopped_at_target", stopped_at_target)
            .flt("last_train_loss", r.loss)
            .num("recent_train_loss", recent_n ? recent_loss_sum / recent_n : NAN)
            .integer("recent_train_loss_steps", recent_n)
            .num("train_seconds", step_seconds).num("seconds", total_seconds).num("ms_per_step", ms_per_step)
            .num("tokens_per_second", step_seconds > 0 ? double(tokens_done) / step_seconds : 0.0);
        if (have_val) j.object("val", eval_json(last_val));
        if (opt.has("eval-train")) j.object("train", eval_json(train_eval));
        j.object("rule", rule.json());
        j.array("evals", evals).str("model_path", model_path).str("trainer_path", trainer_path)
            .str("checkpoint_dir", checkpoint_dir).str("scores_path", scores_path);
        std::printf("%s\n", j.text().c_str());
    }
    return g_interrupted ? 1 : 0;
}

// ------------------------------------------------------------------------------------------
// phonegpt eval --checkpoints

// One checkpoint scored the way `phonegpt eval` scores it: the text encoded with the
// checkpoint's own tokenizer, split at --train-fraction, the chosen split scored with
// pg_evaluate in windows of --window every --stride.
struct CheckpointScore {
    std::string path;
    pg_model_config config;
    int64_t params = 0;
    int32_t window = 0, stride = 0;
    pg_eval_result result;
    double seconds = 0;
};

CheckpointScore score_checkpoint(const std::string& path, const Options& opt, const std::string& data_path,
                                 double train_fraction, const std::string& split, int threads) {
    CheckpointScore s;
    s.path = path;
    pg_model* m = nullptr;
    check(pg_model_load(path.c_str(), &m), "pg_model_load");
    ModelPtr model(m);
    pg_tokenizer* tok = nullptr;
    check(pg_model_get_tokenizer(model.get(), &tok), "pg_model_get_tokenizer");
    if (!tok) throw RuntimeError{"the checkpoint has no tokenizer to encode --data with", "PG_ERR_STATE"};
    Corpus corpus = load_corpus(data_path, tok, train_fraction);
    size_t begin = split == "val" ? corpus.n_train : 0;
    size_t end = split == "train" ? corpus.n_train : corpus.tokens.size();
    if (end - begin < 2)
        throw UsageError{"--data: the " + split + " split has fewer than 2 tokens, nothing to score"};

    s.config = config_of(model.get());
    check(pg_model_num_params(model.get(), &s.params), "pg_model_num_params");
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.window = int32_t(opt.integer("window", 0, 0, s.config.n_ctx));
    ec.stride = int32_t(opt.integer("stride", 0, 0, s.config.n_ctx));
    ec.n_threads = threads;
    s.window = ec.window ? ec.window : s.config.n_ctx;
    s.stride = ec.stride ? ec.stride : s.window;
    std::memset(&s.result, 0, sizeof s.result);
    s.result.struct_size = sizeof s.result;
    const double t0 = now_seconds();
    check(pg_evaluate(model.get(), corpus.tokens.data() + begin, end - begin, &ec, &s.result), "pg_evaluate");
    s.seconds = now_seconds() - t0;
    return s;
}

// The step in a checkpoint's file name ("step-500.bin", "step-000500.pgck"), or -1.
long long step_in_name(const std::string& name) {
    const size_t at = name.rfind("step-");
    if (at == std::string::npos) return -1;
    const size_t digits = at + 5;
    size_t end = digits;
    while (end < name.size() && std::isdigit((unsigned char)name[end])) ++end;
    if (end == digits || end - digits > 15) return -1;
    return std::stoll(name.substr(digits, end - digits));
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

// phonegpt eval --checkpoints DIR: every native checkpoint in DIR, in step order.
int eval_folder(const Options& opt, const std::string& data_path, double train_fraction, const std::string& split,
                int threads) {
    const std::string dir = opt.text("checkpoints", "");
    struct stat st;
    if (dir.empty() || ::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw UsageError{"--checkpoints: no folder at \"" + dir + "\""};
    const std::string scores_path = opt.text("out", dir + "/scores.csv");

    struct Entry {
        std::string name;
        long long step;
    };
    std::vector<Entry> entries;
    {
        DIR* d = ::opendir(dir.c_str());
        if (!d) throw RuntimeError{"cannot read folder \"" + dir + "\": " + std::strerror(errno), "PG_ERR_IO"};
        while (const dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            if ((ends_with(name, ".bin") || ends_with(name, ".pgck")) && file_exists(dir + "/" + name))
                entries.push_back({name, step_in_name(name)});
        }
        ::closedir(d);
    }
    // Named steps first, in step order; then the other names alphabetically.
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        if ((a.step < 0) != (b.step < 0)) return a.step >= 0;
        if (a.step != b.step) return a.step < b.step;
        return a.name < b.name;
    });
    if (entries.empty()) throw UsageError{"--checkpoints: no .bin or .pgck file in \"" + dir + "\""};

    std::string csv = "step,checkpoint,val_loss,val_bits,n_scored\n";
    std::vector<Json> results, skipped;
    const CheckpointScore* best = nullptr;
    long long best_step = -1;
    std::vector<CheckpointScore> scores;
    scores.reserve(entries.size());
    say("scoring the %s split of %s with the %zu checkpoint files in %s\n", split.c_str(), data_path.c_str(),
        entries.size(), dir.c_str());
    for (const Entry& e : entries) {
        try {
            scores.push_back(score_checkpoint(dir + "/" + e.name, opt, data_path, train_fraction, split, threads));
        } catch (const RuntimeError& err) {
            say("skipping %s: %s (%s)\n", e.name.c_str(), err.message.c_str(), err.status.c_str());
            Json j;
            j.str("checkpoint", e.name).str("error", err.message).str("status", err.status);
            skipped.push_back(j);
            continue;
        }
        const CheckpointScore& s = scores.back();
        const std::string step_text = e.step >= 0 ? std::to_string(e.step) : "";
        say("%-8s %s: loss %.4f, %.4f bits/char, %" PRId64 " scored positions, %.1f s\n", step_text.c_str(),
            e.name.c_str(), s.result.mean_loss, s.result.bits_per_token, s.result.n_scored, s.seconds);
        char figures[128];
        std::snprintf(figures, sizeof figures, ",%.6f,%.6f,%" PRId64 "\n", s.result.mean_loss,
                      s.result.bits_per_token, s.result.n_scored);
        csv += step_text + "," + csv_field(e.name) + figures;
        write_file_atomically(scores_path, csv);  // a killed run leaves the rows so far
        Json j;
        if (e.step >= 0) j.integer("step", e.step);
        else j.null("step");
        j.str("checkpoint", e.name).num("loss", s.result.mean_loss).num("bits_per_char", s.result.bits_per_token)
            .integer("scored", s.result.n_scored).integer("windows", s.result.n_windows).integer("window", s.window)
            .integer("stride", s.stride).num("seconds", s.seconds);
        results.push_back(j);
        if (!best || s.result.mean_loss < best->result.mean_loss) {
            best = &s;
            best_step = e.step;
        }
    }
    if (results.empty())
        throw RuntimeError{"none of the " + std::to_string(entries.size()) + " checkpoint files in \"" + dir +
                               "\" could be scored",
                           "PG_ERR_FORMAT"};
    const std::string best_name = best->path.substr(dir.size() + 1);
    say("best: %s, loss %.4f; wrote %s (%zu rows, %zu files skipped)\n", best_name.c_str(), best->result.mean_loss,
        scores_path.c_str(), results.size(), skipped.size());
    if (g_json) {
        Json b;
        if (best_step >= 0) b.integer("step", best_step);
        else b.null("step");
        b.str("checkpoint", best_name).num("loss", best->result.mean_loss);
        Json j;
        j.boolean("ok", true).str("command", "eval").str("checkpoints", dir).str("data", data_path)
            .str("split", split).str("scores_path", scores_path).array("results", results).array("skipped", skipped)
            .object("best", b);
        std::printf("%s\n", j.text().c_str());
    }
    return 0;
}

// ------------------------------------------------------------------------------------------
// phonegpt eval

int cmd_eval(int argc, char** argv) {
    Options opt("eval",
                {
                    {"checkpoint", "PATH", "the model to score (a model.bin or trainer.bin)"},
                    {"checkpoints", "DIR", "score every checkpoint (.bin, .pgck) in DIR instead, in step order"},
                    {"out", "PATH", "with --checkpoints: the scores table to write (default DIR/scores.csv)"},
                    {"data", "PATH", "text to score (default: $PG_DATA_PATH, else ../shared/data/tinyshakespeare.txt)"},
                    {"train-fraction", "F", "the split point used in training (default 0.9)"},
                    {"split", "NAME", "val (default), train or all"},
                    {"window", "W", "window length (default: the model's context)"},
                    {"stride", "S", "window stride (default: the window, non-overlapping)"},
                    {"threads", "N", "threads (default: all cores)"},
                    {"json", nullptr, "print one JSON object of results on stdout"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    const char* synopsis = "--checkpoint PATH | --checkpoints DIR [--out scores.csv] [options]";
    const char* what =
        "Scores a model on a whole split: the mean cross-entropy (natural log) over every scored\n"
        "position, in windows of the model's context (each prediction scored exactly once).\n"
        "With --checkpoints, scores every checkpoint in a folder (ordered by the step-N in their\n"
        "names) and writes step,checkpoint,val_loss,val_bits,n_scored rows to a CSV file.";
    if (opt.has("help")) {
        std::printf("%s", opt.help(synopsis, what).c_str());
        return 0;
    }
    g_json = opt.has("json");
    if (opt.has("checkpoint") == opt.has("checkpoints"))
        throw UsageError{opt.has("checkpoint") ? "--checkpoint and --checkpoints are alternatives: give one"
                                               : "--checkpoint PATH or --checkpoints DIR is required"};
    if (opt.has("out") && !opt.has("checkpoints")) throw UsageError{"--out goes with --checkpoints DIR"};
    const std::string data_path = resolve_data_path(opt);
    const double train_fraction = opt.real("train-fraction", 0.9, 0.0, 1.0);
    const std::string split = opt.text("split", "val");
    if (split != "val" && split != "train" && split != "all")
        throw UsageError{"--split must be val, train or all, got \"" + split + "\""};
    const int threads = int(opt.integer("threads", 0, 0, 1024));
    if (opt.has("checkpoints")) return eval_folder(opt, data_path, train_fraction, split, threads);

    const std::string ckpt = opt.text("checkpoint", "");
    const CheckpointScore s = score_checkpoint(ckpt, opt, data_path, train_fraction, split, threads);
    const pg_eval_result& r = s.result;
    say("%s split of %s: loss %.4f, %.4f bits/char, %" PRId64 " scored positions in %" PRId64
        " windows, %.1f s\n",
        split.c_str(), data_path.c_str(), r.mean_loss, r.bits_per_token, r.n_scored, r.n_windows, s.seconds);
    if (g_json) {
        Json j;
        j.boolean("ok", true).str("command", "eval").str("checkpoint", ckpt).str("data", data_path)
            .str("split", split).integer("window", s.window).integer("stride", s.stride)
            .object("model", model_json(s.config, s.params)).num("loss", r.mean_loss)
            .num("bits_per_char", r.bits_per_token).integer("scored", r.n_scored).integer("windows", r.n_windows)
            .num("seconds", s.seconds);
        std::printf("%s\n", j.text().c_str());
    }
    return 0;
}

// ------------------------------------------------------------------------------------------
// phonegpt sample

struct SampleStream {
    pg_tokenizer* tok;
    bool print;
};

int on_token(void* user, int32_t token) {
    auto* s = static_cast<SampleStream*>(user);
    if (s->print) {
        std::string piece = decode(s->tok, &token, 1);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
    }
    return 0;
}

int cmd_sample(int argc, char** argv) {
    Options opt("sample",
                {
                    {"checkpoint", "PATH", "the model to sample from (a model.bin or trainer.bin)"},
                    {"prompt", "TEXT", "text to continue (default: a newline)"},
                    {"tokens", "N", "tokens to generate (default 256)"},
                    {"temperature", "T", "softmax temperature, 0 = greedy (default 1.0)"},
                    {"top-k", "K", "keep the K most likely tokens, 0 = off (default)"},
                    {"top-p", "P", "keep the smallest set with probability >= P, 1 = off (default)"},
                    {"seed", "S", "sampling seed (default 1337)"},
                    {"threads", "N", "threads (default: all cores)"},
                    {"json", nullptr, "print one JSON object (with the text) on stdout instead of streaming"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    if (opt.has("help")) {
        std::printf("%s", opt.help("--checkpoint PATH [options]",
                                   "Generates text after a prompt with the model's tokenizer.")
                              .c_str());
        return 0;
    }
    g_json = opt.has("json");
    if (!opt.has("checkpoint")) throw UsageError{"--checkpoint PATH is required"};
    const std::string ckpt = opt.text("checkpoint", "");
    const std::string prompt = opt.text("prompt", "\n");
    if (prompt.empty()) throw UsageError{"--prompt must hold at least one character"};
    pg_sample_config sc;
    pg_sample_config_default(&sc);
    sc.max_tokens = int32_t(opt.integer("tokens", 256, 1, 1 << 24));
    sc.temperature = float(opt.real("temperature", 1.0, 0.0, 100.0));
    sc.top_k = int32_t(opt.integer("top-k", 0, 0, 1 << 22));
    sc.top_p = float(opt.real("top-p", 1.0, 0.0, 1.0));
    sc.seed = uint64_t(opt.integer("seed", 1337, 0, INT64_MAX));
    sc.n_threads = int32_t(opt.integer("threads", 0, 0, 1024));

    pg_model* m = nullptr;
    check(pg_model_load(ckpt.c_str(), &m), "pg_model_load");
    ModelPtr model(m);
    pg_tokenizer* tok = nullptr;
    check(pg_model_get_tokenizer(model.get(), &tok), "pg_model_get_tokenizer");
    if (!tok) throw RuntimeError{"the checkpoint has no tokenizer to encode --prompt with", "PG_ERR_STATE"};
    std::vector<int32_t> prompt_ids = encode(tok, prompt);

    SampleStream stream{tok, !g_json};
    sc.on_token = on_token;
    sc.on_token_user = &stream;
    std::vector<int32_t> out(size_t(sc.max_tokens));
    size_t n_out = 0;
    if (!g_json) {
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
        std::fflush(stdout);
    }
    const double t0 = now_seconds();
    check(pg_generate(model.get(), prompt_ids.data(), prompt_ids.size(), &sc, out.data(), out.size(), &n_out),
          "pg_generate");
    const double seconds = now_seconds() - t0;
    const std::string text = decode(tok, out.data(), n_out);
    if (g_json) {
        Json j;
        j.boolean("ok", true).str("command", "sample").str("checkpoint", ckpt).str("prompt", prompt)
            .str("text", text).integer("tokens", (long long)n_out).flt("temperature", sc.temperature)
            .integer("top_k", sc.top_k).flt("top_p", sc.top_p).integer("seed", (long long)sc.seed)
            .num("seconds", seconds).num("tokens_per_second", seconds > 0 ? double(n_out) / seconds : 0.0);
        std::printf("%s\n", j.text().c_str());
    } else {
        std::printf("\n");
        std::fprintf(stderr, "(%zu tokens in %.2f s)\n", n_out, seconds);
    }
    return 0;
}

// ------------------------------------------------------------------------------------------
// phonegpt export / phonegpt import: the llm.c and safetensors formats of pg_model_export.

pg_interop_format interop_format(const Options& opt) {
    if (!opt.has("format")) throw UsageError{"--format llmc|safetensors is required"};
    const std::string f = opt.text("format", "");
    if (f == "llmc") return PG_FORMAT_LLMC;
    if (f == "safetensors") return PG_FORMAT_SAFETENSORS;
    throw UsageError{"--format must be llmc or safetensors, got \"" + f + "\""};
}

int cmd_export(int argc, char** argv) {
    Options opt("export",
                {
                    {"checkpoint", "PATH", "the native model to export (a model.bin or trainer.bin)"},
                    {"format", "KIND", "llmc (llm.c model file) or safetensors (Hugging Face GPT-2)"},
                    {"out", "PATH", "the file to write (safetensors: config.json is written beside it)"},
                    {"json", nullptr, "print one JSON object of results on stdout"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    if (opt.has("help")) {
        std::printf("%s", opt.help("--checkpoint PATH --format llmc|safetensors --out PATH",
                                   "Writes a checkpoint's weights in llm.c's or Hugging Face's format. llm.c's\n"
                                   "file has no room for the tokenizer; safetensors keeps it in its metadata.")
                              .c_str());
        return 0;
    }
    g_json = opt.has("json");
    if (!opt.has("checkpoint")) throw UsageError{"--checkpoint PATH is required"};
    if (!opt.has("out")) throw UsageError{"--out PATH is required"};
    const pg_interop_format format = interop_format(opt);
    const std::string ckpt = opt.text("checkpoint", ""), out = opt.text("out", "");

    pg_model* m = nullptr;
    check(pg_model_load(ckpt.c_str(), &m), "pg_model_load");
    ModelPtr model(m);
    const double t0 = now_seconds();
    check(pg_model_export(model.get(), format, out.c_str()), "pg_model_export");
    const double seconds = now_seconds() - t0;
    say("exported %s to %s (%s)%s\n", ckpt.c_str(), out.c_str(), opt.text("format", "").c_str(),
        format == PG_FORMAT_SAFETENSORS ? (", config.json in " + parent_dir(out)).c_str() : "");
    if (g_json) {
        int64_t n_params = 0;
        check(pg_model_num_params(model.get(), &n_params), "pg_model_num_params");
        Json j;
        j.boolean("ok", true).str("command", "export").str("checkpoint", ckpt).str("format", opt.text("format", ""))
            .str("out", out).object("model", model_json(config_of(model.get()), n_params)).num("seconds", seconds);
        std::printf("%s\n", j.text().c_str());
    }
    return 0;
}

int cmd_import(int argc, char** argv) {
    Options opt("import",
                {
                    {"format", "KIND", "llmc (llm.c model file) or safetensors (Hugging Face GPT-2)"},
                    {"in", "PATH", "the file to read (safetensors: with its config.json beside it)"},
                    {"out", "PATH", "the native checkpoint to write (e.g. model.bin)"},
                    {"tokenizer-from", "PATH", "copy the tokenizer of this native checkpoint"},
                    {"vocab-text", "PATH", "build the character tokenizer from this text (as train does)"},
                    {"json", nullptr, "print one JSON object of results on stdout"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    if (opt.has("help")) {
        std::printf("%s", opt.help("--format llmc|safetensors --in PATH --out PATH [options]",
                                   "Reads an llm.c or safetensors model into a native checkpoint. llm.c files\n"
                                   "hold no tokenizer (safetensors files written by phonegpt do): give one with\n"
                                   "--tokenizer-from or --vocab-text, or the checkpoint has none (eval and\n"
                                   "sample then refuse it).")
                              .c_str());
        return 0;
    }
    g_json = opt.has("json");
    const pg_interop_format format = interop_format(opt);
    if (!opt.has("in")) throw UsageError{"--in PATH is required"};
    if (!opt.has("out")) throw UsageError{"--out PATH is required"};
    if (opt.has("tokenizer-from") && opt.has("vocab-text"))
        throw UsageError{"--tokenizer-from and --vocab-text are alternatives: give one"};
    const std::string in = opt.text("in", ""), out = opt.text("out", "");
    if (opt.has("vocab-text") && !file_exists(opt.text("vocab-text", "")))
        throw UsageError{"--vocab-text: no file at \"" + opt.text("vocab-text", "") + "\""};

    pg_model* m = nullptr;
    check(pg_model_import(format, in.c_str(), &m), "pg_model_import");
    ModelPtr model(m);
    // This library's safetensors files carry the tokenizer in their metadata; llm.c files never do.
    pg_tokenizer* carried = nullptr;
    check(pg_model_get_tokenizer(model.get(), &carried), "pg_model_get_tokenizer");
    std::string tokenizer_source = carried ? "the imported file" : "none";
    if (opt.has("tokenizer-from")) {
        pg_model* donor_raw = nullptr;
        check(pg_model_load(opt.text("tokenizer-from", "").c_str(), &donor_raw), "pg_model_load");
        ModelPtr donor(donor_raw);
        pg_tokenizer* tok = nullptr;
        check(pg_model_get_tokenizer(donor.get(), &tok), "pg_model_get_tokenizer");
        if (!tok)
            throw RuntimeError{"--tokenizer-from: \"" + opt.text("tokenizer-from", "") + "\" has no tokenizer",
                               "PG_ERR_STATE"};
        check(pg_model_set_tokenizer(model.get(), tok), "pg_model_set_tokenizer");
        tokenizer_source = opt.text("tokenizer-from", "");
    } else if (opt.has("vocab-text")) {
        const std::string text = read_file(opt.text("vocab-text", ""));
        pg_tokenizer* built = nullptr;
        check(pg_tokenizer_create_char(text.data(), text.size(), &built), "pg_tokenizer_create_char");
        TokenizerPtr owned(built);
        check(pg_model_set_tokenizer(model.get(), built), "pg_model_set_tokenizer");
        tokenizer_source = opt.text("vocab-text", "");
    }
    pg_save_options so;
    pg_save_options_default(&so);
    check(pg_model_save(model.get(), out.c_str(), &so), "pg_model_save");
    say("imported %s (%s) to %s; tokenizer: %s\n", in.c_str(), opt.text("format", "").c_str(), out.c_str(),
        tokenizer_source == "none" ? "none (give --tokenizer-from or --vocab-text to add one)"
                                   : tokenizer_source.c_str());
    if (g_json) {
        int64_t n_params = 0;
        check(pg_model_num_params(model.get(), &n_params), "pg_model_num_params");
        Json j;
        j.boolean("ok", true).str("command", "import").str("format", opt.text("format", "")).str("in", in)
            .str("out", out).object("model", model_json(config_of(model.get()), n_params))
                .boolean("has_tokenizer", tokenizer_source != "none").str("tokenizer_from", tokenizer_source);
        std::printf("%s\n", j.text().c_str());
    }
    return 0;
}

// ------------------------------------------------------------------------------------------

const char* kUsage =
    "usage: phonegpt <command> [options]\n"
    "\n"
    "commands:\n"
    "  train    train a character-level GPT on a text file (default: Tiny Shakespeare)\n"
    "  eval     score a checkpoint on the whole validation split\n"
    "  sample   generate text from a checkpoint\n"
    "  export   write a checkpoint's weights as an llm.c or safetensors file\n"
    "  import   read an llm.c or safetensors file into a native checkpoint\n"
    "\n"
    "phonegpt <command> --help shows a command's options; every command takes --json.\n"
    "Exit codes: 0 success, 1 runtime failure, 2 usage error.\n";

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "%s", kUsage);
        return 2;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
        std::printf("%s", kUsage);
        return 0;
    }
    if (command == "--version") {
        std::printf("phonegpt %s (kernels: %s)\n", pg_version_string(), pg_simd_arch());
        return 0;
    }
    const std::map<std::string, std::function<int(int, char**)>> commands = {
        {"train", cmd_train},   {"eval", cmd_eval},     {"sample", cmd_sample},
        {"export", cmd_export}, {"import", cmd_import}};
    auto it = commands.find(command);
    if (it == commands.end()) {
        std::fprintf(stderr, "phonegpt: unknown command \"%s\"\n\n%s", command.c_str(), kUsage);
        return 2;
    }
    bool json = false;
    for (int i = 2; i < argc; ++i) json |= std::strcmp(argv[i], "--json") == 0;
    try {
        return it->second(argc - 2, argv + 2);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "phonegpt %s: %s (see phonegpt %s --help)\n", command.c_str(), e.message.c_str(),
                     command.c_str());
        if (json)
            std::printf("%s\n", Json().boolean("ok", false).str("command", command).str("error", e.message)
                                    .str("status", "usage").text().c_str());
        return 2;
    } catch (const RuntimeError& e) {
        std::fprintf(stderr, "phonegpt %s: error: %s (%s)\n", command.c_str(), e.message.c_str(), e.status.c_str());
        if (json)
            std::printf("%s\n", Json().boolean("ok", false).str("command", command).str("error", e.message)
                                    .str("status", e.status).text().c_str());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "phonegpt %s: error: %s\n", command.c_str(), e.what());
        if (json)
            std::printf("%s\n", Json().boolean("ok", false).str("command", command).str("error", e.what())
                                    .str("status", "internal").text().c_str());
        return 1;
    }
}
