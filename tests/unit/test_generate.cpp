// Generation with a KV cache: the cached logits equal a full forward pass over the same window
// at every step (including right after the window slides), sampling is seeded and behaves as
// documented, stop strings and callbacks stop where they should, and bad arguments are
// rejected.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "eval/generate.hpp"
#include "phonegpt/phonegpt.h"
#include "test_eval_support.hpp"
#include "tokenizer/char_tokenizer.hpp"
#include "session_calls.hpp"

using pg_eval_test::ModelPtr;

namespace {

// Largest |cached - full| over a row, relative to the row's largest |full| (at least 1).
double relative_difference(const float* cached, const float* full, int V) {
    double diff = 0.0, scale = 1.0;
    for (int v = 0; v < V; ++v) {
        diff = std::max(diff, double(std::fabs(cached[v] - full[v])));
        scale = std::max(scale, double(std::fabs(full[v])));
    }
    return diff / scale;
}

// Checks the session's cached logits against the engine's logits for the last position of
// its window.
void check_against_full_pass(const pg_model* m, pg::Session& f) {
    const float* cached = f.logits();
    const int V = m->impl.config().vocab_size, T = f.window_length();
    const std::vector<float> full = pg_eval_test::engine_logits(m, f.window(), T);
    const float* last = full.data() + std::size_t(T - 1) * V;
    REQUIRE(relative_difference(cached, last, V) < 1e-5);
}

std::vector<int32_t> generate_c(const pg_model* m, const std::vector<int32_t>& prompt, pg_sample_config c,
                                pg_status expect = PG_OK) {
    std::vector<int32_t> out(size_t(std::max(c.max_tokens, 0)) + 1, -1);
    size_t n = 999;
    REQUIRE(pg_test::generate(m, prompt.data(), prompt.size(), &c, out.data(), out.size(), &n) == expect);
    out.resize(n);
    return out;
}

int32_t argmax(const float* x, int n) { return int32_t(std::max_element(x, x + n) - x); }

// A 65-character vocabulary like Tiny Shakespeare's, so a tokenizer fits the tiny model.
const std::string kChars = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

void give_tokenizer(pg_model* m) {
    REQUIRE(kChars.size() == 65);
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_tokenizer_create_char(kChars.data(), kChars.size(), &tok) == PG_OK);
    REQUIRE(pg_model_set_tokenizer(m, tok) == PG_OK);
    pg_tokenizer_free(tok);
}

std::string decode(const pg_model* m, const std::vector<int32_t>& ids) {
    return m->impl.tokenizer()->decode(ids.data(), ids.size());
}

}  // namespace

TEST_CASE("cached logits equal the full forward pass at every step, across slides", "[generate]") {
    ModelPtr m = pg_eval_test::tiny_model(17);
    pg_eval_test::perturb_weights(m.get(), 0.3f, 5);
    const int n_ctx = 16;
    for (int keep : {16, 9, 1}) {
        for (int threads : {1, 2}) {
            INFO("slide_keep " << keep << ", threads " << threads);
            pg::Session f(m->impl, pg::SessionOptions{threads, keep});
            std::vector<int32_t> sequence = pg_eval_test::random_tokens(5, 65, 1);
            f.append(sequence.data(), sequence.size());
            check_against_full_pass(m.get(), f);
            const auto more = pg_eval_test::random_tokens(45, 65, 2);
            int expected_length = 5;
            int64_t expected_slides = 0;
            for (int32_t token : more) {
                sequence.push_back(token);
                f.append(&token, 1);
                f.logits();  // computes the pending token
                // The policy: one more position, or the last `keep` tokens after a slide.
                if (expected_length < n_ctx) {
                    ++expected_length;
                } else {
                    expected_length = keep;
                    ++expected_slides;
                }
                REQUIRE(f.window_length() == expected_length);
                REQUIRE(f.slides() == expected_slides);
                REQUIRE(std::equal(f.window(), f.window() + expected_length, sequence.end() - expected_length));
                check_against_full_pass(m.get(), f);
            }
            CHECK(f.slides() > 0);
        }
    }
}

TEST_CASE("a prompt longer than the context is cropped to its last n_ctx tokens", "[generate]") {
    ModelPtr m = pg_eval_test::tiny_model(4);
    pg_eval_test::perturb_weights(m.get(), 0.3f, 6);
    const auto prompt = pg_eval_test::random_tokens(40, 65, 3);
    pg::Session f(m->impl, pg::SessionOptions{1, 16});
    f.append(prompt.data(), prompt.size());
    f.logits();
    REQUIRE(f.window_length() == 16);
    CHECK(std::equal(f.window(), f.window() + 16, prompt.end() - 16));
    check_against_full_pass(m.get(), f);

    pg_sample_config c;
    pg_sample_config_default(&c);
    c.max_tokens = 30;
    const auto a = generate_c(m.get(), prompt, c);
    const auto b = generate_c(m.get(), std::vector<int32_t>(prompt.end() - 16, prompt.end()), c);
    CHECK(a == b);
}

