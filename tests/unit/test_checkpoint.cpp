// Native checkpoints: checksums, bit-exact round trips (raw and zstd, with and without training
// state), atomic saving under injected failures, a full-disk child (RLIMIT_FSIZE) and a child
// SIGKILLed at random points while saving.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "core/checksum.hpp"
#include "phonegpt/phonegpt.h"
#include "test_checkpoint_support.hpp"

using namespace ckpt_test;

namespace {

// Files in the scratch folder whose name starts with `prefix` (leftover temporaries).
int count_files_with_prefix(const std::string& prefix) {
    int n = 0;
    DIR* d = opendir(pg_test::tmp_dir().c_str());
    if (!d) return -1;
    while (dirent* e = readdir(d))
        if (std::string(e->d_name).rfind(prefix, 0) == 0) ++n;
    closedir(d);
    return n;
}

ino_t inode_of(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

struct FailureGuard {
    ~FailureGuard() { pg::io::testing::clear_failure(); }
};

}  // namespace

TEST_CASE("xxh64 matches the reference test vectors, one-shot and incremental", "[io][checkpoint]") {
    using pg::io::xxh64;
    CHECK(xxh64("", 0) == 0xEF46DB3751D8E999ull);
    CHECK(xxh64("a", 1) == 0xD24EC4F1A98C6E5Bull);
    CHECK(xxh64("abc", 3) == 0x44BC2CF5AD770999ull);
    const std::string fox = "The quick brown fox jumps over the lazy dog";
    CHECK(xxh64(fox.data(), fox.size()) == 0x0B242D361FDA71BCull);
    // Incremental in uneven pieces gives the one-shot result (covers the 32-byte stripe buffer).
    std::vector<uint8_t> data(1000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 131 + 7);
    const uint64_t whole = xxh64(data.data(), data.size(), 42);
    for (std::size_t piece : {1, 5, 31, 32, 33, 100}) {
        pg::io::Xxh64 h(42);
        for (std::size_t at = 0; at < data.size(); at += piece)
            h.update(data.data() + at, std::min(piece, data.size() - at));
        CHECK(h.digest() == whole);
    }
}

TEST_CASE("native round trip is bit-exact: raw and zstd, model and training state", "[io][checkpoint]") {
    auto model = make_model(small_config(), 7);
    const pg::TrainerState state = make_state(*model, 9);
    for (int level : {0, 1, 3, 19}) {
        INFO("compression level " << level);
        const std::vector<uint8_t> plain = encode(*model, nullptr, level);
        Loaded a = load_bytes(plain);
        REQUIRE(a.status == PG_OK);
        CHECK(same_model(*a.model, *model));
        CHECK_FALSE(a.has_state);

        const std::vector<uint8_t> with_state = encode(*model, &state, level);
        Loaded b = load_bytes(with_state, true);
        REQUIRE(b.status == PG_OK);
        CHECK(same_model(*b.model, *model));
        CHECK(b.has_state);
        CHECK(same_state(b.state, state));
        // The model-only reader accepts a checkpoint with training state and ignores it.
        Loaded c = load_bytes(with_state, false);
        REQUIRE(c.status == PG_OK);
        CHECK(same_model(*c.model, *model));
        // Asking for training state from a model-only file is a state error, not a guess.
        Loaded d = load_bytes(plain, true);
        CHECK(d.status == PG_ERR_STATE);
        CHECK_THAT(d.message, Catch::Contains("no training state"));
    }
    // A model without a tokenizer stays without one.
    auto bare = make_model(small_config(), 8, false);
    Loaded e = load_bytes(encode(*bare, nullptr, 0));
    REQUIRE(e.status == PG_OK);
    CHECK(e.model->tokenizer() == nullptr);
    CHECK(same_model(*e.model, *bare));
}

TEST_CASE("encoding is deterministic and zstd only ever shrinks real weights", "[io][checkpoint]") {
    auto model = make_model(pg::model_preset("tiny"), 3);
    CHECK(encode(*model, nullptr, 0) == encode(*model, nullptr, 0));
    CHECK(encode(*model, nullptr, 3) == encode(*model, nullptr, 3));
    CHECK(encode(*model, nullptr, 3).size() < encode(*model, nullptr, 0).size());
}

TEST_CASE("nearly constant data is stored raw so every file the writer makes loads", "[io][checkpoint]") {
    // All-zero weights compress beyond the reader's ratio cap; the writer falls back to raw.
    pg::Model zeros(pg::model_preset("tiny"));
    const std::vector<uint8_t> bytes = encode(zeros, nullptr, 19);
    CHECK((bytes[12] & 1) == 0);  // prelude flags: not compressed
    Loaded back = load_bytes(bytes);
    REQUIRE(back.status == PG_OK);
    CHECK(same_model(*back.model, zeros));
    // The same through a file: the temporary file is started over, not appended to.
    const std::string path = scratch_path("zeros.pgck");
    pg::io::save_checkpoint(zeros, nullptr, 19, path);
    CHECK(read_bytes(path) == bytes);
}

TEST_CASE("C API: save and load through files, options and argument checks", "[io][checkpoint][capi]") {
    pg_model_config cfg;
    REQUIRE(pg_model_config_preset("tiny", &cfg) == PG_OK);
    pg_model* model = nullptr;
    REQUIRE(pg_model_create(&cfg, 11, &model) == PG_OK);
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_tokenizer_create_char(kShakespeareChars, std::strlen(kShakespeareChars), &tok) == PG_OK);
    REQUIRE(pg_model_set_tokenizer(model, tok) == PG_OK);
    pg_tokenizer_free(tok);

