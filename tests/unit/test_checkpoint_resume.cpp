// Training checkpoints: stopping, saving, resuming (new process state: a fresh model and
// trainer from the file) and continuing reproduces the uninterrupted run bit for bit.
#include <catch2/catch.hpp>

#include <vector>

#include "core/checksum.hpp"
#include "phonegpt/phonegpt.h"
#include "test_checkpoint_support.hpp"

using namespace ckpt_test;

namespace {

std::vector<int32_t> training_tokens() {
    // A deterministic, learnable stream over a 65-token vocabulary.
    std::vector<int32_t> t(3000);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * i / 7 + i / 3) % 65);
    return t;
}

pg_train_config train_config(int n_threads, pg_optimizer optimizer, int dropout_ramp_steps = 0) {
    pg_train_config c;
    pg_train_config_default(&c);
    c.optimizer = optimizer;
    // A ramp longer than the interrupted run's 5 steps: the resumed trainer must continue it.
    c.dropout_ramp_steps = dropout_ramp_steps;
    // Not the default, so the file must carry it (an AdamW state does not: AdamW never reads it).
    if (optimizer == PG_OPTIMIZER_MUON) c.muon_momentum = 0.9f;
    c.batch_size = 2;
    c.seq_len = 8;
    c.grad_accum_steps = 2;
    c.warmup_steps = 3;
    c.total_steps = 20;
    c.lr_max = 3e-3f;
    c.dropout = 0.1f;  // exercises the dropout stream position
    c.seed = 4242;
    c.n_threads = n_threads;
    return c;
}

struct Run {
    std::vector<float> losses;
    std::vector<float> params;
};

std::vector<float> params_of(const pg_model* m) {
    const float* p;
    int64_t n;
    REQUIRE(pg_model_params(m, &p, &n) == PG_OK);
    return std::vector<float>(p, p + n);
}

void step_n(pg_trainer* t, int n, std::vector<float>& losses) {
    for (int i = 0; i < n; ++i) {
        pg_step_result r;
        r.struct_size = sizeof r;
        REQUIRE(pg_trainer_step(t, &r) == PG_OK);
        losses.push_back(r.loss);
    }
}

// The prelude's minor version (bytes 10-11, little-endian: docs/formats.md 1.1).
int file_minor_version(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char prelude[12] = {};
    in.read(reinterpret_cast<char*>(prelude), sizeof prelude);
    REQUIRE(in.gcount() == 12);
    return prelude[10] | (prelude[11] << 8);
}

pg_model* fresh_model() {
    pg_model_config cfg;
    REQUIRE(pg_model_config_preset("tiny", &cfg) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&cfg, 77, &m) == PG_OK);
    return m;
}

}  // namespace

TEST_CASE("resume from a training checkpoint reproduces the uninterrupted run bit for bit",
          "[io][checkpoint][resume]") {
    const std::vector<int32_t> data = training_tokens();
    for (int threads : {1, 2}) {
        for (int level : {0, 3}) {
          // AdamW, Muon, and Muon with a dropout ramp of 8 steps.
          for (int variant = 0; variant < 3; ++variant) {
            const pg_optimizer optimizer = variant == 0 ? PG_OPTIMIZER_ADAMW : PG_OPTIMIZER_MUON;
            const int ramp = variant == 2 ? 8 : 0;
            INFO("threads " << threads << ", compression level " << level << ", optimizer " << int(optimizer)
                            << ", dropout ramp " << ramp);
            const pg_train_config cfg = train_config(threads, optimizer, ramp);
            // Uninterrupted: 12 steps.
            Run straight;
            {
                pg_model* m = fresh_model();
                pg_trainer* t = nullptr;
                REQUIRE(pg_trainer_create(m, &cfg, &t) == PG_OK);
                REQUIRE(pg_trainer_set_data(t, data.data(), data.size()) == PG_OK);
                step_n(t, 12, straight.losses);
                straight.params = params_of(m);
                pg_trainer_free(t);
                pg_model_free(m);
            }
            // Interrupted after 5 steps: save, drop everything, resume from the file, 7 more.
            Run resumed;
            const std::string path = scratch_path("resume.pgck");
            {
                pg_model* m = fresh_model();
                pg_trainer* t = nullptr;
                REQUIRE(pg_trainer_create(m, &cfg, &t) == PG_OK);
                REQUIRE(pg_trainer_set_data(t, data.data(), data.size()) == PG_OK);
                step_n(t, 5, resumed.losses);
                pg_save_options opt;
                pg_save_options_default(&opt);
                opt.compression_level = level;
                REQUIRE(pg_trainer_save(t, path.c_str(), &opt) == PG_OK);
                step_n(t, 2, resumed.losses);  // work after the save is lost with the process
                resumed.losses.resize(5);
                pg_trainer_free(t);
                pg_model_free(m);
            }
            {
                pg_model* m = nullptr;
                pg_trainer* t = nullptr;
                REQUIRE(pg_trainer_resume(path.c_str(), &m, &t) == PG_OK);
                int64_t step = -1;
                REQUIRE(pg_trainer_step_count(t, &step) == PG_OK);
                CHECK(step == 5);
                pg_train_config back;
                pg_train_config_default(&back);
                REQUIRE(pg_trainer_get_config(t, &back) == PG_OK);
                CHECK(back.seed == cfg.seed);
                CHECK(back.n_threads == threads);
                CHECK(back.dropout == cfg.dropout);
                CHECK(back.optimizer == optimizer);
                CHECK(back.muon_momentum == cfg.muon_momentum);
                CHECK(back.muon_lr_scale == cfg.muon_lr_scale);
                CHECK(back.dropout_ramp_steps == ramp);
                // An AdamW state is still written as format 1.1; Muon's adds OPTM (1.2), a
                // dropout ramp DRMP (1.4).
                CHECK(file_minor_version(path) == (ramp > 0 ? 4 : optimizer == PG_OPTIMIZER_MUON ? 2 : 1));
                // The trainer needs its data again before stepping.
                CHECK(pg_trainer_step(t, nullptr) == PG_ERR_STATE);
                REQUIRE(pg_trainer_set_data(t, data.data(), data.size()) == PG_OK);
                step_n(t, 7, resumed.losses);
                resumed.params = params_of(m);
                pg_trainer_free(t);
                pg_model_free(m);
            }
            REQUIRE(resumed.losses.size() == straight.losses.size());
            for (std::size_t i = 0; i < straight.losses.size(); ++i) {
                INFO("step " << i + 1);
                CHECK(std::memcmp(&resumed.losses[i], &straight.losses[i], 4) == 0);
            }
            CHECK(resumed.params == straight.params);
            CHECK(straight.losses.back() < straight.losses.front());  // it did train
          }
        }
    }
}

