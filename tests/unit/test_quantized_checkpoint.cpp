// A quantized base in the native checkpoint (format 1.6: WLAY storage 5 / 6, tensor dtypes
// q8_0 / q4_0 in the mapping layout):
//   - a q8_0 / q4_0 model saves in its blocks, loads copied or mapped to the same blocks and the
//     same outputs, and saves again to the same bytes; its fp32 fingerprint travels with it, so
//     an adapter made for the fp32 base checks against the quantized file and the other way round;
//   - loading an fp32 (plain, mappable or compressed) or 16-bit file with a quantized
//     weight_storage gives the blocks pg_model_set_weight_storage gives after a plain load;
//   - the loaders refuse bad quantized files by name: truncations, flipped bytes, non-finite
//     scales, q8_0 code -128, rows that are not whole blocks, wrong block counts, dtypes that are
//     not the storage's, unknown storage codes, a quantized storage in an older minor.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint_file_editor.hpp"
#include "frozen_base_support.hpp"
#include "kernels/half_float.hpp"
#include "phonegpt/phonegpt.h"
#include "test_checkpoint_support.hpp"

using namespace ckpt_test;
using frozen_base_test::save;

namespace {

struct Handle {
    pg_model* m = nullptr;
    ~Handle() { pg_model_free(m); }
};

pg_status load(const std::string& path, int32_t storage, bool map, pg_model** out) {
    pg_load_options lo;
    pg_load_options_default(&lo);
    lo.weight_storage = storage;
    lo.map_weights = map ? 1 : 0;
    const pg_status s = pg_model_load_with(path.c_str(), &lo, out);
    if (s == PG_OK) REQUIRE(pg_model_allow_untrained_base(*out, 1) == PG_OK);  // (never saved)
    return s;
}

bool same_outputs(const pg_model* a, const pg_model* b) {
    const std::vector<float> x = frozen_base_test::session_outputs(a, true),
                             y = frozen_base_test::session_outputs(b, true);
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

pg_weight_storage storage_of(const pg_model* m) {
    pg_weight_storage s = PG_WEIGHTS_FP32;
    REQUIRE(pg_model_weight_storage(m, &s, nullptr) == PG_OK);
    return s;
}

}  // namespace

TEST_CASE("a quantized base saves, loads and maps in its blocks with the fp32 base's fingerprint",
          "[quant][checkpoint][mapped]") {
    Handle fp32{frozen_base_test::tiny_base(7, 1.0f, 32)};
    const std::string dir = pg_test::tmp_dir();
    const std::string plain = dir + "/qckpt_fp32.pgck", aligned = dir + "/qckpt_fp32_aligned.pgck",
                      zstd = dir + "/qckpt_fp32_zstd.pgck", half = dir + "/qckpt_fp16.pgck";
    save(fp32.m, plain);
    save(fp32.m, aligned, -1, 1);
    save(fp32.m, zstd, -1, 0, 3);
    save(fp32.m, half, PG_WEIGHTS_FP16);
    pg_lora_adapter* for_fp32 = frozen_base_test::adapter_with_b(fp32.m, PG_LORA_ALL_LINEARS);

    for (const pg_weight_storage storage : {PG_WEIGHTS_Q8_0, PG_WEIGHTS_Q4_0}) {
        INFO("storage " << int(storage));
        // The reference: a plain load, then quantized in memory.
        Handle ref;
        REQUIRE(pg_model_load(plain.c_str(), &ref.m) == PG_OK);
        REQUIRE(pg_model_set_weight_storage(ref.m, storage) == PG_OK);
        // Quantized while reading, from each fp32 layout: the same blocks, so the same outputs.
        const std::pair<std::string, bool> sources[] = {{plain, false}, {aligned, false}, {aligned, true}, {zstd, false}};
        for (const auto& [from, map] : sources) {
            Handle q;
            INFO(from << (map ? " mapped" : ""));
            REQUIRE(load(from, storage, map, &q.m) == PG_OK);
            CHECK(storage_of(q.m) == storage);
            CHECK(same_outputs(q.m, ref.m));
            CHECK(pg_lora_adapter_check_base(for_fp32, q.m) == PG_OK);
        }
        Handle from_half, half_then_quantized;  // a 16-bit file: quantized from its 16-bit values
        REQUIRE(load(half, storage, false, &from_half.m) == PG_OK);
        REQUIRE(pg_model_load(half.c_str(), &half_then_quantized.m) == PG_OK);
        REQUIRE(pg_model_set_weight_storage(half_then_quantized.m, storage) == PG_OK);
        CHECK(same_outputs(from_half.m, half_then_quantized.m));

        // Saved in its blocks (format 1.6), loaded copied and mapped: the same model.
        const std::string qpath = dir + "/qckpt_" + std::to_string(int(storage)) + ".pgck";
        save(ref.m, qpath);
        const std::vector<uint8_t> bytes = read_bytes(qpath);
        uint16_t minor = 0;
        std::memcpy(&minor, &bytes[10], 2);
        CHECK(minor == pg::io::kCheckpointMinorQuantized);
        int64_t bytes_held = 0, bytes_fp32 = 0;
        REQUIRE(pg_model_weight_storage(ref.m, nullptr, &bytes_held) == PG_OK);
        REQUIRE(pg_model_weight_storage(fp32.m, nullptr, &bytes_fp32) == PG_OK);
        CHECK(int64_t(bytes.size()) < bytes_fp32 / 2);
        for (const bool map : {false, true}) {
            INFO("mapped " << map);
            Handle back;
            REQUIRE(load(qpath, -1, map, &back.m) == PG_OK);
            CHECK(storage_of(back.m) == storage);
            CHECK(same_outputs(back.m, ref.m));
            CHECK(pg_lora_adapter_check_base(for_fp32, back.m) == PG_OK);
            pg_lora_adapter* made_on_quantized = frozen_base_test::adapter_with_b(back.m, PG_LORA_ALL_LINEARS);
            CHECK(pg_lora_adapter_check_base(made_on_quantized, fp32.m) == PG_OK);
            pg_lora_adapter_free(made_on_quantized);
            // Its own storage again (or as it holds them) reproduces the file byte for byte.
            const std::string again = qpath + ".again";
            save(back.m, again, storage);
            CHECK(read_bytes(again) == bytes);
            // Not another storage: the values it was quantized from are gone.
            pg_save_options so;
            pg_save_options_default(&so);
            so.weight_storage = PG_WEIGHTS_FP16;
            CHECK(pg_model_save(back.m, again.c_str(), &so) == PG_ERR_STATE);
            // The same storage asked of a quantized file is what it holds.
            Handle same;
            CHECK(load(qpath, storage, map, &same.m) == PG_OK);
            if (same.m) CHECK(same_outputs(same.m, ref.m));
            // Another quantized storage: refused as pg_model_set_weight_storage refuses it.
            Handle other;
            CHECK(load(qpath, storage == PG_WEIGHTS_Q8_0 ? PG_WEIGHTS_Q4_0 : PG_WEIGHTS_Q8_0, map, &other.m) ==
                  PG_ERR_STATE);
            CHECK(other.m == nullptr);
        }
    }
    pg_lora_adapter_free(for_fp32);

    // An fp32 model is quantized first, then saved.
    pg_save_options so;
    pg_save_options_default(&so);
    so.weight_storage = PG_WEIGHTS_Q8_0;
    CHECK(pg_model_save(fp32.m, (dir + "/qckpt_refused.pgck").c_str(), &so) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_model_last_error(fp32.m)).find("quantize the model first") != std::string::npos);
    so.weight_storage = 3;  // a deprecated spelling, not a file storage
    CHECK(pg_model_save(fp32.m, (dir + "/qckpt_refused.pgck").c_str(), &so) == PG_ERR_INVALID_ARGUMENT);

