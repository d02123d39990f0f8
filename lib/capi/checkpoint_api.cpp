// C API: native checkpoints (model only, or model + training state) and llm.c / Hugging Face
// safetensors interop. The formats live in lib/io; this file checks arguments and moves
// objects across the boundary.
#include <cstring>
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "io/checkpoint.hpp"
#include "io/hf_model.hpp"
#include "io/llmc.hpp"
#include "io/safetensors.hpp"
#include "train/trainer.hpp"

namespace {

constexpr uint64_t kMaxConfigJsonBytes = uint64_t(1) << 20;

pg::ErrorTarget err(const pg_model* m) { return pg::shared_errors(m); }
pg::ErrorTarget err(const pg_trainer* t) { return pg::shared_errors(t); }

pg_save_options full_default_save_options() {
    pg_save_options o = pg::blank_c_struct<pg_save_options>();
    o.compression_level = 0;
    o.weight_storage = -1;
    o.align_for_mapping = 0;
    return o;
}

pg::io::CheckpointOptions checkpoint_options(const pg_save_options* options, const char* fn) {
    pg_save_options o = full_default_save_options();
    pg::read_options(options, &o, fn);
    pg::require_arg(o.compression_level >= 0 && o.compression_level <= 19, fn,
                    ("options->compression_level " + std::to_string(o.compression_level) +
                     " is outside [0, 19] (0 = raw, 1..19 = zstd level)").c_str());
    const int32_t w = o.weight_storage;
    pg::require_arg((w >= -1 && w <= PG_WEIGHTS_BF16) || w == PG_WEIGHTS_Q8_0 || w == PG_WEIGHTS_Q4_0, fn,
                    ("options->weight_storage " + std::to_string(w) +
                     " is not -1 (as the model holds them), PG_WEIGHTS_FP32, _FP16, _BF16, _Q8_0 or _Q4_0").c_str());
    pg::require_arg(o.align_for_mapping == 0 || o.align_for_mapping == 1, fn,
                    ("options->align_for_mapping must be 0 or 1, not " + std::to_string(o.align_for_mapping)).c_str());
    pg::io::CheckpointOptions c;
    c.compression_level = o.compression_level;
    if (o.weight_storage >= 0) c.storage = pg::WeightStorage(o.weight_storage);
    c.mappable = o.align_for_mapping == 1;
    return c;
}

pg_load_options full_default_load_options() {
    pg_load_options o = pg::blank_c_struct<pg_load_options>();
    o.map_weights = 0;
    o.weight_storage = -1;
    return o;
}

pg_load_options checked_load_options(const pg_load_options* options, const char* fn) {
    pg_load_options o = full_default_load_options();
    pg::read_options(options, &o, fn);
    pg::require_arg(o.map_weights == 0 || o.map_weights == 1, fn,
                    ("options->map_weights must be 0 or 1, not " + std::to_string(o.map_weights)).c_str());
    const int32_t w = o.weight_storage;
    pg::require_arg(w == -1 || w == PG_WEIGHTS_FP32 || w == PG_WEIGHTS_FP16 || w == PG_WEIGHTS_BF16 ||
                        w == PG_WEIGHTS_Q8_0 || w == PG_WEIGHTS_Q4_0,
                    fn,
                    ("options->weight_storage " + std::to_string(w) +
                     " is not -1 (as the file holds them), PG_WEIGHTS_FP32, _FP16, _BF16, _Q8_0 or _Q4_0").c_str());
    return o;
}

// A model handle for a validated geometry (the weights are filled by the caller).
std::unique_ptr<pg_model> new_model(const pg::ModelConfig& cfg) { return std::make_unique<pg_model>(cfg); }

// A model holding a copy of the checkpoint in `src` (every loader that does not map); a
// quantized `storage` (a pg_weight_storage code, -1: as the file holds it) is quantized while
// reading (io::read_checkpoint_quantized).
std::unique_ptr<pg_model> copy_model(const pg::io::ByteSource& src, int32_t storage = -1) {
    pg::io::CheckpointHeader header = pg::io::read_checkpoint_header(src);
    std::unique_ptr<pg_model> model;
    if (storage == PG_WEIGHTS_Q8_0 || storage == PG_WEIGHTS_Q4_0) {
        model = std::make_unique<pg_model>(pg::io::read_checkpoint_quantized(src, header, pg::WeightStorage(storage)));
    } else {
        model = std::make_unique<pg_model>(pg::io::make_model_for(header));
        pg::io::read_checkpoint_data(src, header, model->impl, nullptr);
    }
    model->set_tokenizer(std::move(header.tokenizer));  // the reader checked its vocabulary
    return model;
}

// pg_model_load and pg_model_load_with: copied into the model, or mapped.
std::unique_ptr<pg_model> load_model(const char* path, bool map, int32_t storage = -1) {
    if (!map) return copy_model(pg::io::FileSource(path), storage);
    auto file = std::make_shared<const pg::io::MappedFile>(path);
    pg::io::CheckpointHeader header = pg::io::read_checkpoint_header(*file);
    auto model = std::make_unique<pg_model>(pg::io::map_checkpoint(file, header));
    model->set_tokenizer(std::move(header.tokenizer));
    return model;
}

// The checked pg_load_options of a loader: true when it asks to map the weights.
// The loaders of bytes the caller holds (memory, a descriptor's range) copy them: a mapping
// would outlive the caller's buffer or descriptor.
pg_load_options copying_load_options(const pg_load_options* options, const char* fn) {
    const pg_load_options o = checked_load_options(options, fn);
    if (o.map_weights == 1)
        throw pg::Error(PG_ERR_UNSUPPORTED, std::string(fn) + ": options->map_weights = 1 maps a file by its path "
                                            "(pg_model_load_with); bytes in memory or a descriptor's range are copied");
    return o;
}

// The storage options->weight_storage asks of a loaded model (-1: as the file holds it).
std::unique_ptr<pg_model> with_storage(std::unique_ptr<pg_model> model, const pg_load_options& o) {
    if (o.weight_storage >= 0) model->impl.hold_frozen_in(pg::WeightStorage(o.weight_storage));
    return model;
}

// A tokenizer the caller passed beside an imported file: checked at the boundary, then installed.
void attach_tokenizer(pg_model& model, std::unique_ptr<pg::Tokenizer> tok, const std::string& where) {
    if (!tok) return;
    pg::capi::require_tokenizer_fits(*tok, model.impl.config(), where);
    model.set_tokenizer(std::move(tok));
}

}  // namespace

