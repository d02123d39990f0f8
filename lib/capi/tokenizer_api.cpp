// C API: tokenizers. Output buffers follow one sizing protocol: the needed size is always
// reported; if the caller's capacity is smaller, nothing is written to the buffer and the call
// returns PG_ERR_BUFFER_TOO_SMALL (call with NULL and 0 to size).
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "tokenizer/bpe_formats.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "tokenizer/char_tokenizer.hpp"
#include "tokenizer/utf8_stream.hpp"

namespace {

pg::ErrorTarget err(const pg_tokenizer* t) { return pg::shared_errors(t); }
pg::ErrorTarget err(pg_token_stream* s) { return pg::owned_errors(s); }

void require_tokenizer(const pg_tokenizer* tok, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, tok);
    pg::require_arg(tok->impl != nullptr, fn, "tokenizer is empty");
}

// `p` may be NULL only when there is nothing to point at.
void require_buffer(const void* p, std::size_t n, const char* fn, const char* what) {
    pg::require_arg(p != nullptr || n == 0, fn, what);
}

void require_capacity(std::size_t needed, std::size_t capacity, const char* fn, const char* unit) {
    if (needed > capacity)
        throw pg::Error(PG_ERR_BUFFER_TOO_SMALL, std::string(fn) + ": capacity " + std::to_string(capacity) +
                                                     " is smaller than the " + std::to_string(needed) + " " +
                                                     unit + " needed");
}

const pg::BpeTokenizer& require_bpe(const pg_tokenizer* tok, const char* fn) {
    require_tokenizer(tok, fn);
    const auto* bpe = dynamic_cast<const pg::BpeTokenizer*>(tok->impl.get());
    if (!bpe) throw pg::Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": the tokenizer is not byte-level BPE");
    return *bpe;
}

// Copies `bytes` into the caller's buffer under the sizing protocol (no NUL).
void write_bytes(const std::string& bytes, void* data, std::size_t capacity, std::size_t* len, const char* fn) {
    *len = bytes.size();
    require_capacity(bytes.size(), capacity, fn, "bytes");
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
}

// Copies `text` and a NUL under the sizing protocol; *len excludes the NUL.
void write_text(const std::string& text, char* out, std::size_t capacity, std::size_t* len, const char* fn) {
    *len = text.size();
    require_capacity(text.size() + 1, capacity, fn, "bytes (text and its NUL)");
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
}

pg_tokenizer* new_handle(std::unique_ptr<pg::Tokenizer> impl) {
    auto h = std::make_unique<pg_tokenizer>();
    h->impl = std::move(impl);
    return h.release();
}

}  // namespace

extern "C" {

pg_status pg_tokenizer_create_char(const char* text, size_t len, pg_tokenizer** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_tokenizer_create_char", out);
        *out = nullptr;
        require_buffer(text, len, "pg_tokenizer_create_char", "text is NULL");
        *out = new_handle(pg::CharTokenizer::from_text(std::string_view(text, len)));
    });
}

pg_status pg_tokenizer_deserialize(const void* data, size_t len, pg_tokenizer** out) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_tokenizer_deserialize", out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL("pg_tokenizer_deserialize", data);
        *out = new_handle(pg::deserialize_tokenizer(static_cast<const uint8_t*>(data), len));
    });
}

void pg_tokenizer_free(pg_tokenizer* tok) { delete tok; }

pg_status pg_tokenizer_get_kind(const pg_tokenizer* tok, pg_tokenizer_kind* out) {
    return pg::guarded(err(tok), [&] {
        require_tokenizer(tok, "pg_tokenizer_get_kind");
        PG_REQUIRE_NOT_NULL("pg_tokenizer_get_kind", out);
        *out = tok->impl->kind();
    });
}

// Deprecated spelling (phonegpt.h): the same call.
pg_status pg_tokenizer_kind_of(const pg_tokenizer* tok, pg_tokenizer_kind* out) { return pg_tokenizer_get_kind(tok, out); }

pg_status pg_tokenizer_vocab_size(const pg_tokenizer* tok, int32_t* out) {
    return pg::guarded(err(tok), [&] {
        require_tokenizer(tok, "pg_tokenizer_vocab_size");
        PG_REQUIRE_NOT_NULL("pg_tokenizer_vocab_size", out);
        *out = tok->impl->vocab_size();
    });
}

pg_status pg_tokenizer_encode(const pg_tokenizer* tok, const char* text, size_t len, int32_t* ids,
                              size_t capacity, size_t* n_ids) {
    return pg::guarded(err(tok), [&] {
        const char* fn = "pg_tokenizer_encode";
        require_tokenizer(tok, fn);
        PG_REQUIRE_NOT_NULL(fn, n_ids);
        *n_ids = 0;
        require_buffer(text, len, fn, "text is NULL");
        require_buffer(ids, capacity, fn, "ids is NULL but capacity is not 0");
        const std::vector<int32_t> encoded = tok->impl->encode(std::string_view(text, len));
        *n_ids = encoded.size();
        require_capacity(encoded.size(), capacity, fn, "ids");
        if (!encoded.empty()) std::memcpy(ids, encoded.data(), encoded.size() * sizeof(int32_t));
    });
}

