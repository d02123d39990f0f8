// The BPE trainer (tokenizer/bpe_trainer.hpp, pg_bpe_train): HF BpeTrainer's own unit example,
// a plain full-rescan reference, ids in HF's order, thread-count independence, cancellation and
// bad arguments. The comparison with HF tokenizers itself is tests/npm/check_bpe_train.js.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "phonegpt/phonegpt.h"
#include "tokenizer/bpe_formats.hpp"
#include "tokenizer/bpe_pretokenize.hpp"
#include "tokenizer/bpe_trainer.hpp"

namespace {

using pg::BpeTokenizer;
using pg::bpe::Pattern;

std::vector<std::string> merge_strings(const BpeTokenizer& t) {
    std::vector<std::string> out;
    for (const auto& m : t.merge_list()) out.push_back(*t.token_bytes(m.left) + "+" + *t.token_bytes(m.right));
    return out;
}

std::unique_ptr<BpeTokenizer> train(const std::vector<std::string>& texts, int32_t vocab_size, int64_t min_frequency,
                                    int threads = 1, std::vector<std::string> specials = {}) {
    std::vector<std::string_view> views(texts.begin(), texts.end());
    pg::bpe::TrainOptions o;
    o.vocab_size = vocab_size;
    o.min_frequency = min_frequency;
    o.n_threads = threads;
    o.special_tokens = std::move(specials);
    return pg::bpe::train_bpe(views, o);
}

// The plain reference: count every pair of every word again before each merge, take the most
// frequent, ties to the smallest (left id, right id) with HF's ids (bytes by their byte-level
// character, merged tokens after them in order).
std::vector<std::string> reference_merges(const std::vector<std::string>& texts, int32_t vocab_size, int64_t min_frequency) {
    std::map<std::string, int64_t> word_count;
    for (const auto& t : texts)
        pg::bpe::for_each_piece(Pattern::kGpt2, reinterpret_cast<const unsigned char*>(t.data()), t.size(),
                                [&](std::size_t b, std::size_t e) { ++word_count[t.substr(b, e - b)]; });
    std::vector<std::string> token;  // id -> bytes
    std::vector<int> order(256);
    for (int b = 0; b < 256; ++b) order[b] = b;
    std::sort(order.begin(), order.end(),
              [](int x, int y) { return pg::bpe::byte_to_unicode(uint8_t(x)) < pg::bpe::byte_to_unicode(uint8_t(y)); });
    std::map<std::string, int> id_of;
    for (int b : order) {
        id_of[std::string(1, char(b))] = int(token.size());
        token.emplace_back(1, char(b));
    }
    std::vector<std::pair<std::vector<int>, int64_t>> words;
    for (const auto& [w, n] : word_count) {
        std::vector<int> s;
        for (char c : w) s.push_back(id_of[std::string(1, c)]);
        words.emplace_back(s, n);
    }
    std::vector<std::string> merges;
    while (int32_t(token.size()) < vocab_size) {
        std::map<std::pair<int, int>, int64_t> count;
        for (const auto& [s, n] : words)
            for (std::size_t i = 0; i + 1 < s.size(); ++i) count[{s[i], s[i + 1]}] += n;
        std::pair<int, int> best{-1, -1};
        int64_t best_n = 0;
        for (const auto& [p, n] : count)  // map order: the first of equal counts is the smallest pair
            if (n > best_n) best_n = n, best = p;
        if (best_n < 1 || best_n < min_frequency) break;
        const std::string joined = token[std::size_t(best.first)] + token[std::size_t(best.second)];
        REQUIRE(id_of.count(joined) == 0);  // this reference has no second way to a token
        id_of[joined] = int(token.size());
        token.push_back(joined);
        merges.push_back(token[std::size_t(best.first)] + "+" + token[std::size_t(best.second)]);
        for (auto& [s, n] : words) {
            std::vector<int> out;
            for (std::size_t i = 0; i < s.size(); ++i) {
                if (i + 1 < s.size() && s[i] == best.first && s[i + 1] == best.second) {
                    out.push_back(id_of[joined]);
                    ++i;
                } else {
                    out.push_back(s[i]);
                }
            }
            s = out;
        }
    }
    return merges;
}

// Words of a small made-up language, many of them, as lines.
std::vector<std::string> made_up_lines(std::size_t n_lines, uint32_t seed) {
    const char* syllables[] = {"ka", "lo", "mi", "ren", "sa", "to", "qu", "ee", "ng", "th", "or", "in", "a", "e"};
    std::mt19937 rng(seed);
    std::vector<std::string> lines;
    for (std::size_t l = 0; l < n_lines; ++l) {
        std::string line;
        const int n_words = 3 + int(rng() % 8);
        for (int w = 0; w < n_words; ++w) {
            if (w) line += (rng() % 9 == 0) ? ", " : " ";
            const int n_syl = 1 + int(rng() % 4);
            for (int s = 0; s < n_syl; ++s) line += syllables[rng() % 14];
            if (rng() % 17 == 0) line += std::to_string(rng() % 1000);
        }
        lines.push_back(line + ".\n");
    }
    return lines;
}

}  // namespace

