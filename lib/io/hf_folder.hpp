// The weights of a Hugging Face model folder: model.safetensors, or the shards that
// model.safetensors.index.json maps every tensor to. Tensors are found by name and read, in
// bounded pieces, converted to the precision the model holds them in (fp32, fp16 or bf16), so a
// 16-bit base is never widened to an fp32 copy on the way in.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/file_io.hpp"
#include "io/safetensors.hpp"

namespace pg::io {

// Elements read or converted per piece: bounded scratch whatever the tensor's size.
constexpr std::size_t kHfPiece = std::size_t(1) << 16;

// The index's cap: a real one maps a few hundred tensors in tens of kilobytes.
constexpr uint64_t kMaxHfIndexBytes = 64u << 20;

// What a stored tensor's values are and what they become.
enum class HfDtype { f32, f16, bf16 };
HfDtype hf_dtype(const std::string& safetensors_dtype, const std::string& context);  // "F32", "F16", "BF16"
const char* hf_dtype_name(HfDtype dtype);

class HfWeightFiles {
public:
    // Opens `folder`/model.safetensors, or `folder`/model.safetensors.index.json and every shard
    // it names (plain file names inside the folder only). PG_ERR_IO for missing files,
    // PG_ERR_FORMAT for an index or header that breaks the format, a tensor in two shards, a
    // shard tensor the index does not list, or an index entry its shard lacks.
    explicit HfWeightFiles(const std::string& folder);

    struct Entry {
        std::string name;
        HfDtype dtype;
        std::vector<uint64_t> shape;
        std::size_t shard;             // index into shards
        const SafetensorsTensor* tensor;
    };
    // nullptr when absent.
    const Entry* find(const std::string& name) const;
    const std::vector<Entry>& entries() const { return entries_; }
    std::size_t shard_count() const { return shards_.size(); }

    // Reads tensor `e` (its shape already checked by the caller), elements [first, first + n),
    // as fp32 (exact for every stored dtype).
    void read_f32(const Entry& e, uint64_t first, float* dst, std::size_t n) const;
    // The same elements as 16-bit values of `to` (f16 or bf16): copied when stored so, rounded
    // to nearest even otherwise. PG_ERR_NOT_FINITE naming the tensor when a finite value
    // exceeds fp16's range.
    void read_16(const Entry& e, uint64_t first, uint16_t* dst, std::size_t n, HfDtype to) const;

private:
    struct Shard {
        std::unique_ptr<FileSource> file;
        SafetensorsHeader header;
    };
    void add_shard(const std::string& folder, const std::string& file_name);
    std::vector<Shard> shards_;
    std::vector<Entry> entries_;  // sorted by name
};

// Writes one safetensors file atomically at `path`: the tensors in order, each of its dtype (4
// or 2 bytes an element), produced in bounded pieces by fill(i, first, dst, n) (elements
// [first, first + n) of tensor i), so an export never holds a second copy of the model.
// `metadata` (string pairs) follows format "pt" in "__metadata__".
struct HfTensorOut {
    std::string name;
    std::vector<uint64_t> shape;
    HfDtype dtype;
};
using HfFill = std::function<void(std::size_t tensor, uint64_t first, void* dst, std::size_t n)>;
void write_hf_safetensors(const std::string& path, const std::vector<HfTensorOut>& tensors,
                          const std::vector<std::pair<std::string, std::string>>& metadata, const HfFill& fill);

}  // namespace pg::io
