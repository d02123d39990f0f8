// Shared helpers for the Catch2 tests: where the data and a scratch folder are.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace pg_test {

// Tiny Shakespeare, or "" when it is not present (tests that need it then SKIP-style return
// with a WARN, never pass vacuously on something they did not check). When every test is
// required (PG_REQUIRE_ALL_TESTS, scripts/test.sh) a missing file fails the test instead.
inline std::string data_path() {
    const char* env = std::getenv("PG_DATA_PATH");
    std::string p = env ? env : PG_TEST_DATA_PATH;
    std::ifstream f(p);
#if defined(PG_TEST_REQUIRE_ALL) && PG_TEST_REQUIRE_ALL
    if (!f.good())
        throw std::runtime_error("PG_REQUIRE_ALL_TESTS: Tiny Shakespeare not found at " + p +
                                 ": this test would be skipped");
#endif
    return f.good() ? p : std::string();
}

inline std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// A scratch folder for files a test writes (created by CMake; falls back to /tmp).
inline std::string tmp_dir() {
    const char* env = std::getenv("PG_TEST_TMPDIR");
    return env ? env : "/tmp";
}

inline std::string fixtures_dir() { return PG_TEST_FIXTURES; }

}  // namespace pg_test
