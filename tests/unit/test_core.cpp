#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"

TEST_CASE("thread pool chunks cover 0..n once, in order, for any thread count", "[core]") {
    for (int threads : {1, 2, 3, 7}) {
        for (int64_t n : {0, 1, 5, 64, 1001}) {
            int64_t next = 0;
            for (int t = 0; t < threads; ++t) {
                int64_t b, e;
                pg::ThreadPool::chunk(n, threads, t, &b, &e);
                CHECK(b == next);
                CHECK(e >= b);
                CHECK(e - b <= n / threads + 1);
                next = e;
            }
            CHECK(next == n);
        }
    }
}

TEST_CASE("thread pool runs every index once and rethrows worker exceptions", "[core]") {
    pg::ThreadPool pool(3);
    REQUIRE(pool.size() == 3);
    std::vector<int> hits(1000, 0);
    for (int round = 0; round < 50; ++round) {  // many rounds: catches lost wake-ups
        pool.parallel_for(1000, [&](int, int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        });
    }
    for (int h : hits) REQUIRE(h == 50);
    CHECK_THROWS_AS(pool.parallel_for(10,
                                      [&](int t, int64_t, int64_t) {
                                          if (t == 2) throw pg::Error(PG_ERR_INTERNAL, "boom");
                                      }),
                    pg::Error);
    // The pool is still usable after an exception.
    std::atomic<int> count{0};
    pool.run_on_all([&](int) { count++; });
    CHECK(count == 3);
}

TEST_CASE("Rng is reproducible, resumable and unbiased enough", "[core]") {
    pg::Rng a(123), b(123), c(124);
    for (int i = 0; i < 10; ++i) {
        uint64_t x = a.next_u64();
        CHECK(x == b.next_u64());
        CHECK(x != c.next_u64());
    }
    uint64_t state[4];
    a.get_state(state);
    pg::Rng resumed(0);
    resumed.set_state(state);
    for (int i = 0; i < 10; ++i) CHECK(a.next_u64() == resumed.next_u64());
    // below(n) hits every value and stays in range; normal() has mean ~0, variance ~1.
    std::set<uint64_t> seen;
    for (int i = 0; i < 2000; ++i) {
        uint64_t v = a.below(7);
        REQUIRE(v < 7);
        seen.insert(v);
    }
    CHECK(seen.size() == 7);
    double sum = 0, sq = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
        double x = a.normal();
        sum += x;
        sq += x * x;
    }
    CHECK(sum / n == Approx(0.0).margin(0.03));
    CHECK(sq / n == Approx(1.0).epsilon(0.03));
}

TEST_CASE("counter hash depends on every input and is uniform in 0..1", "[core]") {
    CHECK(pg::counter_hash(1, 2, 3) == pg::counter_hash(1, 2, 3));
    CHECK(pg::counter_hash(1, 2, 3) != pg::counter_hash(2, 2, 3));
    CHECK(pg::counter_hash(1, 2, 3) != pg::counter_hash(1, 3, 3));
    CHECK(pg::counter_hash(1, 2, 3) != pg::counter_hash(1, 2, 4));
    int below_half = 0;
    for (int i = 0; i < 10000; ++i) {
        float u = pg::counter_uniform(7, 0, uint64_t(i));
        REQUIRE(u >= 0.0f);
        REQUIRE(u < 1.0f);
        below_half += u < 0.5f;
    }
    CHECK(below_half == Approx(5000).margin(200));
}
