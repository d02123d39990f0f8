// Tokenizers read from files (tokenizer_files.hpp).
#include "tokenizer_files.hpp"

namespace cli {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string base_name(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A copy of a checkpoint's tokenizer that outlives the model.
TokenizerPtr tokenizer_of_checkpoint(const std::string& path) {
    ModelPtr model = load_model(path);
    const pg_tokenizer* borrowed = tokenizer_of(model.get(), "read");
    size_t len = 0;
    pg_status s = pg_tokenizer_serialize(borrowed, nullptr, 0, &len);
    if (s != PG_ERR_BUFFER_TOO_SMALL) check(s, "pg_tokenizer_serialize");
    std::string blob(len, '\0');
    check(pg_tokenizer_serialize(borrowed, &blob[0], blob.size(), &len), "pg_tokenizer_serialize");
    pg_tokenizer* tok = nullptr;
    check(pg_tokenizer_deserialize(blob.data(), len, &tok), "pg_tokenizer_deserialize");
    return TokenizerPtr(tok);
}

}  // namespace

std::vector<OptionSpec> tokenizer_file_options() {
    return {
        {"tokenizer", "PATH",
         "the tokenizer: a checkpoint (.bin, .pgck), a tiktoken rank file (.tiktoken), GPT-2's encoder.json "
         "(with --merges) or a Hugging Face tokenizer.json"},
        {"merges", "PATH", "GPT-2's vocab.bpe (merges.txt), with --tokenizer encoder.json (vocab.json)"},
        {"encoding", "NAME",
         "a .tiktoken file's encoding: gpt2, r50k_base, p50k_base, cl100k_base or o200k_base (default: the "
         "file's name)"},
    };
}

TokenizerPtr load_tokenizer(const Options& opt) {
    if (!opt.has("tokenizer")) throw UsageError{"--tokenizer PATH is required"};
    const std::string path = opt.text("tokenizer", "");
    if (!file_exists(path)) throw UsageError{"--tokenizer: no file at \"" + path + "\""};
    if (opt.has("merges") && !file_exists(opt.text("merges", "")))
        throw UsageError{"--merges: no file at \"" + opt.text("merges", "") + "\""};
    const bool tiktoken = ends_with(path, ".tiktoken");
    if (opt.has("encoding") && !tiktoken) throw UsageError{"--encoding goes with a .tiktoken file"};
    if (opt.has("merges") && !ends_with(path, ".json"))
        throw UsageError{"--merges goes with --tokenizer encoder.json (GPT-2's vocabulary)"};

    if (ends_with(path, ".bin") || ends_with(path, ".pgck")) return tokenizer_of_checkpoint(path);
    pg_tokenizer* tok = nullptr;
    if (tiktoken) {
        std::string encoding = opt.text("encoding", "");
        if (encoding.empty()) {
            encoding = base_name(path);
            encoding.resize(encoding.size() - std::string(".tiktoken").size());
        }
        const std::string ranks = read_file(path);
        check_flags(pg_tokenizer_create_tiktoken(ranks.data(), ranks.size(), encoding.c_str(), &tok),
                    "pg_tokenizer_create_tiktoken");
    } else if (opt.has("merges")) {
        const std::string encoder = read_file(path), merges = read_file(opt.text("merges", ""));
        check(pg_tokenizer_create_gpt2(encoder.data(), encoder.size(), merges.data(), merges.size(), &tok),
              "pg_tokenizer_create_gpt2");
    } else if (ends_with(path, ".json")) {
        const std::string json = read_file(path);
        check(pg_tokenizer_create_hf(json.data(), json.size(), &tok), "pg_tokenizer_create_hf");
    } else {
        throw UsageError{"--tokenizer: \"" + path +
                         "\" is none of a checkpoint (.bin, .pgck), a .tiktoken file, GPT-2's encoder.json "
                         "(with --merges) or a tokenizer.json"};
    }
    return TokenizerPtr(tok);
}

std::string tokenizer_kind_name(const pg_tokenizer* tok) {
    pg_tokenizer_kind kind;
    check(pg_tokenizer_get_kind(tok, &kind), "pg_tokenizer_get_kind");
    return kind == PG_TOKENIZER_BPE ? "bpe" : kind == PG_TOKENIZER_CHAR ? "char" : std::to_string(int(kind));
}

int32_t vocab_size_of(const pg_tokenizer* tok) {
    int32_t n = 0;
    check(pg_tokenizer_vocab_size(tok, &n), "pg_tokenizer_vocab_size");
    return n;
}

}  // namespace cli
