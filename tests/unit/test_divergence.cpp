// A run that cannot go silently wrong: a weight poisoned with NaN (or infinity) makes the next
// step, gradient call and evaluation fail with PG_ERR_NOT_FINITE, never a NaN score, and a
// refused step changes nothing at all (weights, moments, step count, sampler, dropout stream,
// bit for bit): after the weight is repaired, the run continues exactly like a twin that never
// saw the refusal.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "eval/evaluate.hpp"
#include "io/checkpoint.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "test_support.hpp"
#include "train/trainer.hpp"
#include "session_calls.hpp"

namespace {

std::unique_ptr<pg::Model> tiny_model(uint64_t seed = 42) {
    auto m = std::make_unique<pg::Model>(pg::model_preset("tiny"));
    pg::init_gpt2_params(m->config(), m->params(), seed);
    return m;
}

std::vector<int32_t> random_tokens(std::size_t n, uint64_t seed) {
    pg::Rng rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng.below(65));
    return t;
}

// Dropout and accumulation on, so the sampler and the dropout stream both move during a step.
pg::TrainConfig divergence_config() {
    pg::TrainConfig c;
    c.batch_size = 3;
    c.seq_len = 8;
    c.grad_accum_steps = 2;
    c.dropout = 0.2f;
    c.warmup_steps = 2;
    c.total_steps = 10;
    c.n_threads = 2;
    c.seed = 5;
    return c;
}

int64_t offset_of(const pg::Model& m, const std::string& name) {
    for (const auto& t : m.tensors())
        if (t.name == name) return t.offset;
    FAIL("no tensor " << name);
    return -1;
}

bool same_bytes(const void* a, const void* b, std::size_t n) { return std::memcmp(a, b, n) == 0; }

// Everything a trainer and its model can change, compared bit for bit.
struct Snapshot {
    std::vector<float> params;
    pg::TrainerState state;
    explicit Snapshot(const pg::Trainer& t)
        : params(t.model().params(), t.model().params() + t.model().num_params()), state(t.state()) {}
    bool operator==(const Snapshot& o) const {
        return params.size() == o.params.size() && same_bytes(params.data(), o.params.data(), params.size() * 4) &&
               state.step == o.state.step && state.micro_batches == o.state.micro_batches &&
               same_bytes(state.sampler_rng, o.state.sampler_rng, sizeof state.sampler_rng) &&
               state.adam_m.size() == o.state.adam_m.size() &&
               same_bytes(state.adam_m.data(), o.state.adam_m.data(), state.adam_m.size() * 4) &&
               same_bytes(state.adam_v.data(), o.state.adam_v.data(), state.adam_v.size() * 4);
    }
};

pg_status status_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const pg::Error& e) {
        INFO(e.what());
        return e.status();
    }
    return PG_OK;
}

}  // namespace

