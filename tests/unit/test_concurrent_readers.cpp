// One model and one tokenizer read by 8 threads at once (phonegpt.h, "Thread-safety"): every
// thread evaluates, forwards, samples (on sessions made for the call and one of its own), encodes and
// decodes (the model's char tokenizer and a GPT-2 BPE tokenizer) and provokes a failure on the
// shared model, and every result equals the one computed serially before the threads started.
// A failure on the shared model is visible to the failing thread only: pg_model_last_error is
// the calling thread's last failure on that model. Only the public header is used.
//
// The same file is the ThreadSanitizer test (tests/cmake/tsan.cmake, label "tsan"): there a
// race that happens to give the right numbers is a report, and the test fails.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "session_calls.hpp"

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 2;

struct Deleter {
    void operator()(pg_model* m) const { pg_model_free(m); }
    void operator()(pg_tokenizer* t) const { pg_tokenizer_free(t); }
    void operator()(pg_session* s) const { pg_session_free(s); }
};
template <class T>
using Owned = std::unique_ptr<T, Deleter>;

// A text with a vocabulary of a few dozen characters, two of them outside ASCII.
std::string sample_text() {
    static const char* const words[] = {"the", "king", "hath", "spoken", "and", "we", "obey",
                                        "naïve", "café", "sword", "crown", "night", "O", "sweet"};
    std::string s;
    uint32_t x = 12345;
    for (int i = 0; i < 400; ++i) {
        x = x * 1664525u + 1013904223u;
        s += words[(x >> 8) % (sizeof words / sizeof *words)];
        s += (x >> 20) % 9 == 0 ? ".\n" : " ";
    }
    return s;
}

std::vector<int32_t> encode(const pg_tokenizer* tok, const std::string& text) {
    size_t n = 0;
    REQUIRE(pg_tokenizer_encode(tok, text.data(), text.size(), nullptr, 0, &n) == PG_ERR_BUFFER_TOO_SMALL);
    std::vector<int32_t> ids(n);
    REQUIRE(pg_tokenizer_encode(tok, text.data(), text.size(), ids.data(), ids.size(), &n) == PG_OK);
    return ids;
}

// The tiny geometry over the tokenizer's vocabulary, weights perturbed so that predictions
// depend on the input (a fresh model predicts nearly uniformly and would compare little).
Owned<pg_model> make_model(const pg_tokenizer* tok) {
    pg_model_config c;
    REQUIRE(pg_model_config_preset("tiny", &c) == PG_OK);
    REQUIRE(pg_tokenizer_vocab_size(tok, &c.vocab_size) == PG_OK);
    c.padded_vocab_size = 0;
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&c, 7, &m) == PG_OK);
    Owned<pg_model> model(m);
    int32_t n_tensors = 0;
    REQUIRE(pg_model_num_tensors(m, &n_tensors) == PG_OK);
    uint32_t x = 99;
    for (int32_t i = 0; i < n_tensors; ++i) {
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_model_tensor_info(m, i, &info) == PG_OK);
        float* w = nullptr;
        REQUIRE(pg_model_tensor_data_mutable(m, i, &w) == PG_OK);
        if (std::strcmp(info.name, "wte") == 0) continue;  // keep wte's padding rows at 0
        for (int64_t k = 0; k < info.numel; ++k) {
            x = x * 1664525u + 1013904223u;
            w[k] += 0.3f * (float((x >> 8) & 0xFFFF) / 65536.0f - 0.5f);
        }
    }
    REQUIRE(pg_model_set_tokenizer(m, tok) == PG_OK);
    return model;
}

// Every result a reader computes, compared as a whole (floats bit for bit).
struct Results {
    std::vector<float> logits;
    float forward_loss = 0;
    double eval_loss = 0, sampled_loss = 0, session_eval_loss = 0;
    std::vector<int32_t> generated, session_tokens, char_ids, bpe_ids, bpe_special_ids;
    std::string char_text, bpe_text;
    bool operator==(const Results& o) const {
        return logits.size() == o.logits.size() &&
               std::memcmp(logits.data(), o.logits.data(), logits.size() * sizeof(float)) == 0 &&
               std::memcmp(&forward_loss, &o.forward_loss, sizeof forward_loss) == 0 && eval_loss == o.eval_loss &&
               sampled_loss == o.sampled_loss && session_eval_loss == o.session_eval_loss &&
               generated == o.generated && session_tokens == o.session_tokens && char_ids == o.char_ids &&
               bpe_ids == o.bpe_ids && bpe_special_ids == o.bpe_special_ids && char_text == o.char_text &&
               bpe_text == o.bpe_text;
    }
};

