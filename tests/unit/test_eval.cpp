// Whole-split evaluation: the window plan scores every prediction exactly once, the mean is
// independent of batch size and threads to the last bit, it equals a brute-force computation
// with the scalar reference model, and every bad argument is rejected. Plus the sampled
// estimate, and bits per byte against the bytes the scored targets decode to.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "core/rng.hpp"
#include "eval/evaluate.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "test_eval_support.hpp"
#include "phonegpt/phonegpt.h"
#include "session_calls.hpp"

using pg_eval_test::ModelPtr;

namespace {

// Brute-force statement of the rule in phonegpt.h, independent of plan_windows: where the
// context of prediction j (1 <= j <= P = N-1) starts.
int64_t context_start(int64_t j, int64_t P, int64_t W, int64_t S) {
    if (P <= W) return 0;
    if (S == W) return (j - 1) / W * W;
    if (j <= W) return 0;
    const int64_t last_full_end = (P - W) / S * S + W;
    if (j <= last_full_end) return (j - W + S - 1) / S * S;
    return P - W;
}

pg_eval_result eval_c(const pg_model* m, const std::vector<int32_t>& tokens, int window, int stride,
                      int batch, int threads) {
    pg_eval_config c;
    pg_eval_config_default(&c);
    c.window = window;
    c.stride = stride;
    c.batch_size = batch;
    c.n_threads = threads;
    pg_eval_result r;
    r.struct_size = sizeof r;
    REQUIRE(pg_test::evaluate(m, tokens.data(), tokens.size(), &c, &r) == PG_OK);
    return r;
}

}  // namespace

TEST_CASE("window plan: every prediction scored exactly once, as documented", "[eval]") {
    for (int64_t N = 2; N <= 70; ++N) {
        for (int W = 1; W <= 12; ++W) {
            for (int S = 1; S <= W; ++S) {
                INFO("N=" << N << " W=" << W << " S=" << S);
                const int64_t P = N - 1;
                const auto plan = pg::plan_windows(N, W, S);
                std::vector<int> hits(size_t(N), 0);
                for (size_t k = 0; k < plan.size(); ++k) {
                    const pg::EvalWindow& w = plan[k];
                    REQUIRE(w.length >= 1);
                    REQUIRE(w.length <= W);
                    REQUIRE(w.start >= 0);
                    REQUIRE(w.start + w.length <= P);  // every target inside the split
                    REQUIRE(w.first_scored >= 0);
                    REQUIRE(w.first_scored < w.length);
                    for (int t = w.first_scored; t < w.length; ++t) {
                        const int64_t j = w.start + t + 1;  // the predicted token
                        hits[size_t(j)]++;
                        // Same context as the rule's brute-force statement.
                        REQUIRE(w.start == context_start(j, P, W, S));
                    }
                }
                for (int64_t j = 1; j < N; ++j) REQUIRE(hits[size_t(j)] == 1);
                REQUIRE(hits[0] == 0);
                if (S == W || P <= W) {
                    REQUIRE(plan.size() == size_t((P + W - 1) / W));
                    for (const auto& w : plan) REQUIRE(w.first_scored == 0);
                }
            }
        }
    }
    // The documented examples.
    auto p = pg::plan_windows(10, 4, 4);
    REQUIRE(p.size() == 3);
    CHECK((p[2].start == 8 && p[2].length == 1 && p[2].first_scored == 0));
    p = pg::plan_windows(10, 4, 2);
    REQUIRE(p.size() == 4);
    CHECK((p[0].start == 0 && p[0].first_scored == 0));
    CHECK((p[1].start == 2 && p[1].first_scored == 2));
    CHECK((p[2].start == 4 && p[2].first_scored == 2));
    CHECK((p[3].start == 5 && p[3].length == 4 && p[3].first_scored == 3));
    p = pg::plan_windows(111540, 128, 128);
    CHECK(p.size() == 872);
    CHECK(p.back().length == 51);
}

