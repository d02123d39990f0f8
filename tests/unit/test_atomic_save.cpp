// Saving on a phone that kills apps without warning: a fault injected at each step of a save
// (write, fsync, close, rename, folder fsync) gives PG_ERR_IO with exactly the documented
// outcome, and the temporary files of killed writers do not pile up: the next save into the
// folder, or a load from it, removes them, never a live writer's.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/file_io.hpp"
#include "lora/adapter_file.hpp"
#include "test_checkpoint_support.hpp"

using namespace ckpt_test;

namespace {

struct FailureGuard {
    ~FailureGuard() { pg::io::testing::clear_failure(); }
};

// A fresh, empty folder under the scratch folder.
std::string fresh_folder(const std::string& name) {
    const std::string dir = pg_test::tmp_dir() + "/atomic_" + name;
    ::mkdir(dir.c_str(), 0777);
    if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d))
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                ::unlink((dir + "/" + e->d_name).c_str());
        ::closedir(d);
    }
    return dir;
}

std::set<std::string> names_in(const std::string& dir) {
    std::set<std::string> names;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d))
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.insert(e->d_name);
        ::closedir(d);
    }
    return names;
}

// Files named like AtomicFileWriter's temporaries ("<name>.tmp-<pid>-<n>").
int temporaries_in(const std::string& dir) {
    const std::regex temporary(".+\\.tmp-[0-9]+-[0-9]+");
    int n = 0;
    for (const std::string& name : names_in(dir)) n += std::regex_match(name, temporary);
    return n;
}

bool has_temporary_of(const std::string& dir, pid_t pid) {
    const std::string tag = ".tmp-" + std::to_string(pid) + "-";
    for (const std::string& name : names_in(dir))
        if (name.find(tag) != std::string::npos) return true;
    return false;
}

void touch(const std::string& path, const char* text = "partial checkpoint") {
    write_bytes(path, std::vector<uint8_t>(text, text + std::strlen(text)));
}

// A pid that no process holds: a child that exited and was reaped.
pid_t dead_pid() {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    return child;
}

struct Kills {
    int left_temporary = 0;   // rounds whose killed child left its temporary file behind
    bool last_left = false;   // the last round did
};

// Children that save `path` in a loop and are SIGKILLed mid-save, `rounds` times; each kill
// comes after a random delay from the child's first temporary file, at a moment when the child
// has one (so most kills leave one behind, on a loaded machine too, where a save may end within
// the delay and the kill would otherwise come between two saves). Each child's own first save
// removes the temporaries of the children killed before it. `save(i)` is the child's i-th save
// into `path`.
Kills kill_saves_with(const std::string& path, int rounds, std::mt19937& rng, const std::function<void(int)>& save) {
    Kills kills;
    const std::string dir = pg::io::parent_folder(path);
    auto wait_for_temporary = [&](pid_t child) {
        for (int waited = 0; !has_temporary_of(dir, child) && waited < 20000; ++waited)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    };
    for (int round = 0; round < rounds; ++round) {
        const pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            for (int i = 0;; ++i) {
                try {
                    save(i);
                } catch (...) {
                    _exit(3);
                }
            }
        }
        wait_for_temporary(child);
        std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 2000)(rng)));
        wait_for_temporary(child);
        ::kill(child, SIGKILL);
        int status = 0;
        REQUIRE(waitpid(child, &status, 0) == child);
        REQUIRE(WIFSIGNALED(status));
        kills.last_left = has_temporary_of(dir, child);
        kills.left_temporary += kills.last_left;
    }
    return kills;
}

// Checkpoint saves of two models, compressed and not.
Kills kill_saves(const std::string& path, int rounds, std::mt19937& rng) {
    auto a = make_model(small_config(), 11), b = make_model(small_config(), 12);
    return kill_saves_with(path, rounds, rng, [&](int i) {
        pg::io::save_checkpoint(i % 2 ? *a : *b, nullptr, i % 3 == 1 ? 1 : 0, path);
    });
}

}  // namespace

