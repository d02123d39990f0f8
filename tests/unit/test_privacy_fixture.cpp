// The data filter on its public fixture (tests/fixtures/privacy, written by generate.py there):
// recall and precision per kind, adjacency leaks, the harmless lines; the policy per kind and the
// region hints. PG_PII_TABLE=1 prints the per-kind table that docs/privacy.md quotes.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "privacy/data_filter.hpp"
#include "test_support.hpp"

using pg::privacy::FilterOptions;
using pg::privacy::filter_text;
using pg::privacy::Span;

namespace {

struct Line {
    std::string text;            // markers stripped
    std::vector<Span> expected;  // the marked spans
    std::string regions;         // the "#regions" hint in force
    int number = 0;              // 1-based line number in its file
};

pg_pii_kind kind_of(const std::string& name) {
    for (int k = 0; k < PG_PII_KIND_COUNT; ++k)
        if (name == pg::privacy::kind_name(pg_pii_kind(k))) return pg_pii_kind(k);
    FAIL("fixture: unknown kind " << name);
    return PG_PII_CUSTOM;
}

// One fixture file: "⟦kind|text⟧" marks a span, "#regions XX" sets the hint, "# " comments.
std::vector<Line> read_fixture(const std::string& name) {
    const std::string path = pg_test::fixtures_dir() + "/privacy/" + name;
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    const std::string open = "\xe2\x9f\xa6", close = "\xe2\x9f\xa7";
    std::vector<Line> out;
    std::string raw, regions;
    int number = 0;
    while (std::getline(in, raw)) {
        ++number;
        if (raw.empty() || raw.rfind("# ", 0) == 0) continue;
        if (raw.rfind("#regions", 0) == 0) {
            regions = raw.size() > 9 ? raw.substr(9) : "";
            continue;
        }
        Line l{"", {}, regions, number};
        std::size_t pos = 0;
        for (std::size_t a; (a = raw.find(open, pos)) != std::string::npos;) {
            const std::size_t bar = raw.find('|', a), b = raw.find(close, a);
            INFO(name << " line " << number);
            REQUIRE((bar != std::string::npos && b != std::string::npos && bar < b));
            l.text += raw.substr(pos, a - pos);
            const std::size_t begin = l.text.size();
            l.text += raw.substr(bar + 1, b - bar - 1);
            l.expected.push_back({begin, l.text.size(), kind_of(raw.substr(a + open.size(), bar - a - open.size()))});
            pos = b + close.size();
        }
        l.text += raw.substr(pos);
        out.push_back(std::move(l));
    }
    return out;
}

struct Score {
    std::array<int, PG_PII_KIND_COUNT> expected{}, recalled{}, found{}, correct{};
    int leaks = 0;                   // marked spans not wholly removed
    int harmless_lines_hit = 0;      // lines without personal data that lost something
    std::vector<std::string> mistakes;
    double recall(int k) const { return expected[k] ? double(recalled[k]) / expected[k] : 1.0; }
    double precision(int k) const { return found[k] ? double(correct[k]) / found[k] : 1.0; }
};

// A marked span is recalled when removed spans cover it wholly and one of its kind overlaps it;
// a removed span is correct when it lies inside a marked span of its kind.
void score(const Line& l, const pg::privacy::FilterResult& r, Score* s) {
    const auto where = [&] { return "line " + std::to_string(l.number) + ": "; };
    for (const Span& e : l.expected) {
        ++s->expected[e.kind];
        std::size_t covered = e.begin;
        bool same_kind = false;
        for (const Span& f : r.spans) {
            if (f.end <= e.begin || f.begin >= e.end) continue;
            same_kind |= f.kind == e.kind;
            if (f.begin <= covered) covered = std::max(covered, f.end);
        }
        const std::string item = std::string(pg::privacy::kind_name(e.kind)) + " [" + l.text.substr(e.begin, e.end - e.begin) + "]";
        if (covered < e.end) ++s->leaks, s->mistakes.push_back(where() + "leaked " + item + " in: " + l.text);
        else if (same_kind) ++s->recalled[e.kind];
        else s->mistakes.push_back(where() + "removed under another kind: " + item);
    }
    if (l.expected.empty() && !r.spans.empty()) ++s->harmless_lines_hit;
    for (const Span& f : r.spans) {
        ++s->found[f.kind];
        bool inside = false;
        for (const Span& e : l.expected) inside |= e.kind == f.kind && f.begin >= e.begin && f.end <= e.end;
        if (inside) ++s->correct[f.kind];
        else s->mistakes.push_back(where() + "wrongly removed " + pg::privacy::kind_name(f.kind) + " [" +
                                   l.text.substr(f.begin, f.end - f.begin) + "] in: " + l.text);
    }
}

Score score_file(const std::string& name, int* lines) {
    Score s;
    const auto fixture = read_fixture(name);
    *lines = int(fixture.size());
    for (const Line& l : fixture) {
        FilterOptions o;
        o.regions = l.regions;
        score(l, filter_text(l.text, o), &s);
    }
    return s;
}

std::string mistakes_of(const Score& s) {
    std::string out;
    for (const auto& m : s.mistakes) out += m + "\n";
    return out;
}

}  // namespace