TEST_CASE("pg_evaluate scores N-1 positions for every window and stride", "[eval]") {
    ModelPtr m = pg_eval_test::tiny_model(5);
    const int n_ctx = 16;
    for (size_t N : {size_t(2), size_t(5), size_t(16), size_t(17), size_t(18), size_t(33), size_t(100)}) {
        const auto tokens = pg_eval_test::random_tokens(N, 65, 11 + N);
        for (int W : {1, 3, 16}) {
            for (int S : {1, 2, W}) {
                if (S > W) continue;
                INFO("N=" << N << " W=" << W << " S=" << S);
                const pg_eval_result r = eval_c(m.get(), tokens, W == n_ctx ? 0 : W, S == W ? 0 : S, 4, 1);
                CHECK(r.n_scored == int64_t(N) - 1);
                CHECK(r.n_windows == int64_t(pg::plan_windows(int64_t(N), W, S).size()));
                CHECK(std::isfinite(r.mean_loss));
                CHECK(r.bits_per_token == Approx(r.mean_loss / std::log(2.0)).epsilon(1e-12));
            }
        }
    }
}

TEST_CASE("pg_evaluate is bit-identical for every batch size and thread count", "[eval]") {
    ModelPtr m = pg_eval_test::tiny_model(6);
    pg_eval_test::perturb_weights(m.get(), 0.3f, 21);  // sharper, less uniform predictions
    const auto tokens = pg_eval_test::random_tokens(301, 65, 3);
    for (int S : {16, 5}) {
        const pg_eval_result base = eval_c(m.get(), tokens, 0, S, 1, 1);
        for (int batch : {1, 2, 3, 7, 16, 64}) {
            for (int threads : {1, 2, 3}) {
                INFO("stride " << S << " batch " << batch << " threads " << threads);
                const pg_eval_result r = eval_c(m.get(), tokens, 0, S, batch, threads);
                CHECK(std::memcmp(&r.mean_loss, &base.mean_loss, sizeof(double)) == 0);
                CHECK(r.n_scored == 300);
            }
        }
    }
}

TEST_CASE("pg_evaluate is bit-identical across batch sizes and threads on the PhoneGPT geometry", "[eval]") {
    ModelPtr m = pg_eval_test::make_model("phonegpt", 3);
    pg_eval_test::perturb_weights(m.get(), 0.05f, 2);
    const auto tokens = pg_eval_test::random_tokens(700, 65, 6);  // 5 full windows and one of 59
    for (int S : {0, 96}) {
        const pg_eval_result base = eval_c(m.get(), tokens, 0, S, 1, 1);
        for (int batch : {2, 5}) {
            for (int threads : {1, 2}) {
                INFO("stride " << S << " batch " << batch << " threads " << threads);
                const pg_eval_result r = eval_c(m.get(), tokens, 0, S, batch, threads);
                CHECK(std::memcmp(&r.mean_loss, &base.mean_loss, sizeof(double)) == 0);
            }
        }
    }
}

TEST_CASE("pg_evaluate equals a brute-force computation with the reference model", "[eval]") {
    ModelPtr m = pg_eval_test::tiny_model(8);
    pg_eval_test::perturb_weights(m.get(), 0.3f, 4);  // sharper, less uniform predictions
    const auto tokens = pg_eval_test::random_tokens(45, 65, 8);
    const int64_t N = int64_t(tokens.size()), P = N - 1;
    for (int W : {16, 7}) {
        for (int S : {W, 3, 1}) {
            INFO("W=" << W << " S=" << S);
            // One reference forward per prediction, over exactly the context the rule gives it;
            // by causality its last position's loss is the scored loss.
            double sum = 0.0;
            for (int64_t j = 1; j <= P; ++j) {
                const int64_t s = context_start(j, P, W, S);
                sum += pg_eval_test::reference_last_loss(m.get(), tokens.data() + s, int(j - s), tokens[size_t(j)]);
            }
            const pg_eval_result r = eval_c(m.get(), tokens, W, S, 5, 2);
            CHECK(r.mean_loss == Approx(sum / double(P)).epsilon(1e-5));
        }
    }
}