TEST_CASE("trainer: HF BpeTrainer's own example gives its three merges", "[bpe][bpe_train]") {
    // tokenizers/src/models/bpe/trainer.rs, test_train: these word counts, min_frequency 2.
    const std::vector<std::pair<std::string, int>> counts = {{"roses", 1}, {"are", 2}, {"red", 1}, {"voilets", 1},
                                                             {"blue", 1},  {"BERT", 1}, {"is", 2}, {"big", 1},
                                                             {"and", 1},   {"so", 1},   {"GPT-2", 1}};
    std::vector<std::string> texts;
    for (const auto& [w, n] : counts)
        for (int i = 0; i < n; ++i) texts.push_back(w);
    const auto t = train(texts, 30000, 2);
    CHECK(merge_strings(*t) == std::vector<std::string>{"r+e", "a+re", "i+s"});
    CHECK(t->vocab_size() == 256 + 3);
    // Ids as HF numbers them: the bytes by their byte-level character ('!' first, the bytes
    // that map above U+00FF last), then the new tokens in order.
    CHECK(t->tokens()[0].bytes == "!");
    CHECK(t->tokens()[188].bytes == std::string(1, '\0'));
    CHECK(*t->token_bytes(256) == "re");
    CHECK(*t->token_bytes(258) == "is");
    CHECK(t->encode("are is") == std::vector<int32_t>{257, t->encode(" ")[0], 258});
}

TEST_CASE("trainer: equal to a plain full-rescan reference, and min_frequency stops it", "[bpe][bpe_train]") {
    const auto lines = made_up_lines(1500, 7);
    for (int64_t min_frequency : {0, 2, 50}) {
        const auto t = train(lines, 600, min_frequency);
        const auto want = reference_merges(lines, 600, min_frequency);
        CHECK(merge_strings(*t) == want);
        if (min_frequency == 50) CHECK(t->vocab_size() < 600);
        else CHECK(t->vocab_size() == 600);
    }
}

TEST_CASE("trainer: the same tokenizer on any thread count, one text or many", "[bpe][bpe_train]") {
    // > 2 MB in one text makes the counting threads cut it; common pairs are in > 2,048 words,
    // so merges run on the pool too.
    const auto lines = made_up_lines(60000, 11);
    std::string joined;
    for (const auto& l : lines) joined += l;
    REQUIRE(joined.size() > (2u << 20));
    const auto blob = [](const BpeTokenizer& t) { return t.serialize(); };
    const auto one = train({joined}, 2000, 2, 1);
    CHECK(blob(*train({joined}, 2000, 2, 2)) == blob(*one));
    CHECK(blob(*train({joined}, 2000, 2, 3)) == blob(*one));
    const auto many = train(lines, 2000, 2, 1);
    CHECK(blob(*train(lines, 2000, 2, 2)) == blob(*many));
    // Cutting a text where no piece crosses gives the pieces of the whole text, so one text
    // and the lines (each ending in '\n', pieces never crossing a line end before a letter)
    // train the same merges here.
    CHECK(merge_strings(*one) == merge_strings(*many));
    // Any bytes encode and decode back with the trained vocabulary.
    std::string bytes;
    for (int i = 0; i < 3000; ++i) bytes.push_back(char(i * 37 % 251));
    const auto ids = one->encode(joined.substr(0, 5000) + bytes);
    CHECK(one->decode(ids.data(), ids.size()) == joined.substr(0, 5000) + bytes);
}