TEST_CASE("a fault at each step of a save: the previous file untouched, or the new one complete",
          "[io][atomic]") {
    FailureGuard guard;
    using pg::io::testing::FailPoint;
    auto old_model = make_model(small_config(), 1), new_model = make_model(small_config(), 2);
    const std::string dir = fresh_folder("faults"), path = dir + "/model.pgck";
    struct Case {
        const char* step;  // as the message names it
        FailPoint point;
        int err;
        bool replaced;  // only a failing folder fsync comes after the rename
    };
    const Case cases[] = {{"write", FailPoint::kWrite, ENOSPC, false}, {"fsync", FailPoint::kFsync, EIO, false},
                          {"close", FailPoint::kClose, EIO, false},    {"rename", FailPoint::kRename, EACCES, false},
                          {"fsync its folder", FailPoint::kFolderFsync, EIO, true}};
    for (const Case& c : cases) {
        INFO("failing step: " << c.step);
        pg::io::save_checkpoint(*old_model, nullptr, 0, path);
        const std::vector<uint8_t> old_bytes = read_bytes(path), new_bytes = encode(*new_model, nullptr, 0);
        REQUIRE(old_bytes != new_bytes);
        pg::io::testing::inject_failure(c.point, 100, c.err);
        std::string message;
        pg_status status = PG_OK;
        try {
            pg::io::save_checkpoint(*new_model, nullptr, 0, path);
        } catch (const pg::Error& e) {
            status = e.status();
            message = e.what();
        }
        pg::io::testing::clear_failure();
        CHECK(status == PG_ERR_IO);
        CHECK_THAT(message, Catch::Contains(std::strerror(c.err)));
        CHECK_THAT(message, Catch::Contains(c.step));
        if (c.replaced) {
            CHECK_THAT(message, Catch::Contains("complete and in place"));
            CHECK(read_bytes(path) == new_bytes);
        } else {
            CHECK_THAT(message, Catch::Contains("previous file, if any, is unchanged"));
            CHECK(read_bytes(path) == old_bytes);
        }
        CHECK(temporaries_in(dir) == 0);
    }
    // Through the C API: the status and the handle's message.
    pg_model_config cfg;
    REQUIRE(pg_model_config_preset("tiny", &cfg) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&cfg, 5, &m) == PG_OK);
    const std::vector<uint8_t> before = read_bytes(path);
    pg::io::testing::inject_failure(FailPoint::kClose, 0, EIO);
    CHECK(pg_model_save(m, path.c_str(), nullptr) == PG_ERR_IO);
    CHECK_THAT(pg_model_last_error(m), Catch::Contains("close"));
    pg::io::testing::clear_failure();
    CHECK(read_bytes(path) == before);
    pg_model_free(m);
}

