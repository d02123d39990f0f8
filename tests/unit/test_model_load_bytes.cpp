// Models from memory and from a descriptor's range (pg_model_load_from_memory / _from_fd): the
// same model as from the path, bit for bit, and every way the arguments can be wrong refused
// with its status. The bad files themselves are the corruption matrix's, which runs all three
// loaders (test_checkpoint_corruption.cpp).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "phonegpt/phonegpt.h"
#include "test_checkpoint_support.hpp"

namespace {

struct ModelPtr {
    pg_model* m = nullptr;
    ~ModelPtr() { pg_model_free(m); }
};

// A one-layer model saved at `path` (zstd when `level` > 0); its file's bytes.
std::vector<uint8_t> saved_model(const std::string& path, int level) {
    pg_model_config c;
    pg_model_config_default(&c);
    c.n_layer = 1;
    c.n_head = 2;
    c.n_embd = 16;
    c.n_ctx = 16;
    c.vocab_size = 65;
    c.padded_vocab_size = 68;
    ModelPtr m;
    REQUIRE(pg_model_create(&c, 7, &m.m) == PG_OK);
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_tokenizer_create_char(ckpt_test::kShakespeareChars, std::strlen(ckpt_test::kShakespeareChars), &tok) == PG_OK);
    REQUIRE(pg_model_set_tokenizer(m.m, tok) == PG_OK);
    pg_tokenizer_free(tok);
    pg_save_options o;
    pg_save_options_default(&o);
    o.compression_level = level;
    REQUIRE(pg_model_save(m.m, path.c_str(), &o) == PG_OK);
    return ckpt_test::read_bytes(path);
}

std::vector<float> params_of(const pg_model* m) {
    const float* p = nullptr;
    int64_t n = 0;
    REQUIRE(pg_model_params(m, &p, &n) == PG_OK);
    return std::vector<float>(p, p + n);
}

bool has_tokenizer(const pg_model* m) {
    const pg_tokenizer* t = nullptr;  // borrowed
    REQUIRE(pg_model_get_tokenizer(m, &t) == PG_OK);
    return t != nullptr;
}

}  // namespace

