// Robustness of the native reader, in the manner of llama.cpp's test-gguf: a matrix of named,
// hand-built bad files, each with the exact status it must give, then every truncation length
// and every single-byte flip of small checkpoints: a clean error or an identical model, never a
// crash and never a silently different model.
//
// The files are rebuilt here from the layout in docs/formats.md by an encoder independent of
// the library's, so the matrix also checks that the documentation and the reader agree.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <functional>

#include "core/bytes.hpp"
#include "core/checksum.hpp"
#include "phonegpt/phonegpt.h"
#include "checkpoint_file_editor.hpp"
#include "test_checkpoint_support.hpp"

using namespace ckpt_test;

namespace {

// A zstd frame of `data` that does not declare its content size.
std::vector<uint8_t> zstd_without_size(const std::vector<uint8_t>& data) {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    std::vector<uint8_t> out(ZSTD_compressBound(data.size()));
    ZSTD_outBuffer ob{out.data(), out.size(), 0};
    ZSTD_inBuffer ib{data.data(), data.size(), 0};
    const std::size_t left = ZSTD_compressStream2(cctx, &ob, &ib, ZSTD_e_end);
    ZSTD_freeCCtx(cctx);
    REQUIRE(left == 0);
    out.resize(ob.pos);
    return out;
}

// A zstd frame of `data` with the content size and checksum declared, as the writer makes it,
// but a window of 2^window_log bytes (small windows force a window descriptor in the header).
std::vector<uint8_t> zstd_frame(const std::vector<uint8_t>& data, int window_log) {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, window_log);
    std::vector<uint8_t> out(ZSTD_compressBound(data.size()));
    const std::size_t n = ZSTD_compress2(cctx, out.data(), out.size(), data.data(), data.size());
    ZSTD_freeCCtx(cctx);
    REQUIRE(!ZSTD_isError(n));
    out.resize(n);
    return out;
}

// The data region of `base` recompressed into one frame whose header asks for a 2^25-byte
// window (above the reader's 2^24 limit): the window descriptor byte after the frame header
// descriptor, exponent 15 = log 10 + 15.
std::vector<uint8_t> zstd_window_too_large(const std::vector<uint8_t>& raw_data) {
    std::vector<uint8_t> frame = zstd_frame(raw_data, 10);
    REQUIRE(raw_data.size() > 1024);  // so the frame is not single-segment and has a window byte
    REQUIRE((frame[4] & 0x20) == 0);  // Single_Segment_flag clear
    frame[5] = uint8_t(15 << 3);
    return frame;
}

struct BadFile {
    const char* name;
    pg_status status;
    const char* message;  // a fragment the message must contain
    std::function<std::vector<uint8_t>()> build;
    bool resume = false;  // loaded with pg_trainer_resume instead of pg_model_load
};

}  // namespace

