#include "io/checkpoint.hpp"

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "io/bytes.hpp"
#include "io/checksum.hpp"
#include "io/finite_weights.hpp"
#include "train/trainer.hpp"

namespace pg::io {

namespace {

constexpr uint8_t kMagic[8] = {0x89, 'P', 'G', 'C', 'K', '\r', '\n', 0x1A};
constexpr uint32_t kFlagZstd = 1u;         // prelude flags: the data region is one zstd frame
constexpr uint32_t kSectionRequired = 1u;  // section flags: readers that do not know it must refuse
constexpr int kZstdWindowLogMax = 24;      // decoder memory bound (levels 1..19 use <= 23)
constexpr std::size_t kZstdFrameHeaderMax = 18;  // ZSTD_FRAMEHEADERSIZE_MAX (static-only API)
constexpr std::size_t kChunk = std::size_t(1) << 20;

// Section tags: 4 ASCII bytes, stored in this byte order.
constexpr char kTagGeometry[5] = "GEOM";
constexpr char kTagTokenizer[5] = "TOKN";
constexpr char kTagTrainState[5] = "TRAN";
constexpr char kTagTensors[5] = "TENS";
constexpr char kTagProvenance[5] = "PROV";
constexpr char kTagOptimizer[5] = "OPTM";
constexpr char kTagLayout[5] = "WLAY";
constexpr char kTagPadding[5] = "PADD";

const char* kAdamM = "optimizer.adam_m";
const char* kAdamV = "optimizer.adam_v";

std::string tag_text(const uint8_t* tag) {
    std::string s;
    for (int i = 0; i < 4; ++i) {
        unsigned char c = tag[i];
        if (c >= 0x20 && c < 0x7F) {
            s += char(c);
        } else {
            s += "\\x";
            s += "0123456789abcdef"[c >> 4];
            s += "0123456789abcdef"[c & 15];
        }
    }
    return s;
}

std::string hex64(uint64_t v) {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

// The tensors a file of this geometry must hold, in file order: the model's table, then the two
// AdamW moments when it carries training state.
struct ExpectedTensor {
    std::string name;
    int n_dims;
    std::array<uint64_t, 4> shape;
    int model_index;   // in build_tensor_table's order; -1 / -2 for the moments
    bool half;         // 16 bits in a 16-bit file
    bool group_start;  // mapping layout: the first tensor of its kind (or a moment), aligned
};

uint64_t round_up_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// The table's order (1.0 - 1.2 and the default), or llm.c's order (the mapping layout: every
// kind's tensors contiguous, so a mapped kind is one array as the engine reads it).
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& cfg, bool with_moments, bool mappable = false) {
    std::vector<ExpectedTensor> out;
    const std::vector<TensorEntry> table = build_tensor_table(cfg);
    std::vector<int> order(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) order[i] = int(i);
    if (mappable)
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return table[a].offset < table[b].offset; });
    for (std::size_t j = 0; j < order.size(); ++j) {
        const TensorEntry& e = table[std::size_t(order[j])];
        ExpectedTensor t{e.name, e.n_dims, {}, order[j], held_in_16_bits(e.kind),
                         j == 0 || table[std::size_t(order[j - 1])].kind != e.kind};
        for (int d = 0; d < e.n_dims; ++d) t.shape[d] = uint64_t(e.shape[d]);
        out.push_back(std::move(t));
    }
    if (with_moments) {
        const uint64_t n = uint64_t(count_params(cfg));
        out.push_back({kAdamM, 1, {n, 0, 0, 0}, -1, false, true});
        out.push_back({kAdamV, 1, {n, 0, 0, 0}, -2, false, true});
    }
    return out;
}

int dtype_bytes(TensorDtype d) { return d == TensorDtype::kF32 ? 4 : 2; }

TensorDtype dtype_of(WeightStorage storage, bool half) {
    if (!half || storage == WeightStorage::fp32) return TensorDtype::kF32;
    return storage == WeightStorage::fp16 ? TensorDtype::kF16 : TensorDtype::kBF16;
}

