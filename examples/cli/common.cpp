// The shared layer's failures, output, handles, files, text and time (cli.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "cli.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace cli {

std::string call_message(const char* call) {
    std::string msg = pg_last_error();
    if (msg.rfind(call, 0) == 0) return msg;
    return std::string(call) + ": " + msg;
}

void check(pg_status s, const char* call) {
    if (s != PG_OK) throw RuntimeError{call_message(call), pg_status_name(s), std::nullopt};
}

void check_flags(pg_status s, const char* call) {
    if (s == PG_ERR_INVALID_ARGUMENT) throw UsageError{call_message(call)};
    check(s, call);
}

Output g_output;

void say(const char* fmt, ...) {
    if (g_output.quiet) return;
    FILE* to = g_output.json ? stderr : stdout;
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(to, fmt, ap);
    va_end(ap);
    std::fflush(to);
}

void print_result(const Json& result) { std::printf("%s\n", result.text().c_str()); }

ModelPtr load_model(const std::string& path) {
    pg_model* m = nullptr;
    check(pg_model_load(path.c_str(), &m), "pg_model_load");
    return ModelPtr(m);
}

pg_weight_storage weight_storage_named(const std::string& kind, bool frozen, const char* flag) {
    if (kind == "fp32") return PG_WEIGHTS_FP32;
    if (kind == "fp16") return PG_WEIGHTS_FP16;
    if (kind == "bf16") return PG_WEIGHTS_BF16;
    if (frozen && kind == "q8_0") return PG_WEIGHTS_Q8_0;
    if (frozen && kind == "q4_0") return PG_WEIGHTS_Q4_0;
    if (frozen && kind == "fp16-arithmetic") return PG_WEIGHTS_FP16_ARITHMETIC;
    if (frozen && kind == "bf16-arithmetic") return PG_WEIGHTS_BF16_ARITHMETIC;
    throw UsageError{std::string("--") + flag + " must be fp32, fp16" +
                     (frozen ? ", bf16, q8_0 or q4_0" : " or bf16") + ", got \"" + kind + "\""};
}

const OptionSpec kBaseStorage = {
    "base-storage", "KIND",
    "hold the frozen base as fp32, fp16, bf16, q8_0 or q4_0 (blocks of 32 int8 / 4-bit codes with an fp16 "
    "scale; docs/quantization.md); default: as the file holds it. --weights is its old spelling"};
const OptionSpec kWeightsSpelling = {"weights", "KIND", "the old spelling of --base-storage (fp16-arithmetic and "
                                                        "bf16-arithmetic: --base-storage fp16/bf16 --arithmetic fp16/bf16)"};
const OptionSpec kArithmetic = {
    "arithmetic", "KIND",
    "multiply the frozen base exactly (exact, the default), in fp16 over an fp16 base (ARMv8.2 FP16 CPUs, "
    "inference), in bf16 over a bf16 base (AVX512_BF16 CPUs) or in int8 over a q8_0 / q4_0 base"};

ModelPtr load_base(const Options& opt, const std::string& path, bool map) {
    if (opt.has("base-storage") && opt.has("weights"))
        throw UsageError{"--weights is the old spelling of --base-storage: give one of them"};
    const char* name = opt.has("base-storage") ? "base-storage" : opt.has("weights") ? "weights" : nullptr;
    const std::optional<pg_weight_storage> asked =
        name ? std::optional<pg_weight_storage>(weight_storage_named(opt.text(name, ""), true, name)) : std::nullopt;
    pg_load_options lo;
    pg_load_options_default(&lo);
    lo.map_weights = map ? 1 : 0;
    if (asked == PG_WEIGHTS_Q8_0 || asked == PG_WEIGHTS_Q4_0) lo.weight_storage = *asked;
    pg_model* m = nullptr;
    check(pg_model_load_with(path.c_str(), &lo, &m), "pg_model_load_with");
    ModelPtr model(m);
    if (asked) check(pg_model_set_weight_storage(model.get(), *asked), "pg_model_set_weight_storage");
    return model;
}

pg_arithmetic arithmetic_named(const Options& opt) {
    const std::string kind = opt.text("arithmetic", "exact");
    if (kind == "exact") return PG_ARITHMETIC_EXACT;
    if (kind == "fp16") return PG_ARITHMETIC_FP16;
    if (kind == "bf16") return PG_ARITHMETIC_BF16;
    if (kind == "int8") return PG_ARITHMETIC_INT8;
    throw UsageError{"--arithmetic must be exact, fp16, bf16 or int8, got \"" + kind + "\""};
}

const char* weight_storage_kind(pg_weight_storage storage) {
    switch (storage) {
        case PG_WEIGHTS_FP32: return "fp32";
        case PG_WEIGHTS_FP16: return "fp16";
        case PG_WEIGHTS_BF16: return "bf16";
        case PG_WEIGHTS_FP16_ARITHMETIC: return "fp16-arithmetic";
        case PG_WEIGHTS_BF16_ARITHMETIC: return "bf16-arithmetic";
        case PG_WEIGHTS_Q8_0: return "q8_0";
        case PG_WEIGHTS_Q4_0: return "q4_0";
    }
    return "?";
}

const pg_tokenizer* tokenizer_of(pg_model* model, const char* needed_for) {
    const pg_tokenizer* tok = nullptr;
    check(pg_model_get_tokenizer(model, &tok), "pg_model_get_tokenizer");
    if (!tok)
        throw RuntimeError{std::string("the checkpoint has no tokenizer to ") + needed_for, "PG_ERR_STATE",
                           std::nullopt};
    return tok;
}

