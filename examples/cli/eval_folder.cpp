// phonegpt eval --checkpoints DIR: every native checkpoint in DIR, in step order, into a
// scores table (eval.hpp). A file that cannot be scored, or whose loss is not finite, is
// listed as skipped: it never becomes the best.
#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "eval.hpp"

namespace cli {

namespace {

// The step in a checkpoint's file name ("step-500.bin", "step-000500.pgck"), or -1.
long long step_in_name(const std::string& name) {
    const size_t at = name.rfind("step-");
    if (at == std::string::npos) return -1;
    const size_t digits = at + 5;
    size_t end = digits;
    while (end < name.size() && std::isdigit((unsigned char)name[end])) ++end;
    if (end == digits || end - digits > 15) return -1;
    return std::stoll(name.substr(digits, end - digits));
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

struct Entry {
    std::string name;
    long long step;
};

// The .bin and .pgck files of `dir`: named steps first, in step order; then the other names
// alphabetically.
std::vector<Entry> checkpoint_files(const std::string& dir) {
    std::vector<Entry> entries;
    DIR* d = ::opendir(dir.c_str());
    if (!d)
        throw RuntimeError{"cannot read folder \"" + dir + "\": " + std::strerror(errno), "PG_ERR_IO", std::nullopt};
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if ((ends_with(name, ".bin") || ends_with(name, ".pgck")) && file_exists(dir + "/" + name))
            entries.push_back({name, step_in_name(name)});
    }
    ::closedir(d);
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        if ((a.step < 0) != (b.step < 0)) return a.step >= 0;
        if (a.step != b.step) return a.step < b.step;
        return a.name < b.name;
    });
    return entries;
}

Json step_json(Json j, long long step) {
    if (step >= 0) j.integer("step", step);
    else j.null("step");
    return j;
}

}  // namespace

int eval_folder(const Options& opt, const EvalRequest& request) {
    const std::string dir = opt.text("checkpoints", "");
    if (!folder_exists(dir)) throw UsageError{"--checkpoints: no folder at \"" + dir + "\""};
    const std::string scores_path = opt.text("out", dir + "/scores.csv");
    const std::vector<Entry> entries = checkpoint_files(dir);
    if (entries.empty()) throw UsageError{"--checkpoints: no .bin or .pgck file in \"" + dir + "\""};

    std::string csv = "step,checkpoint,val_loss,val_bits,n_scored\n";
    std::vector<Json> results, skipped;
    bool have_best = false;
    Entry best{"", -1};
    double best_loss = 0;
    say("scoring the %s split of %s with the %zu checkpoint files in %s\n", request.split.c_str(),
        request.data_path.c_str(), entries.size(), dir.c_str());
    for (const Entry& e : entries) {
        CheckpointScore s;
        try {
            s = score_checkpoint(dir + "/" + e.name, opt, request);
        } catch (const RuntimeError& err) {
            say("skipping %s: %s (%s)\n", e.name.c_str(), err.message.c_str(), err.status.c_str());
            Json j;
            j.str("checkpoint", e.name).str("error", err.message).str("status", err.status);
            skipped.push_back(j);
            continue;
        }
        const EvalFigures& f = s.figures;
        const std::string step_text = e.step >= 0 ? std::to_string(e.step) : "";
        say("%-8s %s: loss %.4f, %s, %" PRId64 " scored positions, %.1f s\n", step_text.c_str(), e.name.c_str(),
            f.loss, bits_text(f).c_str(), f.scored, f.seconds);
        char figures[128];
        std::snprintf(figures, sizeof figures, ",%.6f,%.6f,%" PRId64 "\n", f.loss, f.bits, f.scored);
        csv += step_text + "," + csv_field(e.name) + figures;
        write_file_atomically(scores_path, csv);  // a killed run leaves the rows so far
        Json j = step_json(Json(), e.step);
        j.str("checkpoint", e.name).num("loss", f.loss).num("bits_per_char", f.bits);
        add_bits_per_byte(j, f).integer("scored", f.scored).integer("windows", f.windows).integer("window", s.window).integer("stride", s.stride)
            .num("seconds", f.seconds);
        results.push_back(j);
        if (!have_best || f.loss < best_loss) {
            have_best = true;
            best = e;
            best_loss = f.loss;
        }
    }
    if (!have_best)
        throw RuntimeError{"none of the " + std::to_string(entries.size()) + " checkpoint files in \"" + dir +
                               "\" could be scored",
                           "PG_ERR_FORMAT", std::nullopt};
    say("best: %s, loss %.4f; wrote %s (%zu rows, %zu files skipped)\n", best.name.c_str(), best_loss,
        scores_path.c_str(), results.size(), skipped.size());
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "eval").str("checkpoints", dir).str("data", request.data_path)
            .str("split", request.split).str("scores_path", scores_path).array("results", results)
            .array("skipped", skipped).object("best", step_json(Json(), best.step).str("checkpoint", best.name)
                                                          .num("loss", best_loss));
        print_result(j);
    }
    return 0;
}

}  // namespace cli