std::string shape_text(int n_dims, const std::array<uint64_t, 4>& shape) {
    std::string s = "[";
    for (int d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "]";
}

// ---- sections ------------------------------------------------------------------------------

void encode_geometry(ByteWriter& w, const ModelConfig& c) {
    w.put<int32_t>(c.n_layer);
    w.put<int32_t>(c.n_head);
    w.put<int32_t>(c.n_embd);
    w.put<int32_t>(c.n_ctx);
    w.put<int32_t>(c.vocab_size);
    w.put<int32_t>(c.padded_vocab_size);
    w.put<float>(c.layernorm_eps);
}

ModelConfig decode_geometry(ByteReader& r) {
    ModelConfig c;
    c.n_layer = r.get<int32_t>("n_layer");
    c.n_head = r.get<int32_t>("n_head");
    c.n_embd = r.get<int32_t>("n_embd");
    c.n_ctx = r.get<int32_t>("n_ctx");
    c.vocab_size = r.get<int32_t>("vocab_size");
    c.padded_vocab_size = r.get<int32_t>("padded_vocab_size");
    c.layernorm_eps = r.get<float>("layernorm_eps");
    r.expect_end();
    try {
        validate_model_config(c);
    } catch (const Error& e) {
        throw Error(PG_ERR_GEOMETRY, r.context() + ": " + e.what());
    }
    return c;
}

}  // namespace

void encode_train_state(ByteWriter& w, const TrainerState& s) {
    const TrainConfig& c = s.config;
    w.put<int64_t>(s.step);
    w.put<uint64_t>(s.micro_batches);
    for (uint64_t word : s.sampler_rng) w.put<uint64_t>(word);
    w.put<int32_t>(c.batch_size);
    w.put<int32_t>(c.seq_len);
    w.put<int32_t>(c.grad_accum_steps);
    w.put<int32_t>(int32_t(c.schedule));
    w.put<float>(c.lr_max);
    w.put<float>(c.lr_min);
    w.put<int32_t>(c.warmup_steps);
    w.put<int64_t>(c.total_steps);
    w.put<float>(c.beta1);
    w.put<float>(c.beta2);
    w.put<float>(c.eps);
    w.put<float>(c.weight_decay);
    w.put<int32_t>(c.decay_embeddings ? 1 : 0);
    w.put<float>(c.grad_clip);
    w.put<float>(c.dropout);
    w.put<uint64_t>(c.seed);
    w.put<int32_t>(c.n_threads);
}

namespace {

void encode_provenance(ByteWriter& w, const Provenance& p) {
    w.put<uint32_t>(uint32_t(p.kind));
    w.put<uint32_t>(p.has_init_seed ? 1u : 0u);
    w.put<uint64_t>(p.init_seed);
    w.put<int64_t>(p.steps);
    w.put<int64_t>(p.tokens);
}

Provenance decode_provenance(ByteReader& r) {
    Provenance p;
    const uint32_t kind = r.get<uint32_t>("kind");
    const uint32_t flags = r.get<uint32_t>("flags");
    p.init_seed = r.get<uint64_t>("init_seed");
    p.steps = r.get<int64_t>("steps");
    p.tokens = r.get<int64_t>("tokens");
    r.expect_end();
    require(kind <= uint32_t(Provenance::Kind::trained), PG_ERR_FORMAT,
            r.context() + ": unknown provenance kind " + std::to_string(kind));
    require(flags <= 1u, PG_ERR_FORMAT, r.context() + ": unknown flags 0x" + hex64(flags));
    p.kind = Provenance::Kind(kind);
    p.has_init_seed = flags == 1u;
    require(p.steps >= 0 && p.tokens >= 0, PG_ERR_FORMAT,
            r.context() + ": negative steps (" + std::to_string(p.steps) + ") or tokens (" +
                std::to_string(p.tokens) + ")");
    // A never-trained model has no steps; a trained one has at least one.
    require(p.kind != Provenance::Kind::initialised || (p.steps == 0 && p.tokens == 0), PG_ERR_FORMAT,
            r.context() + ": a model initialised and never trained cannot have " + std::to_string(p.steps) +
                " steps");
    require(p.kind != Provenance::Kind::trained || p.steps >= 1, PG_ERR_FORMAT,
            r.context() + ": a trained model with 0 steps");
    return p;
}

}  // namespace