// A failed step, recorded by a reader thread (Catch2's assertions are for the main thread).
struct Failure {
    std::string what;
};

class Reader {
public:
    Reader(const pg_model* model, const pg_tokenizer* bpe, const std::vector<int32_t>& tokens,
           const std::string& bpe_text)
        : model_(model), bpe_(bpe), tokens_(tokens), bpe_text_(bpe_text) {}

    // Runs every read once; `first` rotates the order so that threads overlap different calls.
    // Returns "" or what went wrong.
    std::string run(int first, Results* r) const {
        const std::function<std::string(Results*)> steps[] = {
            [this](Results* x) { return forward(x); },         [this](Results* x) { return evaluate(x); },
            [this](Results* x) { return sampled(x); },         [this](Results* x) { return generate(x); },
            [this](Results* x) { return session(x); },         [this](Results* x) { return char_round_trip(x); },
            [this](Results* x) { return bpe_round_trip(x); },
        };
        const int n = int(sizeof steps / sizeof *steps);
        for (int i = 0; i < n; ++i) {
            const std::string e = steps[(first + i) % n](r);
            if (!e.empty()) return e;
        }
        return "";
    }

    // A call on the shared model that fails with a message naming `bad_index`, then what this
    // thread reads back: "" if pg_model_last_error and pg_last_error name this failure.
    std::string own_failure(int32_t bad_index) const {
        pg_tensor_info info;
        info.struct_size = sizeof info;
        if (pg_model_tensor_info(model_, bad_index, &info) != PG_ERR_INVALID_ARGUMENT)
            return "a bad tensor index was accepted";
        const std::string needle = "index " + std::to_string(bad_index) + " ";
        const std::string mine = pg_model_last_error(model_), thread = pg_last_error();
        if (mine.find(needle) == std::string::npos) return "pg_model_last_error is \"" + mine + "\"";
        if (thread != mine) return "pg_last_error is \"" + thread + "\"";
        return "";
    }

private:
    static std::string status(const char* what, pg_status s) {
        return s == PG_OK ? "" : std::string(what) + ": " + pg_status_name(s) + ": " + pg_last_error();
    }

    std::string forward(Results* r) const {
        const int32_t B = 2, T = 16;
        int32_t V = 0;
        pg_tokenizer_vocab_size(tokenizer(), &V);
        r->logits.assign(size_t(B) * T * size_t(V), 0.0f);
        return status("pg_model_forward", pg_test::forward(model_, tokens_.data(), B, T, tokens_.data() + 1,
                                                           r->logits.data(), &r->forward_loss, 2));
    }

    std::string evaluate(Results* r) const {
        pg_eval_config c;
        pg_eval_config_default(&c);
        c.stride = 5;  // sliding windows: many forward passes
        c.batch_size = 3;
        c.n_threads = 2;
        pg_eval_result res;
        res.struct_size = sizeof res;
        const pg_status s = pg_test::evaluate(model_, tokens_.data(), 120, &c, &res);
        r->eval_loss = res.mean_loss;
        return status("pg_evaluate", s);
    }

    std::string sampled(Results* r) const {
        pg_eval_result res;
        res.struct_size = sizeof res;
        const pg_status s = pg_test::evaluate_sampled(model_, tokens_.data(), tokens_.size(), 3, 4, 42, 1, &res);
        r->sampled_loss = res.mean_loss;
        return status("pg_evaluate_sampled", s);
    }

