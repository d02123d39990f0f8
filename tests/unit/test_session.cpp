// Sessions: the model-level calls are sessions made for one call (same results bit for bit), a
// session's sequence continues without recomputing what is cached, forward passes and
// evaluation on a session leave its sequence alone, a session grown for a larger batch gives
// the same bits, and bad arguments are refused with the session's own message.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "phonegpt/phonegpt.h"
#include "test_eval_support.hpp"
#include "session_calls.hpp"

using pg_eval_test::ModelPtr;

namespace {

struct SessionDeleter {
    void operator()(pg_session* s) const { pg_session_free(s); }
};
using SessionPtr = std::unique_ptr<pg_session, SessionDeleter>;

SessionPtr make_session(const pg_model* m, int threads, int slide_keep = 0) {
    pg_session_config c;
    pg_session_config_default(&c);
    c.n_threads = threads;
    c.slide_keep = slide_keep;
    pg_session* s = nullptr;
    REQUIRE(pg_session_create(m, &c, &s) == PG_OK);
    return SessionPtr(s);
}

pg_sample_config greedy(int max_tokens) {
    pg_sample_config c;
    pg_sample_config_default(&c);
    c.temperature = 0.0f;
    c.max_tokens = max_tokens;
    return c;
}

std::vector<int32_t> session_generate(pg_session* s, const pg_sample_config& c) {
    std::vector<int32_t> out(size_t(c.max_tokens));
    size_t n = 0;
    REQUIRE(pg_session_generate(s, &c, out.data(), out.size(), &n) == PG_OK);
    out.resize(n);
    return out;
}

int64_t position(const pg_session* s) {
    int64_t p = -1;
    REQUIRE(pg_session_position(s, &p) == PG_OK);
    return p;
}

}  // namespace

TEST_CASE("session: a continued conversation computes only the new positions", "[session]") {
    ModelPtr m = pg_eval_test::make_model("tiny", 32);
    pg_eval_test::perturb_weights(m.get(), 0.3f, 3);
    const auto prompt = pg_eval_test::random_tokens(5, 65, 4);
    const auto turn = pg_eval_test::random_tokens(3, 65, 5);
    SessionPtr s = make_session(m.get(), 1);
    const pg::Session& impl = s->impl;
    REQUIRE(pg_session_append(s.get(), prompt.data(), prompt.size()) == PG_OK);
    CHECK(impl.computed_positions() == 0);  // appending computes nothing yet
    const auto first = session_generate(s.get(), greedy(4));
    // The prompt in one pass, then one position per generated token but the last (pending).
    CHECK(impl.computed_positions() == 5 + 3);
    REQUIRE(pg_session_append(s.get(), turn.data(), turn.size()) == PG_OK);
    const auto second = session_generate(s.get(), greedy(3));
    // The last token of the first answer and the new turn in one pass, then two steps.
    CHECK(impl.computed_positions() == 8 + 1 + 3 + 2);
    CHECK(position(s.get()) == 5 + 4 + 3 + 3);
    CHECK(impl.slides() == 0);

    // The same as one session given the whole conversation at once.
    std::vector<int32_t> whole = prompt;
    whole.insert(whole.end(), first.begin(), first.end());
    whole.insert(whole.end(), turn.begin(), turn.end());
    SessionPtr t = make_session(m.get(), 1);
    REQUIRE(pg_session_append(t.get(), whole.data(), whole.size()) == PG_OK);
    CHECK(session_generate(t.get(), greedy(3)) == second);

    // Logits after the sequence equal a full pass over the window.
    std::vector<float> logits(65);
    REQUIRE(pg_session_logits(s.get(), logits.data(), logits.size()) == PG_OK);
    whole.insert(whole.end(), second.begin(), second.end());
    const std::vector<float> full = pg_eval_test::engine_logits(m.get(), whole.data(), int(whole.size()));
    for (int v = 0; v < 65; ++v) CHECK(std::fabs(logits[size_t(v)] - full[(whole.size() - 1) * 65 + size_t(v)]) < 1e-4);

    // reset: an empty sequence, then the same answer to the same prompt.
    REQUIRE(pg_session_reset(s.get()) == PG_OK);
    CHECK(position(s.get()) == 0);
    REQUIRE(pg_session_append(s.get(), prompt.data(), prompt.size()) == PG_OK);
    CHECK(session_generate(s.get(), greedy(4)) == first);
}

