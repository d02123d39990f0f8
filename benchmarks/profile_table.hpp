// The per-phase table of a StepProfile (core/step_profile.hpp), shared by the benchmarks that
// profile a training step (bench_engine, bench_lora): one row per phase plus a total, as text
// or as one JSON object.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/step_profile.hpp"
#include "core/json.hpp"

// The phases of `prof` with a "total" row appended (sums over the phases).
inline std::vector<pg::StepProfile::Phase> profile_rows(const pg::StepProfile& prof) {
    const int nt = prof.n_threads();
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
    return rows;
}

// One row's figures per step, derived the same way for the text and the JSON forms.
struct ProfileRowFigures {
    double wall_ms, regions, work_ms, critical_ms, serial_ms, wait_ms, imbalance, mb_read, mb_written, mb_cross;
    std::vector<double> thread_cpu_ms;
};

inline ProfileRowFigures profile_row_figures(const pg::StepProfile::Phase& p, int nt, int steps) {
    const double per = 1.0 / steps;
    auto ms = [&](int64_t ns) { return double(ns) * 1e-6 * per; };
    auto mb = [&](int64_t bytes) { return double(bytes) * 1e-6 * per; };
    const double mean = double(p.busy_ns) / nt;
    // CPU time of work outside regions (the caller's), in the work and on the critical path.
    const int64_t serial = p.serial_cpu_ns();
    ProfileRowFigures f;
    f.wall_ms = ms(p.wall_ns);
    f.regions = double(p.regions) * per;
    f.work_ms = ms(p.busy_ns + serial);
    f.critical_ms = ms(p.critical_ns + serial);
    f.serial_ms = ms(serial);
    // Thread time inside regions not spent in the body: waiting at the barrier (or descheduled).
    f.wait_ms = ms(p.region_wall_ns * nt - p.busy_ns);
    f.imbalance = mean > 0 ? double(p.critical_ns) / mean : 0.0;
    f.mb_read = mb(p.bytes_read);
    f.mb_written = mb(p.bytes_written);
    f.mb_cross = mb(p.bytes_cross);
    for (int t = 0; t < nt; ++t) f.thread_cpu_ms.push_back(ms(p.thread_busy_ns[size_t(t)]));
    return f;
}

// The per-phase table of `steps` profiled steps, as text.
inline std::string format_profile(const pg::StepProfile& prof, int steps, double wall_step_ms, const char* what) {
    const int nt = prof.n_threads();
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "\nprofile: %d steps %s, %.1f ms a step (wall)\n", steps, what, wall_step_ms);
    out += line;
    std::snprintf(line, sizeof line, "%-46s %8s %7s %8s %8s %8s", "phase (per step)", "wall ms", "regions", "work ms",
                  "crit ms", "serial");
    out += line;
    for (int t = 0; t < nt; ++t) {
        std::snprintf(line, sizeof line, " %7s%d", "cpu ms t", t);
        out += line;
    }
    std::snprintf(line, sizeof line, " %8s %6s %8s %8s %8s\n", "wait ms", "imbal", "MB read", "MB write", "MB cross");
    out += line;
    for (const auto& p : profile_rows(prof)) {
        const ProfileRowFigures f = profile_row_figures(p, nt, steps);
        std::snprintf(line, sizeof line, "%-46s %8.2f %7.1f %8.2f %8.2f %8.2f", p.name.c_str(), f.wall_ms, f.regions,
                      f.work_ms, f.critical_ms, f.serial_ms);
        out += line;
        for (double t : f.thread_cpu_ms) {
            std::snprintf(line, sizeof line, " %8.2f", t);
            out += line;
        }
        std::snprintf(line, sizeof line, " %8.2f %6.3f %8.2f %8.2f %8.2f\n", f.wait_ms, f.imbalance, f.mb_read,
                      f.mb_written, f.mb_cross);
        out += line;
    }
    return out;
}

// The same table as one JSON object (the tree's one JSON writer, io/json.hpp).
inline pg::io::JsonObject profile_json(const pg::StepProfile& prof, int steps, double wall_step_ms) {
    std::vector<pg::io::JsonObject> phases;
    for (const auto& p : profile_rows(prof)) {
        const ProfileRowFigures f = profile_row_figures(p, prof.n_threads(), steps);
        pg::io::JsonObject row;
        row.str("phase", p.name)
            .num("wall_ms", f.wall_ms)
            .num("regions", f.regions)
            .num("work_ms", f.work_ms)
            .num("critical_ms", f.critical_ms)
            .num("serial_ms", f.serial_ms)
            .num("wait_ms", f.wait_ms)
            .num("imbalance", f.imbalance)
            .num("mb_read", f.mb_read)
            .num("mb_written", f.mb_written)
            .num("mb_cross_thread", f.mb_cross)
            .numbers("thread_cpu_ms", f.thread_cpu_ms);
        phases.push_back(row);
    }
    pg::io::JsonObject j;
    j.integer("steps", steps).num("wall_ms_per_step", wall_step_ms).array("phases", phases);
    return j;
}
