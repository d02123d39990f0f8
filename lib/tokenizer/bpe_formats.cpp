// Readers and writers of tiktoken, GPT-2 and Hugging Face BPE files (bpe_formats.hpp).
#include "tokenizer/bpe_formats.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <unordered_map>

#include "core/error.hpp"
#include "core/json.hpp"
#include "tokenizer/utf8.hpp"

namespace pg::bpe {

namespace {

using Token = BpeTokenizer::Token;
using Merge = BpeTokenizer::Merge;

struct Encoding {
    const char* name;
    Pattern pattern;
    std::size_t n_ranks;  // the rank file's line count, as tiktoken pins it
    std::vector<std::pair<const char*, int32_t>> specials;
};

// tiktoken's built-in encodings (tiktoken_ext/openai_public.py; gpt2's explicit_n_vocab 50,257
// is its 50,256 ranks and <|endoftext|>).
const std::vector<Encoding>& encodings() {
    static const std::vector<Encoding> e = {
        {"gpt2", Pattern::kGpt2, 50256, {{"<|endoftext|>", 50256}}},
        {"r50k_base", Pattern::kGpt2, 50256, {{"<|endoftext|>", 50256}}},
        {"p50k_base", Pattern::kGpt2, 50280, {{"<|endoftext|>", 50256}}},
        {"cl100k_base", Pattern::kCl100k, 100256,
         {{"<|endoftext|>", 100257}, {"<|fim_prefix|>", 100258}, {"<|fim_middle|>", 100259},
          {"<|fim_suffix|>", 100260}, {"<|endofprompt|>", 100276}}},
        {"o200k_base", Pattern::kO200k, 199998, {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}},
    };
    return e;
}

// GPT-2's files declare no special tokens; this is the one its encoder.json holds.
constexpr const char* kGpt2Special = "<|endoftext|>";

const std::array<uint32_t, 256>& byte_alphabet() {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        std::array<bool, 256> printable{};
        for (int b = '!'; b <= '~'; ++b) printable[std::size_t(b)] = true;
        for (int b = 0xA1; b <= 0xAC; ++b) printable[std::size_t(b)] = true;
        for (int b = 0xAE; b <= 0xFF; ++b) printable[std::size_t(b)] = true;
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) t[std::size_t(b)] = printable[std::size_t(b)] ? uint32_t(b) : next++;
        return t;
    }();
    return table;
}

std::string to_alphabet(const std::string& bytes) {
    std::string out;
    for (unsigned char c : bytes) utf8::append(out, byte_alphabet()[c]);
    return out;
}

// Inverse of to_alphabet; false if a character is not in the alphabet.
bool from_alphabet(const std::string& s, std::string* bytes) {
    static const std::unordered_map<uint32_t, uint8_t> inverse = [] {
        std::unordered_map<uint32_t, uint8_t> m;
        for (int b = 0; b < 256; ++b) m[byte_alphabet()[std::size_t(b)]] = uint8_t(b);
        return m;
    }();
    bytes->clear();
    for (std::size_t i = 0; i < s.size();) {
        uint32_t cp;
        int len;
        if (utf8::decode_at(s, i, &cp, &len) != nullptr) return false;
        auto it = inverse.find(cp);
        if (it == inverse.end()) return false;
        bytes->push_back(char(it->second));
        i += std::size_t(len);
    }
    return true;
}

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::string& in) {
    std::string out;
    std::size_t i = 0;
    for (; i + 3 <= in.size(); i += 3) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
        out += {kBase64[v >> 18], kBase64[(v >> 12) & 63], kBase64[(v >> 6) & 63], kBase64[v & 63]};
    }
    if (in.size() - i == 1) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16;
        out += {kBase64[v >> 18], kBase64[(v >> 12) & 63], '=', '='};
    } else if (in.size() - i == 2) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8;
        out += {kBase64[v >> 18], kBase64[(v >> 12) & 63], kBase64[(v >> 6) & 63], '='};
    }
    return out;
}

// Strict base64 (RFC 4648, padded); false on anything else.
bool base64_decode(std::string_view in, std::string* out) {
    static const std::array<int8_t, 256> value = [] {
        std::array<int8_t, 256> v{};
        v.fill(-1);
        for (int i = 0; i < 64; ++i) v[std::size_t(uint8_t(kBase64[i]))] = int8_t(i);
        return v;
    }();
    out->clear();
    if (in.empty() || in.size() % 4 != 0) return false;
    for (std::size_t i = 0; i < in.size(); i += 4) {
        const bool last = i + 4 == in.size();
        int pad = 0;
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const unsigned char c = uint8_t(in[i + std::size_t(k)]);
            if (c == '=' && last && k >= 2) {
                ++pad;
                v <<= 6;
                continue;
            }
            if (pad || value[c] < 0) return false;
            v = (v << 6) | uint32_t(value[c]);
        }
        out->push_back(char(v >> 16));
        if (pad < 2) out->push_back(char((v >> 8) & 0xFF));
        if (pad < 1) out->push_back(char(v & 0xFF));
        // Non-canonical padding bits are malformed.
        if ((pad == 1 && (v & 0xFF) != 0) || (pad == 2 && (v & 0xFFFF) != 0)) return false;
    }
    return true;
}