TEST_CASE("data filter fixture: recall and precision per kind", "[coord][privacy][pii_fixture]") {
    int n_pos = 0, n_neg = 0, n_adj = 0;
    const Score pos = score_file("positives.txt", &n_pos);
    const Score neg = score_file("negatives.txt", &n_neg);
    const Score adj = score_file("adjacency.txt", &n_adj);
    Score all;
    for (const Score* s : {&pos, &neg, &adj})
        for (int k = 0; k < PG_PII_KIND_COUNT; ++k) {
            all.expected[k] += s->expected[k], all.recalled[k] += s->recalled[k];
            all.found[k] += s->found[k], all.correct[k] += s->correct[k];
        }
    if (const char* print = std::getenv("PG_PII_TABLE"); print && *print == '1') {
        std::printf("| kind | marked | recall | removed | precision |\n|---|---:|---:|---:|---:|\n");
        for (int k = 0; k < PG_PII_CUSTOM; ++k)
            std::printf("| `%s` | %d | %.3f | %d | %.3f |\n", pg::privacy::kind_name(pg_pii_kind(k)), all.expected[k],
                        all.recall(k), all.found[k], all.precision(k));
        std::printf("lines: %d positive, %d harmless, %d adjacency; adjacency leaks %d, harmless lines hit %d\n",
                    n_pos, n_neg, n_adj, adj.leaks, neg.harmless_lines_hit);
    }
    INFO(mistakes_of(pos) << mistakes_of(neg) << mistakes_of(adj));
    CHECK(n_neg >= 300);
    CHECK(adj.leaks == 0);
    CHECK(neg.harmless_lines_hit == 0);
    int positives = 0;
    for (int k = 0; k < PG_PII_CUSTOM; ++k) {
        INFO(pg::privacy::kind_name(pg_pii_kind(k)));
        positives += pos.expected[k];
        CHECK(all.expected[k] >= 50);
        CHECK(all.recall(k) >= 0.98);
        CHECK(all.precision(k) >= 0.95);
    }
    CHECK(positives >= 300);
}

TEST_CASE("data filter: the cases of personal data next to another number", "[coord][privacy]") {
    // Each removed on its own: no run of digit groups is judged as a whole.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"hosts 192.168.1.1 192.168.1.2", "hosts  "},
        {"ssh 10.0.0.1 22", "ssh  22"},
        {"192.168.1.1 8080", " 8080"},
        {"cards 4111 1111 1111 1111 5555 5555 5555 4444", "cards  "},
        {"2026-12-07 4111-1111-1111-1111", "2026-12-07 "},
        {"555-123-4567 4111 1111 1111 1111", " "},
        {"2026-12-07 12:30:45, 7.12.2026, 1990-2005, pp. 12-45, 9780306406157, 1765110645, 12.500.000, "
         "1 000 000, icon@2x.png",
         "2026-12-07 12:30:45, 7.12.2026, 1990-2005, pp. 12-45, 9780306406157, 1765110645, 12.500.000, "
         "1 000 000, icon@2x.png"},
    };
    for (const auto& [in, out] : cases) {
        INFO(in);
        CHECK(filter_text(in, FilterOptions{}).text == out);
    }
}

TEST_CASE("data filter: policy per kind and region hints", "[coord][privacy]") {
    const std::string text = "mail jane@example.com, call +49 30 1234567, card 4111 1111 1111 1111, ip 192.0.2.1";
    FilterOptions o;
    o.kinds = PG_PII_ALL_BUILTIN & ~(1u << PG_PII_IPV4);  // keep IPv4 addresses
    o.placeholder_kinds = (1u << PG_PII_EMAIL) | (1u << PG_PII_PHONE);
    o.replacement = "#";
    const auto r = filter_text(text, o);
    CHECK(r.text == "mail <EMAIL>, call <PHONE>, card #, ip 192.0.2.1");
    REQUIRE(r.spans.size() == 3);
    CHECK(r.spans[2].kind == PG_PII_PAYMENT_CARD);
    o.placeholder_kinds = PG_PII_ALL_BUILTIN | (1u << PG_PII_CUSTOM);
    o.kinds = PG_PII_ALL_BUILTIN;
    CHECK(filter_text(text, o).text == "mail <EMAIL>, call <PHONE>, card <CARD>, ip <IP>");
    CHECK(filter_text("at 2001:db8::1 now", o).text == "at <IP> now");

    SECTION("a kept kind still holds its digits against a neighbouring phone") {
        FilterOptions keep_cards;
        keep_cards.kinds = 1u << PG_PII_PHONE;
        const std::string t = "555-123-4567 4111 1111 1111 1111";
        CHECK(filter_text(t, keep_cards).text == " 4111 1111 1111 1111");
    }
    SECTION("regions: national numbers are judged by the app's plans") {
        const std::string es = "Llama al 612 345 678 hoy";
        CHECK(filter_text(es, FilterOptions{}).text == es);  // the default set has no Spanish national form
        FilterOptions hint;
        hint.regions = "es";
        CHECK(filter_text(es, hint).text == "Llama al  hoy");
        hint.regions = "DE";  // only German national numbers: the NANP form stays, '+' numbers go
        CHECK(filter_text("202-555-0143 or 030 1234567 or +1 202 555 0143", hint).text == "202-555-0143 or  or ");
        hint.regions = "US";
        CHECK(filter_text("call 555-0134", hint).text == "call ");
        CHECK(filter_text("call 555-0134", FilterOptions{}).text == "call 555-0134");
        hint.regions = "DE,XX";
        CHECK_THROWS_WITH(filter_text("x", hint), Catch::Contains("unknown region \"XX\""));
        CHECK_THROWS_WITH(pg::privacy::check_options(hint), Catch::Contains("known: AT,BE"));
    }
    SECTION("placeholder bits beyond the kinds are refused") {
        FilterOptions bad;
        bad.placeholder_kinds = 1u << 9;
        CHECK_THROWS_WITH(pg::privacy::check_options(bad), Catch::Contains("placeholder_kinds"));
    }
}
