// Adapter training checkpoints resume bit for bit given the same base: N steps straight equal
// k steps, pg_lora_trainer_save, pg_lora_trainer_resume, N - k steps (step results, factors,
// training record, AdamW state and the file itself), with the base's and the LoRA branch's
// dropout, accumulation, warmup + cosine, clipping and weight decay all in play.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "test_checkpoint_support.hpp"
#include "test_support.hpp"

namespace {

struct Run {
    pg_model* base = nullptr;
    std::vector<int32_t> data;
    Run() {
        pg_model_config mc;
        REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
        REQUIRE(pg_model_create(&mc, 21, &base) == PG_OK);
        REQUIRE(pg_model_allow_untrained_base(base, 1) == PG_OK);  // a random base is enough here
        for (int i = 0; i < 1500; ++i) data.push_back(int32_t((i * 5) % 11 + (i % 4)));
    }
    ~Run() { pg_model_free(base); }

    pg_lora_adapter* new_adapter() const {
        pg_lora_config c;
        pg_lora_config_default(&c);
        c.rank = 4;
        c.alpha = 8.0f;
        c.dropout = 0.1f;
        c.target_modules = PG_LORA_ALL_LINEARS;
        pg_lora_adapter* a = nullptr;
        REQUIRE(pg_lora_adapter_create(base, &c, &a) == PG_OK);
        return a;
    }
    static pg_train_config config() {
        pg_train_config c;
        pg_train_config_default(&c);
        c.batch_size = 2;
        c.seq_len = 12;
        c.grad_accum_steps = 2;
        c.schedule = PG_LR_COSINE;
        c.lr_max = 5e-3f;
        c.lr_min = 5e-4f;
        c.warmup_steps = 2;
        c.total_steps = 8;
        c.weight_decay = 0.1f;
        c.grad_clip = 0.5f;
        c.dropout = 0.1f;
        c.seed = 77;
        c.n_threads = 2;
        return c;
    }
    // Step i of the run: sampled, except step 2, which is a caller's batch.
    void step(pg_lora_trainer* t, int i, std::vector<pg_step_result>& out) const {
        pg_step_result r;
        r.struct_size = sizeof r;
        if (i == 2) {
            std::vector<int32_t> in(data.begin() + 100, data.begin() + 112), tg(data.begin() + 101, data.begin() + 113);
            REQUIRE(pg_lora_trainer_step_batch(t, in.data(), tg.data(), 1, 12, &r) == PG_OK);
        } else {
            REQUIRE(pg_lora_trainer_step(t, &r) == PG_OK);
        }
        out.push_back(r);
    }
};

std::vector<float> factors(const pg_lora_adapter* a) {
    int64_t n = 0;
    REQUIRE(pg_lora_adapter_num_params(a, &n) == PG_OK);
    pg_tensor_info info;
    info.struct_size = sizeof info;
    REQUIRE(pg_lora_adapter_tensor_info(a, 0, &info) == PG_OK);
    return std::vector<float>(info.data, info.data + n);
}

std::vector<float> record_losses(const pg_lora_adapter* a, int64_t* steps, int64_t* tokens) {
    const float* losses = nullptr;
    REQUIRE(pg_lora_adapter_training_record(a, steps, tokens, &losses, nullptr) == PG_OK);
    return std::vector<float>(losses, losses + *steps);
}

bool same_results(const std::vector<pg_step_result>& a, const std::vector<pg_step_result>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].step != b[i].step || a[i].tokens != b[i].tokens) return false;
        if (std::memcmp(&a[i].loss, &b[i].loss, 4) || std::memcmp(&a[i].lr, &b[i].lr, 4) ||
            std::memcmp(&a[i].grad_norm, &b[i].grad_norm, 4))
            return false;
    }
    return true;
}

}  // namespace

