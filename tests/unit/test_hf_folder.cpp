// The weights of a Hugging Face model folder: one model.safetensors or shards behind
// model.safetensors.index.json, F32/F16/BF16 read exactly or rounded to the model's 16-bit
// format, and the corruption matrix of the index (paths outside the folder, missing or doubled
// tensors, unlisted tensors, unsupported dtypes, truncated shards).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "io/hf_folder.hpp"
#include "kernels/half_float.hpp"
#include "test_support.hpp"

namespace {

using pg::io::HfDtype;

std::string fresh_folder(const std::string& name) {
    const std::string dir = pg_test::tmp_dir() + "/hf_folder_" + name + "-" + std::to_string(getpid());
    ::mkdir(dir.c_str(), 0700);
    for (const char* f : {"model.safetensors", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                          "model-00002-of-00002.safetensors"})
        ::unlink((dir + "/" + f).c_str());
    return dir;
}

// Values with a fraction that fp16 and bf16 round differently, and one beyond fp16's range.
float value_of(std::size_t tensor, uint64_t i) { return float(tensor + 1) * 0.1234567f + float(i) * 0.015625f - 1.0f; }

void write_file(const std::string& path, const std::vector<std::pair<std::string, std::vector<uint64_t>>>& tensors,
                HfDtype dtype, float big = 0.0f) {
    std::vector<pg::io::HfTensorOut> out;
    for (const auto& [name, shape] : tensors) out.push_back({name, shape, dtype});
    pg::io::write_hf_safetensors(path, out, {{"note", "test"}},
                                 [&](std::size_t t, uint64_t first, void* dst, std::size_t n) {
                                     for (std::size_t i = 0; i < n; ++i) {
                                         float v = value_of(t, first + i);
                                         if (big != 0.0f && first + i == 0) v = big;
                                         if (dtype == HfDtype::f32) static_cast<float*>(dst)[i] = v;
                                         else if (dtype == HfDtype::f16) static_cast<uint16_t*>(dst)[i] = pg::kernels::float_to_fp16(v);
                                         else static_cast<uint16_t*>(dst)[i] = pg::kernels::float_to_bf16(v);
                                     }
                                 });
}

void write_text(const std::string& path, const std::string& text) {
    pg::io::write_file_atomically(path, text.data(), text.size());
}

const std::string kIndex = R"({"metadata": {"total_size": 0}, "weight_map": {
  "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
  "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
  "model.norm.weight": "model-00002-of-00002.safetensors"}})";

void write_two_shards(const std::string& dir, HfDtype dtype) {
    write_file(dir + "/model-00001-of-00002.safetensors",
               {{"model.embed_tokens.weight", {10, 4}}, {"model.layers.0.mlp.up_proj.weight", {6, 4}}}, dtype);
    write_file(dir + "/model-00002-of-00002.safetensors", {{"model.norm.weight", {4}}}, dtype);
}

pg_status status_of_opening(const std::string& dir, std::string* message) {
    try {
        pg::io::HfWeightFiles files(dir);
        return PG_OK;
    } catch (const pg::Error& e) {
        *message = e.what();
        return e.status();
    }
}

}  // namespace

TEST_CASE("a single model.safetensors reads every dtype exactly as fp32", "[io][hf]") {
    for (HfDtype dtype : {HfDtype::f32, HfDtype::f16, HfDtype::bf16}) {
        INFO(pg::io::hf_dtype_name(dtype));
        const std::string dir = fresh_folder("single");
        write_file(dir + "/model.safetensors", {{"a", {3, 70000}}, {"b", {5}}}, dtype);
        const pg::io::HfWeightFiles files(dir);
        REQUIRE(files.entries().size() == 2);
        CHECK(files.shard_count() == 1);
        const auto* a = files.find("a");
        REQUIRE(a != nullptr);
        CHECK(a->shape == std::vector<uint64_t>{3, 70000});
        CHECK(files.find("c") == nullptr);
        // A window that crosses the reader's piece boundary.
        std::vector<float> got(100000);
        files.read_f32(*a, 5000, got.data(), got.size());
        bool exact = true;
        for (std::size_t i = 0; i < got.size(); ++i) {
            const float v = value_of(0, 5000 + i);
            const float want = dtype == HfDtype::f32   ? v
                               : dtype == HfDtype::f16 ? pg::kernels::fp16_to_float(pg::kernels::float_to_fp16(v))
                                                       : pg::kernels::bf16_to_float(pg::kernels::float_to_bf16(v));
            exact = exact && std::memcmp(&got[i], &want, 4) == 0;
        }
        CHECK(exact);
    }
}

