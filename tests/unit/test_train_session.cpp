// Training sessions (pg_train_session_*): a run killed with SIGKILL at random moments (while
// stepping or while writing a checkpoint) and created again over its checkpoint until it is
// complete ends with the same checkpoint file, byte for byte, as the uninterrupted run and as a
// plain trainer's N steps; budgets, cancel from another thread, the conditions policy and the
// refusals name what is wrong.
#include <catch2/catch.hpp>

#include <signal.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "fake_sysfs.hpp"
#include "test_support.hpp"

namespace {

constexpr int kSteps = 24;

std::vector<int32_t> tokens() {
    std::vector<int32_t> data;
    for (int i = 0; i < 3000; ++i) data.push_back(int32_t((i * 7) % 13 + (i % 5)));
    return data;
}

pg_train_config train_config() {
    pg_train_config c;
    pg_train_config_default(&c);
    c.batch_size = 2;
    c.seq_len = 16;
    c.warmup_steps = 3;
    c.total_steps = kSteps;
    c.lr_max = 3e-3f;
    c.dropout = 0.1f;
    c.seed = 5;
    c.n_threads = 2;
    return c;
}

pg_train_session_config session_config() {
    pg_train_session_config c;
    pg_train_session_config_default(&c);
    c.checkpoint_every_steps = 1;  // most kills land in a step or in a checkpoint's write
    c.checkpoint_every_ms = 0;
    return c;
}

std::string read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

pg_model* tiny_model() {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, 11, &m) == PG_OK);
    return m;
}

pg_lora_adapter* tiny_adapter(const pg_model* base) {
    pg_lora_config c;
    pg_lora_config_default(&c);
    c.rank = 4;
    c.target_modules = PG_LORA_ALL_LINEARS;
    pg_lora_adapter* a = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &c, &a) == PG_OK);
    return a;
}

// One process's life: a session over `path` run to the end (or until killed). Returns the
// run's status; in a forked child nothing here may use Catch.
pg_status run_session(bool lora, const std::string& path, pg_train_session_report* report) {
    pg_model_config mc;
    pg_model_config_preset("tiny", &mc);
    pg_model* model = nullptr;
    if (pg_model_create(&mc, 11, &model) != PG_OK) return PG_ERR_INTERNAL;
    pg_model_allow_untrained_base(model, 1);
    pg_lora_adapter* adapter = nullptr;
    pg_train_session* s = nullptr;
    const pg_train_config tc = train_config();
    const pg_train_session_config sc = session_config();
    pg_status st;
    if (lora) {
        pg_lora_config c;
        pg_lora_config_default(&c);
        c.rank = 4;
        c.target_modules = PG_LORA_ALL_LINEARS;
        st = pg_lora_adapter_create(model, &c, &adapter);
        if (st == PG_OK) st = pg_train_session_create_lora(model, adapter, &tc, &sc, path.c_str(), &s);
    } else {
        st = pg_train_session_create(model, &tc, &sc, path.c_str(), &s);
    }
    const std::vector<int32_t> data = tokens();
    if (st == PG_OK) st = pg_train_session_set_data(s, data.data(), data.size());
    if (st == PG_OK) st = pg_train_session_run(s, report);
    pg_train_session_free(s);
    pg_lora_adapter_free(adapter);
    pg_model_free(model);
    return st;
}

// CPU time of the whole process (every thread), in microseconds: a child's starts at 0.
int64_t process_cpu_us() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// Reads a file's bytes into out; false when there is no such file.
bool file_bytes(const std::string& path, std::string& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return true;
}