TEST_CASE("lora resume: N steps straight == k steps, save, resume, N - k steps, bit for bit", "[lora][lora_resume]") {
    const int N = 8;
    Run run;
    const pg_train_config tc = Run::config();
    const std::string dir = pg_test::tmp_dir();

    // Straight.
    pg_lora_adapter* straight = run.new_adapter();
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(run.base, straight, &tc, &t) == PG_OK);
    REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
    std::vector<pg_step_result> want;
    for (int i = 0; i < N; ++i) run.step(t, i, want);
    const std::string straight_path = dir + "/lora_resume_straight.safetensors";
    REQUIRE(pg_lora_trainer_save(t, straight_path.c_str()) == PG_OK);
    pg_lora_trainer_free(t);

    for (int k : {1, 3, 5}) {
        INFO("resumed after " << k << " steps");
        pg_lora_adapter* first = run.new_adapter();
        REQUIRE(pg_lora_trainer_create(run.base, first, &tc, &t) == PG_OK);
        REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
        std::vector<pg_step_result> got;
        for (int i = 0; i < k; ++i) run.step(t, i, got);
        const std::string path = dir + "/lora_resume_" + std::to_string(k) + ".safetensors";
        REQUIRE(pg_lora_trainer_save(t, path.c_str()) == PG_OK);
        pg_lora_trainer_free(t);
        pg_lora_adapter_free(first);  // nothing of the first half survives but the file

        pg_lora_adapter* resumed = nullptr;
        REQUIRE(pg_lora_trainer_resume(path.c_str(), run.base, &resumed, &t) == PG_OK);
        REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
        for (int i = k; i < N; ++i) run.step(t, i, got);
        CHECK(same_results(got, want));
        CHECK(factors(resumed) == factors(straight));
        int64_t steps_a = 0, tokens_a = 0, steps_b = 0, tokens_b = 0;
        CHECK(record_losses(resumed, &steps_b, &tokens_b) == record_losses(straight, &steps_a, &tokens_a));
        CHECK(steps_b == N);
        CHECK(tokens_b == tokens_a);
        // Everything else the run carries (moments, sampler, dropout stream, step, record) is
        // the same too: the checkpoints after N steps are the same bytes.
        const std::string end_path = dir + "/lora_resume_end.safetensors";
        REQUIRE(pg_lora_trainer_save(t, end_path.c_str()) == PG_OK);
        CHECK(ckpt_test::read_bytes(end_path) == ckpt_test::read_bytes(straight_path));
        pg_lora_trainer_free(t);
        pg_lora_adapter_free(resumed);
        std::remove(path.c_str());
        std::remove(end_path.c_str());
    }

    // A training checkpoint also loads as a plain adapter (the state is skipped).
    pg_lora_adapter* plain = nullptr;
    REQUIRE(pg_lora_adapter_load(straight_path.c_str(), run.base, &plain) == PG_OK);
    CHECK(factors(plain) == factors(straight));
    pg_lora_adapter_free(plain);
    pg_lora_adapter_free(straight);
    std::remove(straight_path.c_str());
}