TEST_CASE("C API: trainer checkpoints refuse what they cannot resume", "[io][checkpoint][resume][capi]") {
    pg_model* m = fresh_model();
    const std::string model_only = scratch_path("model_only.pgck");
    REQUIRE(pg_model_save(m, model_only.c_str(), nullptr) == PG_OK);
    pg_model* rm = reinterpret_cast<pg_model*>(m);
    pg_trainer* rt = reinterpret_cast<pg_trainer*>(m);
    CHECK(pg_trainer_resume(model_only.c_str(), &rm, &rt) == PG_ERR_STATE);
    CHECK_THAT(pg_last_error(), Catch::Contains("pg_model_load"));
    CHECK(rm == nullptr);
    CHECK(rt == nullptr);
    CHECK(pg_trainer_resume(nullptr, &rm, &rt) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_trainer_resume(model_only.c_str(), nullptr, &rt) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_trainer_resume(model_only.c_str(), &rm, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_trainer_save(nullptr, model_only.c_str(), nullptr) == PG_ERR_INVALID_ARGUMENT);

    // A training checkpoint loads as a plain model too.
    const pg_train_config cfg = train_config(1, PG_OPTIMIZER_ADAMW);
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(m, &cfg, &t) == PG_OK);
    const std::string with_state = scratch_path("with_state.pgck");
    CHECK(pg_trainer_save(t, nullptr, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_trainer_last_error(t), Catch::Contains("path"));
    REQUIRE(pg_trainer_save(t, with_state.c_str(), nullptr) == PG_OK);
    pg_model* plain = nullptr;
    REQUIRE(pg_model_load(with_state.c_str(), &plain) == PG_OK);
    CHECK(params_of(plain) == params_of(m));
    pg_model_free(plain);

    // Training-state values the trainer refuses are a format error naming the file.
    std::vector<uint8_t> bytes = read_bytes(with_state);
    pg::io::MemorySource src(bytes.data(), bytes.size());
    const pg::io::CheckpointHeader h = pg::io::read_checkpoint_header(src);
    REQUIRE(h.has_train_state);
    pg::TrainerState bad = h.train_state;
    bad.config.batch_size = 0;
    bad.adam_m.assign(std::size_t(pg::count_params(h.config)), 0.0f);  // the header holds no moments
    bad.adam_v = bad.adam_m;
    pg::Model model(h.config);
    pg::io::save_checkpoint(model, &bad, 0, with_state);
    CHECK(pg_trainer_resume(with_state.c_str(), &rm, &rt) == PG_ERR_FORMAT);
    CHECK_THAT(pg_last_error(), Catch::Contains("training state") && Catch::Contains("batch_size"));
    CHECK(rm == nullptr);
    // So is a dropout ramp (DRMP) beyond the trainer's range.
    bad.config.batch_size = h.train_state.config.batch_size;
    bad.config.dropout_ramp_steps = (1 << 30) + 1;
    pg::io::save_checkpoint(model, &bad, 0, with_state);
    CHECK(pg_trainer_resume(with_state.c_str(), &rm, &rt) == PG_ERR_FORMAT);
    CHECK_THAT(pg_last_error(), Catch::Contains("training state") && Catch::Contains("dropout_ramp_steps"));
    CHECK(rm == nullptr);
    pg_trainer_free(t);
    pg_model_free(m);
}
