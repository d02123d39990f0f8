// The native checkpoint's writer (write_checkpoint, save_checkpoint): the tensor table laid out
// by checkpoint_tensors.hpp, the header's sections, and the data region streamed raw or through
// one zstd frame, fp32 weights rounded to 16 bits on the way for a 16-bit storage.
#include <zstd.h>

#include <algorithm>
#include <optional>

#include "io/checkpoint.hpp"
#include "io/checkpoint_sections.hpp"
#include "io/checkpoint_tensors.hpp"
#include "core/checksum.hpp"

namespace pg::io {

using namespace ckpt;

namespace {

struct CctxDeleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// One piece of the data region, streamed into the sink: bytes as they are, zeros (alignment
// padding: data null), or fp32 values rounded to 16 bits while writing (to16 set).
struct TensorBytes {
    const void* data;
    std::size_t nbytes;  // bytes in the file
    std::optional<WeightStorage> to16;
};

constexpr std::size_t kConvertChunk = std::size_t(1) << 16;  // values rounded per chunk

// Calls emit(bytes, n) with the piece's file bytes, in chunks.
template <class Emit>
void piece_chunks(const TensorBytes& p, Emit&& emit) {
    static const uint8_t kZeros[kCheckpointAlignment] = {};
    if (!p.data) {
        emit(kZeros, p.nbytes);  // padding is shorter than the alignment
        return;
    }
    if (!p.to16) {
        emit(p.data, p.nbytes);
        return;
    }
    const float* from = static_cast<const float*>(p.data);
    std::vector<uint16_t> buf(kConvertChunk);
    for (std::size_t done = 0, n = p.nbytes / 2; done < n;) {
        const std::size_t m = std::min(kConvertChunk, n - done);
        round_to_16_bits(from + done, buf.data(), int64_t(m), *p.to16);  // range checked by the caller
        emit(buf.data(), m * 2);
        done += m;
    }
}

uint64_t write_data_region(const std::vector<TensorBytes>& parts, uint64_t total, int level, ByteSink& sink) {
    const uint64_t start = sink.bytes_written();
    if (level == 0) {
        for (const TensorBytes& p : parts) piece_chunks(p, [&](const void* d, std::size_t n) { sink.write(d, n); });
        return sink.bytes_written() - start;
    }
    std::unique_ptr<ZSTD_CCtx, CctxDeleter> cctx(ZSTD_createCCtx());
    if (!cctx) throw std::bad_alloc();
    auto check = [](std::size_t r) {
        if (ZSTD_isError(r)) throw Error(PG_ERR_INTERNAL, std::string("zstd compression failed: ") + ZSTD_getErrorName(r));
        return r;
    };
    check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level));
    check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1));
    check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1));
    check(ZSTD_CCtx_setPledgedSrcSize(cctx.get(), total));
    std::vector<uint8_t> out(ZSTD_CStreamOutSize());
    auto compress = [&](const void* data, std::size_t n, ZSTD_EndDirective mode) {
        ZSTD_inBuffer ib{data, n, 0};
        for (;;) {
            ZSTD_outBuffer ob{out.data(), out.size(), 0};
            const std::size_t left = check(ZSTD_compressStream2(cctx.get(), &ob, &ib, mode));
            sink.write(out.data(), ob.pos);
            if (mode == ZSTD_e_end ? left == 0 : ib.pos == ib.size) break;
        }
    };
    for (const TensorBytes& p : parts)
        piece_chunks(p, [&](const void* d, std::size_t n) { compress(d, n, ZSTD_e_continue); });
    compress(nullptr, 0, ZSTD_e_end);
    return sink.bytes_written() - start;
}

}  // namespace