    // Rows that are not whole blocks, and a NaN, refused while reading with the loaders' words.
    Handle narrow{frozen_base_test::tiny_base(7, 1.0f)};
    const std::string narrow_path = dir + "/qckpt_narrow.pgck";
    save(narrow.m, narrow_path);
    Handle none;
    CHECK(load(narrow_path, PG_WEIGHTS_Q8_0, false, &none.m) == PG_ERR_UNSUPPORTED);
    CHECK(std::string(pg_last_error()).find("multiple of the quantized block") != std::string::npos);
    float* w = nullptr;
    REQUIRE(pg_model_tensor_data_mutable(fp32.m, 0, &w) == PG_OK);
    w[37] = std::nanf("");
    const std::string nan_path = dir + "/qckpt_nan.pgck";
    save(fp32.m, nan_path);
    CHECK(load(nan_path, PG_WEIGHTS_Q4_0, false, &none.m) == PG_ERR_NOT_FINITE);
    CHECK(std::string(pg_last_error()).find("tensor \"wte\" element 37 is nan") != std::string::npos);
    CHECK(none.m == nullptr);
}

namespace {

pg::ModelConfig quantizable_config() {
    pg::ModelConfig c = small_config();
    c.n_embd = 32;
    return c;
}

std::vector<uint8_t> quantized_file(pg::WeightStorage storage) {
    auto m = make_model(quantizable_config(), 3);
    m->hold_frozen_in(storage);
    pg::io::VectorSink sink;
    pg::io::write_checkpoint(*m, nullptr, pg::io::CheckpointOptions{}, sink);
    return sink.bytes;
}

// Tensor `name` given another dtype and size (a one-layer model: it is its kind's only tensor),
// the later tensors moved to where the mapping layout then puts them, so that only the dtype
// against the storage is wrong.
void retype(std::vector<TableEntry>& t, const std::string& name, uint8_t dtype, uint64_t nbytes) {
    TableEntry& e = entry(t, name);
    auto aligned = [](uint64_t n) { return (n + 63) / 64 * 64; };
    const uint64_t shift = aligned(e.nbytes) - aligned(nbytes);
    e.dtype = dtype;
    e.nbytes = nbytes;
    for (TableEntry& later : t)
        if (later.offset > e.offset) later.offset -= shift;
}

// Where tensor `name`'s bytes start in the file.
std::size_t data_at(const std::vector<uint8_t>& bytes, const std::string& name) {
    File f(bytes);
    auto t = f.table();
    return bytes.size() - f.data.size() + std::size_t(entry(t, name).offset);
}

// `base` with tensor `name`'s bytes changed by `change` and its checksum in the table set to
// match, so only the reader's check of the blocks' contents can refuse it.
Build blocks_edit(const std::vector<uint8_t>& base, const std::string& name,
                  std::function<void(uint8_t*)> change) {
    return [=] {
        std::vector<uint8_t> b = base;
        const std::size_t at = data_at(b, name);
        change(&b[at]);
        File f(b);
        auto t = f.table();
        TableEntry& e = entry(t, name);
        e.checksum = pg::io::xxh64(&b[at], std::size_t(e.nbytes));
        f.set_table(t);
        return f.bytes();
    };
}

}  // namespace