    const std::string path = scratch_path("capi.pgck");
    pg_save_options opt;
    pg_save_options_default(&opt);
    CHECK(opt.struct_size == sizeof opt);
    CHECK(opt.compression_level == 0);
    for (int level : {0, 5}) {
        opt.compression_level = level;
        REQUIRE(pg_model_save(model, path.c_str(), &opt) == PG_OK);
        pg_model* back = nullptr;
        REQUIRE(pg_model_load(path.c_str(), &back) == PG_OK);
        const float *a, *b;
        int64_t na, nb;
        REQUIRE(pg_model_params(model, &a, &na) == PG_OK);
        REQUIRE(pg_model_params(back, &b, &nb) == PG_OK);
        REQUIRE(na == nb);
        CHECK(std::memcmp(a, b, std::size_t(na) * 4) == 0);
        const pg_tokenizer* t2 = nullptr;
        REQUIRE(pg_model_get_tokenizer(back, &t2) == PG_OK);
        REQUIRE(t2 != nullptr);
        int32_t v = 0;
        CHECK(pg_tokenizer_vocab_size(t2, &v) == PG_OK);
        CHECK(v == 65);
        pg_model_free(back);
    }
    REQUIRE(pg_model_save(model, path.c_str(), nullptr) == PG_OK);  // NULL options = defaults

    opt.compression_level = 20;
    CHECK(pg_model_save(model, path.c_str(), &opt) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("compression_level"));
    opt.compression_level = -1;
    CHECK(pg_model_save(model, path.c_str(), &opt) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_save(nullptr, path.c_str(), nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_save(model, nullptr, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_model_last_error(model), Catch::Contains("path"));
    pg_model* out = reinterpret_cast<pg_model*>(&cfg);
    CHECK(pg_model_load(nullptr, &out) == PG_ERR_INVALID_ARGUMENT);
    CHECK(out == nullptr);
    CHECK(pg_model_load(path.c_str(), nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_load(scratch_path("does-not-exist").c_str(), &out) == PG_ERR_IO);
    CHECK_THAT(pg_last_error(), Catch::Contains("does-not-exist"));
    CHECK(pg_model_load(pg_test::tmp_dir().c_str(), &out) == PG_ERR_IO);  // a folder
    CHECK(pg_model_save(model, (pg_test::tmp_dir() + "/no/such/folder/x").c_str(), nullptr) == PG_ERR_IO);
    CHECK(pg_model_save(model, (pg_test::tmp_dir() + "/").c_str(), nullptr) == PG_ERR_INVALID_ARGUMENT);
    pg_model_free(model);
}

TEST_CASE("a failed save leaves the previous checkpoint intact and no temporary file", "[io][checkpoint][atomic]") {
    FailureGuard guard;
    auto old_model = make_model(small_config(), 1);
    auto new_model = make_model(small_config(), 2);
    const std::string path = scratch_path("inject.pgck");
    pg::io::save_checkpoint(*old_model, nullptr, 0, path);
    const std::vector<uint8_t> old_bytes = read_bytes(path);
    using pg::io::testing::FailPoint;
    struct Case {
        FailPoint point;
        uint64_t after;
        int err;
    };
    for (int level : {0, 3}) {
        const std::size_t full = encode(*new_model, nullptr, level).size();
        std::vector<Case> cases = {{FailPoint::kWrite, 0, ENOSPC},        {FailPoint::kWrite, 1, ENOSPC},
                               {FailPoint::kWrite, 31, EIO},          {FailPoint::kWrite, 32, ENOSPC},
                               {FailPoint::kWrite, 100, EDQUOT},      {FailPoint::kWrite, full / 2, ENOSPC},
                               {FailPoint::kWrite, full - 1, ENOSPC}, {FailPoint::kFsync, 0, EIO},
                               {FailPoint::kRename, 0, EACCES}};
        for (const Case& c : cases) {
            INFO("fail point " << int(c.point) << " after " << c.after << " bytes, level " << level);
            pg::io::testing::inject_failure(c.point, c.after, c.err);
            try {
                pg::io::save_checkpoint(*new_model, nullptr, level, path);
                FAIL("the save should have failed");
            } catch (const pg::Error& e) {
                CHECK(e.status() == PG_ERR_IO);
                CHECK_THAT(e.what(), Catch::Contains(std::strerror(c.err)));
                CHECK_THAT(e.what(), Catch::Contains("unchanged"));
            }
            pg::io::testing::clear_failure();
            CHECK(read_bytes(path) == old_bytes);
            CHECK(count_files_with_prefix("io_inject.pgck.tmp") == 0);
        }
    }
    // Through the C API the failure is a status and a message on the model handle.
    pg_model_config cfg;
    pg_model_config_preset("tiny", &cfg);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&cfg, 5, &m) == PG_OK);
    pg::io::testing::inject_failure(FailPoint::kWrite, 1000, ENOSPC);
    CHECK(pg_model_save(m, path.c_str(), nullptr) == PG_ERR_IO);
    CHECK_THAT(pg_model_last_error(m), Catch::Contains("No space left"));
    pg::io::testing::clear_failure();
    CHECK(read_bytes(path) == old_bytes);
    pg_model_free(m);
    // Without an injection the new file replaces the old one.
    pg::io::save_checkpoint(*new_model, nullptr, 0, path);
    Loaded back = load_bytes(read_bytes(path));
    REQUIRE(back.status == PG_OK);
    CHECK(same_model(*back.model, *new_model));
}

TEST_CASE("a full disk (RLIMIT_FSIZE in a child) fails the save cleanly", "[io][checkpoint][atomic]") {
    auto old_model = make_model(small_config(), 1);
    const std::string path = scratch_path("fsize.pgck");
    pg::io::save_checkpoint(*old_model, nullptr, 0, path);
    const std::vector<uint8_t> old_bytes = read_bytes(path);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The file-size limit turns writes past 4 KB into EFBIG, as a full disk gives ENOSPC.
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &lim);
        pg_model_config cfg;
        pg_model_config_preset("tiny", &cfg);
        pg_model* m = nullptr;
        if (pg_model_create(&cfg, 2, &m) != PG_OK) _exit(10);
        const pg_status s = pg_model_save(m, path.c_str(), nullptr);
        const bool named = std::strstr(pg_last_error(), "File too large") != nullptr;
        _exit(s == PG_ERR_IO && named ? 0 : 11);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(read_bytes(path) == old_bytes);
    CHECK(count_files_with_prefix("io_fsize.pgck.tmp") == 0);
}