TEST_CASE("trainer through the C API: special tokens first, options, cancel, bad arguments", "[bpe][bpe_train][capi]") {
    const auto lines = made_up_lines(500, 3);
    std::vector<const char*> texts;
    std::vector<size_t> lens;
    for (const auto& l : lines) texts.push_back(l.data()), lens.push_back(l.size());
    const char* specials[] = {"<|endoftext|>", "<|pad|>"};
    pg_bpe_train_options o;
    pg_bpe_train_options_default(&o);
    CHECK(o.min_frequency == 2);
    CHECK(o.pattern == PG_BPE_PATTERN_GPT2);
    o.special_tokens = specials;
    o.n_special_tokens = 2;
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_bpe_train(texts.data(), lens.data(), texts.size(), 400, &o, &tok) == PG_OK);
    int32_t vocab = 0, id = -1;
    REQUIRE(pg_tokenizer_vocab_size(tok, &vocab) == PG_OK);
    CHECK(vocab == 400);
    REQUIRE(pg_tokenizer_special_id(tok, "<|pad|>", &id) == PG_OK);
    CHECK(id == 1);
    // The options of an older caller that knew only min_frequency: the rest are defaults.
    pg_bpe_train_options old;
    pg_bpe_train_options_default(&old);
    old.struct_size = offsetof(pg_bpe_train_options, pattern);
    old.min_frequency = 1000000;
    pg_tokenizer* small = nullptr;
    REQUIRE(pg_bpe_train(texts.data(), lens.data(), texts.size(), 400, &old, &small) == PG_OK);
    REQUIRE(pg_tokenizer_vocab_size(small, &vocab) == PG_OK);
    CHECK(vocab == 256);
    pg_tokenizer_free(small);
    pg_tokenizer_free(tok);

    // Cancel after 10 merges: PG_ERR_CANCELLED, nothing returned.
    struct Counter {
        int calls = 0;
    } counter;
    o.progress = [](void* user, int64_t done, int64_t total) {
        auto* c = static_cast<Counter*>(user);
        CHECK(total == 400);
        CHECK(done > 258);
        return ++c->calls == 10 ? 1 : 0;
    };
    o.progress_user = &counter;
    tok = reinterpret_cast<pg_tokenizer*>(&counter);
    CHECK(pg_bpe_train(texts.data(), lens.data(), texts.size(), 400, &o, &tok) == PG_ERR_CANCELLED);
    CHECK(tok == nullptr);
    CHECK(counter.calls == 10);
    CHECK(std::string(pg_last_error()).find("cancelled") != std::string::npos);
    o.progress = nullptr;

    const auto fails = [&](int32_t vocab_size, const pg_bpe_train_options* opts, const char* says) {
        pg_tokenizer* t = nullptr;
        const pg_status s = pg_bpe_train(texts.data(), lens.data(), texts.size(), vocab_size, opts, &t);
        CHECK(s == PG_ERR_INVALID_ARGUMENT);
        CHECK(t == nullptr);
        CHECK(std::string(pg_last_error()).find(says) != std::string::npos);
    };
    fails(257, &o, "vocab_size 257");  // 256 bytes + 2 specials do not fit
    pg_bpe_train_options bad = o;
    bad.min_frequency = -1;
    fails(400, &bad, "min_frequency");
    bad = o;
    bad.pattern = pg_bpe_pattern(9);
    fails(400, &bad, "pattern");
    bad = o;
    const char* twice[] = {"<|a|>", "<|a|>"};
    bad.special_tokens = twice;
    fails(400, &bad, "given twice");
    const char* with_null[] = {"<|a|>", nullptr};
    bad.special_tokens = with_null;
    fails(400, &bad, "special_tokens[1] is NULL");
    const char* one_byte[] = {"!"};
    bad.special_tokens = one_byte;
    bad.n_special_tokens = 1;
    fails(400, &bad, "single byte");
    CHECK(pg_bpe_train(texts.data(), lens.data(), texts.size(), 400, &o, nullptr) == PG_ERR_INVALID_ARGUMENT);
    pg_tokenizer* t = nullptr;
    CHECK(pg_bpe_train(nullptr, nullptr, 3, 400, &o, &t) == PG_ERR_INVALID_ARGUMENT);
    // No text at all: just the bytes and the specials.
    REQUIRE(pg_bpe_train(nullptr, nullptr, 0, 400, nullptr, &t) == PG_OK);
    REQUIRE(pg_tokenizer_vocab_size(t, &vocab) == PG_OK);
    CHECK(vocab == 256);
    pg_tokenizer_free(t);
}