TEST_CASE("corruption matrix: each hand-built bad checkpoint gives its exact status and message",
          "[io][checkpoint][corruption]") {
    auto model = make_model(small_config(), 5);
    const pg::TrainerState state = make_state(*model, 3);
    const std::vector<uint8_t> good = encode(*model, nullptr, 0);
    const std::vector<uint8_t> good_state = encode(*model, &state, 0);
    const std::vector<uint8_t> good_zstd = encode(*model, nullptr, 3);

    const std::vector<BadFile> matrix = {
        {"empty file", PG_ERR_FORMAT, "too short", raw(good, [](auto& b) { b.clear(); })},
        {"7 bytes", PG_ERR_FORMAT, "too short", raw(good, [](auto& b) { b.resize(7); })},
        {"bad magic", PG_ERR_FORMAT, "bad magic", raw(good, [](auto& b) { b[1] = 'X'; })},
        {"an llm.c file", PG_ERR_FORMAT, "pg_model_import", raw(good, [](auto& b) { poke<int32_t>(b, 0, 20240326); })},
        {"truncated prelude", PG_ERR_FORMAT, "prelude", raw(good, [](auto& b) { b.resize(20); })},
        {"version 0.x", PG_ERR_FORMAT, "never written", edit(good, [](File& f) { f.major = 0; })},
        {"future major 2.0", PG_ERR_VERSION, "newer than this library", edit(good, [](File& f) { f.major = 2; f.minor = 0; })},
        {"far future major 65535", PG_ERR_VERSION, "65535", edit(good, [](File& f) { f.major = 65535; })},
        {"unknown prelude flag", PG_ERR_FORMAT, "prelude flags", edit(good, [](File& f) { f.flags |= 4; })},
        {"huge header length", PG_ERR_FORMAT, "exceeds the cap", edit(good, [](File& f) { f.header_size_override = uint64_t(1) << 62; })},
        {"header past end of file", PG_ERR_FORMAT, "runs past the end", raw(good, [](auto& b) { b.resize(200); })},
        {"header checksum mismatch", PG_ERR_CHECKSUM, "header checksum", edit(good, [](File& f) { f.fix_checksum = false; })},
        {"section length past header", PG_ERR_FORMAT, "runs past the header",
         edit(good, [](File& f) { f.header_shortfall = 1; })},  // the last section ends 1 byte after the header
        {"unknown section flag", PG_ERR_FORMAT, "unknown flags", edit(good, [](File& f) { f.section("TOKN").flags = 2; })},
        {"unknown required section", PG_ERR_VERSION, "marked required",
         edit(good, [](File& f) { f.sections.insert(f.sections.begin(), Section{"LORA", 1, {1, 2, 3}}); })},
        {"bad section tag bytes", PG_ERR_VERSION, "\\x00",
         edit(good, [](File& f) { f.sections.push_back(Section{std::string("\0AB\x7f", 4), 1, {}}); })},
        {"duplicate GEOM", PG_ERR_FORMAT, "appears twice",
         edit(good, [](File& f) { f.sections.push_back(f.section("GEOM")); })},
        {"missing GEOM", PG_ERR_FORMAT, "no GEOM", edit(good, [](File& f) { f.remove("GEOM"); })},
        {"missing TENS", PG_ERR_FORMAT, "no TENS", edit(good, [](File& f) { f.remove("TENS"); })},
        {"truncated GEOM", PG_ERR_FORMAT, "layernorm_eps", edit(good, [](File& f) { f.section("GEOM").payload.resize(26); })},
        {"GEOM with trailing bytes", PG_ERR_FORMAT, "trailing", edit(good, [](File& f) { f.section("GEOM").payload.push_back(0); })},
        {"heads do not divide width", PG_ERR_GEOMETRY, "n_head",
         edit(good, [](File& f) { poke<int32_t>(f.section("GEOM").payload, 4, 3); })},
        {"NaN layernorm_eps", PG_ERR_GEOMETRY, "layernorm_eps",
         edit(good, [](File& f) { poke<uint32_t>(f.section("GEOM").payload, 24, 0x7fc00000u); })},
        {"geometry contradicts tensors (width)", PG_ERR_GEOMETRY, "needs [68, 16]",
         edit(good, [](File& f) { poke<int32_t>(f.section("GEOM").payload, 8, 16); })},
        {"geometry contradicts tensors (layers)", PG_ERR_GEOMETRY, "needs \"h.1.ln_1.weight\"",
         edit(good, [](File& f) { poke<int32_t>(f.section("GEOM").payload, 0, 2); })},
        {"tokenizer garbage", PG_ERR_FORMAT, "section TOKN", edit(good, [](File& f) { f.section("TOKN").payload = {1, 2, 3}; })},
        {"tokenizer from the future", PG_ERR_VERSION, "section TOKN",
         edit(good, [](File& f) { poke<uint16_t>(f.section("TOKN").payload, 4, 9); })},
        {"tokenizer vocabulary contradicts geometry", PG_ERR_GEOMETRY, "tokenizer has 65 tokens",
         edit(good, [](File& f) {
             poke<int32_t>(f.section("GEOM").payload, 16, 64);  // vocab 64, still padded to 68
         })},
        {"tensor count larger than the table", PG_ERR_FORMAT, "does not fit",
         edit(good, [](File& f) { f.set_table(f.table(), 0xFFFFFFFFu); })},
        {"tensor table cut short", PG_ERR_FORMAT, "ends inside",
         edit(good, [](File& f) { f.section("TENS").payload.resize(f.section("TENS").payload.size() - 3); })},
        {"tensor renamed", PG_ERR_GEOMETRY, "needs \"wpe\"", table_edit(good, [](auto& t) { t[1].name = "wpf"; })},
        {"empty tensor name", PG_ERR_FORMAT, "name length 0", table_edit(good, [](auto& t) { t[0].name = ""; })},
        {"non-printable tensor name", PG_ERR_FORMAT, "non-printable", table_edit(good, [](auto& t) { t[0].name = "w\x01e"; })},
        {"wrong dtype", PG_ERR_FORMAT, "unknown dtype code 2", table_edit(good, [](auto& t) { t[3].dtype = 2; })},
        {"zero dimensions", PG_ERR_FORMAT, "n_dims 0", table_edit(good, [](auto& t) { t[2].shape.clear(); })},
        {"five dimensions", PG_ERR_FORMAT, "n_dims 5", table_edit(good, [](auto& t) { t[2].shape = {1, 1, 1, 1, 8}; })},
        {"zero-sized dimension", PG_ERR_FORMAT, "is 0", table_edit(good, [](auto& t) { t[2].shape = {0}; })},
        {"shape overflow", PG_ERR_FORMAT, "overflows",
         table_edit(good, [](auto& t) { t[0].shape = {uint64_t(1) << 40, uint64_t(1) << 40}; })},
        {"size is not shape x dtype", PG_ERR_FORMAT, "nbytes", table_edit(good, [](auto& t) { t[2].nbytes += 4; })},
        {"overlapping tensors", PG_ERR_FORMAT, "overlaps", table_edit(good, [](auto& t) { t[1].offset -= 4; })},
        {"gap between tensors", PG_ERR_FORMAT, "leaves a gap", table_edit(good, [](auto& t) { t[1].offset += 4; })},
        {"wrong shape for the geometry", PG_ERR_GEOMETRY, "has shape [8, 8]",
         table_edit(good, [](auto& t) {
             t[0].shape = {8, 8};  // wte should be [68, 8]; sizes and offsets kept consistent
             const uint64_t delta = t[0].nbytes - 256;
             t[0].nbytes = 256;
             for (std::size_t i = 1; i < t.size(); ++i) t[i].offset -= delta;
         })},
        {"tensor beyond the end of the file", PG_ERR_FORMAT, "truncated", raw(good, [](auto& b) { b.pop_back(); })},
        {"trailing bytes after the data", PG_ERR_FORMAT, "trailing", raw(good, [](auto& b) { b.push_back(0); })},
        {"tensor data checksum mismatch", PG_ERR_CHECKSUM, "\"h.0.attn.c_attn.weight\" checksum",
         table_edit(good, [](auto& t) { t[4].checksum ^= 1; })},
        {"flipped weight bit", PG_ERR_CHECKSUM, "\"wpe\" checksum",
         raw(good, [](auto& b) { b[b.size() - 4 * (8 * 8 + 16 + 872) + 2] ^= 0x10; })},
        {"training state: unknown schedule", PG_ERR_FORMAT, "schedule",
         edit(good_state, [](File& f) { poke<int32_t>(f.section("TRAN").payload, 60, 7); })},
        {"training state: negative step", PG_ERR_FORMAT, "negative",
         edit(good_state, [](File& f) { poke<int64_t>(f.section("TRAN").payload, 0, -1); })},
        {"training state: zero RNG state", PG_ERR_FORMAT, "all zero",
         edit(good_state, [](File& f) {
             for (int i = 0; i < 4; ++i) poke<uint64_t>(f.section("TRAN").payload, 16 + 8 * i, 0);
         })},
        {"training state: truncated", PG_ERR_FORMAT, "ends inside",
         edit(good_state, [](File& f) { f.section("TRAN").payload.resize(40); })},
        {"training state without moments", PG_ERR_GEOMETRY, "with training state needs",
         edit(good, [&](File& f) { f.sections.insert(f.sections.end() - 1, File(good_state).section("TRAN")); })},
        {"moments without training state", PG_ERR_GEOMETRY, "has 18 tensors", edit(good_state, [](File& f) { f.remove("TRAN"); })},
        {"OPTM without training state", PG_ERR_FORMAT, "section OPTM without a training state",
         edit(good, [](File& f) { f.sections.insert(f.sections.end() - 1, Section{"OPTM", 1, {1, 0, 0, 0, 0, 0, 0x70, 0x3f, 0, 0, 0x80, 0x3f}}); })},
        {"DRMP without training state", PG_ERR_FORMAT, "section DRMP without a training state",
         edit(good, [](File& f) { f.sections.insert(f.sections.end() - 1, Section{"DRMP", 1, {8, 0, 0, 0}}); })},
        {"DRMP of 0 steps", PG_ERR_FORMAT, "a dropout ramp of 0 steps",
         edit(good_state, [](File& f) { f.sections.insert(f.sections.end() - 1, Section{"DRMP", 1, {0, 0, 0, 0}}); })},
        {"DRMP truncated", PG_ERR_FORMAT, "section DRMP",
         edit(good_state, [](File& f) { f.sections.insert(f.sections.end() - 1, Section{"DRMP", 1, {8, 0}}); })},
        {"zstd: data is not a frame", PG_ERR_FORMAT, "not a zstd frame",
         edit(good, [](File& f) { f.flags = 1; })},
        {"zstd: expansion beyond the cap", PG_ERR_FORMAT, "ratio cap",
         edit(good_zstd, [](File& f) { f.data.resize(10); })},
        {"zstd: frame truncated", PG_ERR_FORMAT, "truncated", raw(good_zstd, [](auto& b) { b.resize(b.size() - 9); })},
        {"zstd: trailing bytes after the frame", PG_ERR_FORMAT, "trailing", raw(good_zstd, [](auto& b) { b.push_back(0); })},
        {"zstd: frame size differs from the table", PG_ERR_FORMAT, "the zstd frame holds",
         edit(good_zstd, [&](File& f) { f.data = File(encode(*make_model(pg::model_preset("tiny"), 1), nullptr, 3)).data; })},
        {"zstd: frame without a declared size", PG_ERR_FORMAT, "does not declare",
         edit(good, [](File& f) {
             f.flags = 1;
             f.data = zstd_without_size(f.data);
         })},
        // Hostile demands: sizes that overflow, decoder memory and training resources above
        // the stated limits, each refused before anything is allocated for it.
        {"1-D shape of 2^62 elements (byte count overflows)", PG_ERR_FORMAT, "size overflows 64 bits",
         table_edit(good, [](auto& t) { t[2].shape = {uint64_t(1) << 62}; })},
        {"zstd: window above the decoder's limit", PG_ERR_FORMAT, "too much memory",
         edit(good, [](File& f) {
             f.flags = 1;
             f.data = zstd_window_too_large(f.data);
         })},
        {"zstd: content checksum mismatch", PG_ERR_CHECKSUM, "checksum",
         edit(good, [](File& f) {
             f.flags = 1;
             f.data = zstd_frame(f.data, 20);
             f.data.back() ^= 0x5A;  // the last 4 bytes are the frame's content checksum
         })},
        {"training state: batch 65,536 x accumulation 65,536", PG_ERR_FORMAT,
         "65536 x 8 = 524288 tokens per micro-batch is above the limit of 65536",
         edit(good_state, [](File& f) {
             poke<int32_t>(f.section("TRAN").payload, 48, 65536);  // batch_size
             poke<int32_t>(f.section("TRAN").payload, 56, 65536);  // grad_accum_steps
         }), true},
        {"training state: batch 65,536 (model-only load reads the header too)", PG_ERR_FORMAT,
         "tokens per micro-batch is above the limit",
         edit(good_state, [](File& f) { poke<int32_t>(f.section("TRAN").payload, 48, 65536); })},
        {"training state: seq_len above n_ctx", PG_ERR_FORMAT, "seq_len = 65536 is above the model's n_ctx",
         edit(good_state, [](File& f) { poke<int32_t>(f.section("TRAN").payload, 52, 65536); }), true},
        {"training state: 1,025 threads", PG_ERR_FORMAT, "n_threads",
         edit(good_state, [](File& f) { poke<int32_t>(f.section("TRAN").payload, 120, 1025); }), true},
    };
    // Pinned: a case lost in a merge or an edit fails here instead of silently shrinking the matrix.
    REQUIRE(matrix.size() == 69);
    const std::string path = scratch_path("matrix.pgck");
    int checked = 0;
    for (const BadFile& t : matrix) {
        INFO("case: " << t.name);
        write_bytes(path, t.build());
        pg_model* out = reinterpret_cast<pg_model*>(&checked);
        pg_trainer* trainer = reinterpret_cast<pg_trainer*>(&checked);
        const pg_status s = t.resume ? pg_trainer_resume(path.c_str(), &out, &trainer) : pg_model_load(path.c_str(), &out);
        CHECK(pg_status_name(s) == std::string(pg_status_name(t.status)));
        CHECK_THAT(pg_last_error(), Catch::Contains(t.message));
        CHECK(out == nullptr);
        if (t.resume) CHECK(trainer == nullptr);
        ++checked;
        if (t.resume) continue;
        // The same bytes in memory, and inside a bigger file behind a descriptor: the same refusal.
        const std::vector<uint8_t> bytes = t.build();
        const uint8_t none = 0;
        CHECK(pg_model_load_from_memory(bytes.empty() ? &none : bytes.data(), bytes.size(), nullptr, &out) == t.status);
        CHECK_THAT(pg_last_error(), Catch::Contains(t.message));
        CHECK(out == nullptr);
        std::vector<uint8_t> padded(4099, 0xA5);
        padded.insert(padded.end(), bytes.begin(), bytes.end());
        padded.resize(padded.size() + 77, 0x5A);
        write_bytes(path, padded);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        CHECK(pg_model_load_from_fd(fd, 4099, int64_t(bytes.size()), nullptr, &out) == t.status);
        CHECK_THAT(pg_last_error(), Catch::Contains(t.message));
        CHECK(out == nullptr);
        ::close(fd);
    }
    WARN("corruption matrix: " << checked << " named bad files, each with its exact status (from a path, "
                               "and model loads from memory and from a descriptor's range too)");
}

