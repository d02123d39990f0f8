// Byte-level BPE: the pre-tokenizer scanners, the merge loop against a plain reference, the
// formats' round trips, special tokens, the streaming decoder, the serialised blob and
// checkpoints. The real-file tests (tiktoken's golden vectors) need the npm peers' rank files
// (tests/cmake/bpe.cmake exports them; in CI they are required).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "phonegpt/phonegpt.h"
#include "test_support.hpp"
#include "tokenizer/bpe_formats.hpp"
#include "tokenizer/bpe_regex.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "tokenizer/bpe_unicode.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8_stream.hpp"

namespace {

using pg::BpeTokenizer;
using pg::bpe::Pattern;

std::vector<std::string> split(Pattern p, const std::string& text) {
    std::vector<std::string> out;
    pg::bpe::for_each_piece(p, reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                            [&](std::size_t b, std::size_t e) { out.push_back(text.substr(b, e - b)); });
    return out;
}

using Pieces = std::vector<std::string>;

// A small byte-level vocabulary: the 256 bytes, then merges in priority order.
std::unique_ptr<BpeTokenizer> small_bpe(Pattern p = Pattern::kGpt2) {
    std::vector<BpeTokenizer::Token> vocab;
    for (int b = 0; b < 256; ++b) vocab.push_back({b, std::string(1, char(b))});
    std::vector<BpeTokenizer::Merge> merges;
    const auto add = [&](const std::string& l, const std::string& r) {
        int32_t li = -1, ri = -1;
        for (const auto& t : vocab) {
            if (t.bytes == l) li = t.id;
            if (t.bytes == r) ri = t.id;
        }
        REQUIRE(li >= 0);
        REQUIRE(ri >= 0);
        vocab.push_back({int32_t(vocab.size()), l + r});
        merges.push_back({li, ri});
    };
    add("a", "a"); add("aa", "aa"); add("aa", "a"); add("b", "c"); add("a", "bc"); add(" ", "t");
    add("h", "e"); add(" t", "he"); add("\xF0", "\x9F"); add("\xF0\x9F", "\x91"); add("\xF0\x9F\x91", "\x8D");
    std::vector<BpeTokenizer::Token> specials = {{int32_t(vocab.size()), "<|endoftext|>"}};
    return BpeTokenizer::from_merges(p, vocab, merges, specials, false, false);
}

// The plain reference of the merge rule: tiktoken's loop over a vector, one merge per pass.
std::vector<int32_t> reference_merge(const BpeTokenizer& t, const std::string& piece) {
    std::vector<std::string> parts;
    for (char c : piece) parts.emplace_back(1, c);
    const std::vector<BpeTokenizer::Merge> merges = t.merge_list();
    for (;;) {
        std::size_t best = parts.size(), best_rank = merges.size();
        for (std::size_t i = 0; i + 1 < parts.size(); ++i)
            for (std::size_t m = 0; m < best_rank; ++m)
                if (*t.token_bytes(merges[m].left) == parts[i] && *t.token_bytes(merges[m].right) == parts[i + 1]) {
                    best_rank = m, best = i;
                    break;
                }
        if (best == parts.size()) break;
        parts[best] += parts[best + 1];
        parts.erase(parts.begin() + std::ptrdiff_t(best) + 1);
    }
    std::vector<int32_t> ids;
    for (const auto& p : parts)
        for (const auto& tok : t.tokens())
            if (tok.bytes == p) ids.push_back(tok.id);
    return ids;
}

std::string peer_file(const char* name) {
#ifdef PG_TEST_BPE_PEERS
    return std::string(PG_TEST_BPE_PEERS) + "/" + name;
#else
    (void)name;
    return "";
#endif
}

pg_status load_status(const std::string& ranks, const char* encoding, std::string* msg) {
    pg_tokenizer* tok = nullptr;
    const pg_status s = pg_tokenizer_create_tiktoken(ranks.data(), ranks.size(), encoding, &tok);
    *msg = pg_last_error();
    pg_tokenizer_free(tok);
    return s;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("gpt2 pre-tokenizer: contractions, optional space, whitespace lookahead", "[bpe]") {
    CHECK(split(Pattern::kGpt2, "a  b") == Pieces{"a", " ", " b"});
    CHECK(split(Pattern::kGpt2, "Hello world's 123 !!") == Pieces{"Hello", " world", "'s", " 123", " !!"});
    CHECK(split(Pattern::kGpt2, "IT'S") == Pieces{"IT", "'", "S"});  // case-sensitive in gpt2
    CHECK(split(Pattern::kGpt2, "x   ") == Pieces{"x", "   "});
    CHECK(split(Pattern::kGpt2, "\n\nab") == Pieces{"\n", "\n", "ab"});
    CHECK(split(Pattern::kGpt2, "\xFF\xFE a") == Pieces{"\xFF\xFE", " a"});  // invalid bytes: "other"
}

TEST_CASE("qwen pre-tokenizer: cl100k's with one digit a piece", "[bpe]") {
    CHECK(split(Pattern::kQwen, "IT'S 12345") == Pieces{"IT", "'S", " ", "1", "2", "3", "4", "5"});
    CHECK(split(Pattern::kQwen, "a\xD9\xA1\xD9\xA2" "b") == Pieces{"a", "\xD9\xA1", "\xD9\xA2", "b"});  // Arabic-Indic digits
    CHECK(split(Pattern::kQwen, "today\n \n") == Pieces{"today", "\n \n"});
}

TEST_CASE("cl100k pre-tokenizer: case-insensitive contractions, digit triples, newlines", "[bpe]") {
    CHECK(split(Pattern::kCl100k, "IT'S 12345") == Pieces{"IT", "'S", " ", "123", "45"});
    CHECK(split(Pattern::kCl100k, "today\n \n") == Pieces{"today", "\n \n"});
    CHECK(split(Pattern::kCl100k, "a\n  ") == Pieces{"a", "\n", "  "});
    CHECK(split(Pattern::kCl100k, "!hello  x") == Pieces{"!hello", " ", " x"});
    CHECK(split(Pattern::kCl100k, "x'\xC5\xBF") == Pieces{"x", "'\xC5\xBF"});  // 's folds to U+017F
}

TEST_CASE("o200k pre-tokenizer: case runs with backtracking, marks, slashes", "[bpe]") {
    CHECK(split(Pattern::kO200k, "HelloWorld") == Pieces{"Hello", "World"});
    CHECK(split(Pattern::kO200k, "HELLO'S x") == Pieces{"HELLO'S", " x"});
    CHECK(split(Pattern::kO200k, "ABCdef") == Pieces{"ABCdef"});
    CHECK(split(Pattern::kO200k, "a/b//\n") == Pieces{"a", "/b", "//\n"});
    CHECK(split(Pattern::kO200k, "e\xCC\x81!") == Pieces{"e\xCC\x81", "!"});  // combining acute is \p{M}
}

TEST_CASE("Unicode classes come from the generated table", "[bpe]") {
    CHECK(std::string(pg::bpe::kUnicodeVersion) == "15.0.0");
    CHECK(pg::bpe::is_letter(pg::bpe::class_of(0x01C5)));  // Lt
    CHECK(pg::bpe::is_space(pg::bpe::class_of(0x0085)));
    CHECK(pg::bpe::is_space(pg::bpe::class_of(0x3000)));
    CHECK(!pg::bpe::is_space(pg::bpe::class_of(0x200B)));  // ZWSP is not White_Space
    CHECK(pg::bpe::is_number(pg::bpe::class_of(0x216B)));  // Nl
    CHECK((pg::bpe::class_of(0x0301) & pg::bpe::kCategoryMask) == pg::bpe::kMark);
}

TEST_CASE("merges follow priority, never left to right, equal to the plain reference", "[bpe]") {
    auto t = small_bpe();
    // "abc": "bc" (merge 3) before "a"+"bc" (merge 4); nothing merges "ab".
    CHECK(t->encode("abc") == std::vector<int32_t>{260});
    std::mt19937 rng(7);
    const std::string alphabet = "aabc the\xF0\x9F\x91\x8D";
    for (int trial = 0; trial < 300; ++trial) {
        std::string piece;
        const int n = 1 + int(rng() % (trial < 250 ? 20 : 300));  // long ones take the heap path
        for (int i = 0; i < n; ++i) piece.push_back(alphabet[rng() % alphabet.size()]);
        // Compare piece by piece (the pre-tokenizer splits the text first).
        std::vector<int32_t> want;
        for (const auto& p : split(Pattern::kGpt2, piece)) {
            const auto ids = reference_merge(*t, p);
            want.insert(want.end(), ids.begin(), ids.end());
        }
        INFO("piece " << piece);
        CHECK(t->encode(piece) == want);
    }
}

TEST_CASE("long pieces: sweeps, the switch to the heap, and the reference agree", "[bpe]") {
    // Merge 0 needs the result of merge 1, so merging "ab" makes a pair of lower priority:
    // the sweeps must hand over to the heap. Merges over "x" make many sweeps.
    std::vector<BpeTokenizer::Token> vocab;
    for (int b = 0; b < 256; ++b) vocab.push_back({b, std::string(1, char(b))});
    vocab.push_back({256, "abc"});
    vocab.push_back({257, "ab"});
    vocab.push_back({258, "xx"});
    vocab.push_back({259, "xxxx"});
    vocab.push_back({260, "xxxxxxxx"});
    vocab.push_back({261, "cabc"});
    std::vector<BpeTokenizer::Merge> merges = {{257, 'c'}, {'a', 'b'}, {'x', 'x'}, {258, 258}, {259, 259}, {'c', 256}};
    auto t = BpeTokenizer::from_merges(Pattern::kGpt2, vocab, merges, {}, false, false);
    std::mt19937 rng(3);
    for (int trial = 0; trial < 120; ++trial) {
        std::string piece;
        const int n = 64 + int(rng() % 400);
        const char* alphabet = trial % 2 ? "abc" : "xxxxxxxab";
        for (int i = 0; i < n; ++i) piece.push_back(alphabet[rng() % std::strlen(alphabet)]);
        INFO("piece " << piece);
        CHECK(t->encode(piece) == reference_merge(*t, piece));
    }
}

TEST_CASE("any bytes encode and decode back exactly; a million equal bytes stay fast", "[bpe]") {
    auto t = small_bpe(Pattern::kCl100k);
    std::mt19937 rng(11);
    for (int trial = 0; trial < 200; ++trial) {
        std::string s;
        const int n = int(rng() % 200);
        for (int i = 0; i < n; ++i) s.push_back(char(rng() & 0xFF));
        const auto ids = t->encode(s);
        CHECK(t->decode(ids.data(), ids.size()) == s);
    }
    const std::string run(1 << 20, 'a');
    const auto ids = t->encode(run);
    CHECK(ids.size() == (1u << 20) / 4);  // "aaaa" is the longest token
    CHECK(t->decode(ids.data(), ids.size()) == run);
    int32_t bad = 99999;
    CHECK_THROWS_AS(t->decode(&bad, 1), pg::Error);
}

TEST_CASE("special tokens are ordinary text unless allowed", "[bpe][capi]") {
    auto impl = small_bpe();
    const int32_t eot = impl->special_id("<|endoftext|>");
    REQUIRE(eot == 267);
    pg_tokenizer* tok = nullptr;
    {
        const auto blob = impl->serialize();
        REQUIRE(pg_tokenizer_deserialize(blob.data(), blob.size(), &tok) == PG_OK);
    }
    const std::string text = "the<|endoftext|>abc";
    int32_t ids[64];
    size_t n = 0;
    REQUIRE(pg_tokenizer_encode(tok, text.data(), text.size(), ids, 64, &n) == PG_OK);
    CHECK(std::find(ids, ids + n, eot) == ids + n);
    pg_encode_options o;
    pg_encode_options_default(&o);
    const char* allowed[] = {"<|endoftext|>"};
    o.allowed_special = allowed;
    o.n_allowed_special = 1;
    REQUIRE(pg_tokenizer_encode_with(tok, text.data(), text.size(), &o, ids, 64, &n) == PG_OK);
    const std::vector<int32_t> got(ids, ids + n);
    CHECK(got == std::vector<int32_t>{'t', 262, eot, 260});
    int32_t id = 0;
    CHECK(pg_tokenizer_special_id(tok, "<|endoftext|>", &id) == PG_OK);
    CHECK(id == eot);
    CHECK(pg_tokenizer_special_id(tok, "<|nope|>", &id) == PG_ERR_INVALID_ARGUMENT);
    const char* not_special[] = {"the"};
    o.allowed_special = not_special;
    CHECK(pg_tokenizer_encode_with(tok, text.data(), text.size(), &o, ids, 64, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(contains(pg_tokenizer_last_error(tok), "\"the\" is not a special token"));
    pg_tokenizer_kind kind;
    CHECK(pg_tokenizer_get_kind(tok, &kind) == PG_OK);
    CHECK(kind == PG_TOKENIZER_BPE);
    pg_tokenizer_free(tok);
}

TEST_CASE("streaming decoder emits only complete UTF-8 and carries a split character", "[bpe][capi]") {
    auto impl = small_bpe();
    pg_tokenizer* tok = nullptr;
    const auto blob = impl->serialize();
    REQUIRE(pg_tokenizer_deserialize(blob.data(), blob.size(), &tok) == PG_OK);
    pg_token_stream* s = nullptr;
    REQUIRE(pg_token_stream_create(tok, &s) == PG_OK);
    char buf[32];
    size_t len = 0;
    // U+1F44D as two tokens: F0 9F 91 (id 265) then 8D.
    const int32_t first = 265;
    REQUIRE(*impl->token_bytes(first) == "\xF0\x9F\x91");
    REQUIRE(pg_token_stream_push(s, 'x', buf, sizeof buf, &len) == PG_OK);
    CHECK(std::string(buf, len) == "x");
    REQUIRE(pg_token_stream_push(s, first, buf, sizeof buf, &len) == PG_OK);
    CHECK(len == 0);
    CHECK(pg_token_stream_push(s, 0x8D, buf, 2, &len) == PG_ERR_BUFFER_TOO_SMALL);  // nothing consumed
    CHECK(len == 4);
    REQUIRE(pg_token_stream_push(s, 0x8D, buf, sizeof buf, &len) == PG_OK);
    CHECK(std::string(buf, len) == "\xF0\x9F\x91\x8D");
    REQUIRE(pg_token_stream_push(s, 0xFF, buf, sizeof buf, &len) == PG_OK);  // never valid
    CHECK(std::string(buf, len) == "\xEF\xBF\xBD");
    REQUIRE(pg_token_stream_push(s, 0xE2, buf, sizeof buf, &len) == PG_OK);
    CHECK(len == 0);
    REQUIRE(pg_token_stream_finish(s, buf, sizeof buf, &len) == PG_OK);  // unfinished at the end
    CHECK(std::string(buf, len) == "\xEF\xBF\xBD");
    CHECK(pg_token_stream_push(s, 100000, buf, sizeof buf, &len) == PG_ERR_INVALID_ARGUMENT);
    CHECK(contains(pg_token_stream_last_error(s), "100000"));
    pg_token_stream_free(s);
    pg_token_stream_free(nullptr);
    pg_tokenizer_free(tok);
}

TEST_CASE("the streaming decoder replaces each maximal subpart of bad UTF-8 by one U+FFFD", "[bpe]") {
    const std::string R = "\xEF\xBF\xBD";
    const auto whole = [](std::string bytes) { return pg::utf8::take_complete(bytes, true); };
    // The example of Unicode 15, section 3.9 (Table 3-8): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
    CHECK(whole("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64") ==
          "a" + R + R + R + "b" + R + "c" + R + R + "d");
    CHECK(whole("\xE2\x82") == R);                 // one unfinished character: one U+FFFD
    CHECK(whole("\xE2\x82\x41") == R + "A");
    CHECK(whole("\xED\xA0\x80") == R + R + R);    // a surrogate: ED then two lone continuations
    CHECK(whole("\xF4\x90\x80\x80") == R + R + R + R);  // above U+10FFFF
    CHECK(whole("\xC0\xAF") == R + R);             // overlong: C0 starts nothing
    // Streaming: a valid prefix at the end waits; the same bytes at the end of the stream are one U+FFFD.
    std::string pending = "x\xF0\x9F\x91";
    CHECK(pg::utf8::take_complete(pending, false) == "x");
    CHECK(pending == "\xF0\x9F\x91");
    pending += "\x41";
    CHECK(pg::utf8::take_complete(pending, false) == R + "A");
    CHECK(pending.empty());
}

TEST_CASE("serialised BPE blob round-trips, every truncation is a clean format error", "[bpe]") {
    auto t = small_bpe(Pattern::kO200k);
    const auto blob = t->serialize();
    auto back = pg::deserialize_tokenizer(blob.data(), blob.size());
    REQUIRE(back->kind() == PG_TOKENIZER_BPE);
    const std::string text = "the aaaaabc \xF0\x9F\x91\x8D <|endoftext|>";
    CHECK(back->encode(text) == t->encode(text));
    CHECK(back->serialize() == blob);
    for (std::size_t cut = 0; cut < blob.size(); cut += 1 + cut / 64) {
        std::vector<uint8_t> b(blob.begin(), blob.begin() + std::ptrdiff_t(cut));
        try {
            pg::deserialize_tokenizer(b.data(), b.size());
            FAIL("truncated at " << cut << " loaded");
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_FORMAT);
        }
    }
    // A huge declared token count is refused before anything is allocated.
    std::vector<uint8_t> b = blob;
    b[24] = b[25] = b[26] = b[27] = 0xFF;
    try {
        pg::deserialize_tokenizer(b.data(), b.size());
        FAIL("huge count loaded");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_FORMAT);
        CHECK(contains(e.what(), "declares"));
    }
}

TEST_CASE("written tokenizer.json and GPT-2 files read back to the same tokenizer", "[bpe]") {
    auto t = small_bpe();
    const std::string text = "the aaaaabc, \xF0\x9F\x91\x8D\n\n x";
    auto hf = pg::bpe::load_hf(pg::bpe::write_hf(*t));
    CHECK(hf->encode(text) == t->encode(text));
    CHECK(hf->merge_list().size() == t->merge_list().size());
    std::string enc, merges;
    pg::bpe::write_gpt2(*t, &enc, &merges);
    auto g = pg::bpe::load_gpt2(enc, merges);
    CHECK(g->encode(text) == t->encode(text));
    CHECK(g->special_id("<|endoftext|>") == 267);
    try {
        pg::bpe::write_tiktoken(*t);
        FAIL("a merge-list tokenizer was written as ranks");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_UNSUPPORTED);
    }
}

TEST_CASE("a checkpoint carries its BPE tokenizer", "[bpe][io][checkpoint]") {
    auto impl = small_bpe();
    const auto blob = impl->serialize();
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_tokenizer_deserialize(blob.data(), blob.size(), &tok) == PG_OK);
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    mc.vocab_size = impl->vocab_size();
    mc.padded_vocab_size = 272;
    pg_model* model = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &model) == PG_OK);
    REQUIRE(pg_model_set_tokenizer(model, tok) == PG_OK);
    const std::string path = pg_test::tmp_dir() + "/bpe_model.pgck";
    REQUIRE(pg_model_save(model, path.c_str(), nullptr) == PG_OK);
    pg_model* loaded = nullptr;
    REQUIRE(pg_model_load(path.c_str(), &loaded) == PG_OK);
    const pg_tokenizer* back = nullptr;
    REQUIRE(pg_model_get_tokenizer(loaded, &back) == PG_OK);
    const std::string text = "the aaaaabc <|endoftext|> \xF0\x9F\x91\x8D";
    int32_t a[64], b[64];
    size_t na = 0, nb = 0;
    REQUIRE(pg_tokenizer_encode(tok, text.data(), text.size(), a, 64, &na) == PG_OK);
    REQUIRE(pg_tokenizer_encode(back, text.data(), text.size(), b, 64, &nb) == PG_OK);
    CHECK(std::vector<int32_t>(a, a + na) == std::vector<int32_t>(b, b + nb));
    pg_tokenizer_kind kind;
    CHECK(pg_tokenizer_get_kind(back, &kind) == PG_OK);
    CHECK(kind == PG_TOKENIZER_BPE);
    pg_model_free(loaded);
    pg_model_free(model);
    pg_tokenizer_free(tok);
    std::remove(path.c_str());
}

