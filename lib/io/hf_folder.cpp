// The weights of a Hugging Face model folder (hf_folder.hpp).
#include "io/hf_folder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/json.hpp"
#include "kernels/half_float.hpp"

namespace pg::io {

namespace {

constexpr std::size_t kPiece = kHfPiece;

int dtype_bytes(HfDtype d) { return d == HfDtype::f32 ? 4 : 2; }

float to_float(HfDtype d, const uint8_t* p) {
    if (d == HfDtype::f32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return d == HfDtype::f16 ? kernels::fp16_to_float(h) : kernels::bf16_to_float(h);
}

}  // namespace

HfDtype hf_dtype(const std::string& s, const std::string& context) {
    if (s == "F32") return HfDtype::f32;
    if (s == "F16") return HfDtype::f16;
    if (s == "BF16") return HfDtype::bf16;
    throw Error(PG_ERR_UNSUPPORTED, context + ": dtype " + s + " is not read (F32, F16 and BF16 are)");
}

const char* hf_dtype_name(HfDtype d) {
    switch (d) {
        case HfDtype::f16: return "F16";
        case HfDtype::bf16: return "BF16";
        case HfDtype::f32: break;
    }
    return "F32";
}

void HfWeightFiles::add_shard(const std::string& folder, const std::string& file_name) {
    Shard s;
    s.file = std::make_unique<FileSource>(folder + "/" + file_name);
    s.header = read_safetensors_header(*s.file);
    shards_.push_back(std::move(s));
}

HfWeightFiles::HfWeightFiles(const std::string& folder) {
    const std::string single = folder + "/model.safetensors";
    const std::string index_path = folder + "/model.safetensors.index.json";
    if (!is_regular_file(index_path)) {
        require(is_regular_file(single), PG_ERR_IO,
                folder + ": neither model.safetensors nor model.safetensors.index.json is there");
        add_shard(folder, "model.safetensors");
        for (const SafetensorsTensor& t : shards_[0].header.tensors)
            entries_.push_back({t.name, hf_dtype(t.dtype, single + ": tensor \"" + t.name + "\""), t.shape, 0, &t});
    } else {
        const std::vector<uint8_t> text = read_small_file(index_path, kMaxHfIndexBytes);
        const JsonValue index = parse_json(reinterpret_cast<const char*>(text.data()), text.size(), index_path);
        index.as_object(index_path);
        const JsonValue* map = index.find("weight_map");
        require(map != nullptr, PG_ERR_FORMAT, index_path + ": missing \"weight_map\"");
        std::vector<std::string> files;
        std::vector<std::pair<std::string, std::size_t>> wanted;  // tensor name -> shard
        for (const auto& [name, file_value] : map->as_object(index_path + ": weight_map")) {
            const std::string& file = file_value.as_string(index_path + ": weight_map[\"" + name + "\"]");
            // Only files of this folder: an index must not reach elsewhere on the device.
            require(!file.empty() && file.find('/') == std::string::npos && file != "." && file != "..",
                    PG_ERR_FORMAT, index_path + ": weight_map[\"" + name + "\"] = \"" + file + "\" is not a file name in the folder");
            auto at = std::find(files.begin(), files.end(), file);
            if (at == files.end()) {
                files.push_back(file);
                add_shard(folder, file);
                at = files.end() - 1;
            }
            wanted.emplace_back(name, std::size_t(at - files.begin()));
        }
        require(!files.empty(), PG_ERR_FORMAT, index_path + ": weight_map is empty");
        for (const auto& [name, shard] : wanted) {
            const SafetensorsTensor* t = shards_[shard].header.find(name);
            require(t != nullptr, PG_ERR_FORMAT,
                    index_path + ": tensor \"" + name + "\" is mapped to " + files[shard] + ", which does not hold it");
            entries_.push_back({name, hf_dtype(t->dtype, files[shard] + ": tensor \"" + name + "\""), t->shape, shard, t});
        }
        // Every tensor of every shard is listed, so nothing is silently left out.
        for (std::size_t s = 0; s < shards_.size(); ++s)
            for (const SafetensorsTensor& t : shards_[s].header.tensors) {
                const bool listed = std::any_of(wanted.begin(), wanted.end(), [&](const auto& w) {
                    return w.first == t.name && w.second == s;
                });
                require(listed, PG_ERR_FORMAT,
                        files[s] + ": tensor \"" + t.name + "\" is not mapped to this file by " + index_path);
            }
    }
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    for (std::size_t i = 1; i < entries_.size(); ++i)
        require(entries_[i].name != entries_[i - 1].name, PG_ERR_FORMAT,
                folder + ": tensor \"" + entries_[i].name + "\" is stored twice");
}

const HfWeightFiles::Entry* HfWeightFiles::find(const std::string& name) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                               [](const Entry& e, const std::string& n) { return e.name < n; });
    return it != entries_.end() && it->name == name ? &*it : nullptr;
}

