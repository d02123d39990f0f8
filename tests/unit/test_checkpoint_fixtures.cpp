// Every native format version ever written has fixtures in tests/fixtures/ (small geometry),
// and every one of them must keep loading: readers accept all earlier versions. The fixtures
// of the current version must also be what the writer produces today, byte for byte, so a
// change to the format cannot slip in without a version bump and new fixtures.
//
// To add fixtures for a new version: bump kCheckpointMajor/Minor, then run
//   phonegpt_unit_tests "[.write-fixtures]"
// and add a row below with the digests it prints. (Format 1.3, the mapping layout, is written
// only when asked for: its fixtures are kMappableFixtures, written by the same test case; the
// default files stay 1.1.)
#include <catch2/catch.hpp>

#include <cstdio>

#include "core/checksum.hpp"
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

namespace {

// Format 1.3's mapping layout, one file per storage: the same model (the fp32 one above, its
// wte and block linears rounded for fp16 / bf16), written with CheckpointOptions{storage,
// mappable}; format 1.6's quantized bases: small_config() at width 32 (rows of whole blocks),
// weights from seed 1234, quantized in memory. weights_digest: xxh64 of every tensor's stored
// bytes in the model's table order; fp32_hash: the base's identity, the fp32 weights'.
struct MappableFixture {
    const char* file;
    pg::WeightStorage storage;
    uint16_t minor;
    uint64_t weights_digest, fp32_hash;
};
const MappableFixture kMappableFixtures[] = {
    {"checkpoint_v1.3_model_fp32.pgck", pg::WeightStorage::fp32, 3, 0x3aa16fd8d73791d9ull, 0x3aa16fd8d73791d9ull},
    {"checkpoint_v1.3_model_fp16.pgck", pg::WeightStorage::fp16, 3, 0x578d214c789169c1ull, 0x3aa16fd8d73791d9ull},
    {"checkpoint_v1.3_model_bf16.pgck", pg::WeightStorage::bf16, 3, 0x0e1df7f37c27b1a0ull, 0x3aa16fd8d73791d9ull},
    {"checkpoint_v1.6_model_q8_0.pgck", pg::WeightStorage::q8_0, 6, 0x5c3ad0537dca1df7ull, 0xb9646b0d0d6e5de8ull},
    {"checkpoint_v1.6_model_q4_0.pgck", pg::WeightStorage::q4_0, 6, 0x3e5d6d3be27a513cull, 0xb9646b0d0d6e5de8ull},
};

uint64_t weights_digest(const pg::Model& m) {
    pg::io::Xxh64 h;
    for (const pg::TensorEntry& e : m.tensors()) h.update(m.tensor_bytes(e), m.tensor_nbytes(e));
    return h.digest();
}

pg::io::CheckpointOptions mappable_options(pg::WeightStorage storage) {
    pg::io::CheckpointOptions o;
    o.storage = storage;
    o.mappable = true;
    return o;
}

// The model a fixture holds: the fp32 one (the 1.3 files round it while writing), or the
// width-32 one quantized.
std::unique_ptr<pg::Model> fixture_model(pg::WeightStorage storage) {
    pg::ModelConfig cfg = small_config();
    if (pg::is_quantized(storage)) cfg.n_embd = 32;
    auto m = make_model(cfg, 1234);
    m->set_provenance(fixture_provenance());
    if (pg::is_quantized(storage)) m->hold_frozen_in(storage);
    return m;
}

}  // namespace

TEST_CASE("format 1.3 and 1.6 fixtures (the mapping layout in fp32, fp16, bf16, q8_0, q4_0) load copied and mapped",
          "[io][checkpoint][fixtures][mapped]") {
    for (const MappableFixture& f : kMappableFixtures) {
        INFO(f.file);
        const std::string path = pg_test::fixtures_dir() + "/" + f.file;
        const std::vector<uint8_t> bytes = read_bytes(path);
        REQUIRE(!bytes.empty());
        pg::io::MemorySource src(bytes.data(), bytes.size());
        const pg::io::CheckpointHeader h = pg::io::read_checkpoint_header(src);
        CHECK(h.major == 1);
        CHECK(h.minor == f.minor);
        CHECK(h.mappable);
        CHECK(h.storage == f.storage);
        Loaded back = load_bytes(bytes);
        INFO(back.message);
        REQUIRE(back.status == PG_OK);
        CHECK(back.model->storage() == f.storage);
        CHECK(weights_digest(*back.model) == f.weights_digest);
        // The base's identity is the fp32 weights' (for 1.3, the 1.0 - 1.1 fixtures' parameters).
        CHECK(back.model->fp32_weights_hash() == f.fp32_hash);
        CHECK(back.model->provenance().steps == 1234);
        auto file = std::make_shared<const pg::io::MappedFile>(path);
        const pg::io::CheckpointHeader mh = pg::io::read_checkpoint_header(*file);
        const pg::Model mapped = pg::io::map_checkpoint(file, mh);
        CHECK(mapped.mapped());
        CHECK(weights_digest(mapped) == f.weights_digest);
        CHECK(mapped.fp32_weights_hash() == f.fp32_hash);
        // This version's fixtures are what the writer writes today.
        pg::io::VectorSink sink;
        pg::io::write_checkpoint(*back.model, nullptr, mappable_options(f.storage), sink);
        CHECK(sink.bytes == bytes);
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
    for (const MappableFixture& f : kMappableFixtures) {
        pg::io::save_checkpoint(*fixture_model(f.storage), nullptr, mappable_options(f.storage),
                                pg_test::fixtures_dir() + "/" + f.file);
        auto back = load_bytes(read_bytes(pg_test::fixtures_dir() + "/" + f.file));
        INFO(back.message);
        REQUIRE(back.status == PG_OK);
        std::printf("%s: weights digest 0x%016llx, fp32 hash 0x%016llx\n", f.file,
                    (unsigned long long)weights_digest(*back.model), (unsigned long long)back.model->fp32_weights_hash());
    }
    std::printf("params digest 0x%016llx, moments digest 0x%016llx\n",
                (unsigned long long)pg::io::xxh64(model->params(), std::size_t(model->num_params()) * 4),
                (unsigned long long)moments_digest(state));
}