    std::string generate(Results* r) const {
        pg_sample_config c;
        pg_sample_config_default(&c);
        c.max_tokens = 24;  // beyond n_ctx = 16: the window slides
        c.top_k = 20;
        c.seed = 5;
        c.n_threads = 2;
        c.slide_keep = 10;
        r->generated.assign(24, -1);
        size_t n = 0;
        const pg_status s = pg_test::generate(model_, tokens_.data(), 5, &c, r->generated.data(), 24, &n);
        r->generated.resize(n);
        return status("pg_generate", s);
    }

    // A session of this thread's own over the shared model: append, generate, append, continue.
    std::string session(Results* r) const {
        pg_session_config sc;
        pg_session_config_default(&sc);
        sc.n_threads = 2;
        pg_session* raw = nullptr;
        const pg_status created = pg_session_create(model_, &sc, &raw);
        if (created != PG_OK) return status("pg_session_create", created);
        Owned<pg_session> s(raw);
        pg_sample_config c;
        pg_sample_config_default(&c);
        c.max_tokens = 6;
        c.seed = 11;
        std::vector<int32_t> out(6);
        size_t n = 0;
        r->session_tokens.clear();
        std::string e = status("pg_session_append", pg_session_append(raw, tokens_.data() + 20, 4));
        for (int turn = 0; turn < 2 && e.empty(); ++turn) {
            e = status("pg_session_generate", pg_session_generate(raw, &c, out.data(), out.size(), &n));
            r->session_tokens.insert(r->session_tokens.end(), out.begin(), out.begin() + std::ptrdiff_t(n));
            if (e.empty()) e = status("pg_session_append", pg_session_append(raw, tokens_.data() + 40, 3));
        }
        pg_eval_result res;
        res.struct_size = sizeof res;
        if (e.empty()) e = status("pg_session_evaluate", pg_session_evaluate(raw, tokens_.data(), 60, nullptr, &res));
        r->session_eval_loss = res.mean_loss;
        return e;
    }

    const pg_tokenizer* tokenizer() const {
        const pg_tokenizer* tok = nullptr;
        pg_model_get_tokenizer(model_, &tok);
        return tok;
    }

    std::string char_round_trip(Results* r) const {
        const pg_tokenizer* tok = tokenizer();
        if (!tok) return "pg_model_get_tokenizer gave NULL";
        return round_trip(tok, "the king hath spoken. naïve café.\nO sweet night", &r->char_ids, &r->char_text);
    }

    std::string bpe_round_trip(Results* r) const {
        std::string e = round_trip(bpe_, bpe_text_, &r->bpe_ids, &r->bpe_text);
        if (!e.empty()) return e;
        const std::string special = "Hello<|endoftext|> world";
        pg_encode_options o;
        pg_encode_options_default(&o);
        o.allow_all_special = 1;
        r->bpe_special_ids.assign(16, -1);
        size_t n = 0;
        e = status("pg_tokenizer_encode_with",
                   pg_tokenizer_encode_with(bpe_, special.data(), special.size(), &o, r->bpe_special_ids.data(),
                                            r->bpe_special_ids.size(), &n));
        r->bpe_special_ids.resize(n);
        return e;
    }

    static std::string round_trip(const pg_tokenizer* tok, const std::string& text, std::vector<int32_t>* ids,
                                  std::string* back) {
        ids->assign(text.size() + 1, -1);
        size_t n = 0;
        std::string e = status("pg_tokenizer_encode",
                               pg_tokenizer_encode(tok, text.data(), text.size(), ids->data(), ids->size(), &n));
        if (!e.empty()) return e;
        ids->resize(n);
        std::vector<char> buf(text.size() + 1);
        size_t len = 0;
        e = status("pg_tokenizer_decode", pg_tokenizer_decode(tok, ids->data(), n, buf.data(), buf.size(), &len));
        back->assign(buf.data(), len);
        if (e.empty() && *back != text) return "decode(encode(text)) != text";
        return e;
    }

    const pg_model* model_;
    const pg_tokenizer* bpe_;
    const std::vector<int32_t>& tokens_;
    const std::string& bpe_text_;
};

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

}  // namespace