TEST_CASE("pg_evaluate progress callback counts positions and can cancel", "[eval]") {
    ModelPtr m = pg_eval_test::tiny_model(9);
    const auto tokens = pg_eval_test::random_tokens(100, 65, 1);
    struct Seen {
        std::vector<int64_t> done;
        int64_t total = 0;
        int stop_after = -1;
    } seen;
    auto cb = [](void* user, int64_t done, int64_t total) -> int {
        auto* s = static_cast<Seen*>(user);
        s->done.push_back(done);
        s->total = total;
        return s->stop_after >= 0 && int(s->done.size()) >= s->stop_after;
    };
    pg_eval_config c;
    pg_eval_config_default(&c);
    c.batch_size = 2;
    c.progress = cb;
    c.progress_user = &seen;
    pg_eval_result r;
    r.struct_size = sizeof r;
    REQUIRE(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), &c, &r) == PG_OK);
    // 99 predictions in windows of 16: 6 full windows (3 batches of 2) and one of 3.
    CHECK(seen.done == std::vector<int64_t>{32, 64, 96, 99});
    CHECK(seen.total == 99);
    seen.done.clear();
    seen.stop_after = 2;
    r.n_scored = -5;
    CHECK(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), &c, &r) == PG_ERR_CANCELLED);
    CHECK(seen.done.size() == 2);
    CHECK(r.n_scored == -5);  // no result written
    CHECK_THAT(pg_last_error(), Catch::Contains("cancelled"));
}

TEST_CASE("pg_evaluate rejects bad arguments", "[eval]") {
    ModelPtr m = pg_eval_test::tiny_model(2);
    auto tokens = pg_eval_test::random_tokens(50, 65, 2);
    pg_eval_config c;
    pg_eval_result r;
    r.struct_size = sizeof r;
    auto status = [&](const std::vector<int32_t>& t, size_t n) {
        return pg_test::evaluate(m.get(), t.data(), n, &c, &r);
    };
    pg_eval_config_default(&c);
    CHECK(c.window == 0);
    CHECK(c.stride == 0);
    CHECK(c.batch_size == 16);
    CHECK(status(tokens, tokens.size()) == PG_OK);
    CHECK(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), nullptr, &r) == PG_OK);  // NULL = defaults

    c.window = 17;  // > n_ctx
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("window 17"));
    c.window = -1;
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    pg_eval_config_default(&c);
    c.window = 8;
    c.stride = 9;  // > window
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("stride 9"));
    c.stride = -2;
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    pg_eval_config_default(&c);
    c.stride = 17;  // > window = n_ctx
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    pg_eval_config_default(&c);
    c.batch_size = 0;
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("batch_size"));
    pg_eval_config_default(&c);
    CHECK(status(tokens, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(status(tokens, 0) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("at least 2"));
    tokens[37] = 65;  // == vocab_size
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("token 37 is 65"));
    tokens[37] = -1;
    CHECK(status(tokens, tokens.size()) == PG_ERR_INVALID_ARGUMENT);
    tokens[37] = 0;
    CHECK(pg_test::evaluate(nullptr, tokens.data(), tokens.size(), &c, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::evaluate(m.get(), nullptr, tokens.size(), &c, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), &c, nullptr) == PG_ERR_INVALID_ARGUMENT);
    r.struct_size = 0;
    CHECK(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), &c, &r) == PG_ERR_INVALID_ARGUMENT);
    r.struct_size = sizeof r;
    c.struct_size = 0;
    CHECK(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), &c, &r) == PG_ERR_INVALID_ARGUMENT);
    pg_eval_config_default(nullptr);  // no-op
}