extern "C" {

void pg_save_options_default(pg_save_options* options) {
    if (options) *options = full_default_save_options();
}

void pg_load_options_default(pg_load_options* options) {
    if (options) *options = full_default_load_options();
}

pg_status pg_model_save(const pg_model* model, const char* path, const pg_save_options* options) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_save", model);
        PG_REQUIRE_NOT_NULL("pg_model_save", path);
        pg::io::save_checkpoint(model->impl, nullptr, checkpoint_options(options, "pg_model_save"), path);
    });
}

pg_status pg_model_load(const char* path, pg_model** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_load", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_model_load", path);
        *out = load_model(path, false).release();
    });
}

pg_status pg_model_load_with(const char* path, const pg_load_options* options, pg_model** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_load_with", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_model_load_with", path);
        const pg_load_options o = checked_load_options(options, "pg_model_load_with");
        *out = with_storage(load_model(path, o.map_weights == 1, o.weight_storage), o).release();
    });
}

pg_status pg_model_load_from_memory(const void* data, size_t size, const pg_load_options* options, pg_model** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_load_from_memory", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_model_load_from_memory", data);
        const pg_load_options o = copying_load_options(options, "pg_model_load_from_memory");
        *out = with_storage(copy_model(pg::io::MemorySource(data, size), o.weight_storage), o).release();
    });
}

pg_status pg_model_load_from_fd(int fd, int64_t offset, int64_t length, const pg_load_options* options,
                                pg_model** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_load_from_fd", out);
        *out = nullptr;
        pg::require_arg(fd >= 0, "pg_model_load_from_fd", ("fd " + std::to_string(fd) + " is negative").c_str());
        const pg_load_options o = copying_load_options(options, "pg_model_load_from_fd");
        *out = with_storage(copy_model(pg::io::DescriptorSource(fd, offset, length), o.weight_storage), o).release();
    });
}

pg_status pg_trainer_save(const pg_trainer* trainer, const char* path, const pg_save_options* options) {
    return pg::guarded(err(trainer), [&] {
        PG_REQUIRE_NOT_NULL("pg_trainer_save", trainer);
        PG_REQUIRE_NOT_NULL("pg_trainer_save", path);
        pg::require_arg(trainer->impl != nullptr && trainer->model != nullptr, "pg_trainer_save",
                        "trainer is not initialised");
        const pg::io::CheckpointOptions o = checkpoint_options(options, "pg_trainer_save");
        const pg::TrainerState state = trainer->impl->state();
        pg::io::save_checkpoint(trainer->model->impl, &state, o, path);
    });
}

pg_status pg_trainer_resume(const char* path, pg_model** model_out, pg_trainer** trainer_out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_trainer_resume", model_out);
        PG_REQUIRE_NOT_NULL("pg_trainer_resume", trainer_out);
        *model_out = nullptr;
        *trainer_out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_trainer_resume", path);
        pg::io::FileSource src(path);
        pg::io::CheckpointHeader header = pg::io::read_checkpoint_header(src);
        if (!header.has_train_state)
            throw pg::Error(PG_ERR_STATE, std::string("pg_trainer_resume: \"") + path +
                                              "\" holds no training state (it was saved with pg_model_save; "
                                              "load it with pg_model_load)");
        auto model = new_model(header.config);
        pg::TrainerState state;
        pg::io::read_checkpoint_data(src, header, model->impl, &state);
        model->set_tokenizer(std::move(header.tokenizer));  // the reader checked its vocabulary
        auto trainer = std::make_unique<pg_trainer>();
        trainer->attach(model.get());
        try {
            trainer->impl = std::make_unique<pg::Trainer>(model->impl, std::move(state));
        } catch (const pg::Error& e) {
            // Values the trainer refuses came from the file: a format error, named as such.
            const pg_status s = e.status() == PG_ERR_INVALID_ARGUMENT ? PG_ERR_FORMAT : e.status();
            throw pg::Error(s, std::string(path) + ": training state: " + e.what());
        }
        *model_out = model.release();
        *trainer_out = trainer.release();
    });
}

