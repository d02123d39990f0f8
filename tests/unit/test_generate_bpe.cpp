// Stop strings with a byte-level BPE vocabulary: they are matched in the text the streaming
// decoder (pg_token_stream) emits, so a stop string split across tokens, or inside a character
// whose bytes come in different tokens, is found at the token that completes it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "core/error.hpp"
#include "eval/generate.hpp"
#include "phonegpt/phonegpt.h"
#include "test_eval_support.hpp"
#include "tokenizer/utf8_stream.hpp"
#include "session_calls.hpp"

using pg_eval_test::ModelPtr;

namespace {

const char* const kText =
    "the cat sat on the mat. the cat ate the rat. caf\xC3\xA9 na\xC3\xAFve caf\xC3\xA9 the mat sat. ";

struct TokenizerDeleter {
    void operator()(pg_tokenizer* t) const { pg_tokenizer_free(t); }
};
using TokenizerPtr = std::unique_ptr<pg_tokenizer, TokenizerDeleter>;

// A small trained BPE vocabulary: the 256 bytes and 44 merges of kText repeated.
TokenizerPtr small_bpe() {
    std::string text;
    for (int i = 0; i < 20; ++i) text += kText;
    const char* texts[1] = {text.c_str()};
    const size_t lens[1] = {text.size()};
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_bpe_train(texts, lens, 1, 300, nullptr, &tok) == PG_OK);
    return TokenizerPtr(tok);
}

// The streamed text after each token: what pg_token_stream has emitted after token k.
std::vector<std::string> streamed_prefixes(const pg::Tokenizer& tok, const std::vector<int32_t>& ids) {
    std::vector<std::string> prefixes(1);
    std::string pending;
    for (int32_t id : ids) {
        pending += tok.decode(&id, 1);
        prefixes.push_back(prefixes.back() + pg::utf8::take_complete(pending, false));
    }
    return prefixes;
}

// The number of tokens after which `stop` first occurs in the streamed text (0 = never).
std::size_t first_completion(const std::vector<std::string>& prefixes, const std::string& stop) {
    for (std::size_t k = 1; k < prefixes.size(); ++k)
        if (prefixes[k].find(stop) != std::string::npos) return k;
    return 0;
}

// How many pushes until the matcher reports the stop string (0 = never).
std::size_t matcher_completion(const pg::Tokenizer& tok, const std::vector<int32_t>& ids, const std::string& stop) {
    pg::StopStringMatcher m(tok, {"never-there", stop});
    for (std::size_t k = 0; k < ids.size(); ++k)
        if (m.push(ids[k])) return k + 1;
    return 0;
}

int32_t byte_id(const pg::Tokenizer& tok, unsigned char b) {
    const std::vector<int32_t> ids = tok.encode(std::string(1, char(b)));
    REQUIRE(ids.size() == 1);
    return ids[0];
}

}  // namespace

TEST_CASE("stop strings match across BPE tokens at the token that completes them", "[generate][bpe]") {
    TokenizerPtr bpe = small_bpe();
    const pg::Tokenizer& tok = *bpe->impl;
    const std::vector<int32_t> ids = tok.encode(kText);
    REQUIRE(ids.size() < std::string(kText).size() / 2);  // merged: most tokens hold several bytes
    const std::vector<std::string> prefixes = streamed_prefixes(tok, ids);
    const std::string text = prefixes.back();
    REQUIRE(text == kText);
    // Every substring of the text up to 7 bytes that is whole characters: the matcher stops
    // where the streamed text first contains it. Count the ones that span a token boundary.
    int spanning = 0;
    for (std::size_t at = 0; at < text.size(); ++at) {
        for (std::size_t len = 1; len <= 7 && at + len <= text.size(); ++len) {
            const std::string stop = text.substr(at, len);
            if (!pg::utf8::first_invalid(stop).empty()) continue;
            INFO("stop \"" << stop << "\"");
            const std::size_t k = first_completion(prefixes, stop);
            REQUIRE(k > 0);
            CHECK(matcher_completion(tok, ids, stop) == k);
            if (prefixes[k].find(stop) < prefixes[k - 1].size()) ++spanning;
        }
    }
    CHECK(spanning > 100);
}