void HfWeightFiles::read_f32(const Entry& e, uint64_t first, float* dst, std::size_t n) const {
    const ByteSource& src = *shards_[e.shard].file;
    const uint64_t base = shards_[e.shard].header.data_start + e.tensor->begin;
    const int b = dtype_bytes(e.dtype);
    std::vector<uint8_t> piece;
    for (std::size_t done = 0; done < n;) {
        const std::size_t m = std::min(kPiece, n - done);
        if (e.dtype == HfDtype::f32) {
            src.read_at(base + (first + done) * 4, dst + done, m * 4, "tensor data");
        } else {
            piece.resize(m * std::size_t(b));
            src.read_at(base + (first + done) * uint64_t(b), piece.data(), piece.size(), "tensor data");
            for (std::size_t i = 0; i < m; ++i) dst[done + i] = to_float(e.dtype, piece.data() + i * std::size_t(b));
        }
        done += m;
    }
}

void HfWeightFiles::read_16(const Entry& e, uint64_t first, uint16_t* dst, std::size_t n, HfDtype to) const {
    require(to != HfDtype::f32, PG_ERR_INTERNAL, "read_16: the target is not 16-bit");
    const ByteSource& src = *shards_[e.shard].file;
    const uint64_t base = shards_[e.shard].header.data_start + e.tensor->begin;
    const int b = dtype_bytes(e.dtype);
    if (e.dtype == to) {  // the stored values as they are
        src.read_at(base + first * 2, dst, n * 2, "tensor data");
        return;
    }
    std::vector<uint8_t> piece;
    for (std::size_t done = 0; done < n;) {
        const std::size_t m = std::min(kPiece, n - done);
        piece.resize(m * std::size_t(b));
        src.read_at(base + (first + done) * uint64_t(b), piece.data(), piece.size(), "tensor data");
        for (std::size_t i = 0; i < m; ++i) {
            const float f = to_float(e.dtype, piece.data() + i * std::size_t(b));
            const uint16_t h = to == HfDtype::f16 ? kernels::float_to_fp16(f) : kernels::float_to_bf16(f);
            const float back = to == HfDtype::f16 ? kernels::fp16_to_float(h) : kernels::bf16_to_float(h);
            require(std::isfinite(back) || !std::isfinite(f), PG_ERR_NOT_FINITE,
                    "tensor \"" + e.name + "\" holds " + std::to_string(f) + ", beyond the range of " + hf_dtype_name(to) +
                        ": hold this model in fp32 or bf16");
            dst[done + i] = h;
        }
        done += m;
    }
}

void write_hf_safetensors(const std::string& path, const std::vector<HfTensorOut>& tensors,
                          const std::vector<std::pair<std::string, std::string>>& metadata, const HfFill& fill) {
    JsonObject meta;
    meta.str("format", "pt");
    for (const auto& [key, value] : metadata) meta.str(key, value);
    std::vector<SafetensorsTensor> header;
    uint64_t offset = 0;
    for (const HfTensorOut& t : tensors) {
        uint64_t numel = 1;
        for (uint64_t d : t.shape) numel *= d;
        header.push_back({t.name, hf_dtype_name(t.dtype), t.shape, offset, offset + numel * uint64_t(dtype_bytes(t.dtype))});
        offset = header.back().end;
    }
    AtomicFileWriter out(path);
    write_safetensors_header(out, meta, header);
    std::vector<uint8_t> piece(kPiece * 4);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const int b = dtype_bytes(tensors[i].dtype);
        const uint64_t numel = (header[i].end - header[i].begin) / uint64_t(b);
        for (uint64_t first = 0; first < numel;) {
            const std::size_t m = std::size_t(std::min<uint64_t>(kPiece, numel - first));
            fill(i, first, piece.data(), m);
            out.write(piece.data(), m * std::size_t(b));
            first += m;
        }
    }
    out.commit();
}

}  // namespace pg::io