pg_status pg_model_export(const pg_model* model, pg_interop_format format, const char* path) {
    return pg::guarded(err(model), [&] {
        PG_REQUIRE_NOT_NULL("pg_model_export", model);
        PG_REQUIRE_NOT_NULL("pg_model_export", path);
        const int code = pg::enum_code(format);
        // Both formats hold GPT-2's block only (nothing is written for another architecture).
        pg::require((code != PG_FORMAT_LLMC && code != PG_FORMAT_SAFETENSORS) || model->impl.config().is_gpt2(),
                    PG_ERR_UNSUPPORTED,
                    "pg_model_export: llm.c and GPT-2 safetensors files hold GPT-2's block; this model is a "
                    "Llama-family decoder (save it as a native checkpoint)");
        if (code == PG_FORMAT_LLMC) {
            pg::io::AtomicFileWriter file(path);
            pg::io::write_llmc(model->impl, file);
            file.commit();
        } else if (code == PG_FORMAT_HF_FOLDER) {
            pg::io::export_hf_folder(model->impl, path);
        } else if (code == PG_FORMAT_SAFETENSORS) {
            // config.json first: if the weights then fail to save, an old pair is only
            // inconsistent when the geometry changed, and the import checks that it agrees.
            const std::string config = pg::io::hf_gpt2_config_json(model->impl.config());
            pg::io::write_file_atomically(pg::io::sibling_path(path, "config.json"), config.data(), config.size());
            pg::io::AtomicFileWriter file(path);
            pg::io::write_hf_gpt2_safetensors(model->impl, file);
            file.commit();
        } else {
            throw pg::Error(PG_ERR_INVALID_ARGUMENT, "pg_model_export: unknown format " + std::to_string(code) +
                                                         " (PG_FORMAT_LLMC = 1, PG_FORMAT_SAFETENSORS = 2, PG_FORMAT_HF_FOLDER = 3)");
        }
    });
}

pg_status pg_model_import(pg_interop_format format, const char* path, pg_model** out) {
    return pg_model_import_with(format, path, nullptr, out);
}

pg_status pg_model_import_with(pg_interop_format format, const char* path, const pg_load_options* options,
                               pg_model** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_model_import", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_model_import", path);
        const pg_load_options o = checked_load_options(options, "pg_model_import");
        pg::require_arg(o.map_weights == 0, "pg_model_import",
                        "options->map_weights must be 0: an import is read into memory the model owns (save it "
                        "as a native checkpoint with a 16-bit storage or align_for_mapping to map it)");
        std::unique_ptr<pg_model> model;
        const int code = pg::enum_code(format);
        if (code == PG_FORMAT_HF_FOLDER) {
            std::unique_ptr<pg::Tokenizer> tokenizer;
            model = std::make_unique<pg_model>(pg::io::import_hf_folder(path, o.weight_storage, &tokenizer));
            attach_tokenizer(*model, std::move(tokenizer), path);
        } else if (code == PG_FORMAT_LLMC) {
            pg::io::FileSource src(path);
            const pg::io::LlmcHeader header = pg::io::read_llmc_header(src);
            model = new_model(header.config);
            pg::io::read_llmc_data(src, header, model->impl);
        } else if (code == PG_FORMAT_SAFETENSORS) {
            pg::io::FileSource src(path);
            const std::string config_path = pg::io::sibling_path(path, "config.json");
            const std::vector<uint8_t> config = pg::io::read_small_file(config_path, kMaxConfigJsonBytes);
            const pg::io::HfGpt2Import plan =
                pg::io::read_hf_gpt2_header(src, std::string(config.begin(), config.end()));
            model = new_model(plan.config);
            pg::io::read_hf_gpt2_data(src, plan, model->impl);
            if (!plan.tokenizer_bytes.empty())
                attach_tokenizer(*model,
                                 pg::deserialize_tokenizer(plan.tokenizer_bytes.data(), plan.tokenizer_bytes.size()),
                                 path);
        } else {
            throw pg::Error(PG_ERR_INVALID_ARGUMENT, "pg_model_import: unknown format " + std::to_string(code) +
                                                         " (PG_FORMAT_LLMC = 1, PG_FORMAT_SAFETENSORS = 2, PG_FORMAT_HF_FOLDER = 3)");
        }
        if (code != PG_FORMAT_HF_FOLDER && o.weight_storage >= 0)
            model->impl.hold_frozen_in(pg::WeightStorage(o.weight_storage));
        *out = model.release();
    });
}

}  // extern "C"