TEST_CASE("a refused step changes nothing, bit for bit, and the run continues as if it never happened",
          "[train][divergence]") {
    const float poisons[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
    for (float poison : poisons) {
        for (bool caller_batch : {false, true}) {
            INFO("poison " << poison << (caller_batch ? ", step_batch" : ", step"));
            auto model = tiny_model(), twin_model = tiny_model();
            pg::Trainer trainer(*model, divergence_config()), twin(*twin_model, divergence_config());
            const auto data = random_tokens(400, 9);
            trainer.set_data(data.data(), data.size());
            twin.set_data(data.data(), data.size());
            std::vector<int32_t> in(data.begin(), data.begin() + 24), tgt(data.begin() + 1, data.begin() + 25);
            auto step = [&](pg::Trainer& t) {
                return caller_batch ? t.step_batch(in.data(), tgt.data(), 3, 8) : t.step();
            };
            for (int s = 0; s < 2; ++s) {
                step(trainer);
                step(twin);
            }
            float* weight = model->params() + offset_of(*model, "h.0.ln_1.weight");
            const float good = *weight;
            *weight = poison;
            const Snapshot before(trainer);
            CHECK(status_of([&] { step(trainer); }) == PG_ERR_NOT_FINITE);
            CHECK(Snapshot(trainer) == before);
            // Refused again: still nothing changes (no drift across repeated refusals).
            CHECK(status_of([&] { step(trainer); }) == PG_ERR_NOT_FINITE);
            CHECK(Snapshot(trainer) == before);
            CHECK(trainer.step_count() == 2);

            *weight = good;
            for (int s = 0; s < 2; ++s) {
                const pg::StepResult a = step(trainer), b = step(twin);
                CHECK(a.step == b.step);
                CHECK(std::memcmp(&a.loss, &b.loss, sizeof a.loss) == 0);
            }
            CHECK(Snapshot(trainer) == Snapshot(twin));
        }
    }
}

TEST_CASE("compute_gradients and evaluation report a non-finite loss with PG_ERR_NOT_FINITE",
          "[train][eval][divergence]") {
    auto model = tiny_model();
    pg::Trainer trainer(*model, divergence_config());
    const auto data = random_tokens(200, 4);
    std::vector<int32_t> in(data.begin(), data.begin() + 24), tgt(data.begin() + 1, data.begin() + 25);
    CHECK(std::isfinite(trainer.compute_gradients(in.data(), tgt.data(), 3, 8)));
    pg::EvalOptions opt;
    pg::Session session(*model, pg::SessionOptions{1, 0});
    const pg::SampledEvalOptions sampled{2, 2, 1};
    CHECK(std::isfinite(pg::evaluate(session, data.data(), data.size(), opt).mean_loss));
    CHECK(std::isfinite(pg::evaluate_sampled(session, data.data(), data.size(), sampled).mean_loss));

    model->params()[offset_of(*model, "wpe") + 3] = std::numeric_limits<float>::quiet_NaN();
    const uint64_t micro_batches = trainer.state().micro_batches;
    CHECK(status_of([&] { trainer.compute_gradients(in.data(), tgt.data(), 3, 8); }) == PG_ERR_NOT_FINITE);
    CHECK(trainer.state().micro_batches == micro_batches);
    CHECK(status_of([&] { pg::evaluate(session, data.data(), data.size(), opt); }) == PG_ERR_NOT_FINITE);
    CHECK(status_of([&] { pg::evaluate_sampled(session, data.data(), data.size(), sampled); }) == PG_ERR_NOT_FINITE);
}

TEST_CASE("the C API reports divergence with PG_ERR_NOT_FINITE and leaves the result untouched",
          "[train][eval][capi][divergence]") {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* model = nullptr;
    REQUIRE(pg_model_create(&mc, 7, &model) == PG_OK);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 2;
    tc.seq_len = 8;
    tc.n_threads = 1;
    pg_trainer* trainer = nullptr;
    REQUIRE(pg_trainer_create(model, &tc, &trainer) == PG_OK);
    const auto data = random_tokens(100, 2);
    REQUIRE(pg_trainer_set_data(trainer, data.data(), data.size()) == PG_OK);
    REQUIRE(pg_trainer_step(trainer, nullptr) == PG_OK);

    int32_t index = -1;
    REQUIRE(pg_model_find_tensor(model, "ln_f.bias", &index) == PG_OK);
    float* w = nullptr;
    REQUIRE(pg_model_tensor_data_mutable(model, index, &w) == PG_OK);
    w[0] = -std::numeric_limits<float>::infinity();

    pg_step_result r = {sizeof r, -7, -7.0f, -7.0f, -7.0f, -7};
    CHECK(pg_trainer_step(trainer, &r) == PG_ERR_NOT_FINITE);
    CHECK(std::string(pg_status_name(PG_ERR_NOT_FINITE)) == "PG_ERR_NOT_FINITE");
    CHECK(std::string(pg_trainer_last_error(trainer)).find("not finite") != std::string::npos);
    CHECK(r.step == -7);
    int64_t steps = -1;
    CHECK(pg_trainer_step_count(trainer, &steps) == PG_OK);
    CHECK(steps == 1);
    float loss = 123.0f;
    CHECK(pg_trainer_compute_gradients(trainer, data.data(), data.data() + 1, 2, 8, &loss) == PG_ERR_NOT_FINITE);
    CHECK(loss == 123.0f);

    pg_eval_result er = {sizeof er, 5.0, 5.0, 5, 5, 5.0, 5};
    CHECK(pg_test::evaluate(model, data.data(), data.size(), nullptr, &er) == PG_ERR_NOT_FINITE);
    CHECK(std::string(pg_last_error()).find("pg_session_evaluate") != std::string::npos);
    CHECK(pg_test::evaluate_sampled(model, data.data(), data.size(), 1, 2, 3, 1, &er) == PG_ERR_NOT_FINITE);
    CHECK(er.mean_loss == 5.0);
    CHECK(er.n_scored == 5);
    CHECK(er.n_bytes == 5);
    pg_trainer_free(trainer);
    pg_model_free(model);
}

namespace {

std::string scratch(const std::string& name) { return pg_test::tmp_dir() + "/divergence_" + name; }

std::vector<uint8_t> file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void put_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// An llm.c fp32 file (version 3) rewritten as bf16 (version 5): the top half of every float.
std::vector<uint8_t> llmc_as_bf16(const std::vector<uint8_t>& fp32) {
    std::vector<uint8_t> out(fp32.begin(), fp32.begin() + 1024);
    const int32_t version = 5;
    std::memcpy(out.data() + 4, &version, 4);
    for (std::size_t i = 1024; i + 4 <= fp32.size(); i += 4) {
        uint32_t bits;
        std::memcpy(&bits, fp32.data() + i, 4);
        const uint16_t top = uint16_t(bits >> 16);
        out.push_back(uint8_t(top & 0xFF));
        out.push_back(uint8_t(top >> 8));
    }
    return out;
}

// Loads `path` in `format` (0 = native model, 1 = native trainer, else pg_interop_format).
pg_status load_as(int format, const std::string& path) {
    pg_model* m = nullptr;
    pg_trainer* t = nullptr;
    const pg_status s = format == 0   ? pg_model_load(path.c_str(), &m)
                        : format == 1 ? pg_trainer_resume(path.c_str(), &m, &t)
                                      : pg_model_import(pg_interop_format(format - 1), path.c_str(), &m);
    pg_trainer_free(t);
    pg_model_free(m);
    return s;
}

}  // namespace

TEST_CASE("every loader refuses NaN or infinite weights with PG_ERR_NOT_FINITE naming the tensor",
          "[io][divergence]") {
    const float poisons[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()};
    for (float poison : poisons) {
        for (bool poisoned : {false, true}) {
            INFO("poison " << poison << (poisoned ? "" : " (control: not poisoned)"));
            pg_model_config mc;
            REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
            pg_model* model = nullptr;
            REQUIRE(pg_model_create(&mc, 3, &model) == PG_OK);
            pg_train_config tc;
            pg_train_config_default(&tc);
            pg_trainer* trainer = nullptr;
            REQUIRE(pg_trainer_create(model, &tc, &trainer) == PG_OK);
            int32_t index = -1;
            REQUIRE(pg_model_find_tensor(model, "h.1.mlp.c_fc.weight", &index) == PG_OK);
            float* w = nullptr;
            REQUIRE(pg_model_tensor_data_mutable(model, index, &w) == PG_OK);
            if (poisoned) w[37] = poison;

            pg_save_options zstd;
            pg_save_options_default(&zstd);
            zstd.compression_level = 3;
            REQUIRE(pg_model_save(model, scratch("model.pgck").c_str(), nullptr) == PG_OK);
            REQUIRE(pg_model_save(model, scratch("model_zstd.pgck").c_str(), &zstd) == PG_OK);
            REQUIRE(pg_trainer_save(trainer, scratch("trainer.pgck").c_str(), nullptr) == PG_OK);
            REQUIRE(pg_model_export(model, PG_FORMAT_LLMC, scratch("model.llmc").c_str()) == PG_OK);
            put_bytes(scratch("model_bf16.llmc"), llmc_as_bf16(file_bytes(scratch("model.llmc"))));
            REQUIRE(pg_model_export(model, PG_FORMAT_SAFETENSORS, scratch("model.safetensors").c_str()) == PG_OK);
            const struct {
                const char* file;
                int format;
            } loads[] = {{"model.pgck", 0},     {"model_zstd.pgck", 0},      {"trainer.pgck", 1},
                         {"model.llmc", 1 + PG_FORMAT_LLMC}, {"model_bf16.llmc", 1 + PG_FORMAT_LLMC},
                         {"model.safetensors", 1 + PG_FORMAT_SAFETENSORS}};
            for (const auto& l : loads) {
                INFO(l.file << ": " << pg_last_error());
                const pg_status s = load_as(l.format, scratch(l.file));
                if (!poisoned) {
                    CHECK(s == PG_OK);
                    continue;
                }
                CHECK(s == PG_ERR_NOT_FINITE);
                CHECK_THAT(pg_last_error(), Catch::Contains("tensor \"h.1.mlp.c_fc.weight\" element"));
                CHECK_THAT(pg_last_error(), Catch::Contains(l.file));
            }
            pg_trainer_free(trainer);
            pg_model_free(model);
        }
    }
}

TEST_CASE("resume refuses non-finite AdamW moments with PG_ERR_NOT_FINITE", "[io][divergence]") {
    auto model = tiny_model(8);
    pg::TrainConfig c = divergence_config();
    pg::Trainer trainer(*model, c);
    for (int which = 0; which < 2; ++which) {
        pg::TrainerState state = trainer.state();
        (which == 0 ? state.adam_m : state.adam_v)[100] = std::numeric_limits<float>::quiet_NaN();
        const std::string path = scratch("moments.pgck");
        pg::io::save_checkpoint(*model, &state, 0, path);
        pg_model* m = nullptr;
        pg_trainer* t = nullptr;
        CHECK(pg_trainer_resume(path.c_str(), &m, &t) == PG_ERR_NOT_FINITE);
        CHECK_THAT(pg_last_error(), Catch::Contains(which == 0 ? "AdamW first moment element 100"
                                                               : "AdamW second moment element 100"));
        CHECK(m == nullptr);
        CHECK(t == nullptr);
        // The trainer's own check, for states that do not come from a file.
        CHECK(status_of([&] { pg::Trainer again(*model, state); }) == PG_ERR_NOT_FINITE);
    }
}
