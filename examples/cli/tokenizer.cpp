// phonegpt tokenizer train|info|encode|decode: training a byte-level BPE tokenizer file, and a
// tokenizer file (tokenizer_files.hpp) on its own.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tokenizer_files.hpp"

namespace cli {

namespace {

const char* const kTokenizerUsage =
    "usage: phonegpt tokenizer train --data PATH --vocab-size N --out tokenizer.json [options]\n"
    "       phonegpt tokenizer info|encode|decode --tokenizer PATH [options]\n"
    "\n"
    "  train    a byte-level BPE tokenizer (Hugging Face BpeTrainer's merges) from a text, written as\n"
    "           a Hugging Face tokenizer.json\n"
    "  info     the tokenizer's kind and vocabulary (and, with --data, its tokens per byte on a text)\n"
    "  encode   text (--text or --data) to token ids, printed space-separated on one line\n"
    "  decode   token ids (--ids or --ids-file, space- or comma-separated) to text\n"
    "\n"
    "phonegpt tokenizer <subcommand> --help shows its options.\n";

std::vector<OptionSpec> with_file_options(std::vector<OptionSpec> own) {
    std::vector<OptionSpec> all = tokenizer_file_options();
    all.insert(all.end(), own.begin(), own.end());
    all.push_back({"json", nullptr, "print one JSON object of results on stdout"});
    all.push_back({"help", nullptr, "this help"});
    return all;
}

// --text or the file --data names (exactly one).
std::string input_text(const Options& opt) {
    if (opt.has("text") == opt.has("data")) throw UsageError{"give --text TEXT or --data PATH (one of them)"};
    if (opt.has("text")) return opt.text("text", "");
    if (!file_exists(opt.text("data", ""))) throw UsageError{"--data: no file at \"" + opt.text("data", "") + "\""};
    return read_file(opt.text("data", ""));
}

std::vector<int32_t> encode_with(const pg_tokenizer* tok, const std::string& text, bool allow_special) {
    pg_encode_options eo;
    pg_encode_options_default(&eo);
    eo.allow_all_special = allow_special ? 1 : 0;
    size_t n = 0;
    pg_status s = pg_tokenizer_encode_with(tok, text.data(), text.size(), &eo, nullptr, 0, &n);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_tokenizer_encode_with");
    std::vector<int32_t> ids(n);
    check(pg_tokenizer_encode_with(tok, text.data(), text.size(), &eo, ids.data(), ids.size(), &n),
          "pg_tokenizer_encode_with");
    ids.resize(n);
    return ids;
}

// Ids separated by spaces, commas or line breaks.
std::vector<int32_t> parse_ids(const std::string& text, const char* what) {
    std::vector<int32_t> ids;
    const char* p = text.c_str();
    while (*p) {
        if (std::strchr(" ,\t\r\n", *p)) {
            ++p;
            continue;
        }
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || (*end && !std::strchr(" ,\t\r\n", *end)))
            throw UsageError{std::string(what) + ": \"" + std::string(p).substr(0, 20) + "\" is not a token id"};
        ids.push_back(int32_t(v));
        p = end;
    }
    return ids;
}

int tokenizer_info(int argc, char** argv) {
    Options opt("tokenizer info", with_file_options({{"data", "PATH", "also encode this text and report tokens per byte"}}),
                argc, argv);
    if (opt.handle_help_and_output("--tokenizer PATH [--data PATH]", "Describes a tokenizer file.")) return 0;
    TokenizerPtr tok = load_tokenizer(opt);
    const std::string kind = tokenizer_kind_name(tok.get());
    const int32_t vocab = vocab_size_of(tok.get());
    say("%s: %s tokenizer, vocabulary %d\n", opt.text("tokenizer", "").c_str(), kind.c_str(), vocab);
    Json j;
    j.boolean("ok", true).str("command", "tokenizer info").str("tokenizer", opt.text("tokenizer", ""))
        .str("kind", kind).integer("vocab_size", vocab);
    if (opt.has("data")) {
        const std::string text = input_text(opt);
        const std::vector<int32_t> ids = encode_with(tok.get(), text, false);
        const double per_byte = text.empty() ? 0.0 : double(ids.size()) / double(text.size());
        say("%s: %zu bytes, %zu tokens (%.4f tokens per byte)\n", opt.text("data", "").c_str(), text.size(), ids.size(),
            per_byte);
        j.str("data", opt.text("data", "")).integer("bytes", (long long)text.size())
            .integer("tokens", (long long)ids.size()).num("tokens_per_byte", per_byte);
    }
    if (g_output.json) print_result(j);
    return 0;
}

int tokenizer_encode(int argc, char** argv) {
    Options opt("tokenizer encode",
                with_file_options({{"text", "TEXT", "the text to encode"},
                                   {"data", "PATH", "encode this file instead"},
                                   {"allow-special", nullptr,
                                    "recognise the tokenizer's special tokens (<|endoftext|>, ...); by default "
                                    "they are ordinary text"}}),
                argc, argv);
    if (opt.handle_help_and_output("--tokenizer PATH --text TEXT | --data PATH [--allow-special]",
                                   "Encodes text to token ids."))
        return 0;
    TokenizerPtr tok = load_tokenizer(opt);
    const std::string text = input_text(opt);
    const std::vector<int32_t> ids = encode_with(tok.get(), text, opt.has("allow-special"));
    if (g_output.json) {
        std::vector<long long> wide(ids.begin(), ids.end());
        Json j;
        j.boolean("ok", true).str("command", "tokenizer encode").integer("bytes", (long long)text.size())
            .integer("tokens", (long long)ids.size()).integers("ids", wide);
        print_result(j);
        return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
    return 0;
}

int tokenizer_decode(int argc, char** argv) {
    Options opt("tokenizer decode",
                with_file_options({{"ids", "IDS", "the token ids, space- or comma-separated"},
                                   {"ids-file", "PATH", "read the ids from this file instead (as encode prints them)"}}),
                argc, argv);
    if (opt.handle_help_and_output("--tokenizer PATH --ids IDS | --ids-file PATH", "Decodes token ids to text."))
        return 0;
    if (opt.has("ids") == opt.has("ids-file")) throw UsageError{"give --ids IDS or --ids-file PATH (one of them)"};
    if (opt.has("ids-file") && !file_exists(opt.text("ids-file", "")))
        throw UsageError{"--ids-file: no file at \"" + opt.text("ids-file", "") + "\""};
    TokenizerPtr tok = load_tokenizer(opt);
    const std::vector<int32_t> ids = opt.has("ids") ? parse_ids(opt.text("ids", ""), "--ids")
                                                    : parse_ids(read_file(opt.text("ids-file", "")), "--ids-file");
    const std::string text = decode(tok.get(), ids.data(), ids.size());
    if (g_output.json) {
        // A JSON string is UTF-8: bytes that are no character become U+FFFD there ("exact" false).
        const std::string utf8 = decode_utf8(tok.get(), ids.data(), ids.size());
        Json j;
        j.boolean("ok", true).str("command", "tokenizer decode").integer("tokens", (long long)ids.size())
            .integer("bytes", (long long)text.size()).str("text", utf8).boolean("exact", utf8 == text);
        print_result(j);
        return 0;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
}

int tokenizer_train(int argc, char** argv) {
    Options opt("tokenizer train",
                {{"data", "PATH", "the training text"},
                 {"vocab-size", "N", "tokens in the vocabulary: special tokens + 256 bytes + merges"},
                 {"out", "PATH", "where to write the tokenizer.json"},
                 {"min-frequency", "N", "pairs rarer than this never merge (default 2)"},
                 {"pattern", "NAME", "pre-tokenizer: gpt2 (default), cl100k or o200k"},
                 {"special", "LIST", "special tokens, comma-separated (ids 0.. in order), e.g. \"<|endoftext|>\""},
                 {"lines", nullptr, "train on each line as a text of its own, as HF's trainer reads files"},
                 {"threads", "N", "threads (default: all cores)"},
                 {"json", nullptr, "print one JSON object of results on stdout"},
                 {"help", nullptr, "this help"}},
                argc, argv);
    if (opt.handle_help_and_output("--data PATH --vocab-size N --out PATH [--pattern gpt2|cl100k|o200k] "
                                   "[--min-frequency N] [--special A,B] [--lines] [--threads N]",
                                   "Trains a byte-level BPE tokenizer on a text and writes it as tokenizer.json."))
        return 0;
    if (!opt.has("data") || !file_exists(opt.text("data", "")))
        throw UsageError{"--data: no file at \"" + opt.text("data", "") + "\""};
    if (!opt.has("out")) throw UsageError{"--out PATH is required (the tokenizer.json to write)"};
    if (!opt.has("vocab-size")) throw UsageError{"--vocab-size N is required"};
    pg_bpe_train_options o;
    pg_bpe_train_options_default(&o);
    const std::string pattern = opt.text("pattern", "gpt2");
    if (pattern == "gpt2") o.pattern = PG_BPE_PATTERN_GPT2;
    else if (pattern == "cl100k") o.pattern = PG_BPE_PATTERN_CL100K;
    else if (pattern == "o200k") o.pattern = PG_BPE_PATTERN_O200K;
    else throw UsageError{"--pattern: \"" + pattern + "\" is not gpt2, cl100k or o200k"};
    o.min_frequency = opt.integer("min-frequency", 2, 0, INT64_MAX);
    o.n_threads = int32_t(opt.integer("threads", 0, 0, 1024));
    std::vector<std::string> specials;
    for (size_t pos = 0, n = opt.text("special", "").size(); opt.has("special") && pos <= n;) {
        const std::string list = opt.text("special", "");
        const size_t comma = std::min(list.find(',', pos), n);
        specials.push_back(list.substr(pos, comma - pos));
        pos = comma + 1;
    }
    std::vector<const char*> special_ptrs;
    for (const auto& sp : specials) special_ptrs.push_back(sp.c_str());
    o.special_tokens = special_ptrs.data();
    o.n_special_tokens = int32_t(special_ptrs.size());
    const int32_t vocab_size = int32_t(opt.integer("vocab-size", 0, 1, INT32_MAX));
    const std::string text = read_file(opt.text("data", ""));
    std::vector<const char*> texts;
    std::vector<size_t> lens;
    if (opt.has("lines")) {
        for (size_t pos = 0; pos < text.size();) {
            const size_t nl = text.find('\n', pos);
            const size_t end = nl == std::string::npos ? text.size() : nl + 1;
            texts.push_back(text.data() + pos);
            lens.push_back(end - pos);
            pos = end;
        }
    } else {
        texts.push_back(text.data());
        lens.push_back(text.size());
    }
    pg_tokenizer* trained = nullptr;
    check(pg_bpe_train(texts.data(), lens.data(), texts.size(), vocab_size, &o, &trained), "pg_bpe_train");
    TokenizerPtr tok(trained);
    size_t len = 0;
    pg_status s = pg_tokenizer_write_file(tok.get(), PG_TOKENIZER_FILE_HF_JSON, nullptr, 0, &len);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_tokenizer_write_file");
    std::string json(len, '\0');
    check(pg_tokenizer_write_file(tok.get(), PG_TOKENIZER_FILE_HF_JSON, json.data(), json.size(), &len),
          "pg_tokenizer_write_file");
    write_file_atomically(opt.text("out", ""), json);
    const int32_t vocab = vocab_size_of(tok.get());
    say("%s: byte-level BPE, %d tokens (%s pattern) from %zu bytes in %zu texts\n", opt.text("out", "").c_str(),
        vocab, pattern.c_str(), text.size(), texts.size());
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "tokenizer train").str("out", opt.text("out", ""))
            .str("pattern", pattern).integer("vocab_size", vocab).integer("bytes", (long long)text.size())
            .integer("texts", (long long)texts.size());
        print_result(j);
    }
    return 0;
}

}  // namespace

int cmd_tokenizer(int argc, char** argv) {
    const std::string sub = argc > 0 ? argv[0] : "";
    if (sub == "train") return tokenizer_train(argc - 1, argv + 1);
    if (sub == "info") return tokenizer_info(argc - 1, argv + 1);
    if (sub == "encode") return tokenizer_encode(argc - 1, argv + 1);
    if (sub == "decode") return tokenizer_decode(argc - 1, argv + 1);
    if (sub == "--help" || sub == "help") {
        std::printf("%s", kTokenizerUsage);
        return 0;
    }
    throw UsageError{sub.empty() ? "a subcommand is required: train, info, encode or decode"
                                 : "unknown subcommand \"" + sub + "\" (train, info, encode or decode)"};
}

}  // namespace cli