namespace {

std::size_t index_of(const std::vector<TableEntry>& t, const std::string& name) {
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t[i].name == name) return i;
    FAIL("no tensor " << name);
    return 0;
}

// Tensor `from` and every later one `delta` bytes further into the data region (the data stay
// where they were: the table is checked before any of it is read).
void shift_from(std::vector<TableEntry>& t, std::size_t from, int64_t delta) {
    for (std::size_t i = from; i < t.size(); ++i) t[i].offset = uint64_t(int64_t(t[i].offset) + delta);
}

// The first tensor after an alignment gap of `min_gap` .. `max_gap` bytes, and that gap.
std::pair<std::size_t, uint64_t> first_after_gap(const std::vector<TableEntry>& t, uint64_t min_gap, uint64_t max_gap) {
    for (std::size_t i = 1; i < t.size(); ++i) {
        const uint64_t gap = t[i].offset - (t[i - 1].offset + t[i - 1].nbytes);
        if (gap >= min_gap && gap <= max_gap) return {i, gap};
    }
    FAIL("no alignment gap of " << min_gap << " to " << max_gap << " bytes");
    return {0, 0};
}

// Element `i` of tensor `name` set to `bits` (its dtype's width, little-endian) with the
// tensor's checksum fixed, and for an fp32 file the WLAY hash of the fp32 weights too, so that
// only the value is wrong.
void set_element(File& f, const std::string& name, std::size_t i, uint32_t bits) {
    std::vector<TableEntry> t = f.table();
    TableEntry& e = entry(t, name);
    const std::size_t width = e.dtype == 1 ? 4 : 2;
    REQUIRE((i + 1) * width <= e.nbytes);
    std::memcpy(&f.data[std::size_t(e.offset) + i * width], &bits, width);
    e.checksum = pg::io::xxh64(&f.data[std::size_t(e.offset)], std::size_t(e.nbytes));
    f.set_table(t);
    std::vector<uint8_t>& layout = f.section("WLAY").payload;
    uint32_t storage;
    std::memcpy(&storage, layout.data(), 4);
    if (storage != 0) return;  // a 16-bit file records the hash of weights it no longer holds
    pg::io::Xxh64 hash;  // llm.c's order: the tensors in file order, gaps left out
    for (const TableEntry& x : t)
        if (x.name.rfind("optimizer.", 0) != 0) hash.update(&f.data[std::size_t(x.offset)], std::size_t(x.nbytes));
    const uint64_t sum = hash.digest();
    std::memcpy(&layout[8], &sum, 8);
}