void put_file_bytes(const std::string& path, bool present, const std::string& bytes) {
    if (!present) {
        std::remove(path.c_str());
        return;
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

// Forks runs that kill themselves with SIGKILL once they have used a random amount of CPU time
// in [0, span_us) (so the moment is random in the run's own progress, whatever the machine's
// load), kMaxKills times, then lets one finish; returns how many were killed. A run that ends
// before its moment came is undone (the checkpoint file put back as it was) and drawn again
// within the CPU time that run took, so the kills land however little work was left.
int run_with_kills(bool lora, const std::string& path, uint32_t seed, int64_t span_us) {
    constexpr int kMaxKills = 10, kMaxRuns = 60;
    std::mt19937 rng(seed);
    int kills = 0;
    for (int run = 0; run < kMaxRuns; ++run) {
        const bool last = kills == kMaxKills;
        const int64_t kill_at = last ? -1 : std::uniform_int_distribution<int64_t>(0, span_us)(rng);
        std::string before;
        const bool had_file = file_bytes(path, before);
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            if (kill_at >= 0) {
                std::thread([kill_at] {
                    while (process_cpu_us() < kill_at) std::this_thread::sleep_for(std::chrono::microseconds(20));
                    kill(getpid(), SIGKILL);
                }).detach();
            }
            pg_train_session_report r;
            r.struct_size = sizeof r;
            const pg_status st = run_session(lora, path, &r);
            _exit(st == PG_OK && r.stop == PG_TRAIN_STOP_STEPS ? 0 : 3);
        }
        int status = 0;
        rusage usage{};
        REQUIRE(wait4(pid, &status, 0, &usage) == pid);
        if (WIFEXITED(status)) {
            REQUIRE(WEXITSTATUS(status) == 0);
            if (last) return kills;
            // It finished before its moment: undo it, and draw within the time it took.
            put_file_bytes(path, had_file, before);
            const int64_t used_us = int64_t(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000 +
                                    usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
            span_us = std::max<int64_t>(1, used_us * 9 / 10);
            continue;
        }
        REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
        ++kills;
    }
    FAIL("the run did not finish within " << kMaxRuns << " runs");
    return kills;
}

// The CPU time run_session takes to the end, in microseconds.
int64_t timed_run(bool lora, const std::string& path) {
    pg_train_session_report r;
    r.struct_size = sizeof r;
    const int64_t t0 = process_cpu_us();
    REQUIRE(run_session(lora, path, &r) == PG_OK);
    REQUIRE(r.stop == PG_TRAIN_STOP_STEPS);
    REQUIRE(r.step == kSteps);
    REQUIRE(r.checkpoint_step == kSteps);
    return process_cpu_us() - t0;
}

void remove_file(const std::string& p) { std::remove(p.c_str()); }

}  // namespace

TEST_CASE("a full-training session killed at random moments ends bit for bit as the uninterrupted run",
          "[train_session]") {
    const std::string straight = pg_test::tmp_dir() + "/session_full_straight.pgc";
    const std::string killed = pg_test::tmp_dir() + "/session_full_killed.pgc";
    const std::string trainer_file = pg_test::tmp_dir() + "/session_full_trainer.pgc";
    remove_file(straight);
    remove_file(killed);
    const int64_t span_us = timed_run(false, straight);

    // The session is the trainer's run: the same N steps through pg_trainer_step.
    pg_model* m = tiny_model();
    const pg_train_config tc = train_config();
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
    const std::vector<int32_t> data = tokens();
    REQUIRE(pg_trainer_set_data(t, data.data(), data.size()) == PG_OK);
    for (int i = 0; i < kSteps; ++i) REQUIRE(pg_trainer_step(t, nullptr) == PG_OK);
    REQUIRE(pg_trainer_save(t, trainer_file.c_str(), nullptr) == PG_OK);
    pg_trainer_free(t);
    pg_model_free(m);
    CHECK(read_bytes(trainer_file) == read_bytes(straight));

    const int kills = run_with_kills(false, killed, 20261207, span_us * 4 / 5);
    INFO("kills: " << kills);
    CHECK(kills >= 3);
    CHECK(read_bytes(killed) == read_bytes(straight));
    remove_file(straight);
    remove_file(killed);
    remove_file(trainer_file);
}

TEST_CASE("a LoRA session killed at random moments ends bit for bit as the uninterrupted run", "[train_session]") {
    const std::string straight = pg_test::tmp_dir() + "/session_lora_straight.pgl";
    const std::string killed = pg_test::tmp_dir() + "/session_lora_killed.pgl";
    remove_file(straight);
    remove_file(killed);
    const int64_t span_us = timed_run(true, straight);
    const int kills = run_with_kills(true, killed, 7, span_us * 4 / 5);
    INFO("kills: " << kills);
    CHECK(kills >= 3);
    CHECK(read_bytes(killed) == read_bytes(straight));
    remove_file(straight);
    remove_file(killed);
}

TEST_CASE("a session stops at its time budget, at a cancel from another thread, and checkpoints",
          "[train_session]") {
    const std::string path = pg_test::tmp_dir() + "/session_budget.pgc";
    remove_file(path);
    pg_model* m = tiny_model();
    pg_train_config tc = train_config();
    tc.total_steps = 1000000;
    pg_train_session_config sc;
    pg_train_session_config_default(&sc);
    sc.time_budget_ms = 60;
    pg_train_session* s = nullptr;
    REQUIRE(pg_train_session_create(m, &tc, &sc, path.c_str(), &s) == PG_OK);
    pg_train_session_report r;
    r.struct_size = sizeof r;
    CHECK(pg_train_session_run(s, &r) == PG_ERR_STATE);  // no data yet
    CHECK(std::string(pg_train_session_last_error(s)).find("data") != std::string::npos);
    const std::vector<int32_t> data = tokens();
    REQUIRE(pg_train_session_set_data(s, data.data(), data.size()) == PG_OK);
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(pg_train_session_run(s, &r) == PG_OK);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    CHECK(r.stop == PG_TRAIN_STOP_TIME);
    CHECK(r.steps_run > 0);
    CHECK(r.checkpoint_step == r.step);
    CHECK(ms < 2000);
    CHECK(r.tokens_per_second > 0);
    int32_t n = 0;
    REQUIRE(pg_train_session_core_rates(s, nullptr, nullptr, 0, &n) == PG_ERR_BUFFER_TOO_SMALL);
    REQUIRE(n == 1);
    int32_t capacity = 0;
    double rate = 0;
    REQUIRE(pg_train_session_core_rates(s, &capacity, &rate, 1, &n) == PG_OK);
    CHECK(capacity == -1);  // not pinned (PG_PIN_THREADS unset, or equal cores)
    CHECK(rate >= r.tokens_per_second);
    pg_train_session_free(s);

    // Cancel from another thread, with no time budget: the run stops after its current step.
    sc.time_budget_ms = 0;
    REQUIRE(pg_train_session_create(m, &tc, &sc, path.c_str(), &s) == PG_OK);  // resumes the file
    REQUIRE(pg_train_session_get_report(s, &r) == PG_OK);
    const int64_t resumed_at = r.step;
    CHECK(resumed_at > 0);
    REQUIRE(pg_train_session_set_data(s, data.data(), data.size()) == PG_OK);
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
        CHECK(pg_train_session_cancel(s) == PG_OK);
    });
    REQUIRE(pg_train_session_run(s, &r) == PG_OK);
    canceller.join();
    CHECK(r.stop == PG_TRAIN_STOP_CANCELLED);
    CHECK(r.step > resumed_at);
    CHECK(r.checkpoint_step == r.step);
    pg_train_session_free(s);
    pg_model_free(m);
    remove_file(path);
}