TEST_CASE("cached logits match the full pass on the PhoneGPT geometry", "[generate]") {
    ModelPtr m = pg_eval_test::make_model("phonegpt", 12);
    pg_eval_test::perturb_weights(m.get(), 0.05f, 7);
    const auto tokens = pg_eval_test::random_tokens(140, 65, 4);
    pg::Session f(m->impl, pg::SessionOptions{2, 128});
    f.append(tokens.data(), 3);
    check_against_full_pass(m.get(), f);
    for (size_t i = 3; i < tokens.size(); ++i) {
        f.append(&tokens[i], 1);
        f.logits();
        const int len = f.window_length();
        if (len == 4 || len == 64 || i >= 126) check_against_full_pass(m.get(), f);
    }
    CHECK(f.slides() == 140 - 128);
}

TEST_CASE("greedy picks the argmax; top_k = 1 and tiny top_p are greedy", "[generate]") {
    ModelPtr m = pg_eval_test::tiny_model(21);
    pg_eval_test::perturb_weights(m.get(), 0.3f, 8);
    const auto prompt = pg_eval_test::random_tokens(3, 65, 5);
    pg_sample_config c;
    pg_sample_config_default(&c);
    c.max_tokens = 40;  // crosses the 16-token window
    c.temperature = 0.0f;
    const auto greedy = generate_c(m.get(), prompt, c);
    REQUIRE(greedy.size() == 40);

    // Drive the cache by hand: every greedy token is the argmax of the logits before it.
    pg::Session f(m->impl, pg::SessionOptions{1, 16});
    f.append(prompt.data(), prompt.size());
    for (int32_t token : greedy) {
        REQUIRE(token == argmax(f.logits(), 65));
        f.append(&token, 1);
    }

    c.temperature = 1.0f;
    c.top_k = 1;
    CHECK(generate_c(m.get(), prompt, c) == greedy);
    c.temperature = 0.7f;
    c.seed = 99;
    CHECK(generate_c(m.get(), prompt, c) == greedy);
    c.top_k = 0;
    c.top_p = 1e-6f;
    CHECK(generate_c(m.get(), prompt, c) == greedy);
}

TEST_CASE("same seed, same tokens; another seed, other tokens", "[generate]") {
    ModelPtr m = pg_eval_test::tiny_model(22);
    pg_eval_test::perturb_weights(m.get(), 0.2f, 9);
    const std::vector<int32_t> prompt = {7};
    pg_sample_config c;
    pg_sample_config_default(&c);
    CHECK(c.temperature == 1.0f);
    CHECK(c.top_k == 0);
    CHECK(c.top_p == 1.0f);
    CHECK(c.seed == 1337);
    CHECK(c.max_tokens == 256);
    CHECK(c.slide_keep == 0);
    c.max_tokens = 60;
    const auto a = generate_c(m.get(), prompt, c);
    CHECK(a.size() == 60);
    c.n_threads = 2;
    CHECK(generate_c(m.get(), prompt, c) == a);
    c.top_k = 5;
    c.top_p = 0.9f;
    c.slide_keep = 8;
    const auto b = generate_c(m.get(), prompt, c);
    CHECK(generate_c(m.get(), prompt, c) == b);
    c.seed = 1338;
    CHECK(generate_c(m.get(), prompt, c) != b);
}