TEST_CASE("corruption matrix, quantized files: each bad q8_0 / q4_0 file gives its status and message, "
          "copied and mapped",
          "[quant][checkpoint][corruption]") {
    const std::vector<uint8_t> q8 = quantized_file(pg::WeightStorage::q8_0), q4 = quantized_file(pg::WeightStorage::q4_0);
    REQUIRE(load_bytes(q8).status == PG_OK);
    REQUIRE(load_bytes(q4).status == PG_OK);
    const std::string fc = "h.0.mlp.c_fc.weight";  // [128, 32]: 128 blocks
    struct Bad {
        const char* name;
        pg_status status;
        std::string message;
        Build build;
    };
    const uint16_t inf = 0x7c00, nan = 0x7e00;
    const std::vector<Bad> matrix = {
        {"a q8_0 scale that is infinite", PG_ERR_FORMAT,
         "tensor \"" + fc + "\": block 0 (row 0) has a scale that is not a finite number",
         blocks_edit(q8, fc, [&](uint8_t* p) { std::memcpy(p, &inf, 2); })},
        {"a q4_0 scale that is NaN, in a later block", PG_ERR_FORMAT,
         "tensor \"" + fc + "\": block 5 (row 5) has a scale that is not a finite number",
         blocks_edit(q4, fc, [&](uint8_t* p) { std::memcpy(p + 5 * 18, &nan, 2); })},
        {"the embedding's q8_0 scale under q4_0", PG_ERR_FORMAT, "tensor \"wte\": block 3",
         blocks_edit(q4, "wte", [&](uint8_t* p) { std::memcpy(p + 3 * 34, &inf, 2); })},
        {"a q8_0 code -128", PG_ERR_FORMAT, "block 1 holds the code -128",
         blocks_edit(q8, fc, [](uint8_t* p) { p[34 + 2 + 7] = 0x80; })},
        {"a flipped code byte", PG_ERR_CHECKSUM, "tensor \"" + fc + "\" checksum mismatch",
         raw(q8, [&](std::vector<uint8_t>& b) { b[data_at(q8, fc) + 40] ^= 0x10; })},
        {"a flipped scale byte", PG_ERR_CHECKSUM, "tensor \"wte\" checksum mismatch",
         raw(q4, [&](std::vector<uint8_t>& b) { b[data_at(q4, "wte") + 1] ^= 0x01; })},
        {"rows that are not whole blocks", PG_ERR_FORMAT, "rows of 40 values are not whole blocks of 32",
         table_edit(q8, [&](auto& t) { entry(t, fc).shape = {128, 40}; })},
        {"one block too few", PG_ERR_FORMAT, "nbytes 4318 != 128 blocks of shape [128, 32] x 34 bytes = 4352",
         table_edit(q8, [&](auto& t) { entry(t, fc).nbytes -= 34; })},
        {"q4_0 blocks sized as q8_0", PG_ERR_FORMAT, "x 18 bytes = 2304",
         table_edit(q4, [&](auto& t) { entry(t, fc).nbytes = 128 * 34; })},
        {"a q4_0 tensor in a q8_0 file", PG_ERR_FORMAT,
         "tensor \"" + fc + "\" has dtype 5 (q4_0) but the file's q8_0 storage (section WLAY) needs 4 (q8_0)",
         table_edit(q8, [&](auto& t) { retype(t, fc, 5, 128 * 18); })},
        {"the embedding in q4_0 (it stays q8_0)", PG_ERR_FORMAT,
         "tensor \"wte\" has dtype 5 (q4_0) but the file's q4_0 storage (section WLAY) needs 4 (q8_0)",
         table_edit(q4, [&](auto& t) { retype(t, "wte", 5, 68 * 18); })},
        {"a LayerNorm in blocks", PG_ERR_FORMAT,
         "tensor \"h.0.ln_1.weight\" has dtype 4 (q8_0) but the file's q8_0 storage (section WLAY) needs 1 (f32)",
         table_edit(q8, [&](auto& t) { retype(t, "h.0.ln_1.weight", 4, 34); })},
        {"unknown storage code 3", PG_ERR_FORMAT, "unknown weight storage 3 (0 fp32, 1 fp16, 2 bf16, 5 q8_0, 6 q4_0)",
         edit(q8, [](File& f) { std::memcpy(f.section("WLAY").payload.data(), "\x03\0\0\0", 4); })},
        {"unknown storage code 7", PG_ERR_FORMAT, "unknown weight storage 7",
         edit(q4, [](File& f) { std::memcpy(f.section("WLAY").payload.data(), "\x07\0\0\0", 4); })},
        {"q8_0 blocks under an fp16 WLAY", PG_ERR_FORMAT, "has dtype 4 (q8_0) but the file's fp16 storage",
         edit(q8, [](File& f) { std::memcpy(f.section("WLAY").payload.data(), "\x01\0\0\0", 4); })},
        {"a quantized storage in a format 1.5 file", PG_ERR_FORMAT,
         "weight storage 5 in a format 1.5 file (the quantized storages are format 1.6)",
         edit(q8, [](File& f) { f.minor = 5; })},
    };
    const std::string path = scratch_path("quantized_bad.pgck");
    for (const Bad& bad : matrix) {
        INFO(bad.name);
        const std::vector<uint8_t> bytes = bad.build();
        const Loaded copied = load_bytes(bytes);
        CHECK(copied.status == bad.status);
        CHECK_THAT(copied.message, Catch::Contains(bad.message));
        write_bytes(path, bytes);
        const Loaded mapped = map_file(path);
        CHECK(mapped.status == bad.status);
        CHECK_THAT(mapped.message, Catch::Contains(bad.message));
    }

    // Every truncation of the header and of the last blocks, and a sample of those between:
    // refused, never a model.
    for (const std::vector<uint8_t>* good : {&q8, &q4}) {
        const std::size_t data_start = good->size() - File(*good).data.size();
        for (std::size_t n = 0; n < good->size(); n += (n < data_start || n + 80 > good->size()) ? 1 : 61) {
            const std::vector<uint8_t> cut(good->begin(), good->begin() + long(n));
            const Loaded l = load_bytes(cut);
            INFO("truncated to " << n);
            CHECK(l.status != PG_OK);
        }
    }
}