TEST_CASE("lora resume: wrong files and bases are refused, naming what is wrong", "[lora][lora_resume]") {
    Run run;
    const pg_train_config tc = Run::config();
    const std::string dir = pg_test::tmp_dir();
    pg_lora_adapter* a = run.new_adapter();
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(run.base, a, &tc, &t) == PG_OK);
    REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
    REQUIRE(pg_lora_trainer_step(t, nullptr) == PG_OK);
    const std::string path = dir + "/lora_resume_bad.safetensors";
    REQUIRE(pg_lora_trainer_save(t, path.c_str()) == PG_OK);

    pg_lora_adapter* ra = reinterpret_cast<pg_lora_adapter*>(&run);
    pg_lora_trainer* rt = reinterpret_cast<pg_lora_trainer*>(&run);
    // A plain adapter file has no training state.
    const std::string plain = dir + "/lora_resume_plain.safetensors";
    REQUIRE(pg_lora_adapter_save(a, plain.c_str()) == PG_OK);
    CHECK(pg_lora_trainer_resume(plain.c_str(), run.base, &ra, &rt) == PG_ERR_STATE);
    CHECK(ra == nullptr);
    CHECK(rt == nullptr);
    CHECK(std::string(pg_last_error()).find("pg_lora_trainer_save") != std::string::npos);

    // Another base: geometry error naming both sides; a never-trained one without permission: state.
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* other = nullptr;
    REQUIRE(pg_model_create(&mc, 22, &other) == PG_OK);
    CHECK(pg_lora_trainer_resume(path.c_str(), other, &ra, &rt) == PG_ERR_GEOMETRY);
    REQUIRE(pg_model_allow_untrained_base(run.base, 0) == PG_OK);
    CHECK(pg_lora_trainer_resume(path.c_str(), run.base, &ra, &rt) == PG_ERR_STATE);
    REQUIRE(pg_model_allow_untrained_base(run.base, 1) == PG_OK);

    // A flipped byte in the moments: checksum error naming the tensor; the file is read, not trusted.
    std::vector<uint8_t> bytes = ckpt_test::read_bytes(path);
    bytes[bytes.size() - 3] ^= 0x40;
    const std::string corrupt = dir + "/lora_resume_corrupt.safetensors";
    ckpt_test::write_bytes(corrupt, bytes);
    CHECK(pg_lora_trainer_resume(corrupt.c_str(), run.base, &ra, &rt) == PG_ERR_CHECKSUM);
    CHECK(std::string(pg_last_error()).find("adam_v") != std::string::npos);
    CHECK(ra == nullptr);

    CHECK(pg_lora_trainer_resume(nullptr, run.base, &ra, &rt) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_resume(path.c_str(), nullptr, &ra, &rt) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_save(nullptr, path.c_str()) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_save(t, nullptr) == PG_ERR_INVALID_ARGUMENT);

    REQUIRE(pg_lora_trainer_resume(path.c_str(), run.base, &ra, &rt) == PG_OK);
    int64_t steps = 0;
    const float* losses = nullptr;
    REQUIRE(pg_lora_adapter_training_record(ra, &steps, nullptr, &losses, nullptr) == PG_OK);
    CHECK(steps == 1);
    pg_lora_trainer_free(rt);
    pg_lora_adapter_free(ra);
    pg_lora_trainer_free(t);
    pg_lora_adapter_free(a);
    pg_model_free(other);
    for (const std::string& p : {path, plain, corrupt}) std::remove(p.c_str());
}