TEST_CASE("a stop string inside a character split across tokens matches once it is complete", "[generate][bpe]") {
    TokenizerPtr bpe = small_bpe();
    const pg::Tokenizer& tok = *bpe->impl;
    std::vector<int32_t> ids = tok.encode("caf");
    const std::size_t n_caf = ids.size();
    ids.push_back(byte_id(tok, 0xC3));  // "é" = C3 A9, one byte per token
    ids.push_back(byte_id(tok, 0xA9));
    for (int32_t id : tok.encode(" ok")) ids.push_back(id);
    CHECK(matcher_completion(tok, ids, "f\xC3\xA9") == n_caf + 2);  // not before its second byte
    CHECK(matcher_completion(tok, ids, "\xC3\xA9 o") > n_caf + 2);
    // Bytes that never become a character are U+FFFD in the stream, and match as such.
    std::vector<int32_t> bad = tok.encode("caf");
    bad.push_back(byte_id(tok, 0xC3));
    for (int32_t id : tok.encode("x!")) bad.push_back(id);
    CHECK(matcher_completion(tok, bad, "f\xEF\xBF\xBDx") == n_caf + 2);
    // A stop string that is not UTF-8 could never match the decoded text: refused.
    CHECK_THROWS_AS(pg::StopStringMatcher(tok, {"\xC3"}), pg::Error);
    CHECK_THROWS_WITH(pg::StopStringMatcher(tok, {"ok", ""}), Catch::Contains("stop string 1 is empty"));
}

TEST_CASE("pg_generate with a BPE model stops at a stop string spanning two tokens", "[generate][bpe]") {
    TokenizerPtr bpe = small_bpe();
    const pg::Tokenizer& tok = *bpe->impl;
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    mc.vocab_size = tok.vocab_size();
    mc.padded_vocab_size = 0;
    pg_model* raw = nullptr;
    REQUIRE(pg_model_create(&mc, 21, &raw) == PG_OK);
    ModelPtr m(raw);
    pg_eval_test::perturb_weights(m.get(), 0.2f, 4);
    REQUIRE(pg_model_set_tokenizer(m.get(), bpe.get()) == PG_OK);

    pg_sample_config c;
    pg_sample_config_default(&c);
    c.max_tokens = 80;
    c.seed = 9;
    const std::vector<int32_t> prompt = tok.encode("the cat");
    std::vector<int32_t> full(81);
    size_t n = 0;
    REQUIRE(pg_test::generate(m.get(), prompt.data(), prompt.size(), &c, full.data(), full.size(), &n) == PG_OK);
    REQUIRE(n == 80);
    full.resize(n);
    const std::vector<std::string> prefixes = streamed_prefixes(tok, full);

    // Stop strings of the last character before a token boundary and the first after it.
    int spanning = 0;
    for (std::size_t k = 10; k < 70; ++k) {
        const std::string& before = prefixes[k - 1];
        const std::string& after = prefixes[k];
        if (before.empty() || after.size() == before.size()) continue;
        std::size_t start = before.size() - 1;  // the last character of `before`
        while (start > 0 && (static_cast<unsigned char>(before[start]) & 0xC0) == 0x80) --start;
        uint32_t cp;
        int len = 0;
        REQUIRE(pg::utf8::decode_at(after, before.size(), &cp, &len) == nullptr);
        const std::string stop = after.substr(start, before.size() - start + std::size_t(len));
        const std::size_t expect = first_completion(prefixes, stop);
        if (expect == k) ++spanning;
        const char* stops[1] = {stop.c_str()};
        c.stop_strings = stops;
        c.n_stop_strings = 1;
        std::vector<int32_t> cut(81);
        REQUIRE(pg_test::generate(m.get(), prompt.data(), prompt.size(), &c, cut.data(), cut.size(), &n) == PG_OK);
        INFO("boundary after token " << k << ", stop \"" << stop << "\"");
        CHECK(n == expect);
        CHECK(std::equal(cut.begin(), cut.begin() + long(n), full.begin()));
    }
    CHECK(spanning > 10);
    // Invalid UTF-8 as a stop string is a clear error.
    const char* bad[1] = {"\xE2\x82"};
    c.stop_strings = bad;
    REQUIRE(pg_test::generate(m.get(), prompt.data(), prompt.size(), &c, full.data(), full.size(), &n) ==
            PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("not valid UTF-8"));
}