void clamp_warmup(pg_train_config& tc, bool chosen, const char* command) {
    if (tc.total_steps <= 0 || tc.warmup_steps < tc.total_steps) return;
    const long long warmup = tc.warmup_steps, steps = tc.total_steps;
    if (!chosen) tc.warmup_steps = int32_t(steps / 10);
    std::fprintf(stderr, "phonegpt %s: warning: a warm-up of %lld steps is not shorter than the run's %lld: the learning rate would stay below --lr; %s\n",
                 command, warmup, steps,
                 chosen ? "keeping --warmup as given"
                        : ("warming up over " + std::to_string(tc.warmup_steps) + " steps instead (--warmup N to choose)").c_str());
}

bool file_exists(const std::string& path) {
    struct stat st;
    return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool folder_exists(const std::string& path) {
    struct stat st;
    return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void make_dir(const std::string& dir) {
    // each missing parent first, as mkdir -p
    for (size_t slash = dir.find('/', 1); slash != std::string::npos; slash = dir.find('/', slash + 1)) {
        const std::string parent = dir.substr(0, slash);
        if (!folder_exists(parent) && ::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST)
            throw RuntimeError{"cannot create folder \"" + parent + "\" (for \"" + dir + "\"): " + std::strerror(errno),
                               "PG_ERR_IO", std::nullopt};
    }
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw RuntimeError{"cannot create folder \"" + dir + "\": " + std::strerror(errno), "PG_ERR_IO",
                           std::nullopt};
}

std::string read_file(const std::string& path) {
    char* data = nullptr;
    size_t len = 0;
    check(pg_read_file(path.c_str(), &data, &len), "pg_read_file");
    std::string s(data, len);
    pg_buffer_free(data);
    return s;
}

void write_file_atomically(const std::string& path, const std::string& text) {
    try {
        pg::io::write_file_atomically(path, text.data(), text.size());
    } catch (const pg::Error& e) {
        throw RuntimeError{e.what(), pg_status_name(e.status()), std::nullopt};
    }
}

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
        for (std::string dir = pg::io::parent_folder(exe); dir != "/" && dir != ".";
             dir = pg::io::parent_folder(dir)) {
            std::string p = dir + "/" + rel;
            if (file_exists(p)) return p;
        }
        tried.push_back("../shared/data/tinyshakespeare.txt beside the folders above " + std::string(exe));
    }
    std::string msg = "no training text found: pass --data PATH (or set PG_DATA_PATH); looked for";
    for (const auto& t : tried) msg += "\n  " + t;
    throw UsageError{msg};
}

std::vector<int32_t> encode(const pg_tokenizer* tok, const std::string& text) {
    size_t n = 0;
    pg_status s = pg_tokenizer_encode(tok, text.data(), text.size(), nullptr, 0, &n);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_tokenizer_encode");
    std::vector<int32_t> ids(n);
    check(pg_tokenizer_encode(tok, text.data(), text.size(), ids.data(), ids.size(), &n), "pg_tokenizer_encode");
    ids.resize(n);
    return ids;
}

std::string decode(const pg_tokenizer* tok, const int32_t* ids, size_t n) {
    size_t len = 0;
    pg_status s = pg_tokenizer_decode(tok, ids, n, nullptr, 0, &len);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_tokenizer_decode");
    std::string text(len + 1, '\0');
    check(pg_tokenizer_decode(tok, ids, n, &text[0], text.size(), &len), "pg_tokenizer_decode");
    text.resize(len);
    return text;
}

TextStream::TextStream(const pg_tokenizer* tok) {
    pg_token_stream* s = nullptr;
    check(pg_token_stream_create(tok, &s), "pg_token_stream_create");
    stream_.reset(s);
}

namespace {

// One push or finish with a buffer that grows to what the call says it needs.
template <class Call>
std::string stream_text(Call call, const char* name) {
    std::string text(64, '\0');
    size_t len = 0;
    pg_status s = call(&text[0], text.size(), &len);
    if (s == PG_ERR_BUFFER_TOO_SMALL) {
        text.assign(len + 1, '\0');
        s = call(&text[0], text.size(), &len);
    }
    check(s, name);
    text.resize(len);
    return text;
}

}  // namespace

std::string TextStream::push(int32_t id) {
    return stream_text([&](char* t, size_t c, size_t* n) { return pg_token_stream_push(stream_.get(), id, t, c, n); },
                       "pg_token_stream_push");
}

std::string TextStream::finish() {
    return stream_text([&](char* t, size_t c, size_t* n) { return pg_token_stream_finish(stream_.get(), t, c, n); },
                       "pg_token_stream_finish");
}

std::string decode_utf8(const pg_tokenizer* tok, const int32_t* ids, size_t n) {
    TextStream stream(tok);
    std::string text;
    for (size_t i = 0; i < n; ++i) text += stream.push(ids[i]);
    return text + stream.finish();
}

Corpus load_corpus(const std::string& path, const pg_tokenizer* tok, double train_fraction) {
    Corpus c;
    c.path = path;
    c.tokens = encode(tok, read_file(path));
    check(pg_split_index(c.tokens.size(), train_fraction, &c.n_train), "pg_split_index");
    return c;
}

double now_seconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

std::string duration(double seconds) {
    char buf[32];
    long s = long(seconds + 0.5);
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%lds", s);
    return buf;
}

}  // namespace cli
