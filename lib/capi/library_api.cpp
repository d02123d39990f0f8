// Library-wide entry points: versions, status names, the thread's last error, file reading and
// the train/validation split.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "capi/boundary.hpp"
#include "kernels/dispatch.hpp"

namespace pg {
namespace {
thread_local std::string t_last_error;
}

void record_error(std::string* handle_error, const std::string& message) {
    t_last_error = message;
    if (handle_error) *handle_error = message;
}

}  // namespace pg

extern "C" {

unsigned pg_version_number(void) { return PG_VERSION_NUMBER; }

const char* pg_version_string(void) {
#define PG_STR2(x) #x
#define PG_STR(x) PG_STR2(x)
    return PG_STR(PG_VERSION_MAJOR) "." PG_STR(PG_VERSION_MINOR) "." PG_STR(PG_VERSION_PATCH);
#undef PG_STR
#undef PG_STR2
}

const char* pg_simd_arch(void) { return pg::kernels::active_arch_name(); }

const char* pg_status_name(pg_status status) {
    switch (status) {
        case PG_OK: return "PG_OK";
        case PG_ERR_INVALID_ARGUMENT: return "PG_ERR_INVALID_ARGUMENT";
        case PG_ERR_OUT_OF_MEMORY: return "PG_ERR_OUT_OF_MEMORY";
        case PG_ERR_IO: return "PG_ERR_IO";
        case PG_ERR_FORMAT: return "PG_ERR_FORMAT";
        case PG_ERR_VERSION: return "PG_ERR_VERSION";
        case PG_ERR_CHECKSUM: return "PG_ERR_CHECKSUM";
        case PG_ERR_GEOMETRY: return "PG_ERR_GEOMETRY";
        case PG_ERR_TOKENIZE: return "PG_ERR_TOKENIZE";
        case PG_ERR_CANCELLED: return "PG_ERR_CANCELLED";
        case PG_ERR_STATE: return "PG_ERR_STATE";
        case PG_ERR_BUFFER_TOO_SMALL: return "PG_ERR_BUFFER_TOO_SMALL";
        case PG_ERR_UNSUPPORTED: return "PG_ERR_UNSUPPORTED";
        case PG_ERR_INTERNAL: return "PG_ERR_INTERNAL";
        case PG_ERR_NOT_FINITE: return "PG_ERR_NOT_FINITE";
    }
    return "PG_ERR_UNKNOWN";
}

const char* pg_last_error(void) { return pg::t_last_error.c_str(); }

pg_status pg_split_index(size_t n, double train_fraction, size_t* n_train) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_split_index", n_train);
        pg::require_arg(std::isfinite(train_fraction) && train_fraction >= 0.0 && train_fraction <= 1.0,
                        "pg_split_index", "train_fraction must be in [0, 1]");
        // floor(n * f) computed exactly for the fractions people use (0.9 of 1,115,394 is
        // 1,003,854.6 -> 1,003,854) without double rounding surprises near integers.
        long double v = static_cast<long double>(n) * static_cast<long double>(train_fraction);
        size_t k = static_cast<size_t>(std::floor(v + 1e-9L));
        *n_train = k > n ? n : k;
    });
}

pg_status pg_read_file(const char* path, char** data, size_t* len) {
    return pg::guarded(nullptr, [&] {
        PG_REQUIRE_NOT_NULL("pg_read_file", path);
        PG_REQUIRE_NOT_NULL("pg_read_file", data);
        PG_REQUIRE_NOT_NULL("pg_read_file", len);
        *data = nullptr;
        *len = 0;
        std::FILE* f = std::fopen(path, "rb");
        if (!f)
            throw pg::Error(PG_ERR_IO, std::string("cannot open \"") + path + "\": " + std::strerror(errno));
        std::string buf;
        char chunk[1 << 16];
        size_t got;
        while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) buf.append(chunk, got);
        bool failed = std::ferror(f) != 0;
        int err = errno;
        std::fclose(f);
        if (failed)
            throw pg::Error(PG_ERR_IO, std::string("cannot read \"") + path + "\": " + std::strerror(err));
        char* out = static_cast<char*>(std::malloc(buf.size() + 1));
        if (!out) throw std::bad_alloc();
        std::memcpy(out, buf.data(), buf.size());
        out[buf.size()] = '\0';
        *data = out;
        *len = buf.size();
    });
}

void pg_buffer_free(void* buffer) { std::free(buffer); }

}  // extern "C"