struct BadMappable {
    std::string name;
    pg_status status;
    std::string message;  // a fragment the message must contain
    Build build;
    bool mapped_only = false;  // only a mapped load refuses it (or words it this way)
};

pg_status load_with(const std::string& path, bool map, pg_model** out) {
    pg_load_options lo;
    pg_load_options_default(&lo);
    lo.map_weights = map ? 1 : 0;
    return pg_model_load_with(path.c_str(), &lo, out);
}

}  // namespace

TEST_CASE("corruption matrix, format 1.3: each bad mapping-layout file gives its exact status and message, "
          "copied and mapped",
          "[io][checkpoint][corruption][mapped]") {
    pg::ModelConfig cfg = small_config();
    cfg.n_layer = 2;  // so a kind has a second tensor, right after its first
    auto model = make_model(cfg, 6);
    const pg::TrainerState state = make_state(*model, 4);
    const std::vector<uint8_t> f16 = encode_mappable(*model, nullptr, pg::WeightStorage::fp16);
    const std::vector<uint8_t> b16 = encode_mappable(*model, nullptr, pg::WeightStorage::bf16);
    const std::vector<uint8_t> f32 = encode_mappable(*model, nullptr, pg::WeightStorage::fp32);
    const std::vector<uint8_t> f16_zstd = encode_mappable(*model, nullptr, pg::WeightStorage::fp16, 3);
    const std::vector<uint8_t> plain_zstd = encode(*model, nullptr, 3);
    const std::vector<uint8_t> plain = encode(*model, nullptr, 0);
    const std::vector<uint8_t> with_state = encode(*model, &state, 0);
    REQUIRE(File(f16).minor == pg::io::kCheckpointMinorMappable);

    const std::vector<TableEntry> t16 = File(f16).table();
    const uint64_t data_start = f16.size() - File(f16).data.size();
    REQUIRE(data_start % 64 == 0);
    const std::pair<std::size_t, uint64_t> gap_at = first_after_gap(t16, 1, 63), small_gap_at = first_after_gap(t16, 1, 59);
    const std::size_t after_gap = gap_at.first, after_small_gap = small_gap_at.first;
    const uint64_t gap = gap_at.second;
    const std::size_t second = index_of(t16, "h.1.ln_1.weight");  // right after h.0.ln_1.weight
    REQUIRE(t16[second].offset == t16[second - 1].offset + t16[second - 1].nbytes);
    const std::string gap_name = t16[after_gap].name, small_gap_name = t16[after_small_gap].name;
    const uint64_t aligned_at = t16[after_small_gap].offset;

    const std::vector<BadMappable> matrix = {
        // dtypes
        {"unknown dtype code 6", PG_ERR_FORMAT,
         "(\"wte\"): unknown dtype code 6 (1 = f32, 2 = f16, 3 = bf16, 4 = q8_0, 5 = q4_0)",
         table_edit(f16, [](auto& t) { entry(t, "wte").dtype = 6; })},
        {"dtype code 0", PG_ERR_FORMAT,
         "(\"ln_f.bias\"): unknown dtype code 0 (1 = f32, 2 = f16, 3 = bf16, 4 = q8_0, 5 = q4_0)",
         table_edit(f16, [](auto& t) { entry(t, "ln_f.bias").dtype = 0; })},
        {"a bf16 tensor in an fp16 file", PG_ERR_FORMAT,
         "tensor \"wte\" has dtype 3 (bf16) but the file's fp16 storage (section WLAY) needs 2 (f16)",
         table_edit(f16, [](auto& t) { entry(t, "wte").dtype = 3; })},
        {"an fp16 tensor in a bf16 file", PG_ERR_FORMAT,
         "tensor \"h.1.mlp.c_fc.weight\" has dtype 2 (f16) but the file's bf16 storage (section WLAY) needs 3 (bf16)",
         table_edit(b16, [](auto& t) { entry(t, "h.1.mlp.c_fc.weight").dtype = 2; })},
        {"a LayerNorm in 16 bits", PG_ERR_FORMAT,
         "tensor \"h.0.ln_1.weight\" has dtype 2 (f16) but the file's fp16 storage (section WLAY) needs 1 (f32)",
         table_edit(f16, [](auto& t) {
             TableEntry& e = entry(t, "h.0.ln_1.weight");  // [8]: 16 bytes in 16 bits, then a 16-byte gap
             e.dtype = 2;
             e.nbytes = 16;
         })},
        {"16-bit dtypes without WLAY", PG_ERR_FORMAT,
         "(\"wte\"): unknown dtype code 2 (1 = f32 is the only one without the mapping layout)",
         edit(f16, [](File& f) {
             f.remove("WLAY");
             f.remove("PADD");
         })},
        {"PADD without WLAY", PG_ERR_FORMAT, "a PADD section without the mapping layout (WLAY)",
         edit(f16, [](File& f) { f.remove("WLAY"); })},
        {"WLAY cut short", PG_ERR_FORMAT, "section WLAY: ends inside field fp32 weights hash",
         edit(f16, [](File& f) { f.section("WLAY").payload.resize(12); })},
        {"a training state with fp16 weights", PG_ERR_FORMAT,
         "section WLAY: a training state with fp16 weights (training needs fp32 weights)",
         edit(f16, [&](File& f) { f.sections.insert(f.sections.begin() + 1, File(with_state).section("TRAN")); })},
        // sizes against shapes
        {"a 16-bit tensor sized as fp32", PG_ERR_FORMAT, "(\"wte\"): nbytes 2176 != shape [68, 8] x 2 bytes = 1088",
         table_edit(f16, [](auto& t) { entry(t, "wte").nbytes = 2176; })},
        {"a bf16 tensor 2 bytes short", PG_ERR_FORMAT,
         "(\"h.0.attn.c_attn.weight\"): nbytes 382 != shape [24, 8] x 2 bytes = 384",
         table_edit(b16, [](auto& t) { entry(t, "h.0.attn.c_attn.weight").nbytes = 382; })},
        // offsets: where the mapping layout puts each tensor
        {"a kind's first tensor without its alignment gap", PG_ERR_FORMAT,
         "tensor \"" + gap_name + "\" starts at " + std::to_string(t16[after_gap].offset - gap) +
             " of the data region; the mapping layout puts it at " + std::to_string(t16[after_gap].offset) +
             " (its kind's first tensor, on a 64-byte boundary)",
         table_edit(f16, [&](auto& t) { shift_from(t, after_gap, -int64_t(gap)); })},
        {"a kind's first tensor 4 bytes off its boundary", PG_ERR_FORMAT,
         "tensor \"" + small_gap_name + "\" starts at " + std::to_string(aligned_at + 4) +
             " of the data region; the mapping layout puts it at " + std::to_string(aligned_at),
         table_edit(f16, [&](auto& t) { shift_from(t, after_small_gap, 4); })},
        {"a kind's second tensor after a gap", PG_ERR_FORMAT,
         "tensor \"h.1.ln_1.weight\" starts at " + std::to_string(t16[second].offset + 4) +
             " of the data region; the mapping layout puts it at " + std::to_string(t16[second].offset) +
             " (right after the previous one)",
         table_edit(f16, [&](auto& t) { shift_from(t, second, 4); })},
        {"overlapping tensors", PG_ERR_FORMAT,
         "(\"h.1.ln_1.weight\"): offset " + std::to_string(t16[second].offset - 4) + " overlaps the previous tensor",
         table_edit(f16, [&](auto& t) { shift_from(t, second, -4); })},
        {"a gap of 64 bytes or more", PG_ERR_FORMAT,
         "(\"" + gap_name + "\"): offset " + std::to_string(t16[after_gap].offset + 64) + " leaves a gap",
         table_edit(f16, [&](auto& t) { shift_from(t, after_gap, 64); })},
        {"the data region off its 64-byte boundary", PG_ERR_FORMAT,
         "the data region starts at byte " + std::to_string(data_start + 1) + ", not on a 64-byte boundary",
         edit(f16, [](File& f) { f.section("PADD").payload.push_back(0); })},
        // truncated files
        {"truncated inside the prelude", PG_ERR_FORMAT, "truncated inside the 32-byte prelude",
         raw(f16, [](auto& b) { b.resize(20); })},
        {"truncated inside the header", PG_ERR_FORMAT, "runs past the end of the file",
         raw(f16, [](auto& b) { b.resize(100); })},
        {"truncated where the data region starts", PG_ERR_FORMAT,
         "truncated: the tensors need " + std::to_string(f16.size() - data_start) + " bytes of data, the file has 0",
         raw(f16, [&](auto& b) { b.resize(data_start); })},
        {"the last byte missing", PG_ERR_FORMAT,
         "truncated: the tensors need " + std::to_string(f16.size() - data_start) + " bytes of data, the file has " +
             std::to_string(f16.size() - data_start - 1),
         raw(f16, [](auto& b) { b.pop_back(); })},
        {"an empty file, mapped", PG_ERR_FORMAT, "is empty: nothing to map", raw(f16, [](auto& b) { b.clear(); }), true},
        // non-finite values that passed their checksums
        {"fp16 +inf", PG_ERR_NOT_FINITE, "tensor \"wte\" element 3 is inf (fp16)",
         edit(f16, [](File& f) { set_element(f, "wte", 3, 0x7c00); })},
        {"fp16 -inf in a block linear", PG_ERR_NOT_FINITE, "tensor \"h.0.mlp.c_fc.weight\" element 5 is inf (fp16)",
         edit(f16, [](File& f) { set_element(f, "h.0.mlp.c_fc.weight", 5, 0xfc00); })},
        {"fp16 NaN", PG_ERR_NOT_FINITE, "tensor \"h.1.attn.c_proj.weight\" element 0 is nan (fp16)",
         edit(f16, [](File& f) { set_element(f, "h.1.attn.c_proj.weight", 0, 0x7e00); })},
        {"bf16 NaN", PG_ERR_NOT_FINITE, "tensor \"wte\" element 0 is nan (bf16)",
         edit(b16, [](File& f) { set_element(f, "wte", 0, 0x7fc1); })},
        {"bf16 +inf", PG_ERR_NOT_FINITE, "tensor \"h.0.mlp.c_proj.weight\" element 7 is inf (bf16)",
         edit(b16, [](File& f) { set_element(f, "h.0.mlp.c_proj.weight", 7, 0x7f80); })},
        {"fp32 NaN in a 16-bit file", PG_ERR_NOT_FINITE, "tensor \"ln_f.bias\" element 1 is nan",
         edit(f16, [](File& f) { set_element(f, "ln_f.bias", 1, 0x7fc00000u); })},
        {"fp32 NaN in an fp32 mapping-layout file (WLAY hash fixed)", PG_ERR_NOT_FINITE,
         "tensor \"h.0.ln_1.weight\" element 2 is nan",
         edit(f32, [](File& f) { set_element(f, "h.0.ln_1.weight", 2, 0x7fc00000u); })},
        // what a mapped load cannot take
        {"a compressed 1.3 file, mapped", PG_ERR_UNSUPPORTED, "zstd-compressed, so they cannot be mapped",
         raw(f16_zstd, [](auto&) {}), true},
        {"a compressed 1.1 file, mapped", PG_ERR_UNSUPPORTED, "zstd-compressed, so they cannot be mapped",
         raw(plain_zstd, [](auto&) {}), true},
        {"a 1.1 file, mapped", PG_ERR_UNSUPPORTED, "a format 1.1 file without the mapping layout",
         raw(plain, [](auto&) {}), true},
    };
    // Pinned: a case lost in a merge or an edit fails here instead of silently shrinking the matrix.
    REQUIRE(matrix.size() == 32);
    const std::string path = scratch_path("matrix13.pgck");
    int checked = 0;
    for (const BadMappable& t : matrix) {
        for (bool map : {false, true}) {
            if (t.mapped_only && !map) continue;
            INFO("case: " << t.name << (map ? ", mapped" : ", copied"));
            write_bytes(path, t.build());
            pg_model* out = reinterpret_cast<pg_model*>(&checked);
            const pg_status s = load_with(path, map, &out);
            CHECK(pg_status_name(s) == std::string(pg_status_name(t.status)));
            CHECK_THAT(pg_last_error(), Catch::Contains(t.message));
            CHECK(out == nullptr);
            ++checked;
        }
    }
    // The good files the cases were made from load either way (the copied zstd one too).
    for (const std::vector<uint8_t>* good : {&f16, &b16, &f32, &f16_zstd}) {
        for (bool map : {false, true}) {
            if (good == &f16_zstd && map) continue;
            write_bytes(path, *good);
            pg_model* out = nullptr;
            INFO(pg_last_error());
            REQUIRE(load_with(path, map, &out) == PG_OK);
            pg_model_free(out);
        }
    }
    std::remove(path.c_str());
    WARN("corruption matrix, format 1.3: " << checked << " loads of " << matrix.size() << " bad files");
}

