// A Hugging Face model folder in and out (hf_model.hpp).
#include "io/hf_model.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sys/stat.h>

#include "core/error.hpp"
#include "core/checksum.hpp"
#include "core/file_io.hpp"
#include "io/finite_weights.hpp"
#include "io/hf_config.hpp"
#include "io/hf_folder.hpp"
#include "io/safetensors.hpp"
#include "tokenizer/bpe_formats.hpp"

namespace pg::io {

namespace {

constexpr uint64_t kMaxConfigBytes = 1u << 20;
constexpr uint64_t kMaxTokenizerBytes = 256u << 20;
constexpr std::size_t kPiece = kHfPiece;

std::vector<uint64_t> shape_of(const TensorEntry& e) {
    return std::vector<uint64_t>(e.shape.begin(), e.shape.begin() + e.n_dims);
}

WeightStorage storage_of(HfDtype d) {
    return d == HfDtype::f16 ? WeightStorage::fp16 : d == HfDtype::bf16 ? WeightStorage::bf16 : WeightStorage::fp32;
}

// Tensors of the files that are not part of the table but may be there: the rotary
// frequencies older Llama checkpoints saved, and a tied head (checked equal to the embedding).
bool ignorable(const std::string& name) {
    const std::string suffix = ".self_attn.rotary_emb.inv_freq";
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Pass over every weight in the model's own order (llm.c's: kind by kind, layer by layer),
// as fp32 values in bounded pieces, zeros for the padding rows no tensor covers. Feeds the
// fp32 fingerprint of a 16-bit import and checks every value is finite.
uint64_t fingerprint_and_check(const HfWeightFiles& files, const std::vector<TensorEntry>& table, int64_t total,
                               const std::string& folder) {
    std::vector<const TensorEntry*> by_offset;
    for (const TensorEntry& e : table) by_offset.push_back(&e);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    Xxh64 hash;
    std::vector<float> piece(kPiece);
    int64_t at = 0;
    auto zeros = [&](int64_t n) {
        std::fill(piece.begin(), piece.end(), 0.0f);
        for (int64_t done = 0; done < n;) {
            const int64_t m = std::min<int64_t>(int64_t(kPiece), n - done);
            hash.update(piece.data(), std::size_t(m) * 4);
            done += m;
        }
    };
    for (const TensorEntry* e : by_offset) {
        zeros(e->offset - at);
        const HfWeightFiles::Entry& f = *files.find(e->name);
        for (int64_t first = 0; first < e->numel;) {
            const std::size_t m = std::size_t(std::min<int64_t>(int64_t(kPiece), e->numel - first));
            files.read_f32(f, uint64_t(first), piece.data(), m);
            for (std::size_t i = 0; i < m; ++i)
                require(std::isfinite(piece[i]), PG_ERR_NOT_FINITE, [&] {
                    return folder + ": tensor \"" + e->name + "\" element " + std::to_string(first + int64_t(i)) + " is " +
                           std::to_string(piece[i]);
                });
            hash.update(piece.data(), m * 4);
            first += int64_t(m);
        }
        at = e->offset + e->numel;
    }
    zeros(total - at);
    return hash.digest();
}

// A tied head saved anyway must hold the embedding's values.
void require_same_values(const HfWeightFiles& files, const HfWeightFiles::Entry& head,
                         const HfWeightFiles::Entry& embed, const std::string& folder) {
    require(head.shape == embed.shape, PG_ERR_GEOMETRY,
            folder + ": lm_head.weight has shape " + shape_text(head.shape) + ", model.embed_tokens.weight " +
                shape_text(embed.shape) + ", but tie_word_embeddings is true");
    uint64_t n = 1;
    for (uint64_t d : head.shape) n *= d;
    std::vector<float> a(kPiece), b(kPiece);
    for (uint64_t first = 0; first < n;) {
        const std::size_t m = std::size_t(std::min<uint64_t>(kPiece, n - first));
        files.read_f32(head, first, a.data(), m);
        files.read_f32(embed, first, b.data(), m);
        require(std::memcmp(a.data(), b.data(), m * 4) == 0, PG_ERR_UNSUPPORTED,
                folder + ": lm_head.weight differs from model.embed_tokens.weight but config.json ties them "
                         "(tie_word_embeddings true)");
        first += m;
    }
}

Model import_gpt2_folder(const std::string& folder, const std::string& config_json, int storage,
                         std::unique_ptr<Tokenizer>* tokenizer) {
    FileSource src(folder + "/model.safetensors");
    const HfGpt2Import plan = read_hf_gpt2_header(src, config_json);
    Model model(plan.config);
    read_hf_gpt2_data(src, plan, model);
    if (!plan.tokenizer_bytes.empty()) {
        *tokenizer = deserialize_tokenizer(plan.tokenizer_bytes.data(), plan.tokenizer_bytes.size());
        require((*tokenizer)->vocab_size() == plan.config.vocab_size, PG_ERR_GEOMETRY,
                src.name() + ": the tokenizer it carries does not have the model's vocab_size tokens");
    }
    if (storage != kHfStorageAsStored) model.hold_frozen_in(WeightStorage(storage));
    return model;
}

}  // namespace

Model import_hf_folder(const std::string& folder, int storage, std::unique_ptr<Tokenizer>* tokenizer_out) {
    tokenizer_out->reset();
    const std::string config_path = folder + "/config.json";
    const std::vector<uint8_t> config_bytes = read_small_file(config_path, kMaxConfigBytes);
    const std::string config_json(config_bytes.begin(), config_bytes.end());
    const std::string model_type = hf_model_type(config_json, config_path);
    if (model_type == "gpt2") return import_gpt2_folder(folder, config_json, storage, tokenizer_out);
    ModelConfig cfg = hf_decoder_config_from_json(config_json, config_path);

    // The tokenizer first: its vocabulary may be smaller than the embedding (Qwen pads it to a
    // multiple of 128), and the rows past it are the model's padding rows, never predicted.
    std::unique_ptr<Tokenizer> tokenizer;
    const std::string tokenizer_path = folder + "/tokenizer.json";
    if (is_regular_file(tokenizer_path)) {
        const std::vector<uint8_t> bytes = read_small_file(tokenizer_path, kMaxTokenizerBytes);
        tokenizer = bpe::load_hf(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        const int n = tokenizer->vocab_size();
        require(n <= cfg.vocab_size, PG_ERR_GEOMETRY,
                tokenizer_path + ": " + std::to_string(n) + " tokens, more than the " + std::to_string(cfg.vocab_size) +
                    " rows of the embedding config.json describes");
        cfg.vocab_size = n;  // padded_vocab_size stays the embedding's rows
    }
    const HfWeightFiles files(folder);
    const std::vector<TensorEntry> table = build_tensor_table(cfg);
    HfDtype matrices = HfDtype::f32;
    for (const TensorEntry& e : table) {
        const HfWeightFiles::Entry* f = files.find(e.name);
        require(f != nullptr, PG_ERR_GEOMETRY,
                folder + ": tensor \"" + e.name + "\" is missing (the geometry in config.json needs it)");
        require(f->shape == shape_of(e), PG_ERR_GEOMETRY,
                folder + ": tensor \"" + e.name + "\" has shape " + shape_text(f->shape) +
                    " but the geometry in config.json needs " + shape_text(shape_of(e)));
        if (e.is_linear_weight) matrices = f->dtype;
    }
    for (const HfWeightFiles::Entry& f : files.entries()) {
        const bool in_table = std::any_of(table.begin(), table.end(), [&](const TensorEntry& e) { return e.name == f.name; });
        if (in_table || ignorable(f.name)) continue;
        if (f.name == "lm_head.weight" && cfg.tied_head) {
            require_same_values(files, f, *files.find("model.embed_tokens.weight"), folder);
            continue;
        }
        throw Error(PG_ERR_FORMAT, folder + ": unexpected tensor \"" + f.name + "\" (not part of a " +
                                       hf_architecture_name(hf_family_of(cfg)) + " with this config.json)");
    }

    // A quantized base is read in the file's precision first (16-bit values quantize without
    // an fp32 copy), then quantized tensor by tensor.
    const WeightStorage asked = storage == kHfStorageAsStored ? storage_of(matrices) : WeightStorage(storage);
    const WeightStorage target = is_quantized(asked) ? storage_of(matrices) : asked;
    if (target == WeightStorage::fp32) {
        Model model(cfg);
        float* params = model.params();
        for (const TensorEntry& e : table) files.read_f32(*files.find(e.name), 0, params + e.offset, std::size_t(e.numel));
        require_finite_weights(model, folder);
        model.hold_frozen_in(asked);
        *tokenizer_out = std::move(tokenizer);
        return model;
    }
    const uint64_t hash = fingerprint_and_check(files, table, ParamLayout(cfg).total, folder);
    Model model(cfg, target, hash);
    const HfDtype half = target == WeightStorage::fp16 ? HfDtype::f16 : HfDtype::bf16;
    for (const TensorEntry& e : table) {
        uint8_t* dst = model.tensor_bytes(e);
        if (model.element_bytes(e.kind) == 2)
            files.read_16(*files.find(e.name), 0, reinterpret_cast<uint16_t*>(dst), std::size_t(e.numel), half);
        else
            files.read_f32(*files.find(e.name), 0, reinterpret_cast<float*>(dst), std::size_t(e.numel));
    }
    model.hold_frozen_in(asked);  // q8_0 / q4_0 when asked
    *tokenizer_out = std::move(tokenizer);
    return model;
}

void export_hf_folder(const Model& model, const std::string& folder) {
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) {
        require(::mkdir(folder.c_str(), 0755) == 0 || errno == EEXIST, PG_ERR_IO,
                folder + ": cannot create the folder: " + std::strerror(errno));
    } else {
        require(S_ISDIR(st.st_mode), PG_ERR_IO, folder + " exists and is not a folder");
    }
    const ModelConfig& c = model.config();
    if (c.is_gpt2()) {
        const std::string config = hf_gpt2_config_json(c);
        write_file_atomically(folder + "/config.json", config.data(), config.size());
        AtomicFileWriter file(folder + "/model.safetensors");
        write_hf_gpt2_safetensors(model, file);
        file.commit();
        return;
    }
    // The file's embedding has every row the model holds: vocab_size in config.json is the
    // padded count, as in the files the model came from.
    ModelConfig file_cfg = c;
    file_cfg.vocab_size = c.padded_vocab_size;
    const std::string config = hf_decoder_config_json(file_cfg);
    const std::vector<TensorEntry>& table = model.tensors();
    std::vector<HfTensorOut> out;
    for (const TensorEntry& e : table) {
        const bool half = model.element_bytes(e.kind) == 2;
        const HfDtype dtype = !half ? HfDtype::f32
                              : model.storage() == WeightStorage::fp16 ? HfDtype::f16
                                                                                      : HfDtype::bf16;
        out.push_back({e.name, shape_of(e), dtype});
    }
    write_file_atomically(folder + "/config.json", config.data(), config.size());
    write_hf_safetensors(folder + "/model.safetensors", out, {}, [&](std::size_t t, uint64_t first, void* dst, std::size_t n) {
        const TensorEntry& e = table[t];
        const std::size_t b = std::size_t(model.element_bytes(e.kind));
        std::memcpy(dst, model.tensor_bytes(e) + first * b, n * b);
    });
}

}  // namespace pg::io
