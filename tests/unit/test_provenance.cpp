// Checkpoint provenance (against the field bug of a base artefact that silently held random
// weights): a created model is "initialised from seed S, never trained", every trainer step is
// counted, the record survives save and load (checkpoint 1.1, section PROV; 1.0 files are
// "unknown"), and LoRA training and adapter validation refuse a never-trained base unless the
// caller allows it on that handle.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "test_support.hpp"

namespace {

struct Prov {
    pg_provenance_kind kind = PG_PROVENANCE_UNKNOWN;
    int32_t has_seed = -1;
    uint64_t seed = 0;
    int64_t steps = -1, tokens = -1;
};

Prov provenance(const pg_model* m) {
    Prov p;
    REQUIRE(pg_model_provenance(m, &p.kind, &p.has_seed, &p.seed, &p.steps, &p.tokens) == PG_OK);
    return p;
}

pg_model* tiny_model(uint64_t seed) {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, seed, &m) == PG_OK);
    return m;
}

std::vector<int32_t> periodic_text() {
    std::vector<int32_t> data;
    for (int i = 0; i < 600; ++i) data.push_back(int32_t((i * 7) % 13 + (i % 3)));
    return data;
}

pg_train_config small_train_config() {
    pg_train_config c;
    pg_train_config_default(&c);
    c.batch_size = 2;
    c.seq_len = 8;
    c.n_threads = 1;
    c.warmup_steps = 0;
    return c;
}

// Trains `m` for `steps` full-training steps.
void train(pg_model* m, int steps) {
    const pg_train_config tc = small_train_config();
    const std::vector<int32_t> data = periodic_text();
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
    REQUIRE(pg_trainer_set_data(t, data.data(), data.size()) == PG_OK);
    for (int i = 0; i < steps; ++i) REQUIRE(pg_trainer_step(t, nullptr) == PG_OK);
    pg_trainer_free(t);
}

}  // namespace