TEST_CASE("the conditions policy pauses, throttles and resumes a session", "[train_session]") {
    const std::string path = pg_test::tmp_dir() + "/session_conditions.pgc";
    remove_file(path);
    pg_model* m = tiny_model();
    pg_train_config tc = train_config();
    tc.total_steps = 1000000;
    pg_train_session_config sc;
    pg_train_session_config_default(&sc);
    sc.time_budget_ms = 150;
    sc.throttle_sleep_ms = 20;
    pg_train_session* s = nullptr;
    REQUIRE(pg_train_session_create(m, &tc, &sc, path.c_str(), &s) == PG_OK);
    const std::vector<int32_t> data = tokens();
    REQUIRE(pg_train_session_set_data(s, data.data(), data.size()) == PG_OK);
    pg_device_conditions c;
    pg_device_conditions_default(&c);
    pg_train_session_report r;
    r.struct_size = sizeof r;

    // Hot: paused for the whole budget.
    c.thermal_status = PG_THERMAL_SEVERE;
    REQUIRE(pg_train_session_set_conditions(s, &c) == PG_OK);
    REQUIRE(pg_train_session_run(s, &r) == PG_OK);
    CHECK(r.stop == PG_TRAIN_STOP_TIME);
    CHECK(r.steps_run == 0);
    CHECK(r.paused_ms >= 100);

    // Low battery, not charging: paused too, until another thread reports the charger.
    c.thermal_status = PG_THERMAL_NONE;
    c.battery_percent = 10;
    c.charging = 0;
    REQUIRE(pg_train_session_set_conditions(s, &c) == PG_OK);
    std::thread charger([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        pg_device_conditions plugged = c;
        plugged.charging = 1;
        CHECK(pg_train_session_set_conditions(s, &plugged) == PG_OK);
    });
    REQUIRE(pg_train_session_run(s, &r) == PG_OK);
    charger.join();
    CHECK(r.paused_ms >= 30);
    CHECK(r.steps_run > 0);
    CHECK(r.threads == 2);

    // Moderate: one thread and 20 ms between steps.
    c.charging = 1;
    c.thermal_status = PG_THERMAL_MODERATE;
    REQUIRE(pg_train_session_set_conditions(s, &c) == PG_OK);
    REQUIRE(pg_train_session_run(s, &r) == PG_OK);
    CHECK(r.threads == 1);
    CHECK(r.steps_run >= 1);
    CHECK(r.steps_run <= 8);  // 150 ms with 20 ms between steps
    CHECK(r.paused_ms == 0);

    c.thermal_status = 9;
    CHECK(pg_train_session_set_conditions(s, &c) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("thermal_status") != std::string::npos);
    pg_train_session_free(s);
    pg_model_free(m);
    remove_file(path);
}