std::string quote_line(std::string_view s) {
    std::string out(s.substr(0, 40));
    for (char& c : out)
        if (uint8_t(c) < 0x20 || uint8_t(c) >= 0x7F) c = '?';
    return "\"" + out + (s.size() > 40 ? "...\"" : "\"");
}

// Strict decimal: digits only, no sign, at most 10 digits.
bool parse_rank(std::string_view s, uint64_t* out) {
    if (s.empty() || s.size() > 10) return false;
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + uint64_t(c - '0');
    }
    *out = v;
    return true;
}

std::vector<Token> specials_of(const Encoding& e) {
    std::vector<Token> out;
    for (const auto& s : e.specials) out.push_back(Token{s.second, s.first});
    return out;
}

// A vocabulary object of byte-level-alphabet strings to ids (encoder.json, model.vocab).
void read_alphabet_vocab(const io::JsonValue& obj, const std::string& where, std::vector<Token>* vocab,
                         std::unordered_map<std::string, int32_t>* id_of) {
    for (const auto& [key, value] : obj.as_object(where)) {
        const uint64_t id = value.as_u64(where + " entry " + quote_line(key));
        if (id >= BpeTokenizer::kMaxVocab)
            throw Error(PG_ERR_FORMAT, where + " entry " + quote_line(key) + " has id " + std::to_string(id) +
                                           ", over the largest id " + std::to_string(BpeTokenizer::kMaxVocab - 1));
        Token t;
        t.id = int32_t(id);
        if (!from_alphabet(key, &t.bytes) || t.bytes.empty())
            throw Error(PG_ERR_FORMAT,
                        where + " entry " + quote_line(key) + " has a character outside the byte-level alphabet");
        (*id_of)[key] = t.id;
        vocab->push_back(std::move(t));
    }
}

// Ids exactly 0..n-1, as a .tiktoken file's ranks must be: a hole or a repeat is a damaged file.
void require_dense_ids(const std::vector<Token>& vocab, const std::string& where) {
    std::vector<int32_t> ids;
    ids.reserve(vocab.size());
    for (const auto& t : vocab) ids.push_back(t.id);
    std::sort(ids.begin(), ids.end());
    for (std::size_t k = 0; k < ids.size(); ++k) {
        if (k > 0 && ids[k] == ids[k - 1])
            throw Error(PG_ERR_FORMAT, where + " gives id " + std::to_string(ids[k]) + " to two entries");
        if (ids[k] != int32_t(k))
            throw Error(PG_ERR_FORMAT, where + " has a hole: no entry has id " + std::to_string(k) + " (" +
                                           std::to_string(ids.size()) + " entries, ids up to " +
                                           std::to_string(ids.back()) + ")");
    }
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) { return byte_alphabet()[b]; }

