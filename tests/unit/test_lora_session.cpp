// Adapters attach to sessions, not to the model: a session with an adapter computes what the
// merged model computes (within the fp32 bound docs/lora.md states: 1e-5 of the largest logit)
// in batched forward passes, evaluation and the KV-cached generation path; one base serves
// several sessions with different adapters at once, from several threads; detaching gives the
// base's logits bit for bit; the model is never written.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "frozen_base_support.hpp"
#include "phonegpt/phonegpt.h"
#include "session_calls.hpp"

namespace {

using frozen_base_test::kT;
using frozen_base_test::kVocab;

pg_model* tiny_base(uint64_t seed) {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, seed, &m) == PG_OK);
    return m;
}

// Adapters whose B factors are not zero (seeds 1, 2, ...), and the token pattern.
using frozen_base_test::adapter_with_b;
using frozen_base_test::tokens;

std::vector<float> session_logits(pg_session* s, const std::vector<int32_t>& in, int B) {
    std::vector<float> out(std::size_t(B) * kT * kVocab);
    REQUIRE(pg_session_forward(s, in.data(), B, kT, nullptr, out.data(), nullptr) == PG_OK);
    return out;
}

std::vector<float> model_logits(const pg_model* m, const std::vector<int32_t>& in, int B) {
    std::vector<float> out(std::size_t(B) * kT * kVocab);
    REQUIRE(pg_test::forward(m, in.data(), B, kT, nullptr, out.data(), nullptr, 2) == PG_OK);
    return out;
}

// max |a - b| <= 1e-5 * max |b|, the stated merge tolerance.
bool agree(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    float diff = 0, top = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::fabs(a[i] - b[i]));
        top = std::max(top, std::fabs(b[i]));
    }
    INFO("max difference " << diff << ", largest logit " << top);
    return diff <= 1e-5f * top;
}

pg_session* new_session(const pg_model* m, int n_threads) {
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.n_threads = n_threads;
    pg_session* s = nullptr;
    REQUIRE(pg_session_create(m, &sc, &s) == PG_OK);
    return s;
}

}  // namespace