TEST_CASE("pg_evaluate_sampled: a seeded, labelled estimate", "[eval]") {
    ModelPtr m = pg_eval_test::tiny_model(3);
    pg_eval_test::perturb_weights(m.get(), 0.3f, 9);  // sharper, less uniform predictions
    const auto tokens = pg_eval_test::random_tokens(200, 65, 5);
    pg_eval_result a, b, c;
    a.struct_size = b.struct_size = c.struct_size = sizeof a;
    REQUIRE(pg_test::evaluate_sampled(m.get(), tokens.data(), tokens.size(), 3, 4, 42, 1, &a) == PG_OK);
    REQUIRE(pg_test::evaluate_sampled(m.get(), tokens.data(), tokens.size(), 3, 4, 42, 2, &b) == PG_OK);
    REQUIRE(pg_test::evaluate_sampled(m.get(), tokens.data(), tokens.size(), 3, 4, 43, 1, &c) == PG_OK);
    CHECK(a.n_scored == 3 * 4 * 16);
    CHECK(a.n_windows == 12);
    CHECK(a.mean_loss == b.mean_loss);  // same seed, any threads
    CHECK(a.mean_loss != c.mean_loss);  // another seed, other windows
    CHECK(a.bits_per_token == Approx(a.mean_loss / std::log(2.0)));

    // The same windows by hand: offsets from pg::Rng(42).below(n - n_ctx), each window scored
    // on all 16 positions with the reference model.
    pg::Rng rng(42);
    double sum = 0.0;
    for (int w = 0; w < 12; ++w) {
        const size_t off = size_t(rng.below(200 - 16));
        for (int t = 1; t <= 16; ++t)
            sum += pg_eval_test::reference_last_loss(m.get(), tokens.data() + off, t, tokens[off + size_t(t)]);
    }
    CHECK(a.mean_loss == Approx(sum / (12 * 16)).epsilon(1e-5));

    // A split of exactly n_ctx + 1 tokens has one possible window.
    REQUIRE(pg_test::evaluate_sampled(m.get(), tokens.data(), 17, 2, 2, 1, 1, &a) == PG_OK);
    CHECK(a.mean_loss == Approx(eval_c(m.get(), std::vector<int32_t>(tokens.begin(), tokens.begin() + 17), 0, 0, 1, 1).mean_loss).epsilon(1e-6));

    CHECK(pg_test::evaluate_sampled(m.get(), tokens.data(), 16, 1, 1, 1, 1, &a) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("n_ctx + 1"));
    CHECK(pg_test::evaluate_sampled(m.get(), tokens.data(), 200, 0, 1, 1, 1, &a) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::evaluate_sampled(m.get(), tokens.data(), 200, 1, 0, 1, 1, &a) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::evaluate_sampled(nullptr, tokens.data(), 200, 1, 1, 1, 1, &a) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::evaluate_sampled(m.get(), nullptr, 200, 1, 1, 1, 1, &a) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::evaluate_sampled(m.get(), tokens.data(), 200, 1, 1, 1, 1, nullptr) == PG_ERR_INVALID_ARGUMENT);
    auto bad = tokens;
    bad[150] = 99;
    CHECK(pg_test::evaluate_sampled(m.get(), bad.data(), 200, 1, 1, 1, 1, &a) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("token 150"));
}

namespace {

struct TokenizerDeleter {
    void operator()(pg_tokenizer* t) const { pg_tokenizer_free(t); }
};
using TokenizerPtr = std::unique_ptr<pg_tokenizer, TokenizerDeleter>;

// A "tiny" model (2 layers, width 16, context 16) with the tokenizer's vocabulary.
ModelPtr tiny_model_for(const pg_tokenizer* tok, uint64_t seed) {
    pg_model_config c;
    REQUIRE(pg_model_config_preset("tiny", &c) == PG_OK);
    REQUIRE(pg_tokenizer_vocab_size(tok, &c.vocab_size) == PG_OK);
    c.padded_vocab_size = 0;
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&c, seed, &m) == PG_OK);
    REQUIRE(pg_model_set_tokenizer(m, tok) == PG_OK);
    pg_eval_test::perturb_weights(m, 0.3f, seed + 1);  // sharp predictions: the losses differ
    return ModelPtr(m);
}

std::vector<int32_t> encode(const pg_tokenizer* tok, const std::string& text) {
    size_t n = 0;
    REQUIRE(pg_tokenizer_encode(tok, text.data(), text.size(), nullptr, 0, &n) == PG_ERR_BUFFER_TOO_SMALL);
    std::vector<int32_t> ids(n);
    REQUIRE(pg_tokenizer_encode(tok, text.data(), text.size(), ids.data(), n, &n) == PG_OK);
    return ids;
}