std::unique_ptr<BpeTokenizer> load_tiktoken(std::string_view data, const std::string& encoding) {
    Pattern pattern;
    std::vector<Token> specials;
    const Encoding* known = nullptr;
    for (const auto& e : encodings())
        if (encoding == e.name) known = &e;
    if (known) {
        pattern = known->pattern;
        specials = specials_of(*known);
    } else if (!pattern_from_regex(encoding, &pattern)) {
        throw Error(PG_ERR_UNSUPPORTED,
                    "tiktoken encoding " + quote_line(encoding) +
                        " is neither a known encoding (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base) nor the "
                        "regex of one of their pre-tokenizers");
    }
    require(!data.empty(), PG_ERR_FORMAT, "tiktoken rank file is empty");
    std::vector<Token> ranks;
    std::vector<std::size_t> line_of;
    std::size_t line_no = 0;
    // Checks in this loop build their message only on failure: it runs once per token.
    for (std::size_t pos = 0; pos < data.size();) {
        std::size_t end = data.find('\n', pos);
        if (end == std::string_view::npos) end = data.size();
        const std::string_view line = data.substr(pos, end - pos);
        ++line_no;
        pos = end + 1;
        if (line.empty()) {
            if (pos < data.size())
                throw Error(PG_ERR_FORMAT, "tiktoken rank file line " + std::to_string(line_no) + " is empty");
            continue;
        }
        const std::size_t space = line.find(' ');
        if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
            throw Error(PG_ERR_FORMAT, "tiktoken rank file line " + std::to_string(line_no) + " " + quote_line(line) +
                                           " is not \"base64 rank\"");
        Token t;
        if (!base64_decode(line.substr(0, space), &t.bytes))
            throw Error(PG_ERR_FORMAT, "tiktoken rank file line " + std::to_string(line_no) + " has invalid base64 " +
                                           quote_line(line.substr(0, space)));
        uint64_t rank;
        if (!parse_rank(line.substr(space + 1), &rank))
            throw Error(PG_ERR_FORMAT, "tiktoken rank file line " + std::to_string(line_no) + " has rank " +
                                           quote_line(line.substr(space + 1)) + ", not a decimal number");
        if (rank >= BpeTokenizer::kMaxVocab)
            throw Error(PG_ERR_FORMAT, "tiktoken rank file line " + std::to_string(line_no) + " has rank " +
                                           std::to_string(rank) + ", over the largest id " +
                                           std::to_string(BpeTokenizer::kMaxVocab - 1));
        t.id = int32_t(rank);
        ranks.push_back(std::move(t));
        line_of.push_back(line_no);
    }
    // A known encoding is one file: a truncated or foreign one would load as it and encode
    // differently (tiktoken refuses it too).
    if (known && ranks.size() != known->n_ranks)
        throw Error(PG_ERR_FORMAT, "tiktoken rank file has " + std::to_string(ranks.size()) + " ranks; encoding " +
                                       encoding + " has " + std::to_string(known->n_ranks) + " (" +
                                       std::to_string(known->n_ranks + known->specials.size()) +
                                       " tokens with its special tokens): a truncated or different file (pass "
                                       "the pre-tokenizer's regex instead of the name to load another vocabulary)");
    // Ranks must be exactly 0..n-1: a duplicate or a hole is a damaged file.
    std::vector<std::size_t> order(ranks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // Files list ranks in order: check that in one pass before paying for a sort.
    const auto by_rank = [&](std::size_t a, std::size_t b) { return ranks[a].id < ranks[b].id; };
    if (!std::is_sorted(order.begin(), order.end(), by_rank)) std::sort(order.begin(), order.end(), by_rank);
    for (std::size_t k = 0; k < order.size(); ++k) {
        const int32_t r = ranks[order[k]].id;
        if (k > 0 && r == ranks[order[k - 1]].id)
            throw Error(PG_ERR_FORMAT, "tiktoken rank file gives rank " + std::to_string(r) + " twice (lines " +
                                           std::to_string(line_of[order[k - 1]]) + " and " +
                                           std::to_string(line_of[order[k]]) + ")");
        if (r != int32_t(k))
            throw Error(PG_ERR_FORMAT, "tiktoken rank file has a hole: no token has rank " + std::to_string(k) +
                                           " (line " + std::to_string(line_of[order[k]]) + " has rank " +
                                           std::to_string(r) + ")");
    }
    for (auto& s : specials)
        require(s.id >= int32_t(ranks.size()), PG_ERR_FORMAT,
                "tiktoken rank file has " + std::to_string(ranks.size()) + " ranks, which reach the special token " +
                    s.bytes + " (id " + std::to_string(s.id) + ") of encoding " + encoding);
    return BpeTokenizer::from_ranks(pattern, std::move(ranks), std::move(specials));
}

std::string write_tiktoken(const BpeTokenizer& t) {
    require(t.tiktoken_rule(), PG_ERR_UNSUPPORTED,
            "this BPE tokenizer merges by a merge list; tiktoken's rank file cannot express it (write GPT-2 or "
            "tokenizer.json files instead)");
    std::string out;
    for (const auto& tok : t.tokens()) out += base64_encode(tok.bytes) + " " + std::to_string(tok.id) + "\n";
    return out;
}

std::unique_ptr<BpeTokenizer> load_gpt2(std::string_view encoder_json, std::string_view vocab_bpe) {
    const io::JsonValue enc = io::parse_json(encoder_json.data(), encoder_json.size(), "encoder.json");
    std::vector<Token> vocab;
    std::unordered_map<std::string, int32_t> id_of;
    read_alphabet_vocab(enc, "encoder.json", &vocab, &id_of);
    require_dense_ids(vocab, "encoder.json");
    std::vector<Merge> merges;
    std::size_t line_no = 0;
    for (std::size_t pos = 0; pos < vocab_bpe.size();) {
        std::size_t end = vocab_bpe.find('\n', pos);
        if (end == std::string_view::npos) end = vocab_bpe.size();
        std::string_view line = vocab_bpe.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || (line_no == 1 && line.substr(0, 9) == "#version:")) continue;
        const std::size_t space = line.find(' ');
        require(space != std::string_view::npos && space > 0 && space + 1 < line.size() &&
                    line.find(' ', space + 1) == std::string_view::npos,
                PG_ERR_FORMAT, "vocab.bpe line " + std::to_string(line_no) + " " + quote_line(line) + " is not \"left right\"");
        const std::string left(line.substr(0, space)), right(line.substr(space + 1));
        const auto l = id_of.find(left), r = id_of.find(right);
        require(l != id_of.end() && r != id_of.end(), PG_ERR_FORMAT,
                "vocab.bpe line " + std::to_string(line_no) + " merges " + quote_line(l == id_of.end() ? left : right) +
                    ", which is not in encoder.json");
        merges.push_back(Merge{l->second, r->second});
    }
    // Every entry is a byte, a merge's result or GPT-2's one special token: anything else means
    // a truncated or foreign vocab.bpe, never a special token of its own.
    int32_t max_id = 0;
    for (const auto& t : vocab) max_id = std::max(max_id, t.id);
    std::vector<uint8_t> made(std::size_t(max_id) + 1, 0);
    std::unordered_map<std::string, int32_t> id_of_bytes;
    std::unordered_map<int32_t, const std::string*> bytes_of;
    for (const auto& t : vocab) {
        id_of_bytes[t.bytes] = t.id;
        bytes_of[t.id] = &t.bytes;
        if (t.bytes.size() == 1) made[std::size_t(t.id)] = 1;
    }
    std::string joined;
    for (const auto& m : merges) {
        joined = *bytes_of[m.left] + *bytes_of[m.right];
        auto it = id_of_bytes.find(joined);
        if (it != id_of_bytes.end()) made[std::size_t(it->second)] = 1;  // an unknown result is reported by from_merges
    }
    std::vector<Token> specials;
    std::size_t unmade = 0;
    const Token* first_unmade = nullptr;
    for (const auto& t : vocab) {
        if (made[std::size_t(t.id)]) continue;
        if (t.bytes == kGpt2Special) {
            specials.push_back(t);
        } else if (!unmade++ || t.id < first_unmade->id) {
            first_unmade = &t;
        }
    }
    if (unmade)
        throw Error(PG_ERR_FORMAT, "encoder.json has " + std::to_string(unmade) + " of " + std::to_string(vocab.size()) +
                                       " entries that are neither a byte, nor made by one of vocab.bpe's " +
                                       std::to_string(merges.size()) + " merges, nor GPT-2's special token " +
                                       kGpt2Special + " (the first: " + quote_line(to_alphabet(first_unmade->bytes)) +
                                       ", id " + std::to_string(first_unmade->id) +
                                       "): vocab.bpe is truncated or belongs to another encoder.json");
    return BpeTokenizer::from_merges(Pattern::kGpt2, std::move(vocab), merges, std::move(specials), false, false);
}

