// The per-phase table of a StepProfile (core/step_profile.hpp), shared by the benchmarks that
// profile a training step (bench_engine, bench_lora): one row per phase plus a total, as text
// or as one JSON object.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/step_profile.hpp"

// The per-phase table of `steps` profiled steps (text), or the same as a JSON object.
inline std::string format_profile(const pg::StepProfile& prof, int steps, double wall_step_ms, const char* what, bool json) {
    const int nt = prof.n_threads();
    const double per = 1.0 / steps;
    std::string out;
    char line[512];
    auto ms = [&](int64_t ns) { return double(ns) * 1e-6 * per; };
    auto mb = [&](int64_t bytes) { return double(bytes) * 1e-6 * per; };
    pg::StepProfile::Phase total;
    total.name = "total";
    total.thread_busy_ns.assign(size_t(nt), 0);
    for (const auto& p : prof.phases()) {
        total.wall_ns += p.wall_ns;
        total.region_wall_ns += p.region_wall_ns;
        total.cpu_ns += p.cpu_ns;
        total.region_cpu_ns += p.region_cpu_ns;
        total.regions += p.regions;
        total.critical_ns += p.critical_ns;
        total.busy_ns += p.busy_ns;
        for (int t = 0; t < nt; ++t) total.thread_busy_ns[size_t(t)] += p.thread_busy_ns[size_t(t)];
        total.bytes_read += p.bytes_read;
        total.bytes_written += p.bytes_written;
        total.bytes_cross += p.bytes_cross;
    }
    std::vector<pg::StepProfile::Phase> rows = prof.phases();
    rows.push_back(total);
    if (!json) {
        std::snprintf(line, sizeof line,
                      "\nprofile: %d steps %s, %.1f ms a step (wall)\n", steps, what, wall_step_ms);
        out += line;
        std::snprintf(line, sizeof line, "%-46s %8s %7s %8s %8s %8s", "phase (per step)", "wall ms", "regions",
                      "work ms", "crit ms", "serial");
        out += line;
        for (int t = 0; t < nt; ++t) {
            std::snprintf(line, sizeof line, " %7s%d", "cpu ms t", t);
            out += line;
        }
        std::snprintf(line, sizeof line, " %8s %6s %8s %8s %8s\n", "wait ms", "imbal", "MB read", "MB write",
                      "MB cross");
        out += line;
    } else {
        std::snprintf(line, sizeof line, "{\"steps\": %d, \"wall_ms_per_step\": %.3f, \"phases\": [", steps,
                      wall_step_ms);
        out += line;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto& p = rows[i];
        const double mean = double(p.busy_ns) / nt;
        const double imbalance = mean > 0 ? double(p.critical_ns) / mean : 0.0;
        // CPU time of work outside regions (the caller's), in the work and on the critical path.
        const int64_t serial = p.serial_cpu_ns();
        const int64_t work = p.busy_ns + serial, critical = p.critical_ns + serial;
        // Thread time inside regions not spent in the body: waiting at the barrier (or descheduled).
        const int64_t wait = p.region_wall_ns * nt - p.busy_ns;
        if (!json) {
            std::snprintf(line, sizeof line, "%-46s %8.2f %7.1f %8.2f %8.2f %8.2f", p.name.c_str(), ms(p.wall_ns),
                          double(p.regions) * per, ms(work), ms(critical), ms(serial));
            out += line;
            for (int t = 0; t < nt; ++t) {
                std::snprintf(line, sizeof line, " %8.2f", ms(p.thread_busy_ns[size_t(t)]));
                out += line;
            }
            std::snprintf(line, sizeof line, " %8.2f %6.3f %8.2f %8.2f %8.2f\n", ms(wait), imbalance,
                          mb(p.bytes_read), mb(p.bytes_written), mb(p.bytes_cross));
            out += line;
        } else {
            std::snprintf(line, sizeof line,
                          "%s{\"phase\": \"%s\", \"wall_ms\": %.4f, \"regions\": %.2f, \"work_ms\": %.4f, "
                          "\"critical_ms\": %.4f, "
                          "\"serial_ms\": %.4f, \"wait_ms\": %.4f, \"imbalance\": %.4f, \"mb_read\": %.3f, \"mb_written\": %.3f, "
                          "\"mb_cross_thread\": %.3f, \"thread_cpu_ms\": [",
                          i ? ", " : "", p.name.c_str(), ms(p.wall_ns), double(p.regions) * per, ms(work), ms(critical),
                          ms(serial), ms(wait), imbalance, mb(p.bytes_read), mb(p.bytes_written), mb(p.bytes_cross));
            out += line;
            for (int t = 0; t < nt; ++t) {
                std::snprintf(line, sizeof line, "%s%.4f", t ? ", " : "", ms(p.thread_busy_ns[size_t(t)]));
                out += line;
            }
            out += "]}";
        }
    }
    if (json) out += "]}";
    return out;
}
