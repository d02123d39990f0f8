// Big-core pinning (core/cpu_topology.hpp cores_to_pin, core/thread_pool.hpp): which cores a
// pool of n threads is given on fake phones' sysfs trees, PG_PIN_THREADS, and, where this
// machine allows it, the affinity the pool's threads really get (sched_getaffinity from inside
// them). Every pool here is built on a thread of its own, since pinning the calling thread
// lasts: the test runner's main thread must keep all its cores.
#include <catch2/catch.hpp>

#include <sched.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_topology.hpp"
#include "core/thread_pool.hpp"
#include "fake_sysfs.hpp"

namespace {

using pg_test::FakeCpu;
using pg_test::ScopedEnv;

std::vector<int> indices(const std::vector<pg::CpuCore>& cores) {
    std::vector<int> out;
    for (const pg::CpuCore& c : cores) out.push_back(c.index);
    return out;
}

// A 4 + 3 + 1 phone, little cores first: 4 A55 (250), 3 A78 (700), 1 X1 (1024).
std::vector<FakeCpu> phone_4_3_1() {
    const uint64_t a55 = 0x411fd050, a78 = 0x411fd410, x1 = 0x411fd440;
    return {{a55, 250}, {a55, 250}, {a55, 250}, {a55, 250},
            {a78, 700}, {a78, 700}, {a78, 700}, {x1, 1024}};
}

// Runs fn on a new thread and waits for it (see the file comment).
template <class Fn>
void on_own_thread(Fn fn) {
    std::thread t(fn);
    t.join();
}

// The CPUs the calling thread may run on.
std::vector<int> my_affinity() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> out;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) out.push_back(i);
    return out;
}

}  // namespace

TEST_CASE("cores_to_pin takes whole capacity classes, fastest first, until the threads fit",
          "[thread_pool]") {
    const std::vector<pg::CpuCore> phone =
        pg::read_cpu_cores(pg_test::fake_sysfs("sysfs-pin-phone", phone_4_3_1()));
    REQUIRE(phone.size() == 8);
    CHECK(indices(pg::cores_to_pin(phone, 1)) == std::vector<int>{7});
    // 2 threads do not fit on the one X1: the three A78s join it, all of them.
    CHECK(indices(pg::cores_to_pin(phone, 2)) == std::vector<int>{4, 5, 6, 7});
    CHECK(indices(pg::cores_to_pin(phone, 4)) == std::vector<int>{4, 5, 6, 7});
    // 5 threads need the little cores too: every core, so nothing is pinned.
    CHECK(pg::cores_to_pin(phone, 5).empty());
    CHECK(pg::cores_to_pin(phone, 8).empty());
    CHECK(pg::describe_cores(pg::cores_to_pin(phone, 1)) == "cpu7 (1024)");
    CHECK(pg::describe_cores(pg::cores_to_pin(phone, 3)) ==
          "cpu4 (700) cpu5 (700) cpu6 (700) cpu7 (1024)");

    // A hot-unplugged A78 is not chosen, and not counted as a seat.
    std::vector<FakeCpu> parked = phone_4_3_1();
    parked[5].online = false;
    const std::vector<pg::CpuCore> parked_cores =
        pg::read_cpu_cores(pg_test::fake_sysfs("sysfs-pin-parked", parked));
    CHECK_FALSE(parked_cores[5].online);
    CHECK(parked_cores[4].online);
    CHECK(indices(pg::cores_to_pin(parked_cores, 3)) == std::vector<int>{4, 6, 7});
    CHECK(pg::cores_to_pin(parked_cores, 4).empty());  // the 7 online cores: all of them

    // Equal cores (a server, this build machine), unknown capacities, no cores: no pinning.
    CHECK(pg::cores_to_pin(pg::read_cpu_cores(pg_test::fake_sysfs(
                               "sysfs-pin-equal", {{0, 1024}, {0, 1024}, {0, 1024}})),
                           1)
              .empty());
    CHECK(pg::cores_to_pin(
              pg::read_cpu_cores(pg_test::fake_sysfs("sysfs-pin-unknown", {{0, -1}, {0, -1}})), 1)
              .empty());
    CHECK(pg::cores_to_pin({}, 2).empty());
}