namespace {

// read_alphabet_vocab's counterpart: the vocabulary as encoder.json and tokenizer.json's "vocab"
// hold it, GPT-2's printable alphabet -> id in id order. Special tokens without an ordinary
// token are entries too (as in GPT-2's files; read back as specials): HF gives an added token
// that is not in the vocabulary the next free id, not the id the file names.
io::JsonObject alphabet_vocab_json(const BpeTokenizer& t) {
    io::JsonObject vocab;
    for (const auto& tok : t.tokens()) vocab.integer(to_alphabet(tok.bytes), tok.id);
    for (const auto& s : t.specials()) {
        const auto it = std::lower_bound(t.tokens().begin(), t.tokens().end(), s.id,
                                         [](const Token& a, int32_t id) { return a.id < id; });
        if (it == t.tokens().end() || it->id != s.id) vocab.integer(to_alphabet(s.bytes), s.id);
    }
    return vocab;
}

}  // namespace

void write_gpt2(const BpeTokenizer& t, std::string* encoder_json, std::string* vocab_bpe) {
    require(t.pattern() == Pattern::kGpt2, PG_ERR_UNSUPPORTED,
            std::string("GPT-2's encoder.json and vocab.bpe imply GPT-2's pre-tokenizer; this tokenizer uses ") +
                pattern_name(t.pattern()) + "'s (write tokenizer.json instead)");
    require(!t.add_prefix_space(), PG_ERR_UNSUPPORTED, "GPT-2's files cannot say add_prefix_space");
    for (const auto& s : t.specials())
        require(s.bytes == kGpt2Special, PG_ERR_UNSUPPORTED,
                "GPT-2's files declare one special token, " + std::string(kGpt2Special) + "; this tokenizer also has " +
                    quote_line(s.bytes) + " (write tokenizer.json instead)");
    const std::vector<Merge> merges = t.merge_list();
    *encoder_json = alphabet_vocab_json(t).text();
    std::string bpe = "#version: 0.2\n";
    for (const auto& m : merges)
        bpe += to_alphabet(*t.token_bytes(m.left)) + " " + to_alphabet(*t.token_bytes(m.right)) + "\n";
    *vocab_bpe = std::move(bpe);
}

namespace {

const io::JsonValue& member(const io::JsonValue& obj, const char* key, const std::string& where) {
    const io::JsonValue* v = obj.find(key);
    require(v != nullptr, PG_ERR_FORMAT, "tokenizer.json: " + where + " has no \"" + key + "\"");
    return *v;
}

bool optional_bool(const io::JsonValue& obj, const char* key, bool fallback, const std::string& where) {
    const io::JsonValue* v = obj.find(key);
    if (!v || v->is_null()) return fallback;
    return v->as_bool("tokenizer.json: " + where + "." + key);
}

// The rules of Hugging Face tokenizers' own reader (serde), where this reader matches it: a
// field without a default must be there (`add_prefix_space`), one with a default may be absent
// but, if there, has its type (null is not a bool).
bool required_bool(const io::JsonValue& obj, const char* key, const std::string& where) {
    return member(obj, key, where).as_bool("tokenizer.json: " + where + "." + key);
}

bool defaulted_bool(const io::JsonValue& obj, const char* key, bool fallback, const std::string& where) {
    const io::JsonValue* v = obj.find(key);
    return v ? v->as_bool("tokenizer.json: " + where + "." + key) : fallback;
}

std::string type_of(const io::JsonValue& obj, const std::string& where) {
    return member(obj, "type", where).as_string("tokenizer.json: " + where + ".type");
}

// A ByteLevel pre-tokenizer, decoder or post-processor (HF requires add_prefix_space and
// trim_offsets; use_regex defaults to true): returns use_regex, sets add_prefix_space.
bool read_byte_level(const io::JsonValue& v, const std::string& where, bool* add_prefix_space) {
    *add_prefix_space = required_bool(v, "add_prefix_space", where);
    required_bool(v, "trim_offsets", where);
    return defaulted_bool(v, "use_regex", true, where);
}

// The root's keys: HF refuses any other.
void require_known_root_keys(const io::JsonValue& root) {
    static const char* const known[] = {"version", "truncation", "padding", "added_tokens", "normalizer",
                                        "pre_tokenizer", "post_processor", "decoder", "model"};
    for (const auto& entry : root.as_object("tokenizer.json")) {
        const std::string& key = entry.first;
        if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return key == k; }))
            throw Error(PG_ERR_FORMAT, "tokenizer.json: unknown key " + quote_line(key) +
                                           " at the root (the keys are version, truncation, padding, added_tokens, "
                                           "normalizer, pre_tokenizer, post_processor, decoder, model)");
    }
    if (const auto* v = root.find("version"); v) {
        const std::string& version = v->as_string("tokenizer.json: version");
        require(version == "1.0", PG_ERR_FORMAT, "tokenizer.json: version " + quote_line(version) + " is not \"1.0\"");
    }
}

