// The native checkpoint's byte-level pieces (checkpoint_sections.hpp): messages' text, the
// section codecs, the prelude and its checksum, shared by the writer, reader and mapper.
#include "io/checkpoint_sections.hpp"

#include "core/checksum.hpp"
#include "core/hex.hpp"

namespace pg::io {

namespace ckpt {

std::string tag_text(const uint8_t* tag) {
    std::string s;
    for (int i = 0; i < 4; ++i) {
        unsigned char c = tag[i];
        if (c >= 0x20 && c < 0x7F) {
            s += char(c);
        } else {
            s += "\\x" + hex_encode(&c, 1);
        }
    }
    return s;
}

std::string shape_text(int n_dims, const std::array<uint64_t, 4>& shape) {
    std::string s = "[";
    for (int d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "]";
}

std::optional<kernels::QuantFormat> block_format_of(TensorDtype d) {
    if (d == TensorDtype::kQ8_0) return kernels::QuantFormat::q8_0;
    if (d == TensorDtype::kQ4_0) return kernels::QuantFormat::q4_0;
    return std::nullopt;
}

uint64_t tensor_nbytes(TensorDtype d, uint64_t numel, uint64_t row_length) {
    if (const auto format = block_format_of(d)) {
        if (row_length % kernels::kQuantBlock != 0) return 0;
        return numel / kernels::kQuantBlock * kernels::quant_block_bytes(*format);
    }
    return numel * (d == TensorDtype::kF32 ? 4 : 2);
}

std::string dtype_text(TensorDtype d) {
    const char* names[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};
    return std::to_string(int(d)) + " (" + names[int(d) - 1] + ")";
}

void encode_geometry(ByteWriter& w, const ModelConfig& c) {
    w.put<int32_t>(c.n_layer);
    w.put<int32_t>(c.n_head);
    w.put<int32_t>(c.n_embd);
    w.put<int32_t>(c.n_ctx);
    w.put<int32_t>(c.vocab_size);
    w.put<int32_t>(c.padded_vocab_size);
    w.put<float>(c.layernorm_eps);
    if (c.is_gpt2()) return;  // GPT-2's block: the seven fields every version wrote
    // Format 1.5: the architecture, in pg_model_config's order.
    w.put<int32_t>(int32_t(c.norm));
    w.put<int32_t>(c.qk_norm ? 1 : 0);
    w.put<int32_t>(int32_t(c.positions));
    w.put<float>(c.rope_theta);
    w.put<float>(c.rope_scaling_factor);
    w.put<float>(c.rope_low_freq_factor);
    w.put<float>(c.rope_high_freq_factor);
    w.put<int32_t>(c.rope_original_max_positions);
    w.put<int32_t>(c.n_kv_head);
    w.put<int32_t>(c.head_size);
    w.put<int32_t>(c.qkv_bias ? 1 : 0);
    w.put<int32_t>(c.linear_bias ? 1 : 0);
    w.put<int32_t>(int32_t(c.mlp));
    w.put<int32_t>(c.mlp_hidden);
    w.put<int32_t>(c.tied_head ? 1 : 0);
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
    // Format 1.5: the 15 architecture fields follow when the block is not GPT-2's (any other
    // length is trailing bytes, refused below).
    const bool has_architecture = r.remaining() == 15 * 4;
    pg_model_config arch = model_config_to_c(c);
    if (has_architecture) {
        arch.norm = pg_norm_kind(r.get<int32_t>("norm"));
        arch.qk_norm = r.get<int32_t>("qk_norm");
        arch.positions = pg_position_kind(r.get<int32_t>("positions"));
        arch.rope_theta = r.get<float>("rope_theta");
        arch.rope_scaling_factor = r.get<float>("rope_scaling_factor");
        arch.rope_low_freq_factor = r.get<float>("rope_low_freq_factor");
        arch.rope_high_freq_factor = r.get<float>("rope_high_freq_factor");
        arch.rope_original_max_positions = r.get<int32_t>("rope_original_max_positions");
        arch.n_kv_head = r.get<int32_t>("n_kv_head");
        arch.head_dim = r.get<int32_t>("head_dim");
        arch.qkv_bias = r.get<int32_t>("qkv_bias");
        arch.linear_bias = r.get<int32_t>("linear_bias");
        arch.mlp = pg_mlp_kind(r.get<int32_t>("mlp"));
        arch.mlp_hidden = r.get<int32_t>("mlp_hidden");
        arch.tied_head = r.get<int32_t>("tied_head");
    }
    r.expect_end();
    try {
        if (has_architecture) {
            const int32_t padded = c.padded_vocab_size;
            c = model_config_from_c(arch);  // checks each enumeration and flag
            c.padded_vocab_size = padded;   // as stored (0 is not "round up" in a file)
        }
        validate_model_config(c);
    } catch (const Error& e) {
        throw Error(PG_ERR_GEOMETRY, r.context() + ": " + e.what());
    }
    return c;
}

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

void encode_dropout_ramp(ByteWriter& w, const TrainConfig& c) { w.put<int32_t>(c.dropout_ramp_steps); }

void decode_dropout_ramp(ByteReader& r, TrainConfig& c) {
    c.dropout_ramp_steps = r.get<int32_t>("dropout_ramp_steps");
    r.expect_end();
    // The writer leaves the section out for 0; the range is checked with the rest of the
    // configuration (resolve_train_config).
    require(c.dropout_ramp_steps != 0, PG_ERR_FORMAT, r.context() + ": a dropout ramp of 0 steps is never written");
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

std::vector<CheckpointTensor> decode_tensor_table(ByteReader& r, bool mappable) {
    const uint32_t count = r.get<uint32_t>("tensor count");
    // Each entry takes at least 38 bytes, so the count is bounded by the section size.
    require(uint64_t(count) * 38 <= r.remaining(), PG_ERR_FORMAT,
            r.context() + ": tensor count " + std::to_string(count) + " does not fit in the section");
    std::vector<CheckpointTensor> tensors(count);
    uint64_t next_offset = 0;
    for (uint32_t i = 0; i < count; ++i) {
        CheckpointTensor& t = tensors[i];
        // The messages are composed only when a check fails (require).
        auto where = [&] { return r.context() + ": tensor " + std::to_string(i); };
        const uint16_t name_len = r.get<uint16_t>("name length");
        require(name_len >= 1 && name_len <= 255, PG_ERR_FORMAT,
                [&] { return where() + ": name length " + std::to_string(name_len) + " is outside [1, 255]"; });
        const uint8_t* name = r.take(name_len, "name");
        for (uint16_t k = 0; k < name_len; ++k)
            require(name[k] >= 0x21 && name[k] < 0x7F, PG_ERR_FORMAT,
                    [&] { return where() + ": name has a non-printable byte"; });
        t.name.assign(reinterpret_cast<const char*>(name), name_len);
        auto what = [&] { return where() + " (\"" + t.name + "\")"; };
        const uint8_t dtype = r.get<uint8_t>("dtype");
        if (mappable)
            require(dtype >= uint8_t(TensorDtype::kF32) && dtype <= uint8_t(TensorDtype::kQ4_0), PG_ERR_FORMAT, [&] {
                return what() + ": unknown dtype code " + std::to_string(dtype) +
                       " (1 = f32, 2 = f16, 3 = bf16, 4 = q8_0, 5 = q4_0)";
            });
        else
            require(dtype == uint8_t(TensorDtype::kF32), PG_ERR_FORMAT, [&] {
                return what() + ": unknown dtype code " + std::to_string(dtype) +
                       " (1 = f32 is the only one without the mapping layout)";
            });
        t.dtype = TensorDtype(dtype);
        t.n_dims = r.get<uint8_t>("n_dims");
        require(t.n_dims >= 1 && t.n_dims <= 4, PG_ERR_FORMAT,
                [&] { return what() + ": n_dims " + std::to_string(t.n_dims) + " is outside [1, 4]"; });
        auto shape_what = [&] { return what() + " shape"; };
        uint64_t numel = 1;
        for (int d = 0; d < t.n_dims; ++d) {
            t.shape[d] = r.get<uint64_t>("shape");
            require(t.shape[d] >= 1, PG_ERR_FORMAT, [&] { return what() + ": dimension " + std::to_string(d) + " is 0"; });
            numel = checked_mul(numel, t.shape[d], shape_what);
        }
        t.offset = r.get<uint64_t>("offset");
        t.nbytes = r.get<uint64_t>("nbytes");
        t.checksum = r.get<uint64_t>("checksum");
        const uint64_t row_length = t.shape[std::size_t(t.n_dims - 1)];
        if (const auto format = block_format_of(t.dtype)) {
            require(row_length % kernels::kQuantBlock == 0, PG_ERR_FORMAT, [&] {
                return what() + ": rows of " + std::to_string(row_length) + " values are not whole blocks of " +
                       std::to_string(kernels::kQuantBlock) + " (dtype " + dtype_text(t.dtype) + ")";
            });
            const uint64_t blocks = numel / kernels::kQuantBlock;
            const uint64_t expect_bytes = checked_mul(blocks, uint64_t(kernels::quant_block_bytes(*format)), shape_what);
            require(t.nbytes == expect_bytes, PG_ERR_FORMAT, [&] {
                return what() + ": nbytes " + std::to_string(t.nbytes) + " != " + std::to_string(blocks) +
                       " blocks of shape " + shape_text(t.n_dims, t.shape) + " x " +
                       std::to_string(kernels::quant_block_bytes(*format)) + " bytes = " + std::to_string(expect_bytes);
            });
        } else {
            const int width = t.dtype == TensorDtype::kF32 ? 4 : 2;
            const uint64_t expect_bytes = checked_mul(numel, uint64_t(width), shape_what);
            require(t.nbytes == expect_bytes, PG_ERR_FORMAT, [&] {
                return what() + ": nbytes " + std::to_string(t.nbytes) + " != shape " + shape_text(t.n_dims, t.shape) +
                       " x " + std::to_string(width) + " bytes = " + std::to_string(expect_bytes);
            });
        }
        const bool aligned_gap = mappable && t.offset >= next_offset && t.offset - next_offset < kCheckpointAlignment;
        if (t.offset != next_offset && !aligned_gap)
            throw Error(PG_ERR_FORMAT, what() + ": offset " + std::to_string(t.offset) +
                                           (t.offset < next_offset ? " overlaps the previous tensor" : " leaves a gap") +
                                           " (tensors must be contiguous; expected " + std::to_string(next_offset) + ")");
        // t.offset == next_offset but for an aligned gap
        next_offset = checked_add(t.offset, t.nbytes, [&] { return what() + " end"; });
    }
    r.expect_end();
    return tensors;
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

}  // namespace ckpt

using namespace ckpt;

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

}  // namespace pg::io
