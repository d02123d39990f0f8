// C API: tokenizers. Output buffers follow one sizing protocol: the needed size is always
// reported; if the caller's capacity is smaller, nothing is written to the buffer and the call
// returns PG_ERR_BUFFER_TOO_SMALL (call with NULL and 0 to size).
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "tokenizer/char_tokenizer.hpp"

namespace {

std::string* err(const pg_tokenizer* t) { return t ? &t->last_error : nullptr; }

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

pg_status pg_tokenizer_kind_of(const pg_tokenizer* tok, pg_tokenizer_kind* out) {
    return pg::guarded(err(tok), [&] {
        require_tokenizer(tok, "pg_tokenizer_kind_of");
        PG_REQUIRE_NOT_NULL("pg_tokenizer_kind_of", out);
        *out = tok->impl->kind();
    });
}

pg_status pg_tokenizer_vocab_size(const pg_tokenizer* tok, int32_t* out) {
    return pg::guarded(err(tok), [&] {
        require_tokenizer(tok, "pg_tokenizer_vocab_size");
        PG_REQUIRE_NOT_NULL("pg_tokenizer_vocab_size", out);
        *out = tok->impl->vocab_size();
    });
}

pg_status pg_tokenizer_encode(pg_tokenizer* tok, const char* text, size_t len, int32_t* ids,
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

pg_status pg_tokenizer_decode(pg_tokenizer* tok, const int32_t* ids, size_t n_ids, char* text,
                              size_t capacity, size_t* len) {
    return pg::guarded(err(tok), [&] {
        const char* fn = "pg_tokenizer_decode";
        require_tokenizer(tok, fn);
        PG_REQUIRE_NOT_NULL(fn, len);
        *len = 0;
        require_buffer(ids, n_ids, fn, "ids is NULL");
        require_buffer(text, capacity, fn, "text is NULL but capacity is not 0");
        const std::string decoded = tok->impl->decode(ids, n_ids);
        *len = decoded.size();
        require_capacity(decoded.size() + 1, capacity, fn, "bytes (text and its NUL)");
        std::memcpy(text, decoded.data(), decoded.size());
        text[decoded.size()] = '\0';
    });
}

pg_status pg_tokenizer_serialize(pg_tokenizer* tok, void* data, size_t capacity, size_t* len) {
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
    return tok ? tok->last_error.c_str() : "tokenizer is NULL";
}

}  // extern "C"