TEST_CASE("session creation refuses bad configurations and checkpoints of another run", "[train_session]") {
    const std::string path = pg_test::tmp_dir() + "/session_refusals.pgc";
    remove_file(path);
    pg_model* m = tiny_model();
    pg_train_config tc = train_config();
    pg_train_session_config sc = session_config();
    pg_train_session* s = nullptr;

    sc.pause_thermal = PG_THERMAL_LIGHT;  // below throttle_thermal (MODERATE)
    CHECK(pg_train_session_create(m, &tc, &sc, path.c_str(), &s) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("pause_thermal") != std::string::npos);
    CHECK(s == nullptr);
    sc = session_config();
    CHECK(pg_train_session_create(m, &tc, &sc, nullptr, &s) == PG_ERR_INVALID_ARGUMENT);

    // A checkpoint of this run, then a session with another learning rate over it.
    REQUIRE(pg_train_session_create(m, &tc, &sc, path.c_str(), &s) == PG_OK);
    const std::vector<int32_t> data = tokens();
    REQUIRE(pg_train_session_set_data(s, data.data(), data.size()) == PG_OK);
    pg_train_session_config stop_early = sc;
    pg_train_session_free(s);
    stop_early.max_steps = 2;
    REQUIRE(pg_train_session_create(m, &tc, &stop_early, path.c_str(), &s) == PG_OK);
    REQUIRE(pg_train_session_set_data(s, data.data(), data.size()) == PG_OK);
    REQUIRE(pg_train_session_run(s, nullptr) == PG_OK);
    pg_train_session_free(s);
    pg_train_config other = tc;
    other.lr_max = 1e-2f;
    CHECK(pg_train_session_create(m, &other, &sc, path.c_str(), &s) == PG_ERR_STATE);
    CHECK(std::string(pg_last_error()).find("lr_max") != std::string::npos);
    other = tc;
    other.n_threads = 1;  // the thread count may change
    REQUIRE(pg_train_session_create(m, &other, &sc, path.c_str(), &s) == PG_OK);
    pg_train_session_report r;
    r.struct_size = sizeof r;
    REQUIRE(pg_train_session_get_report(s, &r) == PG_OK);
    CHECK(r.step == 2);
    CHECK(r.threads == 1);
    pg_train_session_free(s);

    // Another geometry over the file, and a model file without training state.
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    mc.n_layer += 1;
    pg_model* bigger = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &bigger) == PG_OK);
    CHECK(pg_train_session_create(bigger, &tc, &sc, path.c_str(), &s) == PG_ERR_GEOMETRY);
    CHECK(std::string(pg_last_error()).find("n_layer") != std::string::npos);
    pg_model_free(bigger);
    REQUIRE(pg_model_save(m, path.c_str(), nullptr) == PG_OK);
    CHECK(pg_train_session_create(m, &tc, &sc, path.c_str(), &s) == PG_ERR_STATE);
    CHECK(std::string(pg_last_error()).find("no training state") != std::string::npos);

    // A LoRA checkpoint of another rank.
    const std::string lora_path = pg_test::tmp_dir() + "/session_refusals.pgl";
    remove_file(lora_path);
    REQUIRE(pg_model_allow_untrained_base(m, 1) == PG_OK);
    pg_lora_adapter* a = tiny_adapter(m);
    REQUIRE(pg_train_session_create_lora(m, a, &tc, &stop_early, lora_path.c_str(), &s) == PG_OK);
    REQUIRE(pg_train_session_set_data(s, data.data(), data.size()) == PG_OK);
    REQUIRE(pg_train_session_run(s, nullptr) == PG_OK);
    pg_train_session_free(s);
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    lc.rank = 2;
    pg_lora_adapter* other_rank = nullptr;
    REQUIRE(pg_lora_adapter_create(m, &lc, &other_rank) == PG_OK);
    CHECK(pg_train_session_create_lora(m, other_rank, &tc, &sc, lora_path.c_str(), &s) == PG_ERR_GEOMETRY);
    CHECK(std::string(pg_last_error()).find("rank") != std::string::npos);
    pg_lora_adapter_free(other_rank);
    pg_lora_adapter_free(a);

    pg_train_session_free(nullptr);
    CHECK(pg_train_session_cancel(nullptr) == PG_ERR_INVALID_ARGUMENT);
    pg_model_free(m);
    remove_file(path);
    remove_file(lora_path);
}