// The LoRA trainer takes every field of pg_train_config the full trainer takes but Muon (the
// base's matrices are frozen), and answers the full trainer's getters.
TEST_CASE("lora trainer: a dropout ramp resumes bit for bit; the trainer's getters", "[lora][lora_resume]") {
    const int N = 6, k = 2;
    Run run;
    pg_train_config tc = Run::config();
    tc.dropout_ramp_steps = 4;
    const std::string dir = pg_test::tmp_dir();

    auto first_loss = [&](const pg_train_config& c) {
        pg_lora_adapter* a = run.new_adapter();
        pg_lora_trainer* t = nullptr;
        REQUIRE(pg_lora_trainer_create(run.base, a, &c, &t) == PG_OK);
        REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
        pg_step_result r{sizeof r};
        REQUIRE(pg_lora_trainer_step(t, &r) == PG_OK);
        pg_lora_trainer_free(t);
        pg_lora_adapter_free(a);
        return r.loss;
    };
    const pg_train_config no_ramp = Run::config();
    CHECK(first_loss(tc) != first_loss(no_ramp));  // step 0 of the ramp: the base without dropout

    pg_lora_adapter* straight = run.new_adapter();
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(run.base, straight, &tc, &t) == PG_OK);
    REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
    std::vector<pg_step_result> want;
    for (int i = 0; i < N; ++i) run.step(t, i, want);
    // The getters: configuration, step count, schedule, threads.
    pg_train_config got_config;
    pg_train_config_default(&got_config);
    REQUIRE(pg_lora_trainer_get_config(t, &got_config) == PG_OK);
    CHECK(got_config.dropout_ramp_steps == 4);
    CHECK(got_config.seq_len == 12);
    CHECK(got_config.total_steps == tc.total_steps);
    int64_t steps = -1;
    REQUIRE(pg_lora_trainer_step_count(t, &steps) == PG_OK);
    CHECK(steps == N);
    for (int i = 0; i < N; ++i) {
        float lr = -1.0f;
        REQUIRE(pg_lora_trainer_lr_at(t, i, &lr) == PG_OK);
        CHECK(std::memcmp(&lr, &want[std::size_t(i)].lr, 4) == 0);
    }
    int32_t threads = 0;
    REQUIRE(pg_lora_trainer_n_threads(t, &threads) == PG_OK);
    CHECK(threads == 2);
    float lr = 0.0f;
    CHECK(pg_lora_trainer_lr_at(t, -1, &lr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("pg_lora_trainer_lr_at: step = -1") != std::string::npos);
    CHECK(pg_lora_trainer_n_threads(nullptr, &threads) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_get_config(t, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_trainer_set_threads(t, 2000) == PG_ERR_INVALID_ARGUMENT);  // above 1024
    CHECK(std::string(pg_lora_trainer_last_error(t)).find("pg_lora_trainer_set_threads") != std::string::npos);
    const std::string straight_path = dir + "/lora_ramp_straight.safetensors";
    REQUIRE(pg_lora_trainer_save(t, straight_path.c_str()) == PG_OK);
    pg_lora_trainer_free(t);

    pg_lora_adapter* first = run.new_adapter();
    REQUIRE(pg_lora_trainer_create(run.base, first, &tc, &t) == PG_OK);
    REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
    std::vector<pg_step_result> got;
    for (int i = 0; i < k; ++i) run.step(t, i, got);
    const std::string path = dir + "/lora_ramp_half.safetensors";
    REQUIRE(pg_lora_trainer_save(t, path.c_str()) == PG_OK);
    pg_lora_trainer_free(t);
    pg_lora_adapter_free(first);

    pg_lora_adapter* resumed = nullptr;
    REQUIRE(pg_lora_trainer_resume(path.c_str(), run.base, &resumed, &t) == PG_OK);
    pg_train_config resumed_config;
    pg_train_config_default(&resumed_config);
    REQUIRE(pg_lora_trainer_get_config(t, &resumed_config) == PG_OK);
    CHECK(resumed_config.dropout_ramp_steps == 4);  // the ramp came back from the file
    REQUIRE(pg_lora_trainer_set_threads(t, 1) == PG_OK);  // later steps on 1 thread, then back
    REQUIRE(pg_lora_trainer_n_threads(t, &threads) == PG_OK);
    CHECK(threads == 1);
    REQUIRE(pg_lora_trainer_set_threads(t, 2) == PG_OK);
    REQUIRE(pg_lora_trainer_set_data(t, run.data.data(), run.data.size()) == PG_OK);
    for (int i = k; i < N; ++i) run.step(t, i, got);
    CHECK(same_results(got, want));
    CHECK(factors(resumed) == factors(straight));
    const std::string end_path = dir + "/lora_ramp_end.safetensors";
    REQUIRE(pg_lora_trainer_save(t, end_path.c_str()) == PG_OK);
    CHECK(ckpt_test::read_bytes(end_path) == ckpt_test::read_bytes(straight_path));
    pg_lora_trainer_free(t);
    pg_lora_adapter_free(resumed);
    pg_lora_adapter_free(straight);

    tc.optimizer = PG_OPTIMIZER_MUON;  // the one field that cannot apply: the base is frozen
    pg_lora_adapter* a = run.new_adapter();
    CHECK(pg_lora_trainer_create(run.base, a, &tc, &t) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("optimizer") != std::string::npos);
    pg_lora_adapter_free(a);
    for (const std::string& p : {straight_path, path, end_path}) std::remove(p.c_str());
}
