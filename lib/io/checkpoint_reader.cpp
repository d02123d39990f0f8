// The native checkpoint's reader: read_checkpoint_header (everything checked before anything
// is allocated, docs/formats.md section 1.4) and read_checkpoint_data (each tensor read or
// streamed out of the zstd frame into its place and checked against its checksum).
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "io/checkpoint.hpp"
#include "io/checkpoint_sections.hpp"
#include "io/checkpoint_tensors.hpp"
#include "core/checksum.hpp"
#include "io/finite_weights.hpp"
#include "core/hex.hpp"
#include "train/trainer.hpp"

namespace pg::io {

using namespace ckpt;

namespace {

constexpr int kZstdWindowLogMax = 24;      // decoder memory bound (levels 1..19 use <= 23)
constexpr std::size_t kZstdFrameHeaderMax = 18;  // ZSTD_FRAMEHEADERSIZE_MAX (static-only API)
constexpr std::size_t kChunk = std::size_t(1) << 20;

// ---- zstd streaming into tensor destinations --------------------------------------------

struct DctxDeleter {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

class FrameReader {
public:
    // The input buffer is one chunk at most, never more than the compressed bytes, so a small
    // checkpoint does not allocate (and zero) a whole chunk on every load.
    FrameReader(const ByteSource& src, uint64_t begin) : src_(src), file_pos_(begin), in_(chunk_at(begin)) {
        dctx_.reset(ZSTD_createDCtx());
        if (!dctx_) throw std::bad_alloc();
        ZSTD_DCtx_setParameter(dctx_.get(), ZSTD_d_windowLogMax, kZstdWindowLogMax);
    }

    // Fills out[0, n) with the next decompressed bytes.
    void read(uint8_t* out, std::size_t n) {
        ZSTD_outBuffer ob{out, n, 0};
        while (ob.pos < ob.size) {
            if (frame_done_)
                throw Error(PG_ERR_FORMAT, src_.name() + ": the zstd frame ends before the tensor data does");
            step(ob);
        }
    }

    // After the last tensor: the frame must end here and the file with it.
    void finish() {
        uint8_t extra = 0;
        while (!frame_done_) {
            ZSTD_outBuffer ob{&extra, 1, 0};
            step(ob);
            if (ob.pos != 0)
                throw Error(PG_ERR_FORMAT, src_.name() + ": the zstd frame holds more data than the tensor table");
        }
        if (ib_.pos != ib_.size || file_pos_ != src_.size())
            throw Error(PG_ERR_FORMAT, src_.name() + ": unexpected trailing bytes after the zstd frame");
    }

private:
    // How many compressed bytes the next read from `pos` takes: a chunk, or what the file has left.
    std::size_t chunk_at(uint64_t pos) const {
        return pos < src_.size() ? std::size_t(std::min<uint64_t>(kChunk, src_.size() - pos)) : 0;
    }

    void step(ZSTD_outBuffer& ob) {
        if (ib_.pos == ib_.size && file_pos_ < src_.size()) {
            const std::size_t n = chunk_at(file_pos_);
            src_.read_at(file_pos_, in_.data(), n, "zstd data");
            file_pos_ += n;
            ib_ = ZSTD_inBuffer{in_.data(), n, 0};
        }
        const std::size_t in_before = ib_.pos, out_before = ob.pos;
        const std::size_t ret = ZSTD_decompressStream(dctx_.get(), &ob, &ib_);
        if (ZSTD_isError(ret)) {
            const pg_status s = ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong ? PG_ERR_CHECKSUM : PG_ERR_FORMAT;
            throw Error(s, src_.name() + ": bad zstd data: " + ZSTD_getErrorName(ret));
        }
        if (ret == 0) frame_done_ = true;
        if (!frame_done_ && ib_.pos == in_before && ob.pos == out_before && file_pos_ == src_.size() &&
            ib_.pos == ib_.size)
            throw Error(PG_ERR_FORMAT, src_.name() + ": the zstd data is truncated");
    }

