// The trainer's C API: a sweep of every entry point with NULL, out-of-range and inconsistent
// arguments (each must give a status and a message naming the function, and change nothing),
// then a small training run through the C API.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"

namespace {

struct TinyModel {
    pg_model* m = nullptr;
    TinyModel() {
        pg_model_config c;
        REQUIRE(pg_model_config_preset("tiny", &c) == PG_OK);
        REQUIRE(pg_model_create(&c, 42, &m) == PG_OK);
    }
    ~TinyModel() { pg_model_free(m); }
};

pg_train_config small_config() {
    pg_train_config c;
    pg_train_config_default(&c);
    c.batch_size = 2;
    c.seq_len = 8;
    c.n_threads = 1;
    c.total_steps = 10;
    c.warmup_steps = 2;
    return c;
}

// Expects `status` to be `want` with the thread's message naming `fn`.
void expect_error(pg_status status, pg_status want, const char* fn, const char* what) {
    INFO(fn << ": " << what << " -> " << pg_status_name(status) << ": " << pg_last_error());
    CHECK(status == want);
    CHECK(std::string(pg_last_error()).find(fn) != std::string::npos);
}

}  // namespace

TEST_CASE("pg_train_config_default fills the documented defaults", "[train][capi]") {
    pg_train_config c;
    std::memset(&c, 0xAB, sizeof c);
    pg_train_config_default(&c);
    CHECK(c.struct_size == sizeof c);
    CHECK(c.batch_size == 32);
    CHECK(c.seq_len == 0);
    CHECK(c.grad_accum_steps == 1);
    CHECK(c.schedule == PG_LR_COSINE);
    CHECK(c.lr_max == 1e-3f);
    CHECK(c.lr_min == 1e-4f);
    CHECK(c.warmup_steps == 100);
    CHECK(c.total_steps == 5000);
    CHECK(c.beta1 == 0.9f);
    CHECK(c.beta2 == 0.95f);
    CHECK(c.eps == 1e-8f);
    CHECK(c.weight_decay == 0.1f);
    CHECK(c.decay_embeddings == 0);
    CHECK(c.grad_clip == 1.0f);
    CHECK(c.dropout == 0.0f);
    CHECK(c.seed == 1337);
    CHECK(c.n_threads == 0);
    pg_train_config_default(nullptr);  // a no-op, not a crash
}