TEST_CASE("forward compatibility: newer minors and unknown optional sections load unchanged",
          "[io][checkpoint][corruption]") {
    auto model = make_model(small_config(), 5);
    for (int level : {0, 3}) {
        File f(encode(*model, nullptr, level));
        f.minor = uint16_t(pg::io::kCheckpointMinor + 7);
        f.sections.insert(f.sections.begin() + 1, Section{"XTRA", 0, {9, 9, 9}});
        f.sections.push_back(Section{"NOTE", 0, {}});
        Loaded back = load_bytes(f.bytes());
        REQUIRE(back.status == PG_OK);
        CHECK(same_model(*back.model, *model));
        std::vector<uint8_t> b = f.bytes();
        pg::io::MemorySource full(b.data(), b.size());
        CHECK(pg::io::read_checkpoint_header(full).skipped_sections == std::vector<std::string>{"XTRA", "NOTE"});
    }
}

TEST_CASE("every truncation and every single-byte flip: a clean error or the identical model",
          "[io][checkpoint][corruption][sweep]") {
    auto model = make_model(small_config(), 77);
    const pg::TrainerState state = make_state(*model, 5);
    struct Variant {
        const char* name;
        std::vector<uint8_t> bytes;
        bool with_state;
    };
    const std::vector<Variant> variants = {
        {"raw", encode(*model, nullptr, 0), false},
        {"zstd", encode(*model, nullptr, 3), false},
        {"raw + training state", encode(*model, &state, 0), true},
        {"zstd + training state", encode(*model, &state, 3), true},
        {"1.3 fp16", encode_mappable(*model, nullptr, pg::WeightStorage::fp16), false},
        {"1.3 bf16", encode_mappable(*model, nullptr, pg::WeightStorage::bf16), false},
        {"1.3 fp32 + training state", encode_mappable(*model, &state, pg::WeightStorage::fp32), true}};
    // The model each variant holds: the 16-bit files hold model's weights rounded.
    auto held_as = [&](const Variant& v) {
        pg::io::MemorySource src(v.bytes.data(), v.bytes.size());
        return pg::io::read_checkpoint_header(src).storage;
    };
    const SweepShard shard = SweepShard::from_env();
    for (const Variant& v : variants) {
        INFO(v.name << ", " << v.bytes.size() << " bytes");
        Loaded expected = load_bytes(v.bytes);
        REQUIRE(expected.status == PG_OK);
        REQUIRE(expected.model->storage() == held_as(v));
        if (held_as(v) == pg::WeightStorage::fp32) REQUIRE(same_model(*expected.model, *model));
        int errors = 0, identical = 0;
        for (std::size_t len = 0; len < v.bytes.size(); ++len) {
            if (!shard.owns(len)) continue;
            std::vector<uint8_t> cut(v.bytes.begin(), v.bytes.begin() + long(len));
            Loaded r = load_bytes(cut, v.with_state);
            // Every proper prefix is incomplete. (The message is built only on a failure: an
            // INFO per load was a fifth of the sweep's time, more under the sanitizers.)
            if (r.status != PG_ERR_FORMAT && r.status != PG_ERR_CHECKSUM)
                FAIL("truncated to " << len << ": " << pg_status_name(r.status) << " " << r.message);
            ++errors;
        }
        for (std::size_t at = 0; at < v.bytes.size(); ++at) {
            if (!shard.owns(at)) continue;
            for (uint8_t mask : {uint8_t(0x01), uint8_t(0xFF)}) {
                std::vector<uint8_t> flipped = v.bytes;
                flipped[at] ^= mask;
                Loaded r = load_bytes(flipped, v.with_state);
                if (r.status == PG_OK) {
                    if (!same_weights(*r.model, *expected.model) || (v.with_state && !same_state(r.state, state)))
                        FAIL("byte " << at << " ^= " << int(mask) << " loaded a different model");
                    ++identical;
                } else {
                    if (r.status == PG_ERR_INTERNAL || r.status == PG_ERR_OUT_OF_MEMORY)
                        FAIL("byte " << at << " ^= " << int(mask) << ": " << pg_status_name(r.status) << " "
                                     << r.message);
                    ++errors;
                }
            }
        }
        WARN("sweep " << v.name << " (" << v.bytes.size() << " bytes, positions " << shard.k << " mod " << shard.n
                      << "): " << errors << " clean errors, " << identical
                      << " flips loaded the identical model");
    }
}