    const ByteSource& src_;
    uint64_t file_pos_;
    std::vector<uint8_t> in_;
    ZSTD_inBuffer ib_{nullptr, 0, 0};
    std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx_;
    bool frame_done_ = false;
};


// Weights and moments that passed their checksums may still be a diverged run's: refused.
void require_finite_contents(const Model& model, const TrainerState* state, const std::string& source) {
    require_finite_weights(model, source);
    if (!state) return;
    require_finite_values(state->adam_m.data(), int64_t(state->adam_m.size()), source, "AdamW first moment");
    require_finite_values(state->adam_v.data(), int64_t(state->adam_v.size()), source, "AdamW second moment");
}

}  // namespace

CheckpointHeader read_checkpoint_header(const ByteSource& src) {
    const std::string& name = src.name();
    const uint64_t size = src.size();
    require(size >= 8, PG_ERR_FORMAT,
            name + ": " + std::to_string(size) + " bytes is too short to be a phonegpt checkpoint");
    uint8_t prelude[kCheckpointPreludeBytes];
    src.read_at(0, prelude, 8, "magic");
    if (std::memcmp(prelude, kMagic, 8) != 0) {
        int32_t first;
        std::memcpy(&first, prelude, 4);
        std::string hint = first == 20240326 ? " (this is an llm.c model file: use pg_model_import)" : "";
        throw Error(PG_ERR_FORMAT, name + ": bad magic: not a phonegpt checkpoint" + hint);
    }
    require(size >= kCheckpointPreludeBytes, PG_ERR_FORMAT,
            name + ": truncated inside the 32-byte prelude (" + std::to_string(size) + " bytes)");
    src.read_at(8, prelude + 8, kCheckpointPreludeBytes - 8, "prelude");
    ByteReader pr(prelude + 8, kCheckpointPreludeBytes - 8, name + ": prelude");
    CheckpointHeader h;
    h.major = pr.get<uint16_t>("major");
    h.minor = pr.get<uint16_t>("minor");
    const std::string version = std::to_string(h.major) + "." + std::to_string(h.minor);
    require(h.major != 0, PG_ERR_FORMAT, name + ": format version " + version + " was never written");
    require(h.major <= kCheckpointMajor, PG_ERR_VERSION,
            name + ": checkpoint format version " + version + " is newer than this library reads (majors up to " +
                std::to_string(kCheckpointMajor) + "); use a newer libphonegpt");
    const uint32_t flags = pr.get<uint32_t>("flags");
    require((flags & ~kFlagZstd) == 0, PG_ERR_FORMAT, name + ": unknown prelude flags 0x" + hex64(flags));
    h.compressed = (flags & kFlagZstd) != 0;
    const uint64_t header_bytes = pr.get<uint64_t>("header size");
    const uint64_t stored_sum = pr.get<uint64_t>("header checksum");
    require(header_bytes <= kMaxCheckpointHeaderBytes, PG_ERR_FORMAT,
            name + ": header size " + std::to_string(header_bytes) + " exceeds the cap of " +
                std::to_string(kMaxCheckpointHeaderBytes) + " bytes");
    require(header_bytes <= size - kCheckpointPreludeBytes, PG_ERR_FORMAT,
            name + ": header of " + std::to_string(header_bytes) + " bytes runs past the end of the file (" +
                std::to_string(size) + " bytes): truncated");
    std::vector<uint8_t> header(static_cast<std::size_t>(header_bytes));
    src.read_at(kCheckpointPreludeBytes, header.data(), header.size(), "header");
    const uint64_t sum = header_checksum(prelude, header.data(), header.size());
    require(sum == stored_sum, PG_ERR_CHECKSUM,
            name + ": header checksum mismatch (stored " + hex64(stored_sum) + ", computed " + hex64(sum) +
                "): the file is corrupt");

    // Sections: tag, flags, length, payload. Known ones are decoded below in logical order.
    std::map<std::string, std::pair<const uint8_t*, std::size_t>> known;
    ByteReader hr(header.data(), header.size(), name + ": header");
    while (hr.remaining() > 0) {
        const uint8_t* tag = hr.take(4, "section tag");
        const std::string tag_name = tag_text(tag);
        const uint32_t sflags = hr.get<uint32_t>("section flags");
        const uint64_t len = hr.get<uint64_t>("section length");
        require((sflags & ~kSectionRequired) == 0, PG_ERR_FORMAT,
                name + ": section " + tag_name + " has unknown flags 0x" + hex64(sflags));
        require(len <= hr.remaining(), PG_ERR_FORMAT,
                name + ": section " + tag_name + " of " + std::to_string(len) + " bytes runs past the header's end");
        const uint8_t* payload = hr.take(std::size_t(len), "section payload");
        const bool is_known = tag_name == kTagGeometry || tag_name == kTagTokenizer || tag_name == kTagTrainState ||
                              tag_name == kTagProvenance || tag_name == kTagTensors || tag_name == kTagOptimizer ||
                              tag_name == kTagLayout || tag_name == kTagPadding || tag_name == kTagDropoutRamp;
        if (!is_known) {
            require((sflags & kSectionRequired) == 0, PG_ERR_VERSION,
                    name + ": section " + tag_name + " is marked required but this library (format " +
                        std::to_string(kCheckpointMajor) + "." + std::to_string(kCheckpointMinorNewest) +
                        ") does not know it; use a newer libphonegpt");
            h.skipped_sections.push_back(tag_name);
            continue;
        }
        require(known.count(tag_name) == 0, PG_ERR_FORMAT, name + ": section " + tag_name + " appears twice");
        known[tag_name] = {payload, std::size_t(len)};
    }
    require(known.count(kTagGeometry) == 1, PG_ERR_FORMAT, name + ": the header has no GEOM section");
    require(known.count(kTagTensors) == 1, PG_ERR_FORMAT, name + ": the header has no TENS section");

    {
        auto [p, n] = known[kTagGeometry];
        ByteReader r(p, n, name + ": section GEOM");
        h.config = decode_geometry(r);
    }
    if (known.count(kTagTokenizer)) {
        auto [p, n] = known[kTagTokenizer];
        try {
            h.tokenizer = deserialize_tokenizer(p, n);
        } catch (const Error& e) {
            throw Error(e.status(), name + ": section TOKN: " + e.what());
        }
        require(h.tokenizer->vocab_size() == h.config.vocab_size, PG_ERR_GEOMETRY,
                name + ": the tokenizer has " + std::to_string(h.tokenizer->vocab_size()) +
                    " tokens but the geometry says vocab_size " + std::to_string(h.config.vocab_size));
    }
    if (known.count(kTagTrainState)) {
        auto [p, n] = known[kTagTrainState];
        ByteReader r(p, n, name + ": section TRAN");
        h.train_state = decode_train_state(r);
        h.has_train_state = true;
        if (known.count(kTagOptimizer)) {
            auto [op, on] = known[kTagOptimizer];
            ByteReader optimizer(op, on, name + ": section OPTM");
            decode_optimizer(optimizer, h.train_state.config);
        }
        if (known.count(kTagDropoutRamp)) {
            auto [dp, dn] = known[kTagDropoutRamp];
            ByteReader ramp(dp, dn, name + ": section DRMP");
            decode_dropout_ramp(ramp, h.train_state.config);
        }
        // Its values, and the resources they demand (batch tokens, threads), against the
        // trainer's stated limits before anything is allocated for the model or the run.
        try {
            resolve_train_config(h.config, h.train_state.config);
        } catch (const Error& e) {
            throw Error(PG_ERR_FORMAT, name + ": training state (section TRAN): " + e.what());
        }
    }
    // The sections that extend TRAN's configuration mean nothing without it.
    for (const char* extension : {kTagOptimizer, kTagDropoutRamp})
        require(known.count(extension) == 0 || h.has_train_state, PG_ERR_FORMAT,
                name + ": section " + extension + " without a training state (TRAN)");
    if (known.count(kTagProvenance)) {
        auto [p, n] = known[kTagProvenance];
        ByteReader r(p, n, name + ": section PROV");
        h.provenance = decode_provenance(r);
    }
    if (known.count(kTagLayout)) {
        auto [p, n] = known[kTagLayout];
        ByteReader r(p, n, name + ": section WLAY");
        const uint32_t storage = r.get<uint32_t>("storage");
        const uint32_t alignment = r.get<uint32_t>("alignment");
        h.fp32_weights_hash = r.get<uint64_t>("fp32 weights hash");
        r.expect_end();
        const bool quantized = storage == uint32_t(WeightStorage::q8_0) || storage == uint32_t(WeightStorage::q4_0);
        require(storage <= uint32_t(WeightStorage::bf16) || quantized, PG_ERR_FORMAT,
                r.context() + ": unknown weight storage " + std::to_string(storage) +
                    " (0 fp32, 1 fp16, 2 bf16, 5 q8_0, 6 q4_0)");
        require(!quantized || h.minor >= kCheckpointMinorQuantized, PG_ERR_FORMAT,
                r.context() + ": weight storage " + std::to_string(storage) + " in a format " + version +
                    " file (the quantized storages are format 1." + std::to_string(kCheckpointMinorQuantized) + ")");
        require(alignment == kCheckpointAlignment, PG_ERR_FORMAT,
                r.context() + ": alignment " + std::to_string(alignment) + " (the format's is " +
                    std::to_string(kCheckpointAlignment) + ")");
        h.mappable = true;
        h.storage = WeightStorage(storage);
        require(h.storage == WeightStorage::fp32 || !h.has_train_state, PG_ERR_FORMAT,
                r.context() + ": a training state with " + weight_storage_name(h.storage) +
                    " weights (training needs fp32 weights)");
    }
    if (known.count(kTagPadding)) {
        auto [p, n] = known[kTagPadding];
        require(h.mappable, PG_ERR_FORMAT, name + ": a PADD section without the mapping layout (WLAY)");
        for (std::size_t i = 0; i < n; ++i)
            require(p[i] == 0, PG_ERR_FORMAT, name + ": section PADD holds a non-zero byte");
    }
    {
        auto [p, n] = known[kTagTensors];
        ByteReader r(p, n, name + ": section TENS");
        h.tensors = decode_tensor_table(r, h.mappable);
    }
    try {
        h.model_index = check_tensors_against_geometry(h.tensors, h.config, h.has_train_state, h.mappable, h.storage);
    } catch (const Error& e) {
        throw Error(e.status(), name + ": " + e.what());
    }
    h.data_start = kCheckpointPreludeBytes + header_bytes;
    require(!h.mappable || h.data_start % kCheckpointAlignment == 0, PG_ERR_FORMAT,
            name + ": the data region starts at byte " + std::to_string(h.data_start) + ", not on a " +
                std::to_string(kCheckpointAlignment) + "-byte boundary as the mapping layout needs");
    h.data_bytes = h.tensors.empty() ? 0 : h.tensors.back().offset + h.tensors.back().nbytes;

    // The data region: raw, it must be exactly the tensors (nothing missing, nothing after);
    // compressed, its expansion is bounded so allocations stay bounded by the file's size.
    const uint64_t region = size - h.data_start;
    if (!h.compressed) {
        require(region >= h.data_bytes, PG_ERR_FORMAT,
                name + ": truncated: the tensors need " + std::to_string(h.data_bytes) + " bytes of data, the file has " +
                    std::to_string(region));
        require(region == h.data_bytes, PG_ERR_FORMAT,
                name + ": " + std::to_string(region - h.data_bytes) + " unexpected trailing bytes after the tensor data");
    } else {
        require(region > 0, PG_ERR_FORMAT, name + ": truncated: the zstd data region is empty");
        require(h.data_bytes <= region * kMaxCompressionRatio, PG_ERR_FORMAT,
                name + ": " + std::to_string(region) + " bytes of zstd data cannot hold the " +
                    std::to_string(h.data_bytes) + " bytes the tensor table declares (ratio cap " +
                    std::to_string(kMaxCompressionRatio) + "): truncated or corrupt");
        uint8_t frame_head[kZstdFrameHeaderMax];
        const std::size_t n = std::size_t(std::min<uint64_t>(region, sizeof frame_head));
        src.read_at(h.data_start, frame_head, n, "zstd frame header");
        const unsigned long long content = ZSTD_getFrameContentSize(frame_head, n);
        require(content != ZSTD_CONTENTSIZE_ERROR, PG_ERR_FORMAT, name + ": the data region is not a zstd frame");
        require(content != ZSTD_CONTENTSIZE_UNKNOWN, PG_ERR_FORMAT,
                name + ": the zstd frame does not declare its size (or is truncated)");
        require(content == h.data_bytes, PG_ERR_FORMAT,
                name + ": the zstd frame holds " + std::to_string(content) + " bytes, the tensor table " +
                    std::to_string(h.data_bytes));
    }
    return h;
}

void read_checkpoint_data(const ByteSource& src, const CheckpointHeader& h, Model& model, TrainerState* state) {
    const ModelConfig& mc = model.config();
    require(mc.n_layer == h.config.n_layer && mc.n_head == h.config.n_head && mc.n_embd == h.config.n_embd &&
                mc.n_ctx == h.config.n_ctx && mc.vocab_size == h.config.vocab_size &&
                mc.padded_vocab_size == h.config.padded_vocab_size && model.storage() == h.storage,
            PG_ERR_INTERNAL, "read_checkpoint_data: the model's geometry or storage differs from the header's");
    if (state) {
        require(h.has_train_state, PG_ERR_STATE,
                src.name() + ": the checkpoint holds no training state (it was saved with pg_model_save)");
        *state = h.train_state;
        state->adam_m.assign(std::size_t(model.num_params()), 0.0f);
        state->adam_v.assign(std::size_t(model.num_params()), 0.0f);
    }
    model.set_provenance(h.provenance);
    // Where each tensor goes (null: not wanted, read only to verify).
    std::vector<uint8_t*> dst(h.tensors.size(), nullptr);
    const auto& table = model.tensors();
    for (std::size_t i = 0; i < h.tensors.size(); ++i) {
        const int at = h.model_index[i];
        if (at >= 0)
            dst[i] = model.tensor_bytes(table[std::size_t(at)]);
        else if (state)
            dst[i] = reinterpret_cast<uint8_t*>(at == -1 ? state->adam_m.data() : state->adam_v.data());
    }
    // The mapping layout names the fp32 weights' hash (the base's identity): an fp32 file's
    // must be its weights'.
    auto check_identity = [&] {
        if (h.mappable && h.storage == WeightStorage::fp32)
            require_fp32_weights_hash(src.name(), model.fp32_weights_hash(), h);
    };
    auto verify = [&](const CheckpointTensor& t, uint64_t sum) { require_tensor_checksum(src.name(), t, sum); };
    if (!h.compressed) {
        for (std::size_t i = 0; i < h.tensors.size(); ++i) {
            const CheckpointTensor& t = h.tensors[i];
            if (!dst[i]) continue;  // raw: unwanted tensors are simply not read
            src.read_at(h.data_start + t.offset, dst[i], std::size_t(t.nbytes), "tensor data");
            verify(t, xxh64(dst[i], std::size_t(t.nbytes)));
        }
        check_identity();
        require_finite_contents(model, state, src.name());
        return;
    }
    FrameReader frame(src, h.data_start);
    std::vector<uint8_t> scratch;
    uint64_t at = 0;  // position in the decompressed region (the mapping layout has gaps)
    for (std::size_t i = 0; i < h.tensors.size(); ++i) {
        const CheckpointTensor& t = h.tensors[i];
        if (t.offset > at) {
            uint8_t gap[kCheckpointAlignment];
            frame.read(gap, std::size_t(t.offset - at));
        }
        at = t.offset + t.nbytes;
        if (dst[i]) {
            frame.read(dst[i], std::size_t(t.nbytes));
            verify(t, xxh64(dst[i], std::size_t(t.nbytes)));
            continue;
        }
        scratch.resize(std::size_t(std::min<uint64_t>(kChunk, t.nbytes)));
        Xxh64 hash;
        for (uint64_t done = 0; done < t.nbytes;) {
            const std::size_t n = std::size_t(std::min<uint64_t>(kChunk, t.nbytes - done));
            frame.read(scratch.data(), n);
            hash.update(scratch.data(), n);
            done += n;
        }
        verify(t, hash.digest());
    }
    frame.finish();
    check_identity();
    require_finite_contents(model, state, src.name());
}

Model make_model_for(const CheckpointHeader& h) { return Model(h.config, h.storage, h.fp32_weights_hash); }

}  // namespace pg::io