TEST_CASE("lora session: an attached adapter computes what the merged model computes", "[lora][lora_session]") {
    pg_model* base = tiny_base(5);
    const float* p = nullptr;
    int64_t n_params = 0;
    REQUIRE(pg_model_params(base, &p, &n_params) == PG_OK);
    const std::vector<float> base_before(p, p + n_params);
    pg_lora_adapter* a = adapter_with_b(base, PG_LORA_ALL_LINEARS, 1);
    pg_model* merged = nullptr;
    REQUIRE(pg_lora_merge(base, a, 2, &merged) == PG_OK);
    const std::vector<int32_t> in = tokens(3 * kT, 0);

    pg_session* s = new_session(base, 2);
    const std::vector<float> plain = session_logits(s, in, 3);
    REQUIRE(pg_session_attach_adapter(s, a) == PG_OK);
    const pg_lora_adapter* attached = nullptr;
    REQUIRE(pg_session_adapter(s, &attached) == PG_OK);
    CHECK(attached == a);
    const std::vector<float> with = session_logits(s, in, 3);
    CHECK(with != plain);
    CHECK(agree(with, model_logits(merged, in, 3)));

    // Evaluation.
    pg_eval_config ec;
    pg_eval_config_default(&ec);
    ec.batch_size = 2;
    ec.window = kT;
    pg_eval_result er_session, er_merged;
    er_session.struct_size = er_merged.struct_size = sizeof(pg_eval_result);
    const std::vector<int32_t> text = tokens(200, 3);
    REQUIRE(pg_session_evaluate(s, text.data(), text.size(), &ec, &er_session) == PG_OK);
    pg_session* ms = new_session(merged, 2);
    REQUIRE(pg_session_evaluate(ms, text.data(), text.size(), &ec, &er_merged) == PG_OK);
    CHECK(std::fabs(er_session.mean_loss - er_merged.mean_loss) <= 1e-5 * std::fabs(er_merged.mean_loss));

    // The KV-cached path (one position at a time, as generation runs it).
    REQUIRE(pg_session_append(s, in.data(), 5) == PG_OK);
    REQUIRE(pg_session_append(ms, in.data(), 5) == PG_OK);
    for (int step = 0; step < 6; ++step) {
        std::vector<float> ls(kVocab), lm(kVocab);
        REQUIRE(pg_session_logits(s, ls.data(), ls.size()) == PG_OK);
        REQUIRE(pg_session_logits(ms, lm.data(), lm.size()) == PG_OK);
        CHECK(agree(ls, lm));
        REQUIRE(pg_session_append(s, &in[std::size_t(5 + step)], 1) == PG_OK);
        REQUIRE(pg_session_append(ms, &in[std::size_t(5 + step)], 1) == PG_OK);
    }
    // Generation: greedy tokens equal the merged model's.
    pg_sample_config gc;
    pg_sample_config_default(&gc);
    gc.temperature = 0.0f;
    gc.max_tokens = 8;
    std::vector<int32_t> gs(8), gm(8);
    size_t ns = 0, nm = 0;
    REQUIRE(pg_session_generate(s, &gc, gs.data(), gs.size(), &ns) == PG_OK);
    REQUIRE(pg_session_generate(ms, &gc, gm.data(), gm.size(), &nm) == PG_OK);
    CHECK(ns == nm);
    CHECK(gs == gm);

    // Detached: the base's logits bit for bit, and the base was never written.
    REQUIRE(pg_session_detach_adapter(s) == PG_OK);
    REQUIRE(pg_session_adapter(s, &attached) == PG_OK);
    CHECK(attached == nullptr);
    CHECK(session_logits(s, in, 3) == plain);
    CHECK(pg_session_detach_adapter(s) == PG_OK);  // nothing attached: nothing to do
    REQUIRE(pg_model_params(base, &p, &n_params) == PG_OK);
    CHECK(std::vector<float>(p, p + n_params) == base_before);

    // Another base's adapter is refused, naming both sides; bad arguments are refused.
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    mc.n_layer = 3;
    pg_model* other = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &other) == PG_OK);
    pg_lora_adapter* foreign = adapter_with_b(other, PG_LORA_ATTN_C_ATTN, 2);
    CHECK(pg_session_attach_adapter(s, foreign) == PG_ERR_GEOMETRY);
    CHECK(std::string(pg_session_last_error(s)).find("pg_session_attach_adapter") != std::string::npos);
    CHECK(pg_session_attach_adapter(s, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_attach_adapter(nullptr, a) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_detach_adapter(nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_session_adapter(s, nullptr) == PG_ERR_INVALID_ARGUMENT);

    pg_lora_adapter_free(foreign);
    pg_model_free(other);
    pg_session_free(ms);
    pg_session_free(s);
    pg_model_free(merged);
    pg_lora_adapter_free(a);
    pg_model_free(base);
}

TEST_CASE("lora session: one base, several sessions with their own adapters, at once", "[lora][lora_session]") {
    pg_model* base = tiny_base(9);
    pg_lora_adapter* adapters[2] = {adapter_with_b(base, PG_LORA_ALL_LINEARS, 3),
                                    adapter_with_b(base, PG_LORA_ATTN_C_ATTN | PG_LORA_MLP_C_FC, 4)};
    std::vector<float> want[3];  // adapter 0, adapter 1, no adapter
    const std::vector<int32_t> in = tokens(2 * kT, 7);
    for (int k = 0; k < 2; ++k) {
        pg_model* merged = nullptr;
        REQUIRE(pg_lora_merge(base, adapters[k], 1, &merged) == PG_OK);
        want[k] = model_logits(merged, in, 2);
        pg_model_free(merged);
    }
    want[2] = model_logits(base, in, 2);

    pg_session* sessions[3];
    for (int k = 0; k < 3; ++k) {
        sessions[k] = new_session(base, 1);
        if (k < 2) REQUIRE(pg_session_attach_adapter(sessions[k], adapters[k]) == PG_OK);
    }
    // Each session on its own thread, several passes each: no session sees another's adapter.
    std::vector<float> got[3];
    int failures[3] = {0, 0, 0};
    std::vector<std::thread> threads;
    for (int k = 0; k < 3; ++k)
        threads.emplace_back([&, k] {
            for (int rep = 0; rep < 20; ++rep) {
                std::vector<float> out(std::size_t(2) * kT * kVocab);
                if (pg_session_forward(sessions[k], in.data(), 2, kT, nullptr, out.data(), nullptr) != PG_OK)
                    ++failures[k];
                if (rep == 0) got[k] = out;
                else if (out != got[k]) ++failures[k];  // the same bits every time
            }
        });
    for (auto& t : threads) t.join();
    for (int k = 0; k < 3; ++k) {
        INFO("session " << k);
        CHECK(failures[k] == 0);
        CHECK(agree(got[k], want[k]));
    }
    CHECK(got[2] == want[2]);  // no adapter: the base exactly
    CHECK(!agree(got[0], got[1]));
    for (pg_session* s : sessions) pg_session_free(s);
    for (pg_lora_adapter* a : adapters) pg_lora_adapter_free(a);
    pg_model_free(base);
}
