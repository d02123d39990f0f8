// Every PG_DEPRECATED function still gives its replacement's result, bit for bit, and keeps its
// own name on its messages. This is the one file of the tree that calls them: everything else is
// built with -Werror=deprecated-declarations (CMakeLists.txt); their warnings and hints are
// tests/abi/check_deprecated.py's to check.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "session_calls.hpp"
#include "test_eval_support.hpp"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

using pg_eval_test::ModelPtr;

namespace {

bool same_bits(const void* a, const void* b, std::size_t n) { return std::memcmp(a, b, n) == 0; }

ModelPtr trained_looking_model(uint64_t seed) {
    ModelPtr m = pg_eval_test::tiny_model(seed);
    pg_eval_test::perturb_weights(m.get(), 0.3f, seed + 1);
    return m;
}

}  // namespace

TEST_CASE("deprecated pg_model_forward gives pg_session_forward's bits", "[deprecated][capi]") {
    ModelPtr m = trained_looking_model(41);
    const int32_t B = 3, T = 16, V = 65;
    const auto tokens = pg_eval_test::random_tokens(size_t(B * T) + 1, V, 5);
    for (int32_t threads : {1, 2}) {
        std::vector<float> old_logits(size_t(B * T * V)), new_logits(old_logits.size());
        float old_loss = 0.0f, new_loss = 1.0f;
        REQUIRE(pg_model_forward(m.get(), tokens.data(), B, T, tokens.data() + 1, old_logits.data(), &old_loss,
                                 threads) == PG_OK);
        REQUIRE(pg_test::forward(m.get(), tokens.data(), B, T, tokens.data() + 1, new_logits.data(), &new_loss,
                                 threads) == PG_OK);
        CHECK(same_bits(old_logits.data(), new_logits.data(), old_logits.size() * sizeof(float)));
        CHECK(same_bits(&old_loss, &new_loss, sizeof old_loss));
    }
    std::vector<float> logits(size_t(T * V));
    CHECK(pg_model_forward(m.get(), tokens.data(), 1, 17, nullptr, logits.data(), nullptr, 1) ==
          PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).rfind("pg_model_forward: ", 0) == 0);
    CHECK(std::string(pg_model_last_error(m.get())) == pg_last_error());
}

TEST_CASE("deprecated pg_evaluate and pg_evaluate_sampled give the session's bits", "[deprecated][capi]") {
    ModelPtr m = trained_looking_model(42);
    const auto tokens = pg_eval_test::random_tokens(300, 65, 6);
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.stride = 5;
    ec.batch_size = 3;
    ec.n_threads = 2;
    pg_eval_result old_r{sizeof(pg_eval_result)}, new_r{sizeof(pg_eval_result)};
    REQUIRE(pg_evaluate(m.get(), tokens.data(), tokens.size(), &ec, &old_r) == PG_OK);
    REQUIRE(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), &ec, &new_r) == PG_OK);
    CHECK(same_bits(&old_r, &new_r, sizeof old_r));

    pg_eval_result old_s{sizeof(pg_eval_result)}, new_s{sizeof(pg_eval_result)};
    REQUIRE(pg_evaluate_sampled(m.get(), tokens.data(), tokens.size(), 3, 4, 77, 2, &old_s) == PG_OK);
    REQUIRE(pg_test::evaluate_sampled(m.get(), tokens.data(), tokens.size(), 3, 4, 77, 2, &new_s) == PG_OK);
    CHECK(same_bits(&old_s, &new_s, sizeof old_s));
    CHECK(old_s.mean_loss != old_r.mean_loss);  // two different scores, so the checks above can fail

    ec.window = 1000;  // more than n_ctx
    CHECK(pg_evaluate(m.get(), tokens.data(), tokens.size(), &ec, &old_r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).rfind("pg_evaluate: window 1000", 0) == 0);
    CHECK(pg_evaluate_sampled(m.get(), tokens.data(), tokens.size(), 0, 4, 77, 2, &old_s) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).rfind("pg_evaluate_sampled: n_batches 0", 0) == 0);
}

TEST_CASE("deprecated pg_generate is append + generate on a fresh session", "[deprecated][capi][session]") {
    ModelPtr m = trained_looking_model(31);
    const auto prompt = pg_eval_test::random_tokens(7, 65, 2);
    for (int threads : {1, 2}) {
        pg_sample_config c;
        pg_sample_config_default(&c);
        c.max_tokens = 40;  // past n_ctx = 16: the window slides
        c.n_threads = threads;
        c.slide_keep = 9;
        std::vector<int32_t> direct(40), on_session(40);
        size_t n_direct = 0, n_session = 0;
        REQUIRE(pg_generate(m.get(), prompt.data(), prompt.size(), &c, direct.data(), direct.size(), &n_direct) ==
                PG_OK);
        REQUIRE(pg_test::generate(m.get(), prompt.data(), prompt.size(), &c, on_session.data(), on_session.size(),
                                  &n_session) == PG_OK);
        CHECK(n_direct == 40);
        CHECK(n_session == 40);
        CHECK(direct == on_session);
    }
    size_t n = 9;
    std::vector<int32_t> out(4);
    CHECK(pg_generate(m.get(), prompt.data(), 0, nullptr, out.data(), out.size(), &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(n == 0);
    CHECK(std::string(pg_last_error()).rfind("pg_generate: the prompt is empty", 0) == 0);
    pg_sample_config bad;
    pg_sample_config_default(&bad);
    bad.top_p = 0.0f;  // refused below the boundary, labelled with the wrapper's name
    CHECK(pg_generate(m.get(), prompt.data(), prompt.size(), &bad, out.data(), out.size(), &n) ==
          PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).rfind("pg_generate: top_p 0", 0) == 0);
}

TEST_CASE("deprecated pg_tokenizer_kind_of answers as pg_tokenizer_get_kind", "[deprecated][tokenizer][capi]") {
    pg_tokenizer* tok = nullptr;
    const char* text = "hello, world";
    REQUIRE(pg_tokenizer_create_char(text, std::strlen(text), &tok) == PG_OK);
    pg_tokenizer_kind kind = PG_TOKENIZER_BPE, old_kind = PG_TOKENIZER_BPE;
    REQUIRE(pg_tokenizer_get_kind(tok, &kind) == PG_OK);
    REQUIRE(pg_tokenizer_kind_of(tok, &old_kind) == PG_OK);
    CHECK(kind == PG_TOKENIZER_CHAR);
    CHECK(old_kind == kind);
    CHECK(pg_tokenizer_kind_of(nullptr, &old_kind) == PG_ERR_INVALID_ARGUMENT);
    pg_tokenizer_free(tok);
}

TEST_CASE("deprecated pg_trainer_threads answers as pg_trainer_n_threads", "[deprecated][train][capi][threads]") {
    ModelPtr m = pg_eval_test::tiny_model(7);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 2;
    tc.n_threads = 3;
    pg_trainer* trainer = nullptr;
    REQUIRE(pg_trainer_create(m.get(), &tc, &trainer) == PG_OK);
    int32_t a = 0, b = 0;
    REQUIRE(pg_trainer_threads(trainer, &a) == PG_OK);
    REQUIRE(pg_trainer_n_threads(trainer, &b) == PG_OK);
    CHECK(a == 3);
    CHECK(a == b);
    CHECK(pg_trainer_threads(nullptr, &b) == PG_ERR_INVALID_ARGUMENT);
    pg_trainer_free(trainer);
}