// Structural checks only; the trainer validates the configuration's values when it resumes.
TrainerState decode_train_state(ByteReader& r) {
    TrainerState s;
    TrainConfig& c = s.config;
    s.step = r.get<int64_t>("step");
    s.micro_batches = r.get<uint64_t>("micro_batches");
    for (uint64_t& word : s.sampler_rng) word = r.get<uint64_t>("sampler_rng");
    c.batch_size = r.get<int32_t>("batch_size");
    c.seq_len = r.get<int32_t>("seq_len");
    c.grad_accum_steps = r.get<int32_t>("grad_accum_steps");
    int32_t schedule = r.get<int32_t>("schedule");
    c.lr_max = r.get<float>("lr_max");
    c.lr_min = r.get<float>("lr_min");
    c.warmup_steps = r.get<int32_t>("warmup_steps");
    c.total_steps = r.get<int64_t>("total_steps");
    c.beta1 = r.get<float>("beta1");
    c.beta2 = r.get<float>("beta2");
    c.eps = r.get<float>("eps");
    c.weight_decay = r.get<float>("weight_decay");
    int32_t decay_embeddings = r.get<int32_t>("decay_embeddings");
    c.grad_clip = r.get<float>("grad_clip");
    c.dropout = r.get<float>("dropout");
    c.seed = r.get<uint64_t>("seed");
    c.n_threads = r.get<int32_t>("n_threads");
    r.expect_end();
    require(s.step >= 0, PG_ERR_FORMAT, r.context() + ": step " + std::to_string(s.step) + " is negative");
    require(schedule >= PG_LR_CONSTANT && schedule <= PG_LR_LINEAR, PG_ERR_FORMAT,
            r.context() + ": unknown learning-rate schedule " + std::to_string(schedule));
    c.schedule = pg_lr_schedule(schedule);
    require(decay_embeddings == 0 || decay_embeddings == 1, PG_ERR_FORMAT,
            r.context() + ": decay_embeddings must be 0 or 1, not " + std::to_string(decay_embeddings));
    c.decay_embeddings = decay_embeddings == 1;
    require(s.sampler_rng[0] | s.sampler_rng[1] | s.sampler_rng[2] | s.sampler_rng[3], PG_ERR_FORMAT,
            r.context() + ": sampler_rng state is all zero (xoshiro256** cannot leave that state)");
    return s;
}