[[noreturn]] void unsupported(const std::string& what) {
    throw Error(PG_ERR_UNSUPPORTED, "tokenizer.json: " + what + " (this library reads byte-level BPE only)");
}

// An added token: HF requires every field; returns it as a special token, and whether HF
// matches it in every encode (special false) rather than as a special token. `normalizer`: the
// file has one.
Token read_added_token(const io::JsonValue& item, const std::string& where, bool normalizer, bool* always) {
    const uint64_t id = member(item, "id", where).as_u64("tokenizer.json: " + where + ".id");
    require(id < BpeTokenizer::kMaxVocab, PG_ERR_FORMAT,
            "tokenizer.json: " + where + " has id " + std::to_string(id) + ", over the largest id");
    Token t{int32_t(id), member(item, "content", where).as_string("tokenizer.json: " + where + ".content")};
    for (const char* flag : {"single_word", "lstrip", "rstrip"})
        if (required_bool(item, flag, where)) unsupported(where + "." + flag + " is set");
    // HF matches a normalized token in the normalized text; this library matches in the text.
    if (required_bool(item, "normalized", where) && normalizer)
        unsupported(where + ".normalized is set with a normalizer");
    *always = !required_bool(item, "special", where);
    return t;
}

// The normalizer: null, NFC, or a Sequence of them (NFC twice is NFC once). Returns whether
// the text is put in NFC.
bool read_normalizer(const io::JsonValue& n, const std::string& where) {
    if (n.is_null()) return false;
    const std::string type = type_of(n, where);
    if (type == "NFC") return true;
    if (type != "Sequence") unsupported(where + " type " + quote_line(type) + " (normalizers read: NFC, Sequence)");
    const auto& list = member(n, "normalizers", where).as_array("tokenizer.json: " + where + ".normalizers");
    bool nfc = false;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string item = where + ".normalizers[" + std::to_string(i) + "]";
        require(!list[i].is_null(), PG_ERR_FORMAT, "tokenizer.json: " + item + " is null");
        nfc = read_normalizer(list[i], item) || nfc;
    }
    return nfc;
}

// The Split before a ByteLevel: sets the pattern (kRegex and *regex for one that is not
// built in); UNSUPPORTED for what the library cannot run.
void read_split(const io::JsonValue& split, Pattern* pattern, std::string* regex_text) {
    const std::string where = "pre_tokenizer.pretokenizers[0]";
    const io::JsonValue& pat = member(split, "pattern", where);
    const auto& pat_fields = pat.as_object("tokenizer.json: Split pattern");
    require(pat_fields.size() == 1, PG_ERR_FORMAT, "tokenizer.json: Split pattern is not one of {\"Regex\": ...} or {\"String\": ...}");
    const io::JsonValue* regex = pat.find("Regex");
    if (!regex) {
        require(pat.find("String") != nullptr, PG_ERR_FORMAT, "tokenizer.json: Split pattern " +
                                                              quote_line(pat_fields.begin()->first) + " is not Regex or String");
        unsupported("Split pattern is not a Regex");
    }
    const std::string& text = regex->as_string("tokenizer.json: Split pattern Regex");
    if (!pattern_from_regex(text, pattern)) {
        *pattern = Pattern::kRegex;
        *regex_text = text;
    }
    const std::string behavior = member(split, "behavior", where).as_string("tokenizer.json: Split.behavior");
    static const char* const behaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    require(std::any_of(std::begin(behaviors), std::end(behaviors), [&](const char* b) { return behavior == b; }),
            PG_ERR_FORMAT, "tokenizer.json: Split.behavior " + quote_line(behavior) + " is not a known behavior");
    if (required_bool(split, "invert", where) || behavior != "Isolated") unsupported("Split is not Isolated and uninverted");
}

// One item of a TemplateProcessing list: a special token (its index in `names`) or a text (-1
// for A, -2 for B), with its type_id.
struct TemplateItem {
    int32_t what;
    uint64_t type_id;
    bool operator==(const TemplateItem& o) const { return what == o.what && type_id == o.type_id; }
};

