// Library-wide entry points: versions, status names, the thread's last error, file reading and
// the train/validation split.
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "core/file_io.hpp"
#include "kernels/dispatch.hpp"

namespace pg {
namespace {

thread_local std::string t_last_error;

// Every recorded failure gets the next number, library-wide, so that a mutable handle's own
// message and a thread-table entry can be ordered.
std::atomic<uint64_t> g_failure_sequence{0};
std::atomic<uint64_t> g_next_handle_id{1};

// The calling thread's last failure on each of the last few handles it failed on (least
// recently failed entry replaced first). Small on purpose: a caller reads a handle's message
// right after the failing call.
struct ThreadHandleError {
    uint64_t handle = 0;
    uint64_t sequence = 0;
    std::string message;
};
constexpr std::size_t kThreadHandleErrors = 8;
thread_local std::array<ThreadHandleError, kThreadHandleErrors> t_handle_errors;

const ThreadHandleError* find_thread_entry(uint64_t handle) {
    for (const ThreadHandleError& e : t_handle_errors)
        if (e.handle == handle) return &e;
    return nullptr;
}

void remember_for_thread(uint64_t handle, uint64_t sequence, const std::string& message) {
    ThreadHandleError* slot = &t_handle_errors[0];
    for (ThreadHandleError& e : t_handle_errors) {
        if (e.handle == handle) {
            slot = &e;
            break;
        }
        if (e.sequence < slot->sequence) slot = &e;
    }
    slot->handle = handle;
    slot->sequence = sequence;
    slot->message = message;
}

}  // namespace

HandleId::HandleId() : value_(g_next_handle_id.fetch_add(1, std::memory_order_relaxed)) {}

std::string labelled(const char* function, const std::string& message) {
    const std::size_t n = std::strlen(function);
    if (message.compare(0, n, function) == 0 && message.compare(n, 2, ": ") == 0) return message;
    return std::string(function) + ": " + message;
}

void record_error(const ErrorTarget& target, const std::string& message) {
    t_last_error = message;
    if (target.handle == 0) return;
    const uint64_t sequence = g_failure_sequence.fetch_add(1, std::memory_order_relaxed) + 1;
    if (target.owned_message) {
        target.owned_message->text = message;
        target.owned_message->sequence = sequence;
    } else {
        remember_for_thread(target.handle, sequence, message);
    }
}

const char* handle_last_error(const HandleId& id, const HandleMessage* owned) {
    const ThreadHandleError* mine = find_thread_entry(id.value());
    if (owned && (!mine || owned->sequence > mine->sequence)) return owned->text.c_str();
    return mine ? mine->message.c_str() : "";
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
        // Read straight into the caller's buffer: no second copy of a file up to the cap.
        pg::io::FileSource src(path);
        const size_t n = size_t(pg::io::checked_whole_size(src, pg::io::kMaxWholeFileBytes));
        std::unique_ptr<char, decltype(&std::free)> out(static_cast<char*>(std::malloc(n + 1)), &std::free);
        if (!out) throw std::bad_alloc();
        src.read_at(0, out.get(), n, "contents");
        out.get()[n] = '\0';
        *data = out.release();
        *len = n;
    });
}

void pg_buffer_free(void* buffer) { std::free(buffer); }

}  // extern "C"