TEST_CASE("the sampler follows softmax(logits / temperature) within top-k and top-p", "[generate]") {
    const int V = 6;
    const float logits[V] = {1.0f, 3.0f, 0.0f, 2.0f, -1.0f, 2.0f};
    auto frequencies = [&](pg::SampleOptions o, int draws) {
        pg::TokenSampler s(V, o);
        pg::Rng rng(123);
        std::vector<double> f(V, 0.0);
        for (int i = 0; i < draws; ++i) f[size_t(s.pick(logits, rng))] += 1.0 / draws;
        return f;
    };
    auto softmax = [&](float temperature, const std::vector<int>& kept) {
        std::vector<double> p(V, 0.0);
        double z = 0.0;
        for (int v : kept) z += std::exp(logits[v] / temperature);
        for (int v : kept) p[size_t(v)] = std::exp(logits[v] / temperature) / z;
        return p;
    };
    auto close = [](const std::vector<double>& a, const std::vector<double>& b) {
        for (size_t i = 0; i < a.size(); ++i)
            if (std::fabs(a[i] - b[i]) > 0.01) return false;
        return true;
    };
    const int draws = 40000;
    CHECK(close(frequencies({1.0f, 0, 1.0f}, draws), softmax(1.0f, {0, 1, 2, 3, 4, 5})));
    CHECK(close(frequencies({0.5f, 0, 1.0f}, draws), softmax(0.5f, {0, 1, 2, 3, 4, 5})));
    // top_k = 3: ids 1 (3.0), then the tie 3 and 5 (2.0).
    CHECK(close(frequencies({1.0f, 3, 1.0f}, draws), softmax(1.0f, {1, 3, 5})));
    // top_k = 2 breaks the tie by the lower id.
    CHECK(close(frequencies({1.0f, 2, 1.0f}, draws), softmax(1.0f, {1, 3})));
    // top_p: p(1) = 0.516 < 0.6 <= p(1) + p(3) = 0.706 (3 before 5 on the tie): ids 1 and 3.
    CHECK(close(frequencies({1.0f, 0, 0.6f}, draws), softmax(1.0f, {1, 3})));
    CHECK(close(frequencies({1.0f, 0, 0.75f}, draws), softmax(1.0f, {1, 3, 5})));
    CHECK(close(frequencies({1.0f, 0, 0.4f}, draws), softmax(1.0f, {1})));
    // Greedy draws nothing from the generator.
    pg::TokenSampler greedy(V, {0.0f, 0, 1.0f});
    pg::Rng a(5), b(5);
    CHECK(greedy.pick(logits, a) == 1);
    CHECK(a.next_u64() == b.next_u64());
    // Non-finite logits are an error, not a silent pick.
    const float bad[V] = {0.0f, NAN, 0.0f, 0.0f, 0.0f, 0.0f};
    CHECK_THROWS_AS(greedy.pick(bad, a), pg::Error);
}

TEST_CASE("stop strings stop after the token that completes them", "[generate]") {
    ModelPtr m = pg_eval_test::tiny_model(30);
    pg_eval_test::perturb_weights(m.get(), 0.2f, 10);
    const std::vector<int32_t> prompt = {1, 2, 3};
    pg_sample_config c;
    pg_sample_config_default(&c);
    c.max_tokens = 60;
    c.seed = 5;
    const char* stops[2] = {"zz-no-such", nullptr};
    c.stop_strings = stops;
    c.n_stop_strings = 1;
    // Without the model's tokenizer stop strings cannot be matched.
    generate_c(m.get(), prompt, c, PG_ERR_STATE);
    CHECK_THAT(pg_last_error(), Catch::Contains("tokenizer"));
    give_tokenizer(m.get());
    const auto full = generate_c(m.get(), prompt, c);  // the stop string never occurs
    REQUIRE(full.size() == 60);
    const std::string text = decode(m.get(), full);

    // A three-character stop string taken from the middle of the text: generation ends at its
    // first occurrence, with the token that completes it.
    const std::string stop = text.substr(30, 3);
    const size_t end = text.find(stop) + 3;
    stops[0] = stop.c_str();
    auto cut = generate_c(m.get(), prompt, c);
    CHECK(cut.size() == end);
    CHECK(std::equal(cut.begin(), cut.end(), full.begin()));
    // With two stop strings the earlier match wins.
    const std::string earlier = text.substr(10, 2);
    stops[1] = earlier.c_str();
    c.n_stop_strings = 2;
    cut = generate_c(m.get(), prompt, c);
    CHECK(cut.size() == std::min(end, text.find(earlier) + 2));
    // The prompt is not searched: a stop string that only the prompt contains changes nothing.
    const std::string prompt_text = decode(m.get(), prompt);
    if (text.find(prompt_text) == std::string::npos) {
        stops[0] = prompt_text.c_str();
        c.n_stop_strings = 1;
        CHECK(generate_c(m.get(), prompt, c).size() == 60);
    }
}