TEST_CASE("temporaries of killed saves are removed by the next save or load, live writers' never",
          "[io][atomic][kill]") {
    std::mt19937 rng(20261201);
    const std::string dir = fresh_folder("stale"), path = dir + "/model.pgck";
    auto model = make_model(small_config(), 3);
    pg::io::save_checkpoint(*model, nullptr, 0, path);

    // Killed saves leave temporaries, but they do not pile up: only the last one is left.
    const Kills kills = kill_saves(path, 12, rng);
    INFO("killed saves that left a temporary: " << kills.left_temporary << " of 12");
    CHECK(kills.left_temporary >= 6);
    CHECK(temporaries_in(dir) == int(kills.last_left));

    // Live writers: an uncommitted save in this process, and a living process of ours whose
    // temporary was written after it started. Gone ones: a reaped pid, and that living
    // process's pid on a file last written long before the process started (a reused pid).
    pg::io::AtomicFileWriter live_here(dir + "/other.pgck");
    live_here.write("x", 1);
    const pid_t sleeper = fork();
    REQUIRE(sleeper >= 0);
    if (sleeper == 0) {
        ::pause();
        _exit(0);
    }
    const std::string live_there = "model.pgck.tmp-" + std::to_string(sleeper) + "-0";
    const std::string reused = "old.pgck.tmp-" + std::to_string(sleeper) + "-7";
    const std::string dead = "model.pgck.tmp-" + std::to_string(dead_pid()) + "-3";
    touch(dir + "/" + live_there);
    touch(dir + "/" + reused);
    const struct timeval long_ago[2] = {{978307200, 0}, {978307200, 0}};  // 2001-01-01
    REQUIRE(::utimes((dir + "/" + reused).c_str(), long_ago) == 0);
    touch(dir + "/" + dead);
    // Names that only look like temporaries are never touched.
    const char* lookalikes[] = {"notes.tmp-12x-3", ".tmp-1-2", "model.pgck.tmp-", "model.pgck.tmp-5-", "a.tmp--5-1",
                                "a.tmp-+5-1"};
    for (const char* name : lookalikes) touch(dir + "/" + name);

    // The next save into the folder (another file) removes every gone writer's temporary.
    pg::io::save_checkpoint(*model, nullptr, 0, dir + "/next.pgck");
    const std::set<std::string> after_save = names_in(dir);
    std::set<std::string> want = {"model.pgck", "next.pgck", live_there,
                                  pg::io::parent_folder(live_here.temp_path()) == dir
                                      ? live_here.temp_path().substr(dir.size() + 1)
                                      : std::string("?")};
    for (const char* name : lookalikes) want.insert(name);
    CHECK(after_save == want);

    // More killed saves and gone writers' files, then a load cleans up as well.
    const Kills more = kill_saves(path, 4, rng);
    touch(dir + "/model.pgck.tmp-" + std::to_string(dead_pid()) + "-9");
    CHECK(temporaries_in(dir) == 3 + int(more.last_left));  // two live writers', one gone
    pg_model* loaded = nullptr;
    REQUIRE(pg_model_load(path.c_str(), &loaded) == PG_OK);
    pg_model_free(loaded);
    CHECK(names_in(dir) == want);

    ::kill(sleeper, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(sleeper, &status, 0) == sleeper);
    // Its writer now gone, the sleeper's temporary goes with the next save too.
    pg::io::save_checkpoint(*model, nullptr, 0, path);
    CHECK(names_in(dir).count(live_there) == 0);
}

TEST_CASE("killed adapter saves never leave a broken adapter file, and their temporaries do not pile up",
          "[io][atomic][kill][lora]") {
    std::mt19937 rng(20261202);
    const std::string dir = fresh_folder("stale_adapter"), path = dir + "/adapter.safetensors";
    auto base = make_model(small_config(), 3);
    pg::lora::LoraConfig cfg;
    cfg.rank = 2;
    cfg.target_modules = PG_LORA_ALL_LINEARS;
    const pg::lora::Adapter a = pg::lora::Adapter::create(*base, cfg);
    cfg.init_seed = 99;
    const pg::lora::Adapter b = pg::lora::Adapter::create(*base, cfg);
    pg::lora::save_adapter(a, path);
    // A small adapter's save is quick, so even a kill while a temporary exists may come after
    // the save's rename: kill until five kills have caught a save midway (a temporary left),
    // 200 at most.
    Kills kills;
    int rounds = 0;
    while (kills.left_temporary < 5 && rounds < 200) {
        const Kills one = kill_saves_with(path, 1, rng, [&](int i) { pg::lora::save_adapter(i % 2 ? a : b, path); });
        kills.left_temporary += one.left_temporary;
        kills.last_left = one.last_left;
        ++rounds;
    }
    INFO("killed adapter saves that left a temporary: " << kills.left_temporary << " of " << rounds);
    CHECK(kills.left_temporary >= 5);
    CHECK(temporaries_in(dir) == int(kills.last_left));  // each save removed the ones before it
    // The file is always one of the two adapters whole; loading it removes the last temporary.
    const pg::lora::Adapter back = pg::lora::load_adapter(path);
    CHECK((pg::lora::same_adapter(back, a) || pg::lora::same_adapter(back, b)));
    CHECK(names_in(dir) == std::set<std::string>{"adapter.safetensors"});
}