TEST_CASE("tokens per second are reported per core class of the pinned threads", "[train_session]") {
    // A fake two-class phone (cpu0 big, cpu1 little) with PG_PIN_THREADS=big: 2 threads need both
    // classes (not pinned, -1); throttled to 1 thread they are pinned to the big core (1024).
    const pg_test::ScopedEnv root("PG_SYSFS_CPU_ROOT",
                                  pg_test::fake_sysfs("sysfs-session", {{0x411fd440, 1024}, {0x411fd050, 512}}).c_str());
    const pg_test::ScopedEnv pin("PG_PIN_THREADS", "big");
    const std::string path = pg_test::tmp_dir() + "/session_core_rates.pgc";
    remove_file(path);
    // On a thread of its own: pinning the calling thread (the pool's worker 0) lasts.
    std::thread([&] {
        pg_model* m = tiny_model();
        pg_train_config tc = train_config();
        tc.total_steps = 1000000;
        pg_train_session_config sc;
        pg_train_session_config_default(&sc);
        sc.time_budget_ms = 80;
        sc.throttle_sleep_ms = 0;
        pg_train_session* s = nullptr;
        REQUIRE(pg_train_session_create(m, &tc, &sc, path.c_str(), &s) == PG_OK);
        const std::vector<int32_t> data = tokens();
        REQUIRE(pg_train_session_set_data(s, data.data(), data.size()) == PG_OK);
        REQUIRE(pg_train_session_run(s, nullptr) == PG_OK);
        pg_device_conditions c;
        pg_device_conditions_default(&c);
        c.thermal_status = PG_THERMAL_MODERATE;
        REQUIRE(pg_train_session_set_conditions(s, &c) == PG_OK);
        REQUIRE(pg_train_session_run(s, nullptr) == PG_OK);
        int32_t caps[4] = {0, 0, 0, 0};
        double rates[4] = {0, 0, 0, 0};
        int32_t n = 0;
        REQUIRE(pg_train_session_core_rates(s, caps, rates, 4, &n) == PG_OK);
        REQUIRE(n == 2);
        CHECK(caps[0] == 1024);
        CHECK(caps[1] == -1);
        CHECK(rates[0] > 0);
        CHECK(rates[1] > 0);
        pg_train_session_free(s);
        pg_model_free(m);
    }).join();
    remove_file(path);
}