TEST_CASE("provenance: created, trained, saved and loaded", "[provenance][checkpoint]") {
    pg_model* m = tiny_model(42);
    Prov p = provenance(m);
    CHECK(p.kind == PG_PROVENANCE_INITIALISED);
    CHECK(p.has_seed == 1);
    CHECK(p.seed == 42);
    CHECK(p.steps == 0);
    CHECK(p.tokens == 0);

    // Every step counts, sampled or caller-given; a refused call does not.
    train(m, 3);
    const pg_train_config tc = small_train_config();
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
    std::vector<int32_t> in(8, 1), tg(8, 2);
    REQUIRE(pg_trainer_step_batch(t, in.data(), tg.data(), 1, 8, nullptr) == PG_OK);
    in[0] = 9999;
    CHECK(pg_trainer_step_batch(t, in.data(), tg.data(), 1, 8, nullptr) == PG_ERR_INVALID_ARGUMENT);
    pg_trainer_free(t);
    p = provenance(m);
    CHECK(p.kind == PG_PROVENANCE_TRAINED);
    CHECK(p.seed == 42);
    CHECK(p.steps == 4);
    CHECK(p.tokens == 3 * 16 + 8);

    // Saved with the model and with the training state; a resumed trainer keeps counting.
    const std::string path = pg_test::tmp_dir() + "/provenance.pgck";
    REQUIRE(pg_model_save(m, path.c_str(), nullptr) == PG_OK);
    pg_model* back = nullptr;
    REQUIRE(pg_model_load(path.c_str(), &back) == PG_OK);
    const Prov q = provenance(back);
    CHECK(q.kind == PG_PROVENANCE_TRAINED);
    CHECK(q.has_seed == 1);
    CHECK(q.seed == 42);
    CHECK(q.steps == 4);
    CHECK(q.tokens == 56);
    pg_model_free(back);

    REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
    REQUIRE(pg_trainer_save(t, path.c_str(), nullptr) == PG_OK);
    pg_trainer_free(t);
    pg_model* resumed = nullptr;
    pg_trainer* rt = nullptr;
    REQUIRE(pg_trainer_resume(path.c_str(), &resumed, &rt) == PG_OK);
    const std::vector<int32_t> data = periodic_text();
    REQUIRE(pg_trainer_set_data(rt, data.data(), data.size()) == PG_OK);
    REQUIRE(pg_trainer_step(rt, nullptr) == PG_OK);
    CHECK(provenance(resumed).steps == 5);
    pg_trainer_free(rt);
    pg_model_free(resumed);

    // A never-trained model saves as such.
    pg_model* fresh = tiny_model(7);
    REQUIRE(pg_model_save(fresh, path.c_str(), nullptr) == PG_OK);
    REQUIRE(pg_model_load(path.c_str(), &back) == PG_OK);
    CHECK(provenance(back).kind == PG_PROVENANCE_INITIALISED);
    CHECK(provenance(back).seed == 7);
    pg_model_free(back);
    pg_model_free(fresh);

    // A file from before provenance (format 1.0) is unknown.
    REQUIRE(pg_model_load((pg_test::fixtures_dir() + "/checkpoint_v1.0_model.pgck").c_str(), &back) == PG_OK);
    p = provenance(back);
    CHECK(p.kind == PG_PROVENANCE_UNKNOWN);
    CHECK(p.has_seed == 0);
    pg_model_free(back);

    CHECK(pg_model_provenance(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_provenance(m, nullptr, nullptr, nullptr, nullptr, nullptr) == PG_OK);
    std::remove(path.c_str());
    pg_model_free(m);
}

TEST_CASE("provenance: LoRA refuses a never-trained base unless allowed", "[provenance][lora]") {
    pg_model* base = tiny_model(11);
    pg_lora_config c;
    pg_lora_config_default(&c);
    pg_lora_adapter* adapter = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &c, &adapter) == PG_OK);  // creating is fine
    const pg_train_config tc = small_train_config();

    // Training: refused, saying what the base is and how to allow it.
    pg_lora_trainer* t = nullptr;
    CHECK(pg_lora_trainer_create(base, adapter, &tc, &t) == PG_ERR_STATE);
    CHECK(t == nullptr);
    const std::string message = pg_last_error();
    INFO(message);
    CHECK(message.find("pg_lora_trainer_create") != std::string::npos);
    CHECK(message.find("initialised from seed 11, never trained") != std::string::npos);
    CHECK(message.find("pg_model_allow_untrained_base") != std::string::npos);

    // Validation: the same, after the identity check (a wrong base is still a geometry error).
    const std::string path = pg_test::tmp_dir() + "/provenance_adapter.safetensors";
    REQUIRE(pg_lora_adapter_save(adapter, path.c_str()) == PG_OK);
    CHECK(pg_lora_adapter_check_base(adapter, base) == PG_ERR_STATE);
    pg_lora_adapter* loaded = nullptr;
    CHECK(pg_lora_adapter_load(path.c_str(), base, &loaded) == PG_ERR_STATE);
    CHECK(loaded == nullptr);
    CHECK(std::string(pg_last_error()).find("validating the adapter") != std::string::npos);
    REQUIRE(pg_lora_adapter_load(path.c_str(), nullptr, &loaded) == PG_OK);  // no base: nothing to refuse
    pg_lora_adapter_free(loaded);
    pg_model* other = tiny_model(12);
    CHECK(pg_lora_adapter_check_base(adapter, other) == PG_ERR_GEOMETRY);

    // Allowed explicitly on this handle: everything goes through; the permission is not saved.
    CHECK(pg_model_allow_untrained_base(base, 2) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_allow_untrained_base(nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    REQUIRE(pg_model_allow_untrained_base(base, 1) == PG_OK);
    CHECK(pg_lora_adapter_check_base(adapter, base) == PG_OK);
    REQUIRE(pg_lora_trainer_create(base, adapter, &tc, &t) == PG_OK);
    pg_lora_trainer_free(t);
    const std::string model_path = pg_test::tmp_dir() + "/provenance_base.pgck";
    REQUIRE(pg_model_save(base, model_path.c_str(), nullptr) == PG_OK);
    pg_model* reloaded = nullptr;
    REQUIRE(pg_model_load(model_path.c_str(), &reloaded) == PG_OK);
    CHECK(pg_lora_adapter_check_base(adapter, reloaded) == PG_ERR_STATE);
    pg_model_free(reloaded);
    REQUIRE(pg_model_allow_untrained_base(base, 0) == PG_OK);
    CHECK(pg_lora_trainer_create(base, adapter, &tc, &t) == PG_ERR_STATE);

    // A trained base needs nothing (its adapter is a new one: training changed the weights).
    train(other, 2);
    pg_lora_adapter* on_trained = nullptr;
    REQUIRE(pg_lora_adapter_create(other, &c, &on_trained) == PG_OK);
    REQUIRE(pg_lora_trainer_create(other, on_trained, &tc, &t) == PG_OK);
    pg_lora_trainer_free(t);
    CHECK(pg_lora_adapter_check_base(on_trained, other) == PG_OK);

    // Unknown provenance (a file from before 1.1) is not refused: old bases keep working.
    pg_model* old = nullptr;
    REQUIRE(pg_model_load((pg_test::fixtures_dir() + "/checkpoint_v1.0_model.pgck").c_str(), &old) == PG_OK);
    pg_lora_adapter* on_old = nullptr;
    REQUIRE(pg_lora_adapter_create(old, &c, &on_old) == PG_OK);
    REQUIRE(pg_lora_trainer_create(old, on_old, &tc, &t) == PG_OK);
    pg_lora_trainer_free(t);

    pg_lora_adapter_free(on_old);
    pg_model_free(old);
    pg_lora_adapter_free(on_trained);
    pg_model_free(other);
    pg_lora_adapter_free(adapter);
    pg_model_free(base);
    std::remove(path.c_str());
    std::remove(model_path.c_str());
}