TEST_CASE("16-bit reads copy the stored format and round the others to nearest even", "[io][hf]") {
    const std::string dir = fresh_folder("sixteen");
    write_file(dir + "/model.safetensors", {{"w", {4, 1000}}}, HfDtype::f32);
    const pg::io::HfWeightFiles files(dir);
    const auto& w = *files.find("w");
    std::vector<uint16_t> h(4000), b(4000);
    files.read_16(w, 0, h.data(), h.size(), HfDtype::f16);
    files.read_16(w, 0, b.data(), b.size(), HfDtype::bf16);
    bool same = true;
    for (std::size_t i = 0; i < h.size(); ++i)
        same = same && h[i] == pg::kernels::float_to_fp16(value_of(0, i)) && b[i] == pg::kernels::float_to_bf16(value_of(0, i));
    CHECK(same);

    // bf16 values beyond fp16's range are refused, naming the tensor, not turned into infinity.
    const std::string dir2 = fresh_folder("overflow");
    write_file(dir2 + "/model.safetensors", {{"huge", {8}}}, HfDtype::bf16, 1.0e6f);
    const pg::io::HfWeightFiles big(dir2);
    std::vector<uint16_t> out(8);
    try {
        big.read_16(*big.find("huge"), 0, out.data(), out.size(), HfDtype::f16);
        FAIL("no error");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_NOT_FINITE);
        CHECK_THAT(e.what(), Catch::Contains("huge"));
    }
    std::vector<uint16_t> kept(8);  // and bf16 keeps them as they are
    big.read_16(*big.find("huge"), 0, kept.data(), kept.size(), HfDtype::bf16);
    CHECK(pg::kernels::bf16_to_float(kept[0]) == pg::kernels::bf16_to_float(pg::kernels::float_to_bf16(1.0e6f)));
}

TEST_CASE("shards behind model.safetensors.index.json read as one set of tensors", "[io][hf]") {
    const std::string dir = fresh_folder("sharded");
    write_two_shards(dir, HfDtype::bf16);
    write_text(dir + "/model.safetensors.index.json", kIndex);
    const pg::io::HfWeightFiles files(dir);
    CHECK(files.shard_count() == 2);
    REQUIRE(files.entries().size() == 3);
    const auto* norm = files.find("model.norm.weight");
    REQUIRE(norm != nullptr);
    CHECK(norm->dtype == HfDtype::bf16);
    std::vector<float> v(4);
    files.read_f32(*norm, 0, v.data(), v.size());
    CHECK(v[3] == pg::kernels::bf16_to_float(pg::kernels::float_to_bf16(value_of(0, 3))));
}