#ifdef PG_TEST_BPE_PEERS
TEST_CASE("8 threads read one model and one tokenizer at once, with the serial results", "[concurrency][tsan]") {
    const std::string text = sample_text();
    pg_tokenizer* raw_char = nullptr;
    REQUIRE(pg_tokenizer_create_char(text.data(), text.size(), &raw_char) == PG_OK);
    Owned<pg_tokenizer> char_tok(raw_char);
    const std::string ranks = read_file(std::string(PG_TEST_BPE_PEERS) + "/gpt2.tiktoken");
    REQUIRE(!ranks.empty());
    pg_tokenizer* raw_bpe = nullptr;
    REQUIRE(pg_tokenizer_create_tiktoken(ranks.data(), ranks.size(), "gpt2", &raw_bpe) == PG_OK);
    Owned<pg_tokenizer> bpe(raw_bpe);

    Owned<pg_model> model = make_model(char_tok.get());
    const std::vector<int32_t> tokens = encode(char_tok.get(), text.substr(0, 600));
    const std::string bpe_text = "Now is the winter of our discontent, made glorious summer — ünïcödé 123.";
    const pg_model* shared = model.get();  // from here on the model is only read
    const Reader reader(shared, bpe.get(), tokens, bpe_text);

    Results serial;
    REQUIRE(reader.run(0, &serial) == "");
    REQUIRE(serial.generated.size() == 24);
    REQUIRE(serial.session_tokens.size() == 12);
    REQUIRE(serial.bpe_special_ids.size() == 3);
    REQUIRE(serial.bpe_special_ids[1] == 50256);  // <|endoftext|>

    std::vector<std::string> failures(kThreads);
    std::atomic<int> waiting{kThreads};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            waiting.fetch_sub(1);
            while (waiting.load() > 0) std::this_thread::yield();  // start together
            for (int round = 0; round < kRounds && failures[t].empty(); ++round) {
                Results mine;
                std::string e = reader.run(t + round, &mine);
                if (e.empty() && !(mine == serial)) e = "results differ from the serial ones";
                if (e.empty()) e = reader.own_failure(1000 + 10 * t + round);
                if (!e.empty()) failures[t] = "thread " + std::to_string(t) + ", round " + std::to_string(round) + ": " + e;
            }
        });
    }
    for (auto& th : threads) th.join();
    for (const std::string& f : failures) CHECK(f == "");

    // The failures of the threads stayed with them: this thread has not failed on the model.
    CHECK(std::string(pg_model_last_error(shared)) == "");
}
#endif

TEST_CASE("pg_model_last_error is the calling thread's last failure on that model", "[concurrency]") {
    const std::string text = sample_text();
    pg_tokenizer* raw_char = nullptr;
    REQUIRE(pg_tokenizer_create_char(text.data(), text.size(), &raw_char) == PG_OK);
    Owned<pg_tokenizer> tok(raw_char);
    Owned<pg_model> a = make_model(tok.get());
    Owned<pg_model> b = make_model(tok.get());
    CHECK(pg_model_get_config(a.get(), nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_model_last_error(a.get())).find("pg_model_get_config") != std::string::npos);
    CHECK(std::string(pg_model_last_error(b.get())) == "");
    CHECK(pg_model_num_params(b.get(), nullptr) == PG_ERR_INVALID_ARGUMENT);
    // Each model keeps its own last failure; the thread's is the latest.
    CHECK(std::string(pg_model_last_error(a.get())).find("pg_model_get_config") != std::string::npos);
    CHECK(std::string(pg_model_last_error(b.get())).find("pg_model_num_params") != std::string::npos);
    CHECK(std::string(pg_last_error()).find("pg_model_num_params") != std::string::npos);
    // Another thread sees neither.
    std::string seen_a, seen_b;
    std::thread([&] {
        seen_a = pg_model_last_error(a.get());
        seen_b = pg_model_last_error(b.get());
    }).join();
    CHECK(seen_a == "");
    CHECK(seen_b == "");
    // The tokenizer handle of a model exists before anyone asks for it, and is the same each time.
    const pg_tokenizer* t1 = nullptr;
    const pg_tokenizer* t2 = nullptr;
    REQUIRE(pg_model_get_tokenizer(a.get(), &t1) == PG_OK);
    REQUIRE(pg_model_get_tokenizer(a.get(), &t2) == PG_OK);
    CHECK(t1 != nullptr);
    CHECK(t1 == t2);
}
