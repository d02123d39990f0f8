// Training an adapter over a frozen base through the C API: the loss goes down, the base is
// never written, only the adapter's factors move (only B with freeze_a), the record follows the
// steps, runs are bit-for-bit repeatable, and the trained adapter saves, loads and merges.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "test_support.hpp"
#include "session_calls.hpp"

namespace {

struct Setup {
    pg_model* base = nullptr;
    pg_lora_adapter* adapter = nullptr;
    std::vector<int32_t> data;
    explicit Setup(int freeze_a = 0, uint32_t targets = PG_LORA_ALL_LINEARS) {
        pg_model_config mc;
        REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);  // 2 layers, width 16, context 16
        REQUIRE(pg_model_create(&mc, 11, &base) == PG_OK);
        // A larger token embedding than GPT-2's 0.02, so the frozen tied head can express what
        // the adapter learns (a freshly initialised head's logits barely move).
        float* wte = nullptr;
        REQUIRE(pg_model_tensor_data_mutable(base, 0, &wte) == PG_OK);
        for (int i = 0; i < 68 * 16; ++i) wte[i] *= 25.0f;
        // A random base on purpose (test_provenance.cpp checks the refusal without this).
        REQUIRE(pg_model_allow_untrained_base(base, 1) == PG_OK);
        pg_lora_config c;
        pg_lora_config_default(&c);
        c.rank = 4;
        c.alpha = 8.0f;
        c.target_modules = targets;
        c.freeze_a = freeze_a;
        REQUIRE(pg_lora_adapter_create(base, &c, &adapter) == PG_OK);
        // A periodic text: an adapter can learn it while the random base cannot predict it.
        for (int i = 0; i < 2000; ++i) data.push_back(int32_t((i * 7) % 13 + (i % 3)));
    }
    ~Setup() {
        pg_lora_adapter_free(adapter);
        pg_model_free(base);
    }
    std::vector<float> factors() const {
        int64_t n = 0;
        REQUIRE(pg_lora_adapter_num_params(adapter, &n) == PG_OK);
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_lora_adapter_tensor_info(adapter, 0, &info) == PG_OK);
        return std::vector<float>(info.data, info.data + n);
    }
    std::vector<float> base_params() const {
        const float* p = nullptr;
        int64_t n = 0;
        REQUIRE(pg_model_params(base, &p, &n) == PG_OK);
        return std::vector<float>(p, p + n);
    }
};

pg_train_config train_config() {
    pg_train_config c;
    pg_train_config_default(&c);
    c.batch_size = 4;
    c.seq_len = 16;
    c.schedule = PG_LR_CONSTANT;
    c.lr_max = 1e-2f;
    c.warmup_steps = 0;
    c.weight_decay = 0.0f;
    c.n_threads = 2;
    c.seed = 5;
    return c;
}

std::vector<float> train(Setup& s, const pg_train_config& tc, int steps) {
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(s.base, s.adapter, &tc, &t) == PG_OK);
    REQUIRE(pg_lora_trainer_set_data(t, s.data.data(), s.data.size()) == PG_OK);
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) {
        pg_step_result r;
        r.struct_size = sizeof r;
        REQUIRE(pg_lora_trainer_step(t, &r) == PG_OK);
        CHECK(r.step == i + 1);
        CHECK(r.tokens == 64);
        losses.push_back(r.loss);
    }
    pg_lora_trainer_free(t);
    return losses;
}

}  // namespace