TEST_CASE("a broken folder or index is refused naming what is wrong", "[io][hf]") {
    const struct {
        const char* name;
        std::string index;  // "" leaves the folder without an index
        pg_status status;
        const char* names;
    } cases[] = {
        {"no files", "", PG_ERR_IO, "neither model.safetensors"},
        {"outside the folder", R"({"weight_map": {"model.norm.weight": "../model-00002-of-00002.safetensors"}})",
         PG_ERR_FORMAT, "not a file name in the folder"},
        {"absolute path", R"({"weight_map": {"model.norm.weight": "/etc/passwd"}})", PG_ERR_FORMAT, "not a file name"},
        {"missing shard", R"({"weight_map": {"model.norm.weight": "model-00003-of-00003.safetensors"}})", PG_ERR_IO,
         "model-00003-of-00003.safetensors"},
        {"tensor not in its shard",
         R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors",
             "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
             "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors"}})",
         PG_ERR_FORMAT, "does not hold it"},
        {"unlisted tensor", R"({"weight_map": {"model.norm.weight": "model-00002-of-00002.safetensors",
             "model.embed_tokens.weight": "model-00001-of-00002.safetensors"}})",
         PG_ERR_FORMAT, "model.layers.0.mlp.up_proj.weight\" is not mapped"},
        {"no weight_map", R"({"metadata": {}})", PG_ERR_FORMAT, "weight_map"},
        {"empty weight_map", R"({"weight_map": {}})", PG_ERR_FORMAT, "empty"},
        {"not JSON", R"({"weight_map": )", PG_ERR_FORMAT, "model.safetensors.index.json"},
        {"file name not a string", R"({"weight_map": {"model.norm.weight": 2}})", PG_ERR_FORMAT, "model.norm.weight"},
    };
    for (const auto& c : cases) {
        INFO(c.name);
        const std::string dir = fresh_folder("broken");
        if (std::string(c.name) != "no files") write_two_shards(dir, HfDtype::f32);
        if (!c.index.empty()) write_text(dir + "/model.safetensors.index.json", c.index);
        std::string message;
        CHECK(status_of_opening(dir, &message) == c.status);
        CHECK_THAT(message, Catch::Contains(c.names));
    }

    // The same tensor stored in two shards.
    const std::string dir = fresh_folder("twice");
    write_file(dir + "/model-00001-of-00002.safetensors", {{"x", {2}}}, HfDtype::f32);
    write_file(dir + "/model-00002-of-00002.safetensors", {{"x", {2}}, {"y", {2}}}, HfDtype::f32);
    std::string message;
    write_text(dir + "/model.safetensors.index.json",
               R"({"weight_map": {"x": "model-00001-of-00002.safetensors", "x": "model-00002-of-00002.safetensors"}})");
    CHECK(status_of_opening(dir, &message) == PG_ERR_FORMAT);  // duplicate keys: the JSON reader refuses them
    write_text(dir + "/model.safetensors.index.json",
               R"({"weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"}})");
    CHECK(status_of_opening(dir, &message) == PG_ERR_FORMAT);
    CHECK_THAT(message, Catch::Contains("model-00002-of-00002.safetensors: tensor \"x\" is not mapped"));

    // A dtype the reader does not convert.
    const std::string dir2 = fresh_folder("int64");
    write_file(dir2 + "/model.safetensors", {{"x", {2}}}, HfDtype::f32);
    {
        std::vector<uint8_t> bytes = pg::io::read_small_file(dir2 + "/model.safetensors", 1 << 20);
        std::string s(bytes.begin(), bytes.end());
        s.replace(s.find("\"F32\""), 5, "\"I32\"");
        write_text(dir2 + "/model.safetensors", s);
    }
    CHECK(status_of_opening(dir2, &message) == PG_ERR_UNSUPPORTED);
    CHECK_THAT(message, Catch::Contains("dtype I32"));

    // Truncated shards: a byte short of the data the header describes, inside the header, and
    // shorter than the header's length prefix. Each is refused naming the shard.
    for (std::size_t keep : {std::size_t(0), std::size_t(5), std::size_t(40)}) {
        INFO("truncated, keep " << keep);
        const std::string dir3 = fresh_folder("truncated");
        write_two_shards(dir3, HfDtype::bf16);
        write_text(dir3 + "/model.safetensors.index.json", kIndex);
        const std::string shard = dir3 + "/model-00002-of-00002.safetensors";
        std::vector<uint8_t> bytes = pg::io::read_small_file(shard, 1 << 20);
        bytes.resize(keep == 0 ? bytes.size() - 1 : keep);
        pg::io::write_file_atomically(shard, bytes.data(), bytes.size());
        CHECK(status_of_opening(dir3, &message) == PG_ERR_FORMAT);
        CHECK_THAT(message, Catch::Contains("model-00002-of-00002.safetensors"));
    }
}