TEST_CASE("pg_trainer_create rejects NULL and bad configurations", "[train][capi]") {
    TinyModel tm;
    pg_train_config c = small_config();
    pg_trainer* t = reinterpret_cast<pg_trainer*>(0x1);
    expect_error(pg_trainer_create(tm.m, &c, nullptr), PG_ERR_INVALID_ARGUMENT, "pg_trainer_create", "out NULL");
    expect_error(pg_trainer_create(nullptr, &c, &t), PG_ERR_INVALID_ARGUMENT, "pg_trainer_create", "model NULL");
    CHECK(t == nullptr);
    expect_error(pg_trainer_create(tm.m, nullptr, &t), PG_ERR_INVALID_ARGUMENT, "pg_trainer_create", "config NULL");

    struct Bad {
        const char* what;
        void (*spoil)(pg_train_config&);
    };
    const Bad bads[] = {
        {"struct_size 0", [](pg_train_config& x) { x.struct_size = 0; }},
        {"struct_size huge", [](pg_train_config& x) { x.struct_size = 1u << 30; }},
        {"batch_size 0", [](pg_train_config& x) { x.batch_size = 0; }},
        {"batch_size negative", [](pg_train_config& x) { x.batch_size = -4; }},
        {"seq_len above n_ctx", [](pg_train_config& x) { x.seq_len = 17; }},
        {"seq_len negative", [](pg_train_config& x) { x.seq_len = -1; }},
        {"grad_accum_steps 0", [](pg_train_config& x) { x.grad_accum_steps = 0; }},
        {"schedule 3", [](pg_train_config& x) { x.schedule = static_cast<pg_lr_schedule>(3); }},
        {"lr_max negative", [](pg_train_config& x) { x.lr_max = -1.0f; }},
        {"lr_max NaN", [](pg_train_config& x) { x.lr_max = NAN; }},
        {"lr_min above lr_max", [](pg_train_config& x) { x.lr_min = 1.0f; }},
        {"warmup negative", [](pg_train_config& x) { x.warmup_steps = -1; }},
        {"total_steps 0", [](pg_train_config& x) { x.total_steps = 0; }},
        {"beta1 1", [](pg_train_config& x) { x.beta1 = 1.0f; }},
        {"beta2 negative", [](pg_train_config& x) { x.beta2 = -0.5f; }},
        {"eps 0", [](pg_train_config& x) { x.eps = 0.0f; }},
        {"weight_decay negative", [](pg_train_config& x) { x.weight_decay = -1.0f; }},
        {"decay_embeddings 5", [](pg_train_config& x) { x.decay_embeddings = 5; }},
        {"grad_clip negative", [](pg_train_config& x) { x.grad_clip = -1.0f; }},
        {"dropout 1", [](pg_train_config& x) { x.dropout = 1.0f; }},
        {"dropout negative", [](pg_train_config& x) { x.dropout = -0.1f; }},
        {"n_threads huge", [](pg_train_config& x) { x.n_threads = 1 << 20; }},
    };
    for (const Bad& b : bads) {
        pg_train_config x = small_config();
        b.spoil(x);
        t = reinterpret_cast<pg_trainer*>(0x1);
        expect_error(pg_trainer_create(tm.m, &x, &t), PG_ERR_INVALID_ARGUMENT, "pg_trainer_create", b.what);
        CHECK(t == nullptr);
    }
    // An older, shorter struct is accepted (defaults for the rest).
    pg_train_config old = small_config();
    old.struct_size = uint32_t(offsetof(pg_train_config, grad_accum_steps) + sizeof(int32_t));
    REQUIRE(pg_trainer_create(tm.m, &old, &t) == PG_OK);
    pg_train_config got;
    got.struct_size = sizeof got;
    REQUIRE(pg_trainer_get_config(t, &got) == PG_OK);
    CHECK(got.batch_size == 2);
    CHECK(got.seq_len == 8);
    CHECK(got.total_steps == 5000);  // the default, not the caller's 10
    pg_trainer_free(t);
    pg_trainer_free(nullptr);
}