std::vector<TemplateItem> read_template_items(const io::JsonValue& list, const std::string& where,
                                              const std::vector<std::string>& names) {
    std::vector<TemplateItem> items;
    const auto& entries = list.as_array("tokenizer.json: " + where);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string w = where + "[" + std::to_string(i) + "]";
        const auto& fields = entries[i].as_object("tokenizer.json: " + w);
        require(fields.size() == 1, PG_ERR_FORMAT, "tokenizer.json: " + w + " is not one {\"SpecialToken\"} or {\"Sequence\"}");
        const std::string& kind = fields.begin()->first;
        const io::JsonValue& body = fields.begin()->second;
        const std::string id = member(body, "id", w + "." + kind).as_string("tokenizer.json: " + w + "." + kind + ".id");
        const uint64_t type_id = member(body, "type_id", w + "." + kind).as_u64("tokenizer.json: " + w + "." + kind + ".type_id");
        if (kind == "Sequence") {
            require(id == "A" || id == "B", PG_ERR_FORMAT, "tokenizer.json: " + w + ".Sequence.id " + quote_line(id) + " is not A or B");
            items.push_back({id == "A" ? -1 : -2, type_id});
        } else if (kind == "SpecialToken") {
            const auto it = std::find(names.begin(), names.end(), id);
            require(it != names.end(), PG_ERR_FORMAT, "tokenizer.json: " + w + " names " + quote_line(id) + ", which is not in special_tokens");
            items.push_back({int32_t(it - names.begin()), type_id});
        } else {
            throw Error(PG_ERR_FORMAT, "tokenizer.json: " + w + " is " + quote_line(kind) + ", not SpecialToken or Sequence");
        }
    }
    return items;
}

// A TemplateProcessing post-processor: sets the special-token ids its single template puts
// before and after the text. Read where libphonegpt writes the same file back: each special
// token one added token named by its text, the single template type 0 around A, the pair
// template the single one around A and then, type 1, around B (Llama 3's, BERT's is not).
void read_template(const io::JsonValue& tp, const std::string& where, const std::vector<Token>& specials,
                   std::vector<int32_t>* before, std::vector<int32_t>* after) {
    std::vector<std::string> names;
    std::vector<int32_t> ids;
    for (const auto& [key, entry] : member(tp, "special_tokens", where).as_object("tokenizer.json: " + where + ".special_tokens")) {
        const std::string& name = key;  // C++17 lambdas cannot capture a structured binding
        const std::string w = where + ".special_tokens." + name;
        const std::string& id = member(entry, "id", w).as_string("tokenizer.json: " + w + ".id");
        const auto& id_list = member(entry, "ids", w).as_array("tokenizer.json: " + w + ".ids");
        const auto& tokens = member(entry, "tokens", w).as_array("tokenizer.json: " + w + ".tokens");
        require(id_list.size() == tokens.size(), PG_ERR_FORMAT, "tokenizer.json: " + w + " has " + std::to_string(id_list.size()) +
                                                                    " ids and " + std::to_string(tokens.size()) + " tokens");
        if (id_list.size() != 1 || id != name || tokens[0].as_string("tokenizer.json: " + w + ".tokens[0]") != name)
            unsupported(w + " is not one token named by its text");
        const uint64_t value = id_list[0].as_u64("tokenizer.json: " + w + ".ids[0]");
        const auto s = std::find_if(specials.begin(), specials.end(), [&](const Token& t) { return t.bytes == name; });
        if (s == specials.end() || uint64_t(s->id) != value) unsupported(w + " is not an added token with that id");
        names.push_back(name), ids.push_back(s->id);
    }
    const std::vector<TemplateItem> single = read_template_items(member(tp, "single", where), where + ".single", names);
    const std::vector<TemplateItem> pair = read_template_items(member(tp, "pair", where), where + ".pair", names);
    std::vector<TemplateItem> want_pair;
    bool seen_text = false;
    for (const auto& item : single) {
        if (item.type_id != 0 || item.what == -2 || (item.what == -1 && seen_text))
            unsupported(where + ".single is not special tokens of type 0 around one Sequence A");
        want_pair.push_back(item);
        if (item.what == -1) seen_text = true;
        else (seen_text ? after : before)->push_back(ids[std::size_t(item.what)]);
    }
    if (!seen_text) unsupported(where + ".single has no Sequence A");
    for (const auto& item : single) want_pair.push_back({item.what == -1 ? -2 : item.what, 1});
    if (!(pair == want_pair)) unsupported(where + ".pair is not the single template around A, then around B with type_id 1");
}

}  // namespace

