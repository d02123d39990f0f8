// Every native format version ever written has fixtures in tests/fixtures/ (small geometry),
// and every one of them must keep loading: readers accept all earlier versions. The fixtures
// of the current version must also be what the writer produces today, byte for byte, so a
// change to the format cannot slip in without a version bump and new fixtures.
//
// To add fixtures for a new version: bump kCheckpointMajor/Minor, then run
//   phonegpt_unit_tests "[.write-fixtures]"
// and add a row below with the digests it prints.
#include <catch2/catch.hpp>

#include <cstdio>

#include "io/checksum.hpp"
#include "test_checkpoint_support.hpp"

using namespace ckpt_test;

namespace {

struct Fixture {
    const char* file;
    uint16_t major, minor;
    bool compressed;
    bool with_state;
    uint64_t params_digest;  // xxh64 of all parameters (llm.c order)
    uint64_t moments_digest; // xxh64 of adam_m then adam_v, 0 without training state
};

// The model in every fixture: small_config(), weights from seed 1234, Tiny Shakespeare's 65
// characters as tokenizer; the training state is make_state(model, 99).
const Fixture kFixtures[] = {
    {"checkpoint_v1.0_model.pgck", 1, 0, false, false, 0x3aa16fd8d73791d9ull, 0},
    {"checkpoint_v1.0_model_zstd.pgck", 1, 0, true, false, 0x3aa16fd8d73791d9ull, 0},
    {"checkpoint_v1.0_train.pgck", 1, 0, false, true, 0x3aa16fd8d73791d9ull, 0xa332a7b5fece14ccull},
    {"checkpoint_v1.1_model.pgck", 1, 1, false, false, 0x3aa16fd8d73791d9ull, 0},
    {"checkpoint_v1.1_model_zstd.pgck", 1, 1, true, false, 0x3aa16fd8d73791d9ull, 0},
    {"checkpoint_v1.1_train.pgck", 1, 1, false, true, 0x3aa16fd8d73791d9ull, 0xa332a7b5fece14ccull},
};

// The provenance written into the fixtures since 1.1 (1.0 files have none: unknown).
pg::Provenance fixture_provenance() {
    pg::Provenance p = pg::Provenance::initialised_from(1234);
    for (int i = 0; i < 1234; ++i) p.record_step(4 * 64);
    return p;
}

uint64_t moments_digest(const pg::TrainerState& s) {
    pg::io::Xxh64 h;
    h.update(s.adam_m.data(), s.adam_m.size() * 4);
    h.update(s.adam_v.data(), s.adam_v.size() * 4);
    return h.digest();
}

}  // namespace

TEST_CASE("every checkpoint version ever written still loads (fixtures)", "[io][checkpoint][fixtures]") {
    for (const Fixture& f : kFixtures) {
        INFO(f.file);
        const std::vector<uint8_t> bytes = read_bytes(pg_test::fixtures_dir() + "/" + f.file);
        REQUIRE(!bytes.empty());
        pg::io::MemorySource src(bytes.data(), bytes.size());
        const pg::io::CheckpointHeader h = pg::io::read_checkpoint_header(src);
        CHECK(h.major == f.major);
        CHECK(h.minor == f.minor);
        CHECK(h.compressed == f.compressed);
        CHECK(h.has_train_state == f.with_state);
        Loaded back = load_bytes(bytes, f.with_state);
        REQUIRE(back.status == PG_OK);
        CHECK(same_config(back.model->config(), small_config()));
        REQUIRE(back.model->tokenizer() != nullptr);
        CHECK(back.model->tokenizer()->decode(back.model->tokenizer()->encode("To be, or not").data(), 13) ==
              "To be, or not");
        CHECK(pg::io::xxh64(back.model->params(), std::size_t(back.model->num_params()) * 4) == f.params_digest);
        const pg::Provenance& prov = back.model->provenance();
        if (f.minor == 0) {
            CHECK(prov.kind == pg::Provenance::Kind::unknown);  // written before provenance existed
        } else {
            CHECK(prov.kind == pg::Provenance::Kind::trained);
            CHECK(prov.has_init_seed);
            CHECK(prov.init_seed == 1234);
            CHECK(prov.steps == 1234);
            CHECK(prov.tokens == 1234 * 4 * 64);
        }
        if (f.with_state) {
            CHECK(back.state.step == 1234);
            CHECK(back.state.micro_batches == 4936);
            CHECK(back.state.config.seed == 99);
            CHECK(back.state.config.grad_accum_steps == 4);
            CHECK(back.state.config.dropout == 0.1f);
            CHECK(moments_digest(back.state) == f.moments_digest);
        }
        // The current version's fixtures are exactly what the writer produces today.
        if (f.major == pg::io::kCheckpointMajor && f.minor == pg::io::kCheckpointMinor) {
            const std::vector<uint8_t> again =
                encode(*back.model, f.with_state ? &back.state : nullptr, f.compressed ? 3 : 0);
            CHECK(again == bytes);
        }
    }
}

TEST_CASE("write the fixtures of the current format version", "[.write-fixtures]") {
    auto model = make_model(small_config(), 1234);
    model->set_provenance(fixture_provenance());
    const pg::TrainerState state = make_state(*model, 99);
    const std::string v = std::to_string(pg::io::kCheckpointMajor) + "." + std::to_string(pg::io::kCheckpointMinor);
    const std::string dir = pg_test::fixtures_dir() + "/checkpoint_v" + v;
    pg::io::save_checkpoint(*model, nullptr, 0, dir + "_model.pgck");
    pg::io::save_checkpoint(*model, nullptr, 3, dir + "_model_zstd.pgck");
    pg::io::save_checkpoint(*model, &state, 0, dir + "_train.pgck");
    std::printf("params digest 0x%016llx, moments digest 0x%016llx\n",
                (unsigned long long)pg::io::xxh64(model->params(), std::size_t(model->num_params()) * 4),
                (unsigned long long)moments_digest(state));
}
