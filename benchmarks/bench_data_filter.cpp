// The data filter's throughput and memory: filter_text with every detector on (1) a prose text
// (Tiny Shakespeare: nothing to remove), (2) number-dense text (the lines of the fixture in
// tests/fixtures/privacy, markers stripped, repeated to 4 MiB: a span per 46 bytes),
// (3) a hostile repetition ("1 " 2 MiB times: every byte a candidate start). Prints MB/s of the
// thread's CPU time (best of 5, so other processes on a shared machine do not lower it) and the
// peak memory one call adds per input byte (VmHWM reset before the call, minus VmRSS before it).
// Usage: bench_data_filter TEXT FIXTURE_DIR
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "privacy/data_filter.hpp"
#include "process_stats.hpp"

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "bench_data_filter: cannot open %s\n", path.c_str());
        std::exit(2);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The fixture's text without its markup (markers, "#regions" lines, comments).
std::string fixture_text(const std::string& dir) {
    std::string out;
    for (const char* name : {"positives.txt", "negatives.txt", "adjacency.txt"}) {
        std::istringstream in(read_all(dir + "/" + name));
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            for (const char* mark : {"\xe2\x9f\xa6", "\xe2\x9f\xa7"})
                for (std::size_t at; (at = line.find(mark)) != std::string::npos;) line.erase(at, 3);
            for (const char* kind : {"email|", "phone|", "payment_card|", "iban|", "ipv4|", "ipv6|"})
                for (std::size_t at; (at = line.find(kind)) != std::string::npos;) line.erase(at, std::string(kind).size());
            out += line + "\n";
        }
    }
    return out;
}

void measure(const char* what, const std::string& text) {
    pg::privacy::FilterOptions options;
    // Memory first, before the timing runs leave freed pages resident in the allocator.
    const long rss_before = pg_bench::status_kib("VmRSS");
    const bool reset = pg_bench::reset_peak_rss();
    std::size_t kept = 0;
    {
        const auto r = pg::privacy::filter_text(text, options);
        kept = r.text.size();
    }
    const long added_kib = pg_bench::status_kib("VmHWM") - rss_before;
    double best = 1e30;
    std::size_t spans = 0;
    for (int rep = 0; rep < 5; ++rep) {
        const double t0 = pg_bench::thread_cpu_seconds();
        const auto r = pg::privacy::filter_text(text, options);
        best = std::min(best, pg_bench::thread_cpu_seconds() - t0);
        spans = r.spans.size();
    }
    std::printf("%-34s %9zu bytes %8zu spans %8.1f MB/s  peak added %s%.2f bytes per input byte (output %zu bytes)\n",
                what, text.size(), spans, double(text.size()) / best / 1e6, reset ? "" : "(no VmHWM reset) ",
                double(added_kib) * 1024.0 / double(text.size()), kept);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s TEXT FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    measure("prose (the TEXT file)", read_all(argv[1]));
    const std::string lines = fixture_text(argv[2]);
    std::string dense;
    while (dense.size() < (4u << 20)) dense += lines;
    measure("number-dense (the fixture, 4 MiB)", dense);
    std::string hostile;
    while (hostile.size() < (4u << 20)) hostile += "1 ";
    measure("hostile (\"1 \" repeated, 4 MiB)", hostile);
    return 0;
}