TEST_CASE("PG_PIN_THREADS chooses the pool's cores from the sysfs tree and says why not",
          "[thread_pool]") {
    const std::string root = pg_test::fake_sysfs("sysfs-pin-env", phone_4_3_1());
    ScopedEnv sysfs("PG_SYSFS_CPU_ROOT", root.c_str());
    std::string why;
    {
        ScopedEnv pin("PG_PIN_THREADS", nullptr);
        CHECK(pg::ThreadPool::pin_from_environment(2, &why).empty());
        CHECK(why == "PG_PIN_THREADS unset");
    }
    {
        ScopedEnv pin("PG_PIN_THREADS", "off");
        CHECK(pg::ThreadPool::pin_from_environment(2, &why).empty());
        CHECK(why == "PG_PIN_THREADS=off");
    }
    {
        ScopedEnv pin("PG_PIN_THREADS", "fast");
        CHECK(pg::ThreadPool::pin_from_environment(2, &why).empty());
        CHECK(why == "PG_PIN_THREADS=fast is not big or off");
    }
    ScopedEnv pin("PG_PIN_THREADS", "big");
    CHECK(indices(pg::ThreadPool::pin_from_environment(1, &why)) == std::vector<int>{7});
    CHECK(indices(pg::ThreadPool::pin_from_environment(3, &why)) ==
          std::vector<int>{4, 5, 6, 7});
    CHECK(pg::ThreadPool::pin_from_environment(6, &why).empty());
    CHECK(why.find("no faster cores") == 0);
    {
        ScopedEnv missing("PG_SYSFS_CPU_ROOT", (root + "/missing").c_str());
        CHECK(pg::ThreadPool::pin_from_environment(1, &why).empty());
        CHECK(why == "no cpu<N> in " + root + "/missing");
    }
    // A pool built here asks for cpu4-7; on a machine without them sched_setaffinity refuses
    // and the pool says so (and runs unpinned, with the right results).
    on_own_thread([&] {
        pg::ThreadPool pool(2);
        REQUIRE(indices(pool.pinned_cores()) == std::vector<int>{4, 5, 6, 7});
        int64_t sum = 0;
        std::mutex m;
        pool.parallel_for(100, [&](int, int64_t b, int64_t e) {
            std::lock_guard<std::mutex> lock(m);
            for (int64_t i = b; i < e; ++i) sum += i;
        });
        CHECK(sum == 4950);
        const std::string state = pool.pinning();
        CAPTURE(state);
        if (static_cast<int>(std::thread::hardware_concurrency()) <= 4)
            CHECK(state == "not pinned to cpu4 (700) cpu5 (700) cpu6 (700) cpu7 (1024): "
                           "sched_setaffinity: Invalid argument");
    });
}

TEST_CASE("a pinned pool's threads run only on its cores (sched_getaffinity inside them)",
          "[thread_pool]") {
    const std::vector<int> allowed = my_affinity();
    if (allowed.size() < 2 || allowed[0] != 0 || allowed[1] != 1) {
        WARN("needs CPUs 0 and 1 in this process's affinity; real pinning not checked");
        return;
    }
    on_own_thread([] {
        pg::CpuCore cpu1;
        cpu1.index = 1;
        cpu1.capacity = 1024;
        pg::ThreadPool pool(2, {cpu1});
        std::vector<std::vector<int>> seen(2);
        pool.run_on_all([&](int t) { seen[t] = my_affinity(); });
        CHECK(seen[0] == std::vector<int>{1});  // the calling thread, worker 0
        CHECK(seen[1] == std::vector<int>{1});  // a thread the pool started
        CHECK(pool.pinning() == "pinned to cpu1 (1024)");
        // A second region: the caller is not re-pinned, it already is.
        pool.run_on_all([&](int t) { seen[t] = my_affinity(); });
        CHECK(seen[0] == std::vector<int>{1});
    });
    // End to end: PG_PIN_THREADS=big on a fake big.LITTLE tree numbered like this machine.
    const std::string root =
        pg_test::fake_sysfs("sysfs-pin-real", {{0, 1024}, {0, 512}});
    ScopedEnv sysfs("PG_SYSFS_CPU_ROOT", root.c_str());
    ScopedEnv pin("PG_PIN_THREADS", "big");
    on_own_thread([] {
        pg::ThreadPool pool(1);
        std::vector<int> seen;
        pool.run_on_all([&](int) { seen = my_affinity(); });
        CHECK(seen == std::vector<int>{0});
        CHECK(pool.pinning() == "pinned to cpu0 (1024)");
    });
    on_own_thread([&] {
        pg::ThreadPool pool(2);  // needs both cores: not pinned, affinity untouched
        std::vector<std::vector<int>> seen(2);
        pool.run_on_all([&](int t) { seen[t] = my_affinity(); });
        CHECK(seen[0] == allowed);
        CHECK(seen[1] == allowed);
        CHECK(pool.pinned_cores().empty());
    });
    CHECK(my_affinity() == allowed);  // the test runner's thread was never pinned
}