namespace {

// OPTM: the optimizer settings other than AdamW's (TRAN keeps its 1.1 layout).
void encode_optimizer(ByteWriter& w, const TrainConfig& c) {
    w.put<int32_t>(int32_t(c.optimizer));
    w.put<float>(c.muon_momentum);
    w.put<float>(c.muon_lr_scale);
}

void decode_optimizer(ByteReader& r, TrainConfig& c) {
    const int32_t optimizer = r.get<int32_t>("optimizer");
    c.muon_momentum = r.get<float>("muon_momentum");
    c.muon_lr_scale = r.get<float>("muon_lr_scale");
    r.expect_end();
    require(optimizer == PG_OPTIMIZER_MUON, PG_ERR_FORMAT,
            r.context() + ": optimizer " + std::to_string(optimizer) + " is not Muon (1), the only one OPTM holds");
    c.optimizer = PG_OPTIMIZER_MUON;
}

void encode_tensor_table(ByteWriter& w, const std::vector<CheckpointTensor>& tensors) {
    w.put<uint32_t>(uint32_t(tensors.size()));
    for (const CheckpointTensor& t : tensors) {
        w.put<uint16_t>(uint16_t(t.name.size()));
        w.put_bytes(t.name.data(), t.name.size());
        w.put<uint8_t>(uint8_t(t.dtype));
        w.put<uint8_t>(uint8_t(t.n_dims));
        for (int d = 0; d < t.n_dims; ++d) w.put<uint64_t>(t.shape[d]);
        w.put<uint64_t>(t.offset);
        w.put<uint64_t>(t.nbytes);
        w.put<uint64_t>(t.checksum);
    }
}

// Parses the table and checks it is well formed on its own: dtypes, shapes, sizes = shape x
// dtype, offsets contiguous from 0 (hence in order, without gaps or overlap).
// The mapping layout also allows the 16-bit dtypes and alignment gaps (under
// kCheckpointAlignment bytes; check_tensors_against_geometry checks where they are).
std::vector<CheckpointTensor> decode_tensor_table(ByteReader& r, bool mappable) {
    const uint32_t count = r.get<uint32_t>("tensor count");
    // Each entry takes at least 38 bytes, so the count is bounded by the section size.
    require(uint64_t(count) * 38 <= r.remaining(), PG_ERR_FORMAT,
            r.context() + ": tensor count " + std::to_string(count) + " does not fit in the section");
    std::vector<CheckpointTensor> tensors(count);
    uint64_t next_offset = 0;
    for (uint32_t i = 0; i < count; ++i) {
        CheckpointTensor& t = tensors[i];
        const std::string where = r.context() + ": tensor " + std::to_string(i);
        const uint16_t name_len = r.get<uint16_t>("name length");
        require(name_len >= 1 && name_len <= 255, PG_ERR_FORMAT,
                where + ": name length " + std::to_string(name_len) + " is outside [1, 255]");
        const uint8_t* name = r.take(name_len, "name");
        for (uint16_t k = 0; k < name_len; ++k)
            require(name[k] >= 0x21 && name[k] < 0x7F, PG_ERR_FORMAT, where + ": name has a non-printable byte");
        t.name.assign(reinterpret_cast<const char*>(name), name_len);
        const std::string what = where + " (\"" + t.name + "\")";
        const uint8_t dtype = r.get<uint8_t>("dtype");
        if (mappable)
            require(dtype >= uint8_t(TensorDtype::kF32) && dtype <= uint8_t(TensorDtype::kBF16), PG_ERR_FORMAT,
                    what + ": unknown dtype code " + std::to_string(dtype) + " (1 = f32, 2 = f16, 3 = bf16)");
        else
            require(dtype == uint8_t(TensorDtype::kF32), PG_ERR_FORMAT,
                    what + ": unknown dtype code " + std::to_string(dtype) +
                        " (1 = f32 is the only one without the mapping layout)");
        t.dtype = TensorDtype(dtype);
        t.n_dims = r.get<uint8_t>("n_dims");
        require(t.n_dims >= 1 && t.n_dims <= 4, PG_ERR_FORMAT,
                what + ": n_dims " + std::to_string(t.n_dims) + " is outside [1, 4]");
        uint64_t numel = 1;
        for (int d = 0; d < t.n_dims; ++d) {
            t.shape[d] = r.get<uint64_t>("shape");
            require(t.shape[d] >= 1, PG_ERR_FORMAT, what + ": dimension " + std::to_string(d) + " is 0");
            numel = checked_mul(numel, t.shape[d], what + " shape");
        }
        t.offset = r.get<uint64_t>("offset");
        t.nbytes = r.get<uint64_t>("nbytes");
        t.checksum = r.get<uint64_t>("checksum");
        const int width = dtype_bytes(t.dtype);
        const uint64_t expect_bytes = checked_mul(numel, uint64_t(width), what + " shape");
        require(t.nbytes == expect_bytes, PG_ERR_FORMAT,
                what + ": nbytes " + std::to_string(t.nbytes) + " != shape " + shape_text(t.n_dims, t.shape) +
                    " x " + std::to_string(width) + " bytes = " + std::to_string(expect_bytes));
        const bool aligned_gap = mappable && t.offset >= next_offset && t.offset - next_offset < kCheckpointAlignment;
        if (t.offset != next_offset && !aligned_gap)
            throw Error(PG_ERR_FORMAT, what + ": offset " + std::to_string(t.offset) +
                                           (t.offset < next_offset ? " overlaps the previous tensor" : " leaves a gap") +
                                           " (tensors must be contiguous; expected " + std::to_string(next_offset) + ")");
        next_offset = checked_add(t.offset, t.nbytes, what + " end");  // t.offset == next_offset but for an aligned gap
    }
    r.expect_end();
    return tensors;
}

// The geometry decides which tensors exist and their shapes; the table must say the same.
// Returns each file tensor's model_index. The mapping layout: llm.c's order, the dtypes of
// `storage`, and each group's first tensor exactly on the next aligned offset, the others
// right after the previous one.
std::vector<int> check_tensors_against_geometry(const std::vector<CheckpointTensor>& tensors, const ModelConfig& cfg,
                                                bool with_moments, bool mappable, WeightStorage storage) {
    const std::vector<ExpectedTensor> expected = expected_tensors(cfg, with_moments, mappable);
    const std::string geometry = "geometry (n_layer " + std::to_string(cfg.n_layer) + ", n_embd " +
                                 std::to_string(cfg.n_embd) + ", n_ctx " + std::to_string(cfg.n_ctx) +
                                 ", padded_vocab_size " + std::to_string(cfg.padded_vocab_size) + ")";
    const std::size_t n = std::min(tensors.size(), expected.size());
    for (std::size_t i = 0; i < n; ++i) {
        const CheckpointTensor& t = tensors[i];
        const ExpectedTensor& e = expected[i];
        if (t.name != e.name)
            throw Error(PG_ERR_GEOMETRY, "checkpoint tensor " + std::to_string(i) + " is \"" + t.name +
                                             "\" but the " + geometry + " needs \"" + e.name + "\" there");
        if (t.n_dims != e.n_dims || t.shape != e.shape)
            throw Error(PG_ERR_GEOMETRY, "checkpoint tensor \"" + t.name + "\" has shape " +
                                             shape_text(t.n_dims, t.shape) + " but the " + geometry +
                                             " needs " + shape_text(e.n_dims, e.shape));
        if (!mappable) continue;
        const TensorDtype dtype = dtype_of(storage, e.half);
        require(t.dtype == dtype, PG_ERR_FORMAT,
                "checkpoint tensor \"" + t.name + "\" has dtype " + std::to_string(int(t.dtype)) + " but the file's " +
                    weight_storage_name(storage) + " storage (section WLAY) needs " + std::to_string(int(dtype)));
        const uint64_t prev_end = i == 0 ? 0 : tensors[i - 1].offset + tensors[i - 1].nbytes;
        const uint64_t at = e.group_start ? round_up_to(prev_end, kCheckpointAlignment) : prev_end;
        require(t.offset == at, PG_ERR_FORMAT,
                "checkpoint tensor \"" + t.name + "\" starts at " + std::to_string(t.offset) + " of the data region; the " +
                    "mapping layout puts it at " + std::to_string(at) +
                    (e.group_start ? " (its kind's first tensor, on a 64-byte boundary)" : " (right after the previous one)"));
    }
    if (tensors.size() != expected.size())
        throw Error(PG_ERR_GEOMETRY, "checkpoint has " + std::to_string(tensors.size()) + " tensors but the " +
                                         geometry + (with_moments ? " with training state" : "") + " needs " +
                                         std::to_string(expected.size()));
    std::vector<int> index;
    for (const ExpectedTensor& e : expected) index.push_back(e.model_index);
    return index;
}

std::vector<uint8_t> build_prelude(uint32_t flags, uint64_t header_bytes, uint16_t minor) {
    ByteWriter w;
    w.put_bytes(kMagic, 8);
    w.put<uint16_t>(kCheckpointMajor);
    w.put<uint16_t>(minor);
    w.put<uint32_t>(flags);
    w.put<uint64_t>(header_bytes);
    return std::move(w.bytes());
}

uint64_t header_checksum(const uint8_t* prelude24, const uint8_t* header, std::size_t header_bytes) {
    Xxh64 h;
    h.update(prelude24, 24);
    h.update(header, header_bytes);
    return h.digest();
}

// ---- zstd streaming into tensor destinations --------------------------------------------

struct DctxDeleter {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
struct CctxDeleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

class FrameReader {
public:
    FrameReader(const ByteSource& src, uint64_t begin) : src_(src), file_pos_(begin), in_(kChunk) {
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
    void step(ZSTD_outBuffer& ob) {
        if (ib_.pos == ib_.size && file_pos_ < src_.size()) {
            std::size_t n = std::size_t(std::min<uint64_t>(kChunk, src_.size() - file_pos_));
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

// ---- writing -----------------------------------------------------------------------------

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
    // fp16 arithmetic is how a model multiplies, not a file format: its values save as fp16.
    const WeightStorage storage = stored_values(options.storage.value_or(model.storage()));
    require(storage == WeightStorage::fp32 || storage == WeightStorage::fp16 || storage == WeightStorage::bf16,
            PG_ERR_INVALID_ARGUMENT, "weight storage must be fp32, fp16 or bf16");
    require(model.storage() == WeightStorage::fp32 || storage == stored_values(model.storage()), PG_ERR_STATE,
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
        t.nbytes = numel * uint64_t(dtype_bytes(dtype));
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
        const TensorDtype dtype = dtype_of(storage, x.half);
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
    }
    // 1.2 / 1.3 only where they add something: an AdamW (or no) training state in the table's
    // order is written as 1.1.
    const uint16_t minor = mappable ? kCheckpointMinorMappable
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

// ---- reading -----------------------------------------------------------------------------

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
                              tag_name == kTagLayout || tag_name == kTagPadding;
        if (!is_known) {
            require((sflags & kSectionRequired) == 0, PG_ERR_VERSION,
                    name + ": section " + tag_name + " is marked required but this library (format " +
                        std::to_string(kCheckpointMajor) + "." + std::to_string(kCheckpointMinor) +
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
        // Its values, and the resources they demand (batch tokens, threads), against the
        // trainer's stated limits before anything is allocated for the model or the run.
        try {
            resolve_train_config(h.config, h.train_state.config);
        } catch (const Error& e) {
            throw Error(PG_ERR_FORMAT, name + ": training state (section TRAN): " + e.what());
        }
    }
    require(known.count(kTagOptimizer) == 0 || h.has_train_state, PG_ERR_FORMAT,
            name + ": an OPTM section without a training state (TRAN)");
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
        require(storage <= uint32_t(WeightStorage::bf16), PG_ERR_FORMAT,
                r.context() + ": unknown weight storage " + std::to_string(storage) + " (0 fp32, 1 fp16, 2 bf16)");
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
            name + ": the data region starts at byte " + std::to_string(h.data_start) + ", which the mapping layout " +
                "puts on a " + std::to_string(kCheckpointAlignment) + "-byte boundary");
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

namespace {

// Weights and moments that passed their checksums may still be a diverged run's: refused.
void require_finite_contents(const Model& model, const TrainerState* state, const std::string& source) {
    require_finite_weights(model, source);
    if (!state) return;
    require_finite_values(state->adam_m.data(), int64_t(state->adam_m.size()), source, "AdamW first moment");
    require_finite_values(state->adam_v.data(), int64_t(state->adam_v.size()), source, "AdamW second moment");
}

}  // namespace

void read_checkpoint_data(const ByteSource& src, const CheckpointHeader& h, Model& model, TrainerState* state) {
    const ModelConfig& mc = model.config();
    require(mc.n_layer == h.config.n_layer && mc.n_head == h.config.n_head && mc.n_embd == h.config.n_embd &&
                mc.n_ctx == h.config.n_ctx && mc.vocab_size == h.config.vocab_size &&
                mc.padded_vocab_size == h.config.padded_vocab_size && stored_values(model.storage()) == h.storage,
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
        if (!h.mappable || h.storage != WeightStorage::fp32) return;
        const uint64_t sum = model.fp32_weights_hash();
        require(sum == h.fp32_weights_hash, PG_ERR_CHECKSUM,
                src.name() + ": the weights' hash " + hex64(sum) + " differs from the one section WLAY records (" +
                    hex64(h.fp32_weights_hash) + "): the file is corrupt");
    };
    auto verify = [&](const CheckpointTensor& t, uint64_t sum) {
        require(sum == t.checksum, PG_ERR_CHECKSUM,
                src.name() + ": tensor \"" + t.name + "\" checksum mismatch (stored " + hex64(t.checksum) +
                    ", computed " + hex64(sum) + "): the file is corrupt");
    };
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
        scratch.resize(kChunk);
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

Model map_checkpoint(std::shared_ptr<const MappedFile> file, const CheckpointHeader& h) {
    const std::string& name = file->name();
    const std::string version = std::to_string(h.major) + "." + std::to_string(h.minor);
    require(!h.compressed, PG_ERR_UNSUPPORTED,
            name + ": the weights are zstd-compressed, so they cannot be mapped: save the model raw (compression_level "
                   "0) with align_for_mapping = 1 or a 16-bit weight_storage, or load it without map_weights");
    require(h.mappable, PG_ERR_UNSUPPORTED,
            name + ": a format " + version + " file without the mapping layout (section WLAY, format 1.3) cannot be "
                   "mapped: save it again with pg_save_options.align_for_mapping = 1 (or a 16-bit weight_storage), "
                   "or load it without map_weights");
    const uint8_t* region = file->data() + h.data_start;
    const ParamLayout layout(h.config);
    const std::vector<TensorEntry> table = build_tensor_table(h.config);
    std::array<const uint8_t*, kNumParamKinds> kinds{};
    for (std::size_t i = 0; i < h.tensors.size(); ++i) {
        const int at = h.model_index[i];
        if (at < 0) continue;  // the moments are not the model's
        const CheckpointTensor& t = h.tensors[i];
        const uint64_t sum = xxh64(region + t.offset, std::size_t(t.nbytes));
        require(sum == t.checksum, PG_ERR_CHECKSUM,
                name + ": tensor \"" + t.name + "\" checksum mismatch (stored " + hex64(t.checksum) + ", computed " +
                    hex64(sum) + "): the file is corrupt");
        const TensorEntry& e = table[std::size_t(at)];
        if (e.offset == layout.offset[std::size_t(e.kind)]) kinds[std::size_t(e.kind)] = region + t.offset;
    }
    for (const uint8_t* p : kinds)
        require(p && reinterpret_cast<uintptr_t>(p) % kCheckpointAlignment == 0, PG_ERR_INTERNAL,
                name + ": a mapped kind is missing or misaligned");
    if (h.storage == WeightStorage::fp32) {
        Xxh64 hash;  // llm.c's order, each kind contiguous: the hash of the fp32 parameters
        for (int k = 0; k < kNumParamKinds; ++k) hash.update(kinds[std::size_t(k)], std::size_t(layout.size[std::size_t(k)]) * 4);
        const uint64_t sum = hash.digest();
        require(sum == h.fp32_weights_hash, PG_ERR_CHECKSUM,
                name + ": the weights' hash " + hex64(sum) + " differs from the one section WLAY records (" +
                    hex64(h.fp32_weights_hash) + "): the file is corrupt");
    }
    Model model(h.config, h.storage, h.fp32_weights_hash, file, kinds, name);
    model.set_provenance(h.provenance);
    require_finite_weights(model, name);
    return model;
}

}  // namespace pg::io