// The length of the bytes ids[0, n) decode to, by pg_tokenizer_decode (independent of
// Tokenizer::token_length, which the evaluation counts with).
int64_t decoded_bytes(const pg_tokenizer* tok, const int32_t* ids, size_t n) {
    size_t len = 0;
    const pg_status s = pg_tokenizer_decode(tok, ids, n, nullptr, 0, &len);
    REQUIRE((s == PG_OK || s == PG_ERR_BUFFER_TOO_SMALL));
    std::string text(len + 1, '\0');
    REQUIRE(pg_tokenizer_decode(tok, ids, n, &text[0], text.size(), &len) == PG_OK);
    return int64_t(len);
}

// Bits per byte by their definition: the summed loss in bits over the scored targets' bytes.
double bits_per_byte_of(const pg_eval_result& r, int64_t bytes) {
    return r.mean_loss * double(r.n_scored) / std::log(2.0) / double(bytes);
}

}  // namespace

TEST_CASE("bits per byte: a character model on one-byte characters gives bits_per_token exactly", "[eval]") {
    std::string alphabet;  // 65 one-byte characters, as Tiny Shakespeare's
    for (char c = ' '; c < ' ' + 65; ++c) alphabet.push_back(c);
    pg_tokenizer* raw = nullptr;
    REQUIRE(pg_tokenizer_create_char(alphabet.data(), alphabet.size(), &raw) == PG_OK);
    TokenizerPtr tok(raw);
    ModelPtr m = tiny_model_for(tok.get(), 31);
    const auto tokens = pg_eval_test::random_tokens(150, 65, 12);
    for (int W : {16, 7}) {
        for (int S : {W, 3}) {
            INFO("W=" << W << " S=" << S);
            const pg_eval_result r = eval_c(m.get(), tokens, W, S, 4, 2);
            CHECK(r.n_bytes == r.n_scored);
            CHECK(std::memcmp(&r.bits_per_byte, &r.bits_per_token, sizeof(double)) == 0);
        }
    }
    pg_eval_result s;
    s.struct_size = sizeof s;
    REQUIRE(pg_test::evaluate_sampled(m.get(), tokens.data(), tokens.size(), 3, 4, 42, 1, &s) == PG_OK);
    CHECK(s.n_bytes == 3 * 4 * 16);
    CHECK(std::memcmp(&s.bits_per_byte, &s.bits_per_token, sizeof(double)) == 0);

    // A model without a tokenizer has no bytes to count: both fields are 0.
    ModelPtr bare = pg_eval_test::tiny_model(31);
    const pg_eval_result b = eval_c(bare.get(), tokens, 0, 0, 4, 1);
    CHECK(b.n_bytes == 0);
    CHECK(b.bits_per_byte == 0.0);
    CHECK(b.n_scored == 149);
}