void write_checkpoint(const Model& model, const TrainerState* state, const CheckpointOptions& options,
                      ByteSink& sink) {
    const int compression_level = options.compression_level;
    require(compression_level >= 0 && compression_level <= 19, PG_ERR_INVALID_ARGUMENT,
            "compression_level " + std::to_string(compression_level) + " is outside [0, 19]");
    const int64_t n_params = model.num_params();
    if (state) {
        require(state->adam_m.size() == std::size_t(n_params) && state->adam_v.size() == std::size_t(n_params),
                PG_ERR_STATE, "training state: the AdamW moments have " + std::to_string(state->adam_m.size()) +
                                  " / " + std::to_string(state->adam_v.size()) + " elements, the model " +
                                  std::to_string(n_params) + " parameters");
    }
    const WeightStorage storage = options.storage.value_or(model.storage());
    require(storage == WeightStorage::fp32 || storage == WeightStorage::fp16 || storage == WeightStorage::bf16 ||
                is_quantized(storage),
            PG_ERR_INVALID_ARGUMENT, "weight storage must be fp32, fp16, bf16, q8_0 or q4_0");
    require(!is_quantized(storage) || model.storage() != WeightStorage::fp32, PG_ERR_INVALID_ARGUMENT,
            std::string("a checkpoint holds ") + weight_storage_name(storage) +
                " blocks only from a model held in them: quantize the model first (pg_model_set_weight_storage), "
                "then save it");
    require(model.storage() == WeightStorage::fp32 || storage == model.storage(), PG_ERR_STATE,
            std::string("the model's weights are held in ") + weight_storage_name(model.storage()) +
                " and their fp32 values are gone: it saves in " + weight_storage_name(model.storage()) +
                " only, not in " + weight_storage_name(storage));
    require(!state || storage == WeightStorage::fp32, PG_ERR_INVALID_ARGUMENT,
            std::string("a training state is saved with fp32 weights only, not ") + weight_storage_name(storage));
    const bool mappable = options.mappable || storage != WeightStorage::fp32;

    // Tensor table and the bytes behind it, in file order.
    std::vector<CheckpointTensor> tensors;
    std::vector<TensorBytes> parts;
    uint64_t offset = 0;
    auto add = [&](const std::string& name, int n_dims, const std::array<uint64_t, 4>& shape, const void* data,
                   uint64_t numel, TensorDtype dtype, bool convert, bool group_start) {
        const uint64_t row_length = shape[std::size_t(n_dims - 1)];
        if (mappable && group_start && offset % kCheckpointAlignment != 0) {
            const uint64_t pad = round_up_to(offset, kCheckpointAlignment) - offset;
            parts.push_back({nullptr, std::size_t(pad), std::nullopt});
            offset += pad;
        }
        CheckpointTensor t;
        t.name = name;
        t.dtype = dtype;
        t.n_dims = n_dims;
        t.shape = shape;
        t.offset = offset;
        t.nbytes = tensor_nbytes(dtype, numel, row_length);
        TensorBytes piece{data, std::size_t(t.nbytes), std::nullopt};
        if (convert) {
            piece.to16 = storage;
            std::vector<uint16_t> buf(kConvertChunk);
            const float* from = static_cast<const float*>(data);
            for (uint64_t done = 0; done < numel;) {
                const int64_t m = int64_t(std::min<uint64_t>(kConvertChunk, numel - done));
                const int64_t bad = round_to_16_bits(from + done, buf.data(), m, storage);
                if (bad >= 0)
                    throw Error(PG_ERR_NOT_FINITE, "tensor \"" + name + "\" holds " + std::to_string(from[done + bad]) +
                                                       ", beyond the range of " + weight_storage_name(storage) +
                                                       ": save this model in fp32 (or bf16)");
                done += uint64_t(m);
            }
        }
        Xxh64 hash;
        piece_chunks(piece, [&](const void* d, std::size_t n) { hash.update(d, n); });
        t.checksum = hash.digest();
        offset += t.nbytes;
        parts.push_back(piece);
        tensors.push_back(std::move(t));
    };
    const std::vector<TensorEntry>& table = model.tensors();
    for (const ExpectedTensor& x : expected_tensors(model.config(), false, mappable)) {
        const TensorEntry& e = table[std::size_t(x.model_index)];
        const TensorDtype dtype = dtype_of(storage, x);
        const bool convert = dtype != TensorDtype::kF32 && model.storage() == WeightStorage::fp32;
        add(e.name, x.n_dims, x.shape, model.tensor_bytes(e), uint64_t(e.numel), dtype, convert, x.group_start);
    }
    if (state) {
        add(kAdamM, 1, {uint64_t(n_params), 0, 0, 0}, state->adam_m.data(), uint64_t(n_params), TensorDtype::kF32,
            false, true);
        add(kAdamV, 1, {uint64_t(n_params), 0, 0, 0}, state->adam_v.data(), uint64_t(n_params), TensorDtype::kF32,
            false, true);
    }

    // Header: sections GEOM, TOKN (if any), TRAN (if any), OPTM (Muon), PROV, WLAY (mapping
    // layout), TENS, PADD (mapping layout: the data region starts aligned).
    ByteWriter header;
    auto section = [&](const char* tag, uint32_t flags, ByteWriter& payload) {
        header.put_bytes(tag, 4);
        header.put<uint32_t>(flags);
        header.put<uint64_t>(payload.size());
        header.put_bytes(payload.bytes().data(), payload.size());
    };
    ByteWriter geometry;
    encode_geometry(geometry, model.config());
    section(kTagGeometry, kSectionRequired, geometry);
    if (model.tokenizer()) {
        ByteWriter tok;
        std::vector<uint8_t> bytes = model.tokenizer()->serialize();
        tok.put_bytes(bytes.data(), bytes.size());
        section(kTagTokenizer, 0, tok);
    }
    if (state) {
        ByteWriter train;
        encode_train_state(train, *state);
        section(kTagTrainState, 0, train);
        if (state->config.optimizer != PG_OPTIMIZER_ADAMW) {
            // Required: a reader that does not know OPTM would resume a Muon run as AdamW.
            ByteWriter optimizer;
            encode_optimizer(optimizer, state->config);
            section(kTagOptimizer, kSectionRequired, optimizer);
        }
        if (state->config.dropout_ramp_steps > 0) {
            // Required: a reader that does not know DRMP would resume with the full dropout.
            ByteWriter ramp;
            encode_dropout_ramp(ramp, state->config);
            section(kTagDropoutRamp, kSectionRequired, ramp);
        }
    }
    // 1.2 - 1.6 only where they add something: an AdamW (or no) training state without a
    // dropout ramp, in the table's order, is written as 1.1.
    const uint16_t minor = is_quantized(storage)                                ? kCheckpointMinorQuantized
                           : !model.config().is_gpt2()                           ? kCheckpointMinorArchitecture
                           : state && state->config.dropout_ramp_steps > 0        ? kCheckpointMinorDropoutRamp
                           : mappable                                            ? kCheckpointMinorMappable
                           : state && state->config.optimizer != PG_OPTIMIZER_ADAMW ? kCheckpointMinorOptimizer
                                                                                    : kCheckpointMinor;
    ByteWriter provenance;
    encode_provenance(provenance, model.provenance());
    section(kTagProvenance, 0, provenance);
    if (mappable) {
        // Required: a reader that skipped it would expect the table's order and fp32.
        ByteWriter layout;
        layout.put<uint32_t>(uint32_t(storage));
        layout.put<uint32_t>(uint32_t(kCheckpointAlignment));
        layout.put<uint64_t>(model.fp32_weights_hash());
        section(kTagLayout, kSectionRequired, layout);
    }
    ByteWriter table_bytes;
    encode_tensor_table(table_bytes, tensors);
    section(kTagTensors, kSectionRequired, table_bytes);
    if (mappable) {
        const uint64_t used = kCheckpointPreludeBytes + header.size() + 16;
        ByteWriter zeros;
        for (uint64_t i = used; i % kCheckpointAlignment != 0; ++i) zeros.put<uint8_t>(0);
        section(kTagPadding, 0, zeros);
    }
    require(header.size() <= kMaxCheckpointHeaderBytes, PG_ERR_INVALID_ARGUMENT,
            "checkpoint header of " + std::to_string(header.size()) + " bytes exceeds the format's cap");

    auto write_all = [&](int level) {
        std::vector<uint8_t> prelude = build_prelude(level > 0 ? kFlagZstd : 0, header.size(), minor);
        const uint64_t sum = header_checksum(prelude.data(), header.bytes().data(), header.size());
        ByteWriter tail;
        tail.put<uint64_t>(sum);
        sink.write(prelude.data(), prelude.size());
        sink.write(tail.bytes().data(), tail.size());
        sink.write(header.bytes().data(), header.size());
        return write_data_region(parts, offset, level, sink);
    };
    const uint64_t region = write_all(compression_level);
    if (compression_level > 0 && region * kMaxCompressionRatio < offset) {
        // Nearly constant data: readers refuse such expansion ratios (they bound allocations by
        // the file size), so store it raw.
        sink.restart();
        write_all(0);
    }
}

void save_checkpoint(const Model& model, const TrainerState* state, const CheckpointOptions& options,
                     const std::string& path) {
    AtomicFileWriter file(path);
    write_checkpoint(model, state, options, file);
    file.commit();
}

}  // namespace pg::io