pg_status pg_tokenizer_decode(const pg_tokenizer* tok, const int32_t* ids, size_t n_ids, char* text,
                              size_t capacity, size_t* len) {
    return pg::guarded(err(tok), [&] {
        const char* fn = "pg_tokenizer_decode";
        require_tokenizer(tok, fn);
        PG_REQUIRE_NOT_NULL(fn, len);
        *len = 0;
        require_buffer(ids, n_ids, fn, "ids is NULL");
        require_buffer(text, capacity, fn, "text is NULL but capacity is not 0");
        write_text(tok->impl->decode(ids, n_ids), text, capacity, len, fn);
    });
}

pg_status pg_tokenizer_serialize(const pg_tokenizer* tok, void* data, size_t capacity, size_t* len) {
    return pg::guarded(err(tok), [&] {
        const char* fn = "pg_tokenizer_serialize";
        require_tokenizer(tok, fn);
        PG_REQUIRE_NOT_NULL(fn, len);
        *len = 0;
        require_buffer(data, capacity, fn, "data is NULL but capacity is not 0");
        const std::vector<uint8_t> bytes = tok->impl->serialize();
        *len = bytes.size();
        require_capacity(bytes.size(), capacity, fn, "bytes");
        std::memcpy(data, bytes.data(), bytes.size());
    });
}

const char* pg_tokenizer_last_error(const pg_tokenizer* tok) {
    return tok ? pg::handle_last_error(tok->id, nullptr) : "tokenizer is NULL";
}

/* ---- byte-level BPE ---------------------------------------------------------------------- */

pg_status pg_tokenizer_create_tiktoken(const void* ranks, size_t len, const char* encoding, pg_tokenizer** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_tokenizer_create_tiktoken";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        require_buffer(ranks, len, fn, "ranks is NULL");
        PG_REQUIRE_NOT_NULL(fn, encoding);
        *out = new_handle(pg::bpe::load_tiktoken(std::string_view(static_cast<const char*>(ranks), len), encoding));
    });
}

pg_status pg_tokenizer_create_gpt2(const char* encoder_json, size_t encoder_len, const char* vocab_bpe,
                                   size_t vocab_len, pg_tokenizer** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_tokenizer_create_gpt2";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        require_buffer(encoder_json, encoder_len, fn, "encoder_json is NULL");
        require_buffer(vocab_bpe, vocab_len, fn, "vocab_bpe is NULL");
        *out = new_handle(pg::bpe::load_gpt2(std::string_view(encoder_json, encoder_len),
                                             std::string_view(vocab_bpe, vocab_len)));
    });
}

pg_status pg_tokenizer_create_hf(const char* tokenizer_json, size_t len, pg_tokenizer** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_tokenizer_create_hf";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        require_buffer(tokenizer_json, len, fn, "tokenizer_json is NULL");
        *out = new_handle(pg::bpe::load_hf(std::string_view(tokenizer_json, len)));
    });
}

pg_status pg_tokenizer_write_file(const pg_tokenizer* tok, pg_tokenizer_file file, void* data, size_t capacity,
                                  size_t* len) {
    return pg::guarded(err(tok), [&] {
        const char* fn = "pg_tokenizer_write_file";
        const pg::BpeTokenizer& bpe = require_bpe(tok, fn);
        PG_REQUIRE_NOT_NULL(fn, len);
        *len = 0;
        require_buffer(data, capacity, fn, "data is NULL but capacity is not 0");
        std::string bytes, other;
        switch (file) {
            case PG_TOKENIZER_FILE_TIKTOKEN: bytes = pg::bpe::write_tiktoken(bpe); break;
            case PG_TOKENIZER_FILE_GPT2_ENCODER: pg::bpe::write_gpt2(bpe, &bytes, &other); break;
            case PG_TOKENIZER_FILE_GPT2_MERGES: pg::bpe::write_gpt2(bpe, &other, &bytes); break;
            case PG_TOKENIZER_FILE_HF_JSON: bytes = pg::bpe::write_hf(bpe); break;
            default:
                throw pg::Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": unknown file kind " +
                                                             std::to_string(int(file)) + " (1..4)");
        }
        write_bytes(bytes, data, capacity, len, fn);
    });
}

void pg_encode_options_default(pg_encode_options* opts) {
    if (opts) *opts = pg::blank_c_struct<pg_encode_options>();
}