TEST_CASE("the streaming callback sees every token and can stop generation", "[generate]") {
    ModelPtr m = pg_eval_test::tiny_model(31);
    pg_eval_test::perturb_weights(m.get(), 0.2f, 11);
    const std::vector<int32_t> prompt = {4, 5};
    struct Stream {
        std::vector<int32_t> seen;
        size_t stop_at = 0;  // 0 = never
    } stream;
    auto cb = [](void* user, int32_t token) -> int {
        auto* s = static_cast<Stream*>(user);
        s->seen.push_back(token);
        return s->stop_at != 0 && s->seen.size() >= s->stop_at;
    };
    pg_sample_config c;
    pg_sample_config_default(&c);
    c.max_tokens = 25;
    c.on_token = cb;
    c.on_token_user = &stream;
    const auto all = generate_c(m.get(), prompt, c);
    CHECK(all.size() == 25);
    CHECK(stream.seen == all);

    stream = Stream{{}, 7};
    const auto stopped = generate_c(m.get(), prompt, c);  // PG_OK: stopping is not an error
    CHECK(stopped.size() == 7);
    CHECK(stream.seen == stopped);
    CHECK(std::equal(stopped.begin(), stopped.end(), all.begin()));

    // Streaming only: no output buffer, every token still goes to the callback.
    stream = Stream{};
    size_t n = 99;
    REQUIRE(pg_test::generate(m.get(), prompt.data(), 2, &c, nullptr, 0, &n) == PG_OK);
    CHECK(n == 0);
    CHECK(stream.seen == all);
    // A small buffer gets the first tokens; *n_out counts what was written.
    stream = Stream{};
    std::vector<int32_t> small(5, -1);
    REQUIRE(pg_test::generate(m.get(), prompt.data(), 2, &c, small.data(), small.size(), &n) == PG_OK);
    CHECK(n == 5);
    CHECK(std::equal(small.begin(), small.end(), all.begin()));
    CHECK(stream.seen.size() == 25);
    // max_tokens = 0 generates nothing.
    stream = Stream{};
    c.max_tokens = 0;
    REQUIRE(pg_test::generate(m.get(), prompt.data(), 2, &c, small.data(), small.size(), &n) == PG_OK);
    CHECK(n == 0);
    CHECK(stream.seen.empty());
}

TEST_CASE("pg_session_generate rejects bad arguments", "[generate]") {
    ModelPtr m = pg_eval_test::tiny_model(32);
    const std::vector<int32_t> prompt = {1, 2, 3};
    std::vector<int32_t> out(8);
    size_t n = 0;
    pg_sample_config c;
    auto run = [&](const pg_sample_config* cfg) {
        return pg_test::generate(m.get(), prompt.data(), prompt.size(), cfg, out.data(), out.size(), &n);
    };
    auto with = [&](auto change) {
        pg_sample_config_default(&c);
        c.max_tokens = 4;
        change(c);
        return run(&c);
    };
    CHECK(with([](pg_sample_config&) {}) == PG_OK);
    CHECK(run(nullptr) == PG_OK);  // NULL = defaults (256 tokens, 8 written)
    CHECK(n == 8);

    CHECK(pg_test::generate(nullptr, prompt.data(), 3, nullptr, out.data(), 8, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::generate(m.get(), nullptr, 3, nullptr, out.data(), 8, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::generate(m.get(), prompt.data(), 0, nullptr, out.data(), 8, &n) == PG_ERR_STATE);
    CHECK_THAT(pg_last_error(), Catch::Contains("sequence is empty"));
    CHECK(pg_test::generate(m.get(), prompt.data(), 3, nullptr, out.data(), 8, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_test::generate(m.get(), prompt.data(), 3, nullptr, nullptr, 8, &n) == PG_ERR_INVALID_ARGUMENT);
    const std::vector<int32_t> bad_prompt = {1, 65};
    CHECK(pg_test::generate(m.get(), bad_prompt.data(), 2, nullptr, out.data(), 8, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("token 1 is 65"));

    CHECK(with([](pg_sample_config& s) { s.temperature = -0.5f; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).rfind("pg_session_generate: temperature", 0) == 0);
    CHECK(with([](pg_sample_config& s) { s.temperature = NAN; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.temperature = INFINITY; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.top_k = -1; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.top_k = 1000; }) == PG_OK);  // more than the vocabulary: off
    CHECK(with([](pg_sample_config& s) { s.top_p = 0.0f; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.top_p = 1.5f; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("top_p"));
    CHECK(with([](pg_sample_config& s) { s.max_tokens = -1; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.slide_keep = -1; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.slide_keep = 17; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("slide_keep 17"));
    CHECK(with([](pg_sample_config& s) { s.n_stop_strings = -1; }) == PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.n_stop_strings = 1; }) == PG_ERR_INVALID_ARGUMENT);
    static const char* null_stop[1] = {nullptr};
    CHECK(with([](pg_sample_config& s) { s.stop_strings = null_stop; s.n_stop_strings = 1; }) ==
          PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("stop_strings[0] is NULL"));
    give_tokenizer(m.get());
    static const char* empty_stop[1] = {""};
    CHECK(with([](pg_sample_config& s) { s.stop_strings = empty_stop; s.n_stop_strings = 1; }) ==
          PG_ERR_INVALID_ARGUMENT);
    CHECK(with([](pg_sample_config& s) { s.struct_size = 0; }) == PG_ERR_INVALID_ARGUMENT);
    // An older caller's smaller struct (without slide_keep) gets the default for the rest.
    CHECK(with([](pg_sample_config& s) { s.struct_size = offsetof(pg_sample_config, slide_keep); s.slide_keep = 99; }) ==
          PG_OK);
    pg_sample_config_default(nullptr);  // no-op
}