TEST_CASE("a model loads from memory and from a descriptor's range exactly as from its path",
          "[io][checkpoint][load_bytes]") {
    for (int level : {0, 3}) {
        INFO("compression level " << level);
        const std::string path = ckpt_test::scratch_path("bytes.pgck");
        const std::vector<uint8_t> bytes = saved_model(path, level);
        ModelPtr from_path, from_memory, from_fd, from_fd_to_end;
        REQUIRE(pg_model_load(path.c_str(), &from_path.m) == PG_OK);
        REQUIRE(pg_model_load_from_memory(bytes.data(), bytes.size(), nullptr, &from_memory.m) == PG_OK);

        // Inside a bigger file, as an asset in an APK: at an odd offset, bytes after it.
        std::vector<uint8_t> bigger(12345, 0x11);
        bigger.insert(bigger.end(), bytes.begin(), bytes.end());
        const std::string bundle = ckpt_test::scratch_path("bundle.bin");
        ckpt_test::write_bytes(bundle, bigger);
        std::vector<uint8_t> with_tail = bigger;
        with_tail.resize(with_tail.size() + 999, 0x22);
        const std::string bundle_tail = ckpt_test::scratch_path("bundle_tail.bin");
        ckpt_test::write_bytes(bundle_tail, with_tail);

        const int fd = ::open(bundle_tail.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        REQUIRE(::lseek(fd, 17, SEEK_SET) == 17);
        REQUIRE(pg_model_load_from_fd(fd, 12345, int64_t(bytes.size()), nullptr, &from_fd.m) == PG_OK);
        CHECK(::lseek(fd, 0, SEEK_CUR) == 17);  // pread: the position did not move
        CHECK(::fcntl(fd, F_GETFD) >= 0);       // and the descriptor is still open
        ::close(fd);
        const int fd_end = ::open(bundle.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(pg_model_load_from_fd(fd_end, 12345, -1, nullptr, &from_fd_to_end.m) == PG_OK);  // to the end
        ::close(fd_end);

        const std::vector<float> expected = params_of(from_path.m);
        CHECK(params_of(from_memory.m) == expected);
        CHECK(params_of(from_fd.m) == expected);
        CHECK(params_of(from_fd_to_end.m) == expected);
        CHECK(has_tokenizer(from_memory.m));
        CHECK(has_tokenizer(from_fd.m));
    }
}

TEST_CASE("loading from memory or a descriptor refuses bad arguments and short ranges by name",
          "[io][checkpoint][load_bytes]") {
    const std::string path = ckpt_test::scratch_path("bytes_bad.pgck");
    const std::vector<uint8_t> bytes = saved_model(path, 0);
    const int64_t n = int64_t(bytes.size());
    pg_model* out = reinterpret_cast<pg_model*>(&out);
    auto refused = [&](pg_status status, pg_status expected, const char* fragment) {
        CHECK(pg_status_name(status) == std::string(pg_status_name(expected)));
        CHECK_THAT(pg_last_error(), Catch::Contains(fragment));
        CHECK(out == nullptr);
        out = reinterpret_cast<pg_model*>(&out);
    };

    refused(pg_model_load_from_memory(nullptr, 10, nullptr, &out), PG_ERR_INVALID_ARGUMENT, "data is NULL");
    CHECK(pg_model_load_from_memory(bytes.data(), bytes.size(), nullptr, nullptr) == PG_ERR_INVALID_ARGUMENT);
    refused(pg_model_load_from_memory(bytes.data(), bytes.size() - 1, nullptr, &out), PG_ERR_FORMAT, "");
    pg_load_options map;
    pg_load_options_default(&map);
    map.map_weights = 1;
    refused(pg_model_load_from_memory(bytes.data(), bytes.size(), &map, &out), PG_ERR_UNSUPPORTED, "by its path");
    map.map_weights = 2;
    refused(pg_model_load_from_memory(bytes.data(), bytes.size(), &map, &out), PG_ERR_INVALID_ARGUMENT, "map_weights");

    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    refused(pg_model_load_from_fd(fd, 0, n - 1, nullptr, &out), PG_ERR_FORMAT, "");  // a truncated length
    refused(pg_model_load_from_fd(fd, 1, n, nullptr, &out), PG_ERR_INVALID_ARGUMENT, "length");
    refused(pg_model_load_from_fd(fd, n + 1, -1, nullptr, &out), PG_ERR_INVALID_ARGUMENT, "offset");
    refused(pg_model_load_from_fd(fd, -1, n, nullptr, &out), PG_ERR_INVALID_ARGUMENT, "offset -1");
    map.map_weights = 1;
    refused(pg_model_load_from_fd(fd, 0, n, &map, &out), PG_ERR_UNSUPPORTED, "by its path");
    ::close(fd);
    refused(pg_model_load_from_fd(fd, 0, n, nullptr, &out), PG_ERR_IO, "file descriptor");  // now closed
    refused(pg_model_load_from_fd(-3, 0, n, nullptr, &out), PG_ERR_INVALID_ARGUMENT, "fd -3");

    const int write_only = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(write_only >= 0);
    refused(pg_model_load_from_fd(write_only, 0, n, nullptr, &out), PG_ERR_IO, "not open for reading");
    ::close(write_only);
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    refused(pg_model_load_from_fd(pipe_fds[0], 0, n, nullptr, &out), PG_ERR_IO, "a FIFO");
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    const int folder = ::open(pg_test::tmp_dir().c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(folder >= 0);
    refused(pg_model_load_from_fd(folder, 0, -1, nullptr, &out), PG_ERR_IO, "a directory");
    ::close(folder);
}