pg_status pg_tokenizer_encode_with(const pg_tokenizer* tok, const char* text, size_t len, const pg_encode_options* opts,
                                   int32_t* ids, size_t capacity, size_t* n_ids) {
    return pg::guarded(err(tok), [&] {
        const char* fn = "pg_tokenizer_encode_with";
        require_tokenizer(tok, fn);
        PG_REQUIRE_NOT_NULL(fn, n_ids);
        *n_ids = 0;
        require_buffer(text, len, fn, "text is NULL");
        require_buffer(ids, capacity, fn, "ids is NULL but capacity is not 0");
        pg_encode_options o;
        pg_encode_options_default(&o);
        pg::read_options(opts, &o, fn);
        pg::require_arg(o.n_allowed_special >= 0, fn, "n_allowed_special is negative");
        require_buffer(o.allowed_special, std::size_t(o.n_allowed_special), fn,
                       "allowed_special is NULL but n_allowed_special is not 0");
        std::vector<int32_t> encoded;
        const bool specials = o.allow_all_special != 0 || o.n_allowed_special > 0;
        if (specials) {
            const auto* bpe = dynamic_cast<const pg::BpeTokenizer*>(tok->impl.get());
            pg::require_arg(bpe != nullptr, fn, "special tokens are asked for but the tokenizer has none (not BPE)");
            std::vector<int32_t> allowed;
            for (int32_t i = 0; i < o.n_allowed_special; ++i) {
                const char* name = o.allowed_special[i];
                pg::require_arg(name != nullptr, fn, "allowed_special has a NULL entry");
                const int32_t id = bpe->special_id(name);
                if (id < 0)
                    throw pg::Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": allowed_special[" + std::to_string(i) +
                                                                 "] \"" + name + "\" is not a special token of this tokenizer");
                allowed.push_back(id);
            }
            encoded = bpe->encode_with_special(std::string_view(text, len), allowed, o.allow_all_special != 0);
        } else {
            encoded = tok->impl->encode(std::string_view(text, len));
        }
        if (o.add_special_tokens != 0)
            if (const auto* bpe = dynamic_cast<const pg::BpeTokenizer*>(tok->impl.get())) {
                encoded.insert(encoded.begin(), bpe->template_before().begin(), bpe->template_before().end());
                encoded.insert(encoded.end(), bpe->template_after().begin(), bpe->template_after().end());
            }
        *n_ids = encoded.size();
        require_capacity(encoded.size(), capacity, fn, "ids");
        if (!encoded.empty()) std::memcpy(ids, encoded.data(), encoded.size() * sizeof(int32_t));
    });
}

pg_status pg_tokenizer_special_id(const pg_tokenizer* tok, const char* text, int32_t* id) {
    return pg::guarded(err(tok), [&] {
        const char* fn = "pg_tokenizer_special_id";
        const pg::BpeTokenizer& bpe = require_bpe(tok, fn);
        PG_REQUIRE_NOT_NULL(fn, text);
        PG_REQUIRE_NOT_NULL(fn, id);
        *id = -1;
        const int32_t found = bpe.special_id(text);
        if (found < 0)
            throw pg::Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": \"" + text + "\" is not a special token");
        *id = found;
    });
}

}  // extern "C"

struct pg_token_stream {
    const pg_tokenizer* tokenizer = nullptr;  // borrowed
    std::string pending;                      // bytes of an unfinished character
    pg::HandleId id;
    pg::HandleMessage last_error;  // written by push and finish
};

extern "C" {

pg_status pg_token_stream_create(const pg_tokenizer* tok, pg_token_stream** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_token_stream_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        require_tokenizer(tok, fn);
        auto s = std::make_unique<pg_token_stream>();
        s->tokenizer = tok;
        *out = s.release();
    });
}

void pg_token_stream_free(pg_token_stream* stream) { delete stream; }

pg_status pg_token_stream_push(pg_token_stream* stream, int32_t id, char* text, size_t capacity, size_t* len) {
    return pg::guarded(err(stream), [&] {
        const char* fn = "pg_token_stream_push";
        PG_REQUIRE_NOT_NULL(fn, stream);
        PG_REQUIRE_NOT_NULL(fn, len);
        *len = 0;
        require_buffer(text, capacity, fn, "text is NULL but capacity is not 0");
        std::string pending = stream->pending + stream->tokenizer->impl->decode(&id, 1);
        const std::string ready = pg::utf8::take_complete(pending, false);
        write_text(ready, text, capacity, len, fn);
        stream->pending = std::move(pending);  // only once the text was delivered
    });
}

pg_status pg_token_stream_finish(pg_token_stream* stream, char* text, size_t capacity, size_t* len) {
    return pg::guarded(err(stream), [&] {
        const char* fn = "pg_token_stream_finish";
        PG_REQUIRE_NOT_NULL(fn, stream);
        PG_REQUIRE_NOT_NULL(fn, len);
        *len = 0;
        require_buffer(text, capacity, fn, "text is NULL but capacity is not 0");
        std::string pending = stream->pending;
        write_text(pg::utf8::take_complete(pending, true), text, capacity, len, fn);
        stream->pending.clear();
    });
}

const char* pg_token_stream_last_error(const pg_token_stream* stream) {
    return stream ? pg::handle_last_error(stream->id, &stream->last_error) : "token stream is NULL";
}

}  // extern "C"