std::unique_ptr<BpeTokenizer> load_hf(std::string_view json) {
    const io::JsonValue root = io::parse_json(json.data(), json.size(), "tokenizer.json");
    require_known_root_keys(root);
    const io::JsonValue* normalizer = root.find("normalizer");
    const bool nfc = normalizer && read_normalizer(*normalizer, "normalizer");
    // Both change what encode returns (cut or padded ids).
    for (const char* key : {"truncation", "padding"})
        if (const auto* v = root.find(key); v && !v->is_null()) unsupported(std::string(key) + " is set");
    // The pre-tokenizer: which pattern, and ByteLevel's prefix space.
    Pattern pattern = Pattern::kGpt2;
    std::string regex_text;
    auto digits = BpeTokenizer::DigitSplit::kNone;
    bool add_prefix_space = false;
    const io::JsonValue* pre_found = root.find("pre_tokenizer");
    if (!pre_found || pre_found->is_null()) unsupported("has no pre_tokenizer");
    const io::JsonValue& pre = *pre_found;
    const std::string pre_type = type_of(pre, "pre_tokenizer");
    if (pre_type == "ByteLevel") {
        if (!read_byte_level(pre, "pre_tokenizer", &add_prefix_space)) unsupported("ByteLevel without use_regex has no pattern");
    } else if (pre_type == "Sequence") {
        const auto& list = member(pre, "pretokenizers", "pre_tokenizer").as_array("tokenizer.json: pre_tokenizer.pretokenizers");
        const std::string first = list.size() == 2 ? type_of(list[0], "pre_tokenizer.pretokenizers[0]") : "";
        if ((first != "Split" && first != "Digits") || type_of(list[1], "pre_tokenizer.pretokenizers[1]") != "ByteLevel")
            unsupported("pre_tokenizer Sequence is not [Split, ByteLevel] or [Digits, ByteLevel]");
        const bool use_regex = read_byte_level(list[1], "pre_tokenizer.pretokenizers[1]", &add_prefix_space);
        if (first == "Split") {
            read_split(list[0], &pattern, &regex_text);
            if (use_regex) unsupported("ByteLevel after a Split splits again (use_regex true)");
        } else {
            // SmolLM2's: digits split off, then GPT-2's regex on the rest.
            digits = required_bool(list[0], "individual_digits", "pre_tokenizer.pretokenizers[0]")
                         ? BpeTokenizer::DigitSplit::kIndividual
                         : BpeTokenizer::DigitSplit::kRuns;
            if (!use_regex) unsupported("ByteLevel after Digits without use_regex (no pattern for the rest)");
            // HF's ByteLevel puts its prefix space before every piece Digits made.
            if (add_prefix_space) unsupported("ByteLevel after Digits with add_prefix_space");
        }
    } else {
        unsupported("pre_tokenizer type " + quote_line(pre_type));
    }
    bool ignored = false;  // the decoder's and post-processor's prefix space change no id
    if (const auto* d = root.find("decoder"); d && !d->is_null()) {
        if (type_of(*d, "decoder") != "ByteLevel") unsupported("decoder is not ByteLevel");
        read_byte_level(*d, "decoder", &ignored);
    }
    // Post-processors: ByteLevel (offsets only), TemplateProcessing (read once the added
    // tokens are), or a Sequence of them.
    std::vector<std::pair<const io::JsonValue*, std::string>> processors;
    const io::JsonValue* template_processing = nullptr;
    std::string template_where;
    if (const auto* p = root.find("post_processor"); p && !p->is_null()) {
        if (type_of(*p, "post_processor") == "Sequence") {
            const auto& list = member(*p, "processors", "post_processor").as_array("tokenizer.json: post_processor.processors");
            for (std::size_t i = 0; i < list.size(); ++i)
                processors.emplace_back(&list[i], "post_processor.processors[" + std::to_string(i) + "]");
        } else {
            processors.emplace_back(p, "post_processor");
        }
    }
    for (const auto& [proc, where] : processors) {
        const std::string type = type_of(*proc, where);
        if (type == "ByteLevel") {
            read_byte_level(*proc, where, &ignored);
        } else if (type == "TemplateProcessing" && !template_processing) {
            template_processing = proc;
            template_where = where;
        } else {
            unsupported(where + " " + quote_line(type) + " (post-processors read: ByteLevel, one TemplateProcessing, Sequence)");
        }
    }

    const io::JsonValue& model = member(root, "model", "the root");
    // HF tells the model by its fields when "type" is absent; a BPE's are vocab and merges.
    if (model.find("type") && type_of(model, "model") != "BPE") unsupported("model type is not BPE");
    for (const char* key : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix"}) {
        const io::JsonValue* v = model.find(key);
        if (v && !v->is_null() && !(v->is_string() && v->as_string(key).empty())) unsupported(std::string("model.") + key + " is set");
    }
    if (optional_bool(model, "byte_fallback", false, "model")) unsupported("model.byte_fallback is set");
    const bool ignore_merges = optional_bool(model, "ignore_merges", false, "model");

    std::vector<Token> vocab;
    std::unordered_map<std::string, int32_t> id_of;
    read_alphabet_vocab(member(model, "vocab", "model"), "tokenizer.json: model.vocab", &vocab, &id_of);
    std::vector<Merge> merges;
    const auto& list = member(model, "merges", "model").as_array("tokenizer.json: model.merges");
    merges.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string where = "tokenizer.json: model.merges[" + std::to_string(i) + "]";
        std::string left, right;
        if (list[i].is_string()) {
            const std::string& s = list[i].as_string(where);
            const std::size_t space = s.find(' ');
            require(space != std::string::npos && space > 0 && s.find(' ', space + 1) == std::string::npos &&
                        space + 1 < s.size(),
                    PG_ERR_FORMAT, where + " " + quote_line(s) + " is not \"left right\"");
            left = s.substr(0, space);
            right = s.substr(space + 1);
        } else {
            const auto& pair = list[i].as_array(where);
            require(pair.size() == 2, PG_ERR_FORMAT, where + " is not a pair");
            left = pair[0].as_string(where);
            right = pair[1].as_string(where);
        }
        const auto l = id_of.find(left), r = id_of.find(right);
        require(l != id_of.end() && r != id_of.end(), PG_ERR_FORMAT,
                where + " names " + quote_line(l == id_of.end() ? left : right) + ", which is not in model.vocab");
        merges.push_back(Merge{l->second, r->second});
    }
    std::vector<Token> specials;
    std::vector<int32_t> always_matched;
    const bool has_normalizer = normalizer && !normalizer->is_null();
    if (const auto* added = root.find("added_tokens"); added && !added->is_null()) {
        const auto& items = added->as_array("tokenizer.json: added_tokens");
        for (std::size_t i = 0; i < items.size(); ++i) {
            bool always = false;
            specials.push_back(read_added_token(items[i], "added_tokens[" + std::to_string(i) + "]", has_normalizer, &always));
            if (always) always_matched.push_back(specials.back().id);
        }
    }
    auto t = BpeTokenizer::from_merges(pattern, std::move(vocab), merges, std::move(specials), ignore_merges, add_prefix_space);
    t->set_text_rules(nfc, std::move(always_matched));
    if (pattern == Pattern::kRegex) t->set_split_regex(regex_text, "tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex");
    t->set_digit_split(digits);
    if (template_processing) {
        std::vector<int32_t> before, after;
        read_template(*template_processing, template_where, t->specials(), &before, &after);
        t->set_template(std::move(before), std::move(after));
    }
    return t;
}