TEST_CASE("every truncation and every single-byte flip of a mapped file: a clean error or the identical model",
          "[io][checkpoint][corruption][sweep][mapped]") {
    auto model = make_model(small_config(), 78);
    const SweepShard shard = SweepShard::from_env();
    for (pg::WeightStorage storage : {pg::WeightStorage::fp16, pg::WeightStorage::fp32}) {
        const std::vector<uint8_t> bytes = encode_mappable(*model, nullptr, storage);
        INFO(pg::weight_storage_name(storage) << ", " << bytes.size() << " bytes");
        const std::string path = scratch_path("sweep_mapped.pgck");
        write_bytes(path, bytes);
        const Loaded expected = map_file(path);
        REQUIRE(expected.status == PG_OK);
        int errors = 0, identical = 0;
        for (std::size_t len = 0; len < bytes.size(); ++len) {
            if (!shard.owns(len)) continue;
            write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(len)));
            const Loaded r = map_file(path);
            // Every proper prefix is incomplete, the empty one too (a message only on a failure).
            if (r.status != PG_ERR_FORMAT)
                FAIL("truncated to " << len << ": " << pg_status_name(r.status) << " " << r.message);
            ++errors;
        }
        for (std::size_t at = 0; at < bytes.size(); ++at) {
            if (!shard.owns(at)) continue;
            for (uint8_t mask : {uint8_t(0x01), uint8_t(0xFF)}) {
                std::vector<uint8_t> flipped = bytes;
                flipped[at] ^= mask;
                write_bytes(path, flipped);
                const Loaded r = map_file(path);
                if (r.status == PG_OK) {
                    if (!same_weights(*r.model, *expected.model))
                        FAIL("byte " << at << " ^= " << int(mask) << " loaded a different model");
                    ++identical;
                } else {
                    if (r.status == PG_ERR_INTERNAL || r.status == PG_ERR_OUT_OF_MEMORY)
                        FAIL("byte " << at << " ^= " << int(mask) << ": " << pg_status_name(r.status) << " "
                                     << r.message);
                    ++errors;
                }
            }
        }
        std::remove(path.c_str());
        WARN("mapped sweep " << pg::weight_storage_name(storage) << " (" << bytes.size() << " bytes, positions "
                             << shard.k << " mod " << shard.n << "): " << errors
                             << " clean errors, " << identical << " flips loaded the identical model");
    }
}