TEST_CASE("session: forward and evaluation are the model-level calls, and leave the sequence alone",
          "[session]") {
    ModelPtr m = pg_eval_test::tiny_model(33);
    pg_eval_test::perturb_weights(m.get(), 0.2f, 6);
    const auto tokens = pg_eval_test::random_tokens(400, 65, 7);
    SessionPtr s = make_session(m.get(), 2);
    int32_t n_threads = 0;
    REQUIRE(pg_session_n_threads(s.get(), &n_threads) == PG_OK);
    CHECK(n_threads == 2);
    REQUIRE(pg_session_append(s.get(), tokens.data(), 4) == PG_OK);
    std::vector<float> before(65), after(65);
    REQUIRE(pg_session_logits(s.get(), before.data(), before.size()) == PG_OK);

    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.n_threads = 2;
    ec.batch_size = 3;
    pg_eval_result a{sizeof(pg_eval_result)}, b{sizeof(pg_eval_result)};
    REQUIRE(pg_test::evaluate(m.get(), tokens.data(), tokens.size(), &ec, &a) == PG_OK);
    REQUIRE(pg_session_evaluate(s.get(), tokens.data(), tokens.size(), &ec, &b) == PG_OK);
    CHECK(a.mean_loss == b.mean_loss);
    CHECK(a.n_scored == b.n_scored);

    REQUIRE(pg_test::evaluate_sampled(m.get(), tokens.data(), tokens.size(), 3, 4, 42, 2, &a) == PG_OK);
    pg_eval_sampled_config sc;
    pg_eval_sampled_config_default(&sc);
    CHECK(sc.n_batches == 20);
    CHECK(sc.batch_size == 8);
    CHECK(sc.seed == 1337);
    sc.n_batches = 3;
    sc.batch_size = 4;
    sc.seed = 42;
    REQUIRE(pg_session_evaluate_sampled(s.get(), tokens.data(), tokens.size(), &sc, &b) == PG_OK);
    CHECK(a.mean_loss == b.mean_loss);
    CHECK(a.n_windows == b.n_windows);

    // A batch larger than the one the session's scratch was sized for grows it: same bits.
    for (int B : {2, 20}) {
        std::vector<float> la(size_t(B) * 16 * 65), lb(la.size());
        float ma = 0, mb = 0;
        REQUIRE(pg_test::forward(m.get(), tokens.data(), B, 16, tokens.data() + 1, la.data(), &ma, 2) == PG_OK);
        REQUIRE(pg_session_forward(s.get(), tokens.data(), B, 16, tokens.data() + 1, lb.data(), &mb) == PG_OK);
        CHECK(ma == mb);
        CHECK(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
    }

    REQUIRE(pg_session_logits(s.get(), after.data(), after.size()) == PG_OK);
    CHECK(before == after);
    CHECK(position(s.get()) == 4);
}

// The evaluation itself names no C function: each entry point puts its own name on the message.
TEST_CASE("session: evaluation errors are labelled with the function called", "[session][capi][errors]") {
    ModelPtr m = pg_eval_test::tiny_model(33);
    const auto tokens = pg_eval_test::random_tokens(40, 65, 7);
    SessionPtr s = make_session(m.get(), 1);
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.window = 1000;  // more than n_ctx: refused by the evaluation
    pg_eval_result r{sizeof(pg_eval_result)};
    REQUIRE(pg_session_evaluate(s.get(), tokens.data(), tokens.size(), &ec, &r) == PG_ERR_INVALID_ARGUMENT);
    const std::string session_msg = pg_last_error();
    CHECK(session_msg.rfind("pg_session_evaluate: window 1000", 0) == 0);
    CHECK(session_msg.find("pg_evaluate:") == std::string::npos);

    pg_eval_sampled_config sc;
    pg_eval_sampled_config_default(&sc);
    sc.n_batches = 0;
    REQUIRE(pg_session_evaluate_sampled(s.get(), tokens.data(), tokens.size(), &sc, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).rfind("pg_session_evaluate_sampled: n_batches 0", 0) == 0);

    // Generation's checks run below the boundary, which labels them with the function called.
    pg_sample_config gc;
    pg_sample_config_default(&gc);
    gc.top_p = 0.0f;
    int32_t out[4];
    size_t n = 0;
    REQUIRE(pg_session_append(s.get(), tokens.data(), 3) == PG_OK);
    REQUIRE(pg_session_generate(s.get(), &gc, out, 4, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).rfind("pg_session_generate: top_p 0", 0) == 0);
    CHECK(std::string(pg_session_last_error(s.get())) == pg_last_error());
    // A NULL argument is labelled by the boundary too, once.
    REQUIRE(pg_session_generate(s.get(), &gc, out, 4, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()) == "pg_session_generate: n_out is NULL");
}

TEST_CASE("session: bad arguments and states are refused with the session's message", "[session][capi]") {
    ModelPtr m = pg_eval_test::tiny_model(34);
    pg_session* s = nullptr;
    pg_session_config c;
    pg_session_config_default(&c);
    CHECK(c.n_threads == 0);
    CHECK(c.slide_keep == 0);
    CHECK(pg_session_create(nullptr, &c, &s) == PG_ERR_INVALID_ARGUMENT);
    CHECK(s == nullptr);
    CHECK(pg_session_create(m.get(), &c, nullptr) == PG_ERR_INVALID_ARGUMENT);
    c.slide_keep = 17;  // n_ctx is 16
    CHECK(pg_session_create(m.get(), &c, &s) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("slide_keep") != std::string::npos);
    c.struct_size = 0;
    CHECK(pg_session_create(m.get(), &c, &s) == PG_ERR_INVALID_ARGUMENT);
    REQUIRE(pg_session_create(m.get(), nullptr, &s) == PG_OK);  // NULL options = defaults
    SessionPtr session(s);
    pg_session_free(nullptr);

    std::vector<float> logits(65);
    CHECK(pg_session_logits(s, logits.data(), logits.size()) == PG_ERR_STATE);
    CHECK(std::string(pg_session_last_error(s)).find("empty") != std::string::npos);
    std::vector<int32_t> out(4);
    size_t n = 9;
    pg_sample_config sc;
    pg_sample_config_default(&sc);
    CHECK(pg_session_generate(s, &sc, out.data(), out.size(), &n) == PG_ERR_STATE);
    CHECK(n == 0);
    const int32_t bad[] = {1, 65};
    CHECK(pg_session_append(s, bad, 2) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_session_last_error(s)).find("token 1 is 65") != std::string::npos);
    CHECK(position(s) == 0);  // nothing of a refused append is kept
    CHECK(pg_session_append(s, nullptr, 3) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_append(s, nullptr, 0) == PG_OK);
    const int32_t good[] = {1, 2};
    REQUIRE(pg_session_append(s, good, 2) == PG_OK);
    CHECK(pg_session_logits(s, logits.data(), 64) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_logits(s, nullptr, 65) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_generate(s, &sc, nullptr, 4, &n) == PG_ERR_INVALID_ARGUMENT);
    sc.slide_keep = -1;
    CHECK(pg_session_generate(s, &sc, out.data(), out.size(), &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_forward(s, good, 1, 17, nullptr, logits.data(), nullptr) == PG_ERR_INVALID_ARGUMENT);
    pg_eval_result r{sizeof(pg_eval_result)};
    pg_eval_sampled_config ec;
    pg_eval_sampled_config_default(&ec);
    ec.n_batches = 0;
    const auto tokens = pg_eval_test::random_tokens(100, 65, 1);
    CHECK(pg_session_evaluate_sampled(s, tokens.data(), tokens.size(), &ec, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_evaluate(nullptr, tokens.data(), tokens.size(), nullptr, &r) == PG_ERR_INVALID_ARGUMENT);
    int64_t p = 0;
    CHECK(pg_session_position(nullptr, &p) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_position(s, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_session_last_error(nullptr)) == "session is NULL");
}
