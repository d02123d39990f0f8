// Command-line options (cli.hpp): --name VALUE or --name=VALUE; flags take no value.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli.hpp"

namespace cli {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::string did_you_mean(const std::string& given, const std::vector<std::string>& names, const char* prefix) {
    if (given.empty()) return "";
    // up to a third of the letters (at least 2, for a swapped pair), never all of them
    size_t best = std::min(std::max<size_t>(2, given.size() / 3), given.size() - 1) + 1, best_count = 0;
    std::string best_name;
    for (const auto& name : names) {
        size_t d = edit_distance(given, name);
        if (d < best) {
            best = d;
            best_name = name;
            best_count = 1;
        } else if (d == best) {
            ++best_count;
        }
    }
    if (best_count != 1 || best_name.empty()) return "";
    return " (did you mean " + std::string(prefix) + best_name + "?)";
}

Options::Options(const char* command, std::vector<OptionSpec> specs, int argc, char** argv)
    : command_(command), specs_(std::move(specs)) {
    for (int i = 0; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) throw UsageError{"unexpected argument \"" + arg + "\" (options start with --)"};
        std::string name = arg.substr(2), value;
        bool has_inline = false;
        size_t eq = name.find('=');
        if (eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_inline = true;
        }
        const OptionSpec* spec = find(name);
        if (!spec) {
            std::vector<std::string> names;
            for (const auto& o : specs_) names.push_back(o.name);
            throw UsageError{"unknown option --" + name + did_you_mean(name, names, "--")};
        }
        if (!spec->value) {
            if (has_inline) throw UsageError{"--" + name + " takes no value"};
            values_[name] = "1";
            continue;
        }
        if (!has_inline) {
            if (i + 1 >= argc) throw UsageError{"--" + name + " needs a value (" + spec->value + ")"};
            value = argv[++i];
        }
        values_[name] = value;
    }
}

std::string Options::text(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

long long Options::integer(const std::string& name, long long fallback, long long lo, long long hi) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (errno || end == it->second.c_str() || *end != '\0')
        throw UsageError{"--" + name + " needs an integer, got \"" + it->second + "\""};
    if (v < lo || v > hi)
        throw UsageError{"--" + name + " = " + it->second + " is outside [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]"};
    return v;
}

double Options::real(const std::string& name, double fallback, double lo, double hi) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (errno || end == it->second.c_str() || *end != '\0' || !std::isfinite(v))
        throw UsageError{"--" + name + " needs a number, got \"" + it->second + "\""};
    if (v < lo || v > hi) {
        std::ostringstream m;
        m << "--" << name << " = " << it->second << " is outside [" << lo << ", " << hi << "]";
        throw UsageError{m.str()};
    }
    return v;
}

std::string Options::help(const char* synopsis, const char* what) const {
    std::string s = std::string("usage: phonegpt ") + command_ + " " + synopsis + "\n\n" + what + "\n\noptions:\n";
    for (const auto& o : specs_) {
        std::string left = std::string("  --") + o.name + (o.value ? std::string(" ") + o.value : "");
        if (left.size() < 26) left.resize(26, ' ');
        else left += "\n" + std::string(26, ' ');
        s += left + o.help + "\n";
    }
    return s;
}

bool Options::handle_help_and_output(const char* synopsis, const char* what) const {
    if (has("help")) {
        std::printf("%s", help(synopsis, what).c_str());
        return true;
    }
    g_output.json = has("json");
    g_output.quiet = has("quiet");
    return false;
}

const OptionSpec* Options::find(const std::string& name) const {
    for (const auto& o : specs_)
        if (name == o.name) return &o;
    return nullptr;
}

}  // namespace cli