TEST_CASE("tiktoken rank file corruption matrix", "[bpe][corruption]") {
    const std::string good = "IQ== 0\nIg== 1\nIyM= 2\n";  // "!", "\"", "##"
    std::string msg;
    const char* gpt2_regex = pg::bpe::pattern_regex(Pattern::kGpt2);
    // No single-byte token for most bytes is fine for loading (encoding such text reports it).
    CHECK(load_status(good, gpt2_regex, &msg) == PG_OK);
    CHECK(load_status("", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(load_status("IQ== 0\nIg==", gpt2_regex, &msg) == PG_ERR_FORMAT);  // truncated line
    CHECK(contains(msg, "line 2"));
    CHECK(load_status("IQ== 0\nI!== 1\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(contains(msg, "base64"));
    CHECK(load_status("IQ== 0\nIg= 1\n", gpt2_regex, &msg) == PG_ERR_FORMAT);  // bad length
    CHECK(load_status("IR== 0\n", gpt2_regex, &msg) == PG_ERR_FORMAT);  // non-canonical padding bits
    CHECK(load_status("IQ== 0\nIg== 0\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(contains(msg, "twice"));
    CHECK(load_status("IQ== 0\nIg== 2\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(contains(msg, "hole"));
    CHECK(load_status("IQ== 0\nIQ== 1\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(contains(msg, "same bytes"));
    CHECK(load_status("IQ== 99999999999\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(load_status("IQ== 16777216\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(contains(msg, "largest id"));
    CHECK(load_status("IQ== -1\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(load_status("IQ==  0\n", gpt2_regex, &msg) == PG_ERR_FORMAT);
    CHECK(load_status(good, "cl200k", &msg) == PG_ERR_UNSUPPORTED);
    CHECK(load_status(good, "\\s+", &msg) == PG_ERR_UNSUPPORTED);
    // A known encoding pins its rank count, as tiktoken does: a short file is not gpt2.
    CHECK(load_status(good, "gpt2", &msg) == PG_ERR_FORMAT);
    CHECK(contains(msg, "has 3 ranks; encoding gpt2 has 50256 (50257 tokens"));
    CHECK(load_status(good, "cl100k_base", &msg) == PG_ERR_FORMAT);
    CHECK(contains(msg, "100256"));
    int32_t ids[4];
    size_t n;
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_tokenizer_create_tiktoken(good.data(), good.size(), gpt2_regex, &tok) == PG_OK);
    CHECK(pg_tokenizer_encode(tok, "a", 1, ids, 4, &n) == PG_ERR_TOKENIZE);
    CHECK(contains(pg_tokenizer_last_error(tok), "0x61"));
    pg_tokenizer_free(tok);
    CHECK(pg_tokenizer_create_tiktoken(nullptr, 3, "gpt2", &tok) == PG_ERR_INVALID_ARGUMENT);
    CHECK(tok == nullptr);
}

TEST_CASE("GPT-2 files and tokenizer.json corruption matrix", "[bpe][corruption]") {
    auto t = small_bpe();
    std::string enc, merges;
    pg::bpe::write_gpt2(*t, &enc, &merges);
    const std::string hf = pg::bpe::write_hf(*t);
    const auto status_of = [](auto&& f) {
        try {
            f();
            return PG_OK;
        } catch (const pg::Error& e) {
            return e.status();
        }
    };
    CHECK(status_of([&] { pg::bpe::load_gpt2(enc.substr(0, enc.size() / 2), merges); }) == PG_ERR_FORMAT);
    CHECK(status_of([&] { pg::bpe::load_gpt2(enc, merges + "zz qq\n"); }) == PG_ERR_FORMAT);  // unknown tokens
    CHECK(status_of([&] { pg::bpe::load_gpt2(enc, merges + "a\n"); }) == PG_ERR_FORMAT);      // not a pair
    CHECK(status_of([&] { pg::bpe::load_gpt2(enc, merges + "a a\n"); }) == PG_ERR_FORMAT);    // listed twice
    std::string big = enc;
    big.replace(big.rfind(':') + 1, std::string::npos, "4294967296}");
    CHECK(status_of([&] { pg::bpe::load_gpt2(big, merges); }) == PG_ERR_FORMAT);              // over the id range
    std::string dup = enc;
    dup.replace(dup.rfind(':') + 1, std::string::npos, "0}");
    CHECK(status_of([&] { pg::bpe::load_gpt2(dup, merges); }) == PG_ERR_FORMAT);              // duplicate id
    for (std::size_t cut = 0; cut < hf.size(); cut += 1 + cut / 16)
        CHECK(status_of([&] { pg::bpe::load_hf(hf.substr(0, cut)); }) == PG_ERR_FORMAT);
    std::string norm = hf;
    norm.replace(norm.find("\"normalizer\": null"), 18, "\"normalizer\": {\"type\": \"NFKC\"}");
    CHECK(status_of([&] { pg::bpe::load_hf(norm); }) == PG_ERR_UNSUPPORTED);
    std::string bad_merge = hf;
    bad_merge.replace(bad_merge.find("\"merges\":["), 10, "\"merges\":[[\"zz\",\"a\"],");
    CHECK(status_of([&] { pg::bpe::load_hf(bad_merge); }) == PG_ERR_FORMAT);
    std::string wordpiece = hf;
    wordpiece.replace(wordpiece.find("\"type\":\"BPE\""), 12, "\"type\":\"WordPiece\"");
    CHECK(status_of([&] { pg::bpe::load_hf(wordpiece); }) == PG_ERR_UNSUPPORTED);
    pg_tokenizer* tok = nullptr;
    CHECK(pg_tokenizer_create_hf("{", 1, &tok) == PG_ERR_FORMAT);
    CHECK(pg_tokenizer_create_gpt2("{}", 2, "", 0, &tok) == PG_ERR_FORMAT);
    CHECK(tok == nullptr);
}

TEST_CASE("GPT-2 files: specials only as declared, no holes, no truncated vocab.bpe", "[bpe][corruption]") {
    auto t = small_bpe();
    std::string enc, merges;
    pg::bpe::write_gpt2(*t, &enc, &merges);
    const auto message_of = [](auto&& f) -> std::string {
        try {
            f();
            return "loaded";
        } catch (const pg::Error& e) {
            return std::string(pg_status_name(e.status())) + ": " + e.what();
        }
    };
    // Without its last merge, the entry that merge made is neither a byte, a merge's result nor
    // <|endoftext|>: refused, never made a special token.
    const std::string short_merges = merges.substr(0, merges.rfind('\n', merges.size() - 2) + 1);
    std::string m = message_of([&] { pg::bpe::load_gpt2(enc, short_merges); });
    CHECK(contains(m, "PG_ERR_FORMAT"));
    CHECK(contains(m, "1 of 268 entries"));
    CHECK(contains(m, "vocab.bpe is truncated"));
    m = message_of([&] { pg::bpe::load_gpt2(enc, ""); });
    CHECK(contains(m, "11 of 268 entries"));
    // A hole in encoder.json's ids (the last entry moved one id up).
    std::string holed = enc;
    holed.replace(holed.rfind(':') + 1, std::string::npos, "268}");
    m = message_of([&] { pg::bpe::load_gpt2(holed, merges); });
    CHECK(contains(m, "PG_ERR_FORMAT"));
    CHECK(contains(m, "hole: no entry has id 267"));
    // GPT-2's files can declare no other special token: writing one is refused.
    std::vector<BpeTokenizer::Token> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back({b, std::string(1, char(b))});
    auto trained = BpeTokenizer::from_merges(Pattern::kGpt2, bytes, {}, {{256, "<|endoftext|>"}, {257, "<|pad|>"}}, false, false);
    m = message_of([&] { pg::bpe::write_gpt2(*trained, &enc, &merges); });
    CHECK(contains(m, "PG_ERR_UNSUPPORTED"));
    CHECK(contains(m, "<|pad|>"));
}

#ifdef PG_TEST_BPE_PEERS
TEST_CASE("tiktoken's golden vectors (gpt2, cl100k_base) on the real rank files", "[bpe][peers]") {
    const auto load = [](const char* file, const char* encoding) {
        return pg::bpe::load_tiktoken(pg_test::read_text(peer_file(file)), encoding);
    };
    auto gpt2 = load("gpt2.tiktoken", "gpt2");
    CHECK(gpt2->encode("hello world") == std::vector<int32_t>{31373, 995});
    CHECK(gpt2->encode(std::string(9, '0')) == std::vector<int32_t>{10535, 830});
    CHECK(gpt2->encode(std::string(16, '0')) == std::vector<int32_t>{25645});
    CHECK(gpt2->encode_with_special("hello <|endoftext|>", {}, true) == std::vector<int32_t>{31373, 220, 50256});
    CHECK(gpt2->vocab_size() == 50257);
    auto cl = load("cl100k_base.tiktoken", "cl100k_base");
    CHECK(cl->encode("'rer") == std::vector<int32_t>{2351, 81});
    CHECK(cl->encode("today\n ") == std::vector<int32_t>{31213, 198, 220});
    CHECK(cl->encode("today\n \n") == std::vector<int32_t>{31213, 27907});
    CHECK(cl->encode("today\n  \n") == std::vector<int32_t>{31213, 14211});
    CHECK(cl->encode(" \xC2\x85" "0") == std::vector<int32_t>{220, 126, 227, 15});
    CHECK(cl->encode("\xF0\x9F\x91\x8D") == std::vector<int32_t>{9468, 239, 235});
    CHECK(cl->encode_with_special("<|endoftext|>", {}, true) == std::vector<int32_t>{100257});
    CHECK(cl->vocab_size() == 100277);
    // Rank files written back are byte-identical to the ones read.
    CHECK(pg::bpe::write_tiktoken(*cl) == pg_test::read_text(peer_file("cl100k_base.tiktoken")));
}

TEST_CASE("truncated real files are refused: gpt2.tiktoken as gpt2, GPT-2's vocab.bpe", "[bpe][peers][corruption]") {
    const std::string ranks = pg_test::read_text(peer_file("gpt2.tiktoken"));
    std::size_t cut = 0;
    for (int line = 0; line < 3766; ++line) cut = ranks.find('\n', cut) + 1;
    try {
        pg::bpe::load_tiktoken(ranks.substr(0, cut), "gpt2");
        FAIL("3,766 of gpt2's ranks loaded as gpt2");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_FORMAT);
        CHECK(contains(e.what(), "has 3766 ranks; encoding gpt2 has 50256 (50257 tokens"));
    }
    const std::string enc = pg_test::read_text(peer_file("gpt2_encoder.json"));
    const std::string bpe = pg_test::read_text(peer_file("gpt2_vocab.bpe"));
    for (const std::size_t keep : {std::size_t(0), bpe.size() / 2}) {
        try {
            pg::bpe::load_gpt2(enc, bpe.substr(0, bpe.rfind('\n', keep) == std::string::npos ? 0 : bpe.rfind('\n', keep) + 1));
            FAIL("GPT-2's encoder.json loaded with " << keep << " bytes of vocab.bpe");
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_FORMAT);
            CHECK(contains(e.what(), "vocab.bpe is truncated"));
        }
    }
}

TEST_CASE("GPT-2's encoder.json + vocab.bpe encode like tiktoken's gpt2 and write back", "[bpe][peers]") {
    const std::string enc = pg_test::read_text(peer_file("gpt2_encoder.json"));
    const std::string bpe = pg_test::read_text(peer_file("gpt2_vocab.bpe"));
    auto g = pg::bpe::load_gpt2(enc, bpe);
    auto tk = pg::bpe::load_tiktoken(pg_test::read_text(peer_file("gpt2.tiktoken")), "gpt2");
    CHECK(g->special_id("<|endoftext|>") == 50256);
    const std::string text = "Hello world, it's 2026!\n\n  The   quick brown fox's tail.";
    CHECK(g->encode(text) == tk->encode(text));
    // tiktoken's ranks converted to merges give GPT-2's own merge list.
    std::string enc2, bpe2;
    pg::bpe::write_gpt2(*tk, &enc2, &bpe2);
    CHECK(bpe2 == bpe);
}
#endif

namespace {

std::vector<std::string> regex_split(const std::string& regex, const std::string& text) {
    std::vector<std::size_t> ends;
    pg::bpe::SplitRegex(regex, "test regex").piece_ends(reinterpret_cast<const unsigned char*>(text.data()),
                                                        text.size(), ends);
    std::vector<std::string> out;
    std::size_t b = 0;
    for (std::size_t e : ends) out.push_back(text.substr(b, e - b)), b = e;
    return out;
}

}  // namespace

TEST_CASE("a Split regex in PCRE2: matches and the stretches between them are pieces", "[bpe]") {
    // The cl100k regex in PCRE2 splits as the built-in scanner does.
    const std::string text = "IT'S 12345 today\n \n caf\xC3\xA9, \xE4\xB8\xAD\xE6\x96\x87!!\n\n  x";
    CHECK(regex_split(pg::bpe::pattern_regex(Pattern::kCl100k), text) == split(Pattern::kCl100k, text));
    CHECK(regex_split(pg::bpe::pattern_regex(Pattern::kQwen), text) == split(Pattern::kQwen, text));
    CHECK(regex_split("\\d+", "ab12cd3") == Pieces{"ab", "12", "cd", "3"});
    CHECK(regex_split("b*", "abba") == Pieces{"a", "bb", "a"});  // empty matches make no piece
    CHECK(regex_split("\\p{L}+", "a\xFF\xFE" "b") == Pieces{"a", "\xFF\xFE", "b"});  // bytes that are not UTF-8
    CHECK(regex_split("x", "").empty());
    try {
        pg::bpe::SplitRegex("(\\p{L}+", "tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex");
        FAIL("a broken regex compiled");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_FORMAT);
        CHECK(contains(e.what(), "pretokenizers[0].pattern.Regex does not compile"));
    }
}

TEST_CASE("NFC, always-matched added tokens, a Split regex and a template survive tokenizer.json and the blob", "[bpe]") {
    auto t = small_bpe(Pattern::kQwen);
    const int32_t eot = t->special_id("<|endoftext|>");
    t->set_text_rules(true, {eot});
    const std::string composed = "caf\xC3\xA9 12", decomposed = "cafe\xCC\x81 12";
    CHECK(t->encode(decomposed) == t->encode(composed));
    const std::vector<int32_t> nfc_ids = t->encode(decomposed);
    CHECK(t->decode(nfc_ids.data(), nfc_ids.size()) == composed);
    CHECK(t->encode("\xFF" + decomposed) == t->encode("\xFF" + composed));  // invalid bytes pass through
    // Matched without being allowed; the text on either side normalized on its own.
    const std::vector<int32_t> ids = t->encode("e\xCC\x81<|endoftext|>\xCC\x81");
    CHECK(std::count(ids.begin(), ids.end(), eot) == 1);
    CHECK(t->decode(ids.data(), ids.size()) == "\xC3\xA9<|endoftext|>\xCC\x81");
    t->set_split_regex("\\p{L}+|\\p{N}|\\s+|[^\\s\\p{L}\\p{N}]+", "test regex");
    t->set_template({eot}, {eot});
    const std::string text = "the aaaaabc, e\xCC\x81 \xF0\x9F\x91\x8D 123<|endoftext|>\n\n x";
    const std::vector<int32_t> want = t->encode(text);
    auto hf = pg::bpe::load_hf(pg::bpe::write_hf(*t));
    CHECK(hf->encode(text) == want);
    CHECK(hf->nfc());
    CHECK(hf->always_matched() == std::vector<int32_t>{eot});
    REQUIRE(hf->split_regex() != nullptr);
    CHECK(*hf->split_regex() == *t->split_regex());
    CHECK(hf->template_before() == std::vector<int32_t>{eot});
    CHECK(hf->template_after() == std::vector<int32_t>{eot});
    // The C API adds the template's tokens only when asked.
    pg_tokenizer* handle = nullptr;
    const std::string json = pg::bpe::write_hf(*t);
    REQUIRE(pg_tokenizer_create_hf(json.data(), json.size(), &handle) == PG_OK);
    pg_encode_options o;
    pg_encode_options_default(&o);
    o.add_special_tokens = 1;
    std::vector<int32_t> with(want.size() + 2);
    std::size_t n = 0;
    REQUIRE(pg_tokenizer_encode_with(handle, text.data(), text.size(), &o, with.data(), with.size(), &n) == PG_OK);
    CHECK(n == want.size() + 2);
    CHECK(with.front() == eot);
    CHECK(with.back() == eot);
    CHECK(std::equal(want.begin(), want.end(), with.begin() + 1));
    pg_tokenizer_free(handle);
    const auto blob = t->serialize();
    auto back = pg::deserialize_tokenizer(blob.data(), blob.size());
    CHECK(back->encode(text) == want);
    CHECK(back->serialize() == blob);
    for (std::size_t cut = blob.size() - 80; cut < blob.size(); ++cut) {
        std::vector<uint8_t> b(blob.begin(), blob.begin() + std::ptrdiff_t(cut));
        try {
            pg::deserialize_tokenizer(b.data(), b.size());
            FAIL("truncated at " << cut << " loaded");
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_FORMAT);
        }
    }
    // An always-matched id that is no special token is refused.
    try {
        t->set_text_rules(false, {0});
        FAIL("an ordinary id became always-matched");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_FORMAT);
    }
}

TEST_CASE("HF's Digits before GPT-2's regex: digits one by one or in runs, kept by both formats", "[bpe]") {
    std::vector<BpeTokenizer::Token> vocab;
    for (int b = 0; b < 256; ++b) vocab.push_back({b, std::string(1, char(b))});
    vocab.push_back({256, "12"});
    vocab.push_back({257, " 1"});
    auto t = BpeTokenizer::from_merges(Pattern::kGpt2, vocab, {{'1', '2'}, {' ', '1'}}, {}, false, false);
    const std::string text = "a 12 \xD9\xA1" "1";  // an Arabic-Indic digit beside an ASCII one
    using Ids = std::vector<int32_t>;
    CHECK(t->encode(text) == Ids{'a', ' ', 256, ' ', 0xD9, 0xA1, '1'});
    t->set_digit_split(BpeTokenizer::DigitSplit::kIndividual);
    const Ids each = {'a', ' ', '1', '2', ' ', 0xD9, 0xA1, '1'};
    CHECK(t->encode(text) == each);
    CHECK(t->encode("a 1") == Ids{'a', ' ', '1'});  // " 1" is no longer one piece
    CHECK(t->decode(each.data(), each.size()) == text);
    auto hf = pg::bpe::load_hf(pg::bpe::write_hf(*t));
    CHECK(hf->digit_split() == BpeTokenizer::DigitSplit::kIndividual);
    CHECK(hf->encode(text) == each);
    t->set_digit_split(BpeTokenizer::DigitSplit::kRuns);
    CHECK(t->encode(text) == Ids{'a', ' ', 256, ' ', 0xD9, 0xA1, '1'});  // the run \u0661 1 has no merge
    const auto blob = t->serialize();
    auto back = pg::deserialize_tokenizer(blob.data(), blob.size());
    CHECK(back->encode(text) == t->encode(text));
    CHECK(back->serialize() == blob);
}