TEST_CASE("bits per byte: multi-byte characters and BPE tokens count the bytes of the scored targets", "[eval]") {
    const std::string line = "the cat sat on the mat. caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC "
                             "\xF0\x9F\x98\x80 the rat ate the cat. ";
    std::string corpus;
    for (int i = 0; i < 20; ++i) corpus += line;
    pg_tokenizer* raw = nullptr;
    REQUIRE(pg_tokenizer_create_char(corpus.data(), corpus.size(), &raw) == PG_OK);
    TokenizerPtr chars(raw);
    const char* texts[1] = {corpus.c_str()};
    const size_t lens[1] = {corpus.size()};
    raw = nullptr;
    REQUIRE(pg_bpe_train(texts, lens, 1, 300, nullptr, &raw) == PG_OK);
    TokenizerPtr bpe(raw);

    const std::string text = line + line + "caf\xC3\xA9 \xF0\x9F\x98\x80 the mat.";
    for (const pg_tokenizer* tok : {chars.get(), bpe.get()}) {
        ModelPtr m = tiny_model_for(tok, 40);
        const std::vector<int32_t> ids = encode(tok, text);
        REQUIRE(ids.size() > 20);
        // Every target is scored once whatever the windows: the text without its first token.
        const int64_t targets = decoded_bytes(tok, ids.data() + 1, ids.size() - 1);
        CHECK(targets == int64_t(text.size()) - decoded_bytes(tok, ids.data(), 1));
        for (int W : {16, 7}) {
            for (int S : {W, 5, 1}) {
                INFO((tok == bpe.get() ? "BPE" : "characters") << " W=" << W << " S=" << S);
                const pg_eval_result r = eval_c(m.get(), ids, W, S, 3, 2);
                CHECK(r.n_bytes == targets);
                CHECK(r.bits_per_byte == Approx(bits_per_byte_of(r, targets)).epsilon(1e-12));
                CHECK(r.bits_per_byte < r.bits_per_token);  // several bytes a token on this text
            }
        }
        // The sampled estimate: every scored target of every window, repeats included (the
        // windows by hand as in the sampled test above).
        pg_eval_result s;
        s.struct_size = sizeof s;
        REQUIRE(pg_test::evaluate_sampled(m.get(), ids.data(), ids.size(), 2, 3, 7, 1, &s) == PG_OK);
        pg::Rng rng(7);
        int64_t bytes = 0;
        for (int w = 0; w < 6; ++w) {
            const size_t off = size_t(rng.below(uint64_t(ids.size()) - 16));
            bytes += decoded_bytes(tok, ids.data() + off + 1, 16);
        }
        CHECK(s.n_bytes == bytes);
        CHECK(s.bits_per_byte == Approx(bits_per_byte_of(s, bytes)).epsilon(1e-12));
    }
}

TEST_CASE("bits per byte: a target without bytes is refused, a special token counts its text", "[eval]") {
    // The 256 bytes, then a gap (ids 256..299), then a special token at 300.
    std::vector<pg::BpeTokenizer::Token> ranks;
    for (int b = 0; b < 256; ++b) ranks.push_back({b, std::string(1, char(b))});
    auto bpe = pg::BpeTokenizer::from_ranks(pg::bpe::Pattern::kGpt2, ranks, {{300, "<|end|>"}});
    pg_tokenizer handle;
    handle.impl = std::move(bpe);
    ModelPtr m = tiny_model_for(&handle, 50);
    std::vector<int32_t> ids = pg_eval_test::random_tokens(40, 256, 9);
    ids[20] = 300;
    pg_eval_result r = eval_c(m.get(), ids, 0, 0, 4, 1);
    CHECK(r.n_bytes == 39 - 1 + 7);  // 38 single bytes and "<|end|>"
    ids[0] = 280;  // context only: never a target, its bytes are not asked for
    r = eval_c(m.get(), ids, 0, 0, 4, 1);
    CHECK(r.n_bytes == 39 - 1 + 7);
    ids[33] = 280;
    pg_eval_config c;
    pg_eval_config_default(&c);
    r.n_scored = -5;
    CHECK(pg_test::evaluate(m.get(), ids.data(), ids.size(), &c, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("token 33 is 280") && Catch::Contains("no bytes"));
    CHECK(r.n_scored == -5);  // no result written
}

TEST_CASE("pg_eval_result: a caller built before bits per byte gets the older fields only", "[eval]") {
    ModelPtr m = pg_eval_test::tiny_model(4);
    const auto tokens = pg_eval_test::random_tokens(40, 65, 4);
    struct {
        pg_eval_result r;
        unsigned char guard[8];
    } old;
    std::memset(&old, 0x5A, sizeof old);
    old.r.struct_size = uint32_t(offsetof(pg_eval_result, bits_per_byte));  // the struct before them
    REQUIRE(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), nullptr, &old.r) == PG_OK);
    CHECK(old.r.n_scored == 39);
    CHECK(old.r.n_windows == 3);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&old);
    for (std::size_t i = offsetof(pg_eval_result, bits_per_byte); i < sizeof old; ++i) CHECK(int(bytes[i]) == 0x5A);
}