TEST_CASE("lora train: the loss goes down and only the adapter moves", "[lora][lora_train]") {
    Setup s;
    const auto base_before = s.base_params();
    const auto factors_before = s.factors();
    const auto losses = train(s, train_config(), 40);
    INFO("first " << losses.front() << ", last " << losses.back());
    CHECK(losses.back() < 0.8f * losses.front());
    CHECK(s.base_params() == base_before);  // the base is frozen: bit for bit
    CHECK(s.factors() != factors_before);

    int64_t n_steps = 0, tokens = 0;
    const float *rec_losses = nullptr, *rec_lrs = nullptr;
    REQUIRE(pg_lora_adapter_training_record(s.adapter, &n_steps, &tokens, &rec_losses, &rec_lrs) == PG_OK);
    CHECK(n_steps == 40);
    CHECK(tokens == 40 * 64);
    CHECK(std::vector<float>(rec_losses, rec_losses + n_steps) == losses);
    CHECK(rec_lrs[39] == 1e-2f);

    // The trained adapter saves with its record, loads against its base and merges.
    const std::string path = pg_test::tmp_dir() + "/lora_trained.safetensors";
    REQUIRE(pg_lora_adapter_save(s.adapter, path.c_str()) == PG_OK);
    pg_lora_adapter* back = nullptr;
    REQUIRE(pg_lora_adapter_load(path.c_str(), s.base, &back) == PG_OK);
    REQUIRE(pg_lora_adapter_training_record(back, &n_steps, nullptr, &rec_losses, nullptr) == PG_OK);
    CHECK(std::vector<float>(rec_losses, rec_losses + n_steps) == losses);
    pg_model* merged = nullptr;
    REQUIRE(pg_lora_merge(s.base, back, 1, &merged) == PG_OK);
    // The merged model scores the training text better than the base.
    std::vector<int32_t> in(s.data.begin(), s.data.begin() + 16), tg(s.data.begin() + 1, s.data.begin() + 17);
    float base_loss = 0, merged_loss = 0;
    REQUIRE(pg_test::forward(s.base, in.data(), 1, 16, tg.data(), nullptr, &base_loss, 1) == PG_OK);
    REQUIRE(pg_test::forward(merged, in.data(), 1, 16, tg.data(), nullptr, &merged_loss, 1) == PG_OK);
    CHECK(merged_loss < base_loss);
    pg_model_free(merged);
    pg_lora_adapter_free(back);
    std::remove(path.c_str());
}

TEST_CASE("lora train: same configuration and seed, same bits; freeze_a trains B only", "[lora][lora_train]") {
    Setup a, b;
    const auto la = train(a, train_config(), 5);
    const auto lb = train(b, train_config(), 5);
    CHECK(la == lb);
    CHECK(a.factors() == b.factors());

    Setup f(1);
    const auto before = f.factors();
    train(f, train_config(), 5);
    const auto after = f.factors();
    int32_t n = 0;
    REQUIRE(pg_lora_adapter_num_tensors(f.adapter, &n) == PG_OK);
    for (int32_t i = 0; i < n; ++i) {
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_lora_adapter_tensor_info(f.adapter, i, &info) == PG_OK);
        const bool is_a = std::string(info.name).find("lora_A") != std::string::npos;
        const bool same = std::memcmp(before.data() + info.offset, after.data() + info.offset,
                                      size_t(info.numel) * 4) == 0;
        INFO(info.name);
        CHECK(same == is_a);
    }
}

TEST_CASE("lora train: caller batches, accumulation, bad arguments", "[lora][lora_train]") {
    Setup s(0, PG_LORA_ATTN_C_ATTN);
    pg_train_config tc = train_config();
    tc.grad_accum_steps = 2;
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(s.base, s.adapter, &tc, &t) == PG_OK);
    pg_step_result r;
    r.struct_size = sizeof r;
    CHECK(pg_lora_trainer_step(t, &r) == PG_ERR_STATE);  // no data yet
    CHECK(std::string(pg_lora_trainer_last_error(t)).find("set_data") != std::string::npos);
    REQUIRE(pg_lora_trainer_set_data(t, s.data.data(), s.data.size()) == PG_OK);
    REQUIRE(pg_lora_trainer_step(t, &r) == PG_OK);
    CHECK(r.tokens == 128);
    std::vector<int32_t> in(s.data.begin(), s.data.begin() + 8), tg(s.data.begin() + 1, s.data.begin() + 9);
    tg[0] = -1;
    REQUIRE(pg_lora_trainer_step_batch(t, in.data(), tg.data(), 1, 8, &r) == PG_OK);
    CHECK(r.step == 2);
    in[3] = 99;
    CHECK(pg_lora_trainer_step_batch(t, in.data(), tg.data(), 1, 8, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("input 3 = 99") != std::string::npos);
    CHECK(pg_lora_trainer_step_batch(t, in.data(), tg.data(), 1, 17, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_set_data(t, s.data.data(), 3) == PG_ERR_INVALID_ARGUMENT);
    pg_lora_trainer_free(t);

    // Another base: refused, naming both sides.
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* other = nullptr;
    REQUIRE(pg_model_create(&mc, 12, &other) == PG_OK);
    pg_lora_trainer* u = reinterpret_cast<pg_lora_trainer*>(&mc);
    CHECK(pg_lora_trainer_create(other, s.adapter, &tc, &u) == PG_ERR_GEOMETRY);
    CHECK(u == nullptr);
    CHECK(std::string(pg_last_error()).find("weights") != std::string::npos);
    CHECK(pg_lora_trainer_create(s.base, nullptr, &tc, &u) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_create(s.base, s.adapter, nullptr, &u) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_step(nullptr, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_lora_trainer_last_error(nullptr)) == "trainer is NULL");
    pg_lora_trainer_free(nullptr);
    pg_model_free(other);
}