TEST_CASE("every trainer entry point rejects bad arguments and changes nothing", "[train][capi]") {
    TinyModel tm;
    pg_train_config c = small_config();
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(tm.m, &c, &t) == PG_OK);
    std::vector<int32_t> in(16, 1), tgt(16, 2);
    pg_step_result r;
    r.struct_size = sizeof r;
    float loss = 0;
    const float* g = nullptr;
    int64_t step = -1;
    float lr = 0;
    pg_train_config got;
    got.struct_size = sizeof got;

    SECTION("NULL handles") {
        expect_error(pg_trainer_get_config(nullptr, &got), PG_ERR_INVALID_ARGUMENT, "pg_trainer_get_config", "NULL");
        expect_error(pg_trainer_set_data(nullptr, in.data(), in.size()), PG_ERR_INVALID_ARGUMENT, "pg_trainer_set_data", "NULL");
        expect_error(pg_trainer_step(nullptr, &r), PG_ERR_INVALID_ARGUMENT, "pg_trainer_step", "NULL");
        expect_error(pg_trainer_step_batch(nullptr, in.data(), tgt.data(), 2, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "NULL");
        expect_error(pg_trainer_compute_gradients(nullptr, in.data(), tgt.data(), 2, 8, &loss),
                     PG_ERR_INVALID_ARGUMENT, "pg_trainer_compute_gradients", "NULL");
        expect_error(pg_trainer_grad(nullptr, 0, &g), PG_ERR_INVALID_ARGUMENT, "pg_trainer_grad", "NULL");
        expect_error(pg_trainer_step_count(nullptr, &step), PG_ERR_INVALID_ARGUMENT, "pg_trainer_step_count", "NULL");
        expect_error(pg_trainer_lr_at(nullptr, 0, &lr), PG_ERR_INVALID_ARGUMENT, "pg_trainer_lr_at", "NULL");
        CHECK(std::string(pg_trainer_last_error(nullptr)).size() > 0);
    }
    SECTION("NULL outputs and inputs") {
        expect_error(pg_trainer_get_config(t, nullptr), PG_ERR_INVALID_ARGUMENT, "pg_trainer_get_config", "config");
        expect_error(pg_trainer_set_data(t, nullptr, 100), PG_ERR_INVALID_ARGUMENT, "pg_trainer_set_data", "tokens");
        expect_error(pg_trainer_step_batch(t, nullptr, tgt.data(), 2, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "inputs");
        expect_error(pg_trainer_step_batch(t, in.data(), nullptr, 2, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "targets");
        expect_error(pg_trainer_compute_gradients(t, nullptr, tgt.data(), 2, 8, &loss), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_compute_gradients", "inputs");
        expect_error(pg_trainer_compute_gradients(t, in.data(), nullptr, 2, 8, &loss), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_compute_gradients", "targets");
        expect_error(pg_trainer_grad(t, 0, nullptr), PG_ERR_INVALID_ARGUMENT, "pg_trainer_grad", "data");
        expect_error(pg_trainer_step_count(t, nullptr), PG_ERR_INVALID_ARGUMENT, "pg_trainer_step_count", "step");
        expect_error(pg_trainer_lr_at(t, 0, nullptr), PG_ERR_INVALID_ARGUMENT, "pg_trainer_lr_at", "lr");
        // The per-handle message is kept too.
        CHECK(std::string(pg_trainer_last_error(t)).find("pg_trainer_lr_at") != std::string::npos);
    }
    SECTION("out-of-range and inconsistent arguments") {
        expect_error(pg_trainer_step_batch(t, in.data(), tgt.data(), 0, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "B = 0");
        expect_error(pg_trainer_step_batch(t, in.data(), tgt.data(), -1, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "B < 0");
        expect_error(pg_trainer_step_batch(t, in.data(), tgt.data(), 1, 17, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "T > n_ctx");
        expect_error(pg_trainer_step_batch(t, in.data(), tgt.data(), 1, 0, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "T = 0");
        expect_error(pg_trainer_compute_gradients(t, in.data(), tgt.data(), 2, 17, &loss), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_compute_gradients", "T > n_ctx");
        std::vector<int32_t> bad_in = in, bad_tgt = tgt;
        bad_in[3] = 65;  // vocab is 65: ids 0..64
        expect_error(pg_trainer_step_batch(t, bad_in.data(), tgt.data(), 2, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "input id 65");
        bad_in[3] = -1;
        expect_error(pg_trainer_compute_gradients(t, bad_in.data(), tgt.data(), 2, 8, &loss),
                     PG_ERR_INVALID_ARGUMENT, "pg_trainer_compute_gradients", "input id -1");
        bad_tgt[0] = 66;
        expect_error(pg_trainer_step_batch(t, in.data(), bad_tgt.data(), 2, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "target 66");
        bad_tgt[0] = -2;
        expect_error(pg_trainer_step_batch(t, in.data(), bad_tgt.data(), 2, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "target -2");
        std::vector<int32_t> none(16, -1);
        expect_error(pg_trainer_step_batch(t, in.data(), none.data(), 2, 8, &r), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "no scored target");
        pg_step_result unsized;
        unsized.struct_size = 0;
        expect_error(pg_trainer_step_batch(t, in.data(), tgt.data(), 2, 8, &unsized), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_step_batch", "result struct_size 0");
        expect_error(pg_trainer_step(t, &unsized), PG_ERR_INVALID_ARGUMENT, "pg_trainer_step", "result struct_size 0");
        pg_train_config unsized_cfg;
        unsized_cfg.struct_size = 0;
        expect_error(pg_trainer_get_config(t, &unsized_cfg), PG_ERR_INVALID_ARGUMENT, "pg_trainer_get_config",
                     "struct_size 0");
        expect_error(pg_trainer_grad(t, -1, &g), PG_ERR_INVALID_ARGUMENT, "pg_trainer_grad", "index -1");
        expect_error(pg_trainer_grad(t, 2 + 12 * 2 + 2, &g), PG_ERR_INVALID_ARGUMENT, "pg_trainer_grad", "index past end");
        expect_error(pg_trainer_lr_at(t, -1, &lr), PG_ERR_INVALID_ARGUMENT, "pg_trainer_lr_at", "step -1");
        // Data: too short, and ids outside the vocabulary.
        expect_error(pg_trainer_set_data(t, in.data(), 8), PG_ERR_INVALID_ARGUMENT, "pg_trainer_set_data",
                     "fewer than seq_len + 1");
        std::vector<int32_t> data(100, 3);
        data[57] = 65;
        expect_error(pg_trainer_set_data(t, data.data(), data.size()), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_set_data", "id 65");
        CHECK(std::string(pg_last_error()).find("57") != std::string::npos);
        data[57] = -3;
        expect_error(pg_trainer_set_data(t, data.data(), data.size()), PG_ERR_INVALID_ARGUMENT,
                     "pg_trainer_set_data", "id -3");
        // Stepping without data is a state error.
        expect_error(pg_trainer_step(t, &r), PG_ERR_STATE, "pg_trainer_step", "no data");
        // None of it changed the trainer or the model.
        REQUIRE(pg_trainer_step_count(t, &step) == PG_OK);
        CHECK(step == 0);
        pg_model* fresh = nullptr;
        pg_model_config mc;
        pg_model_config_default(&mc);  // sets struct_size, which get_config needs
        REQUIRE(pg_model_get_config(tm.m, &mc) == PG_OK);
        REQUIRE(pg_model_create(&mc, 42, &fresh) == PG_OK);
        const float *a = nullptr, *b = nullptr;
        int64_t na = 0, nb = 0;
        REQUIRE(pg_model_params(tm.m, &a, &na) == PG_OK);
        REQUIRE(pg_model_params(fresh, &b, &nb) == PG_OK);
        REQUIRE(na == nb);
        CHECK(std::memcmp(a, b, sizeof(float) * size_t(na)) == 0);
        pg_model_free(fresh);
    }
    pg_trainer_free(t);
}

TEST_CASE("a short run through the C API", "[train][capi]") {
    TinyModel tm;
    pg_train_config c = small_config();
    c.grad_accum_steps = 2;
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(tm.m, &c, &t) == PG_OK);
    pg_train_config got;
    got.struct_size = sizeof got;
    REQUIRE(pg_trainer_get_config(t, &got) == PG_OK);
    CHECK(got.seq_len == 8);
    CHECK(got.grad_accum_steps == 2);
    std::vector<int32_t> data(500);
    for (size_t i = 0; i < data.size(); ++i) data[i] = int32_t((i * 7) % 13);
    REQUIRE(pg_trainer_set_data(t, data.data(), data.size()) == PG_OK);
    float first = 0, last = 0;
    for (int s = 0; s < 10; ++s) {
        pg_step_result r;
        r.struct_size = sizeof r;
        REQUIRE(pg_trainer_step(t, &r) == PG_OK);
        CHECK(r.step == s + 1);
        CHECK(r.tokens == 2 * 8 * 2);
        CHECK(r.grad_norm > 0.0f);
        float lr = 0;
        REQUIRE(pg_trainer_lr_at(t, s, &lr) == PG_OK);
        CHECK(r.lr == lr);
        if (s == 0) first = r.loss;
        last = r.loss;
    }
    CHECK(last < first);
    REQUIRE(pg_trainer_step(t, nullptr) == PG_OK);  // result may be NULL
    int64_t step = 0;
    REQUIRE(pg_trainer_step_count(t, &step) == PG_OK);
    CHECK(step == 11);
    // A result struct from an older caller that ends after `loss` gets only what it has.
    struct {
        pg_step_result r;
        char guard[8];
    } small;
    std::memset(&small, 0x5A, sizeof small);
    small.r.struct_size = uint32_t(offsetof(pg_step_result, loss) + sizeof(float));
    REQUIRE(pg_trainer_step(t, &small.r) == PG_OK);
    CHECK(small.r.step == 12);
    unsigned char lr_byte;
    std::memcpy(&lr_byte, &small.r.lr, 1);
    CHECK(lr_byte == 0x5A);
    // Gradients are readable per tensor, with the model's numbering.
    float loss = 0;
    REQUIRE(pg_trainer_compute_gradients(t, data.data(), data.data() + 1, 2, 8, &loss) == PG_OK);
    CHECK(loss > 0.0f);
    REQUIRE(pg_trainer_compute_gradients(t, data.data(), data.data() + 1, 2, 8, nullptr) == PG_OK);
    const float* g = nullptr;
    int32_t wte = -1;
    REQUIRE(pg_model_find_tensor(tm.m, "wte", &wte) == PG_OK);
    REQUIRE(pg_trainer_grad(t, wte, &g) == PG_OK);
    double sq = 0;
    for (int i = 0; i < 68 * 16; ++i) sq += double(g[i]) * g[i];
    CHECK(sq > 0.0);
    pg_trainer_free(t);
}