TEST_CASE("SIGKILL at 150 random points while saving: the file is always the old or the new model",
          "[io][checkpoint][atomic][kill]") {
    const auto cfg = small_config();
    auto a = make_model(cfg, 100);
    auto b = make_model(cfg, 200);
    const pg::TrainerState state = make_state(*a, 1);
    const std::string path = scratch_path("kill.pgck");
    pg::io::save_checkpoint(*a, nullptr, 0, path);
    std::mt19937 rng(20261130);
    int saw_a = 0, saw_b = 0, kills = 0;
    for (int round = 0; round < 150; ++round) {
        // Every tenth round (offset 5) puts the old model back and kills the child at once, long
        // before its first save (which fsyncs) can finish, so the old-model case is always seen.
        if (round % 10 == 5) pg::io::save_checkpoint(*a, nullptr, 0, path);
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            // Saves forever, alternating the two models, some with training state, some zstd.
            for (int i = 0;; ++i) {
                const pg::Model& m = (i % 2 == 0) ? *b : *a;
                try {
                    pg::io::save_checkpoint(m, (i % 3 == 0) ? &state : nullptr, (i % 4 == 1) ? 1 : 0, path);
                } catch (...) {
                    _exit(3);
                }
            }
        }
        if (round % 10 == 5) {
            // no delay: the old model put back before the fork must still be there
        } else if (round % 10 == 0) {
            // Every tenth round waits until the child's first save has replaced the file (a new
            // inode after the rename) and kills right then, so replacements are always
            // exercised however loaded the machine is and however late the child starts.
            const ino_t before = inode_of(path);
            for (int waited = 0; inode_of(path) == before && waited < 20000; ++waited)
                std::this_thread::sleep_for(std::chrono::microseconds(100));
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 15000)(rng)));
        }
        kill(child, SIGKILL);
        int status = 0;
        REQUIRE(waitpid(child, &status, 0) == child);
        REQUIRE(WIFSIGNALED(status));  // killed while saving, not exited
        ++kills;
        Loaded now = load_bytes(read_bytes(path));
        INFO("round " << round << ": " << now.message);
        REQUIRE(now.status == PG_OK);
        const bool is_a = same_model(*now.model, *a), is_b = same_model(*now.model, *b);
        REQUIRE((is_a || is_b));
        saw_a += is_a;
        saw_b += is_b;
    }
    // Killed processes leave their temporary files behind; they never replace the checkpoint.
    DIR* d = opendir(pg_test::tmp_dir().c_str());
    while (dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n.rfind("io_kill.pgck.tmp-", 0) == 0) ::unlink((pg_test::tmp_dir() + "/" + n).c_str());
    }
    closedir(d);
    WARN("kill test: " << kills << " kills, checkpoint was the old model " << saw_a << " times, the new one "
                       << saw_b << " times");
    CHECK(kills == 150);
    CHECK(saw_a > 0);
    CHECK(saw_b > 0);
}
