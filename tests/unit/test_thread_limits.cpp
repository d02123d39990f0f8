// Thread counts: one cap for every entry point (phonegpt.h, "Thread counts"), and a thread that
// cannot start is PG_ERR_OUT_OF_MEMORY, never a deadlock. The limits are set in a forked child
// (RLIMIT_NPROC as an unprivileged user, RLIMIT_AS), bounded by alarm(): a hang is a child
// killed by SIGALRM, which fails the test instead of stopping the suite.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "phonegpt/phonegpt.h"
#include "sanitized.hpp"

#if defined(__linux__)
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "session_calls.hpp"
#endif

namespace {

pg_model* tiny_model() {
    pg_model_config mc;
    if (pg_model_config_preset("tiny", &mc) != PG_OK) return nullptr;
    pg_model* m = nullptr;
    return pg_model_create(&mc, 3, &m) == PG_OK ? m : nullptr;
}

#if defined(__linux__)
// Runs body in a forked child under a 30 s alarm; the child's exit code is body's result
// (0 = all held; it prints what failed). Returns a description of how the child ended.
template <class Body>
std::string in_child(Body body) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        _exit(body());
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return "fork/waitpid failed";
    if (WIFSIGNALED(status))
        return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) +
               (WTERMSIG(status) == SIGALRM ? " (hung: the 30 s alarm fired)" : "");
    return "exit " + std::to_string(WEXITSTATUS(status));
}

// The pool and a session each asked for the cap: started threads, then a failed one. Both must
// throw / return PG_ERR_OUT_OF_MEMORY naming the thread, and the process must go on.
int expect_clean_failures(const char* limit) {
    int failures = 0;
    try {
        pg::ThreadPool pool(pg::ThreadPool::max_threads());
        std::fprintf(stderr, "%s: a pool of %d threads started\n", limit, pool.size());
        ++failures;
    } catch (const pg::Error& e) {
        if (e.status() != PG_ERR_OUT_OF_MEMORY || !std::strstr(e.what(), "could not start thread")) {
            std::fprintf(stderr, "%s: pool error %d: %s\n", limit, int(e.status()), e.what());
            ++failures;
        }
    }
    pg_model* m = tiny_model();
    if (!m) return 100;
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.n_threads = 100000;
    pg_session* s = nullptr;
    const pg_status st = pg_session_create(m, &sc, &s);
    if (st != PG_ERR_OUT_OF_MEMORY || s != nullptr || !std::strstr(pg_last_error(), "could not start thread")) {
        std::fprintf(stderr, "%s: pg_session_create gave %s: %s\n", limit, pg_status_name(st), pg_last_error());
        ++failures;
    }
    // One thread needs no new thread: the process still works.
    sc.n_threads = 1;
    if (pg_session_create(m, &sc, &s) != PG_OK) {
        std::fprintf(stderr, "%s: a 1-thread session failed: %s\n", limit, pg_last_error());
        ++failures;
    }
    pg_session_free(s);
    pg_model_free(m);
    return failures;
}
#endif

}  // namespace

TEST_CASE("thread counts: every entry point caps at min(4 x cores, 256)", "[threads][capi]") {
    const int cap = pg::ThreadPool::max_threads();
    CHECK(cap == std::min(256, 4 * pg::ThreadPool::hardware_threads()));
    CHECK(pg::ThreadPool::resolve(0) == pg::ThreadPool::hardware_threads());
    CHECK(pg::ThreadPool::resolve(-7) == pg::ThreadPool::hardware_threads());
    CHECK(pg::ThreadPool::resolve(1) == 1);
    CHECK(pg::ThreadPool::resolve(100000) == cap);
    CHECK(pg::ThreadPool(100000).size() == cap);

    pg_model* m = tiny_model();
    REQUIRE(m);
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.n_threads = 100000;
    pg_session* s = nullptr;
    REQUIRE(pg_session_create(m, &sc, &s) == PG_OK);
    int32_t n = 0;
    REQUIRE(pg_session_n_threads(s, &n) == PG_OK);
    CHECK(n == cap);
    pg_session_free(s);

    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 2;
    tc.n_threads = 1024;  // the trainer's field limit, then capped
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
    REQUIRE(pg_trainer_n_threads(t, &n) == PG_OK);
    CHECK(n == cap);
    pg_trainer_free(t);

    // The one-call entry points build their session by the same rule: 100000 asked, a result.
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    std::vector<int32_t> tokens(size_t(mc.n_ctx), 1);
    std::vector<float> logits(size_t(mc.n_ctx) * size_t(mc.vocab_size));
    CHECK(pg_test::forward(m, tokens.data(), 1, mc.n_ctx, nullptr, logits.data(), nullptr, 100000) == PG_OK);
    pg_model_free(m);
}

#if defined(__linux__)
TEST_CASE("a thread that cannot start (RLIMIT_NPROC) is PG_ERR_OUT_OF_MEMORY, never a hang", "[threads][capi]") {
    REQUIRE(pg::ThreadPool::max_threads() >= 4);
    const std::string how = in_child([] {
        // RLIMIT_NPROC counts the user's processes and threads, and root is exempt: run as
        // nobody, whose only process is this child, and allow two more threads of the pool.
        if (geteuid() == 0 && setuid(65534) != 0) return 101;
        struct rlimit lim = {3, 3};
        if (setrlimit(RLIMIT_NPROC, &lim) != 0) return 102;
        return expect_clean_failures("RLIMIT_NPROC 3");
    });
    CHECK(how == "exit 0");
}

// ASan and TSan reserve terabytes of shadow address space: RLIMIT_AS cannot be set under them.
#if !PG_TEST_SANITIZED
TEST_CASE("a thread that cannot start (RLIMIT_AS) is PG_ERR_OUT_OF_MEMORY, never a hang", "[threads][capi]") {
    const std::string how = in_child([] {
        // Room for the model and two threads' stacks, not for the cap's (at least 4 threads).
        pg_model* warm = tiny_model();  // the allocator's first arenas, before the limit
        pg_model_free(warm);
        long pages = 0;
        if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
            if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
            std::fclose(f);
        }
        if (pages <= 0) return 103;
        const rlim_t now = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE));
        pthread_attr_t attr;
        size_t stack = 0;
        if (pthread_attr_init(&attr) != 0 || pthread_attr_getstacksize(&attr, &stack) != 0) return 105;
        pthread_attr_destroy(&attr);
        const rlim_t room = rlim_t(stack) * 5 / 2 + (1u << 20);
        struct rlimit lim = {now + room, now + room};
        if (setrlimit(RLIMIT_AS, &lim) != 0) return 104;
        return expect_clean_failures("RLIMIT_AS 2.5 stacks");
    });
    CHECK(how == "exit 0");
}
#endif  // !PG_TEST_SANITIZED
#endif