std::string write_hf(const BpeTokenizer& t) {
    using io::JsonObject;
    std::vector<JsonObject> added;
    for (const auto& s : t.specials()) {
        added.emplace_back();
        added.back().integer("id", s.id).str("content", s.bytes);
        for (const char* flag : {"single_word", "lstrip", "rstrip", "normalized"}) added.back().boolean(flag, false);
        added.back().boolean("special", !t.is_always_matched(s.id));
    }
    const bool aps = t.add_prefix_space();
    auto byte_level = [&](bool prefix_space, bool use_regex) {
        JsonObject o;
        o.str("type", "ByteLevel").boolean("add_prefix_space", prefix_space).boolean("trim_offsets", true)
            .boolean("use_regex", use_regex);
        return o;
    };
    JsonObject pre;
    if (t.digit_split() != BpeTokenizer::DigitSplit::kNone) {
        require(t.pattern() == Pattern::kGpt2 && !aps, PG_ERR_UNSUPPORTED,
                "tokenizer.json has Digits before a ByteLevel only with GPT-2's regex and no prefix space");
        JsonObject split_digits;
        split_digits.str("type", "Digits").boolean("individual_digits", t.digit_split() == BpeTokenizer::DigitSplit::kIndividual);
        pre.str("type", "Sequence").array("pretokenizers", {split_digits, byte_level(false, true)});
    } else if (t.pattern() == Pattern::kGpt2) {
        pre = byte_level(aps, true);
    } else {
        JsonObject regex, split;
        regex.str("Regex", t.split_regex() ? *t.split_regex() : std::string(pattern_regex(t.pattern())));
        split.str("type", "Split").object("pattern", regex).str("behavior", "Isolated").boolean("invert", false);
        pre.str("type", "Sequence").array("pretokenizers", {split, byte_level(aps, false)});
    }
    std::vector<std::pair<std::string, std::string>> merges;
    for (const auto& m : t.merge_list())
        merges.emplace_back(to_alphabet(*t.token_bytes(m.left)), to_alphabet(*t.token_bytes(m.right)));
    JsonObject model;
    model.str("type", "BPE").null("dropout").null("unk_token").null("continuing_subword_prefix")
        .null("end_of_word_suffix").boolean("fuse_unk", false).boolean("byte_fallback", false)
        .boolean("ignore_merges", t.tiktoken_rule() || t.ignore_merges())
        .object("vocab", alphabet_vocab_json(t))
        .string_pairs("merges", merges);
    JsonObject file;
    file.str("version", "1.0").null("truncation").null("padding").array("added_tokens", added);
    if (t.nfc()) file.object("normalizer", JsonObject().str("type", "NFC"));
    else file.null("normalizer");
    file.object("pre_tokenizer", pre);
    if (t.template_before().empty() && t.template_after().empty()) {
        file.null("post_processor");
    } else {
        // read_template's form: the single template around A; the pair one around A, then B.
        JsonObject table;
        std::vector<JsonObject> single, pair;
        std::vector<int32_t> listed;
        const auto special = [&](int32_t id, int type_id) {
            const std::string& name = *t.token_bytes(id);
            if (std::find(listed.begin(), listed.end(), id) == listed.end()) {
                listed.push_back(id);
                JsonObject entry;
                entry.str("id", name).integers("ids", {id}).strings("tokens", {name});
                table.object(name, entry);
            }
            JsonObject ref;
            ref.str("id", name).integer("type_id", type_id);
            return JsonObject().object("SpecialToken", ref);
        };
        for (int type_id : {0, 1}) {
            auto& list = type_id == 0 ? single : pair;
            for (int32_t id : t.template_before()) list.push_back(special(id, type_id));
            list.push_back(JsonObject().object("Sequence", JsonObject().str("id", type_id ? "B" : "A").integer("type_id", type_id)));
            for (int32_t id : t.template_after()) list.push_back(special(id, type_id));
            if (type_id == 0) pair = single;
        }
        JsonObject post;
        post.str("type", "TemplateProcessing").array("single", single).array("pair", pair).object("special_tokens", table);
        file.object("post_processor", post);
    }
    file.object("decoder", byte_level(true, true))
        .object("model", model);
    return file.indented_text() + "\n";
}

}  // namespace pg::bpe