TEST_CASE("hostile but valid: a training state asking for 1,024 threads resumes with exactly them",
          "[io][checkpoint][corruption]") {
    auto model = make_model(small_config(), 5);
    pg::TrainerState state = make_state(*model, 3);
    state.config.n_threads = 1024;  // the documented limit: accepted, and honoured
    const std::string path = scratch_path("threads.pgck");
    write_bytes(path, encode(*model, &state, 0));
    pg_model* m = nullptr;
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_resume(path.c_str(), &m, &t) == PG_OK);
    pg_train_config c;
    pg_train_config_default(&c);
    REQUIRE(pg_trainer_get_config(t, &c) == PG_OK);
    CHECK(c.n_threads == 1024);
    pg_trainer_free(t);
    pg_model_free(m);
}

TEST_CASE("a caller's batch above 65,536 tokens is refused before anything is allocated", "[train][corruption]") {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &m) == PG_OK);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 4097;  // x n_ctx 16 = 65,552 tokens
    pg_trainer* t = nullptr;
    CHECK(pg_trainer_create(m, &tc, &t) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("4097 x 16 = 65552 tokens per micro-batch is above the limit of 65536"));
    tc.batch_size = 4096;  // exactly the limit
    REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
    const std::vector<int32_t> tokens(std::size_t(4097) * 16, 1);
    CHECK(pg_trainer_step_batch(t, tokens.data(), tokens.data(), 4097, 16, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_trainer_last_error(t), Catch::Contains("above the limit of 65536"));
    int64_t steps = -1;
    CHECK(pg_trainer_step_count(t, &steps) == PG_OK);
    CHECK(steps == 0);
    pg_trainer_free(t);
    pg_model_free(m);
}
