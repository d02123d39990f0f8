// The adapter file (docs/formats.md §4): a safetensors file whose tensors are the adapter's A
// and B under PEFT's names (base_model.model.transformer.h.{i}.{module}.lora_{A,B}.weight, F32,
// A [r, in], B [out, r]), so PEFT reads it as an adapter_model.safetensors, and whose
// __metadata__ makes it self-describing: the format version, the LoRA configuration, the base's
// identity and description, the training record, every tensor's XXH64 and an XXH64 over the
// metadata itself. Nothing about the geometry is assumed by the reader: the configuration and
// the base geometry in the file decide which tensors must be there and their shapes.
#pragma once

#include <string>

#include "core/file_io.hpp"
#include "lora/adapter.hpp"
#include "train/train_config.hpp"

namespace pg::lora {

// The version this library writes. A reader accepts every major <= this one that was ever
// written (fixtures in tests/fixtures/) and any minor of a known major (minors only add keys).
constexpr int kAdapterFormatMajor = 1;
constexpr int kAdapterFormatMinor = 4;
// The minors and what each added (docs/formats.md §5): 1.1 the adapter training checkpoint (the
// key phonegpt.train_state and two moment tensors; plain adapter files stayed 1.0); 1.2 a
// training record's NaN or infinity as the string "nan", "inf" or "-inf" (io::nonfinite_token:
// a diverged run recorded so that a coordinator refuses it by name); 1.3 the base's provenance in
// phonegpt.base; 1.4 Llama-family adapters (target bits above 15, the Llama module names, and the
// base's block architecture in phonegpt.base's "architecture"). A GPT-2 adapter is written as
// 1.3, byte for byte as before; a Llama-family one as 1.4 (written_minor).
constexpr int kAdapterTrainingMinor = 1;
constexpr int kAdapterNonFiniteMinor = 2;
constexpr int kAdapterProvenanceMinor = 3;
constexpr int kAdapterLlamaMinor = 4;
int written_minor(const Adapter& adapter);

// PEFT's name of an adapter tensor ("base_model.model.transformer." + the table's name for GPT-2,
// "base_model.model." + it for the Llama family).
std::string peft_tensor_name(const AdapterTensor& t);

void write_adapter(const Adapter& adapter, io::ByteSink& sink);

// The base's identity as the file's phonegpt.base stores it (JSON: geometry, hashes, fingerprint,
// description, provenance).
std::string base_identity_json(const BaseIdentity& base);

// Reads and validates everything (PG_ERR_FORMAT / VERSION / CHECKSUM naming what is wrong). The
// adapter is complete on its own; check_adapter_matches_base says whether it fits a base.
Adapter read_adapter(const io::ByteSource& src);

// Writes `path` atomically, then reads the file back and checks it equals `adapter` (every
// factor bit for bit, the configuration, the base identity and the record) before returning:
// a save that does not read back as what was saved is PG_ERR_IO, never a success.
void save_adapter(const Adapter& adapter, const std::string& path);
Adapter load_adapter(const std::string& path);

// The adapter training checkpoint: the adapter file plus the trainer state (section TRAN's
// bytes, the AdamW moments), so that training resumes bit for bit given the same base and data.
// read_adapter also reads such a file (ignoring the state); read_adapter_training needs one
// (PG_ERR_STATE for a plain adapter file).
void write_adapter_training(const Adapter& adapter, const TrainerState& state, io::ByteSink& sink);
Adapter read_adapter_training(const io::ByteSource& src, TrainerState& state);
// Atomic, read back and compared (adapter and state) before returning, as save_adapter.
void save_adapter_training(const Adapter& adapter, const TrainerState& state, const std::string& path);
Adapter load_adapter_training(const std::string& path, TrainerState& state);

// True when two adapters are the same bits: configuration, base identity, record, factors.
bool same_adapter(const Adapter& a, const Adapter& b);

}  // namespace pg::lora
