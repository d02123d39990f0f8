// The data filter (lib/privacy): exact removals on a fixture of synthetic personal data,
// nothing removed from Tiny Shakespeare, the caller's rule, bad input, and the C API.
#include <catch2/catch.hpp>

#include <ctime>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "core/error.hpp"
#include "privacy/data_filter.hpp"
#include "test_support.hpp"

using pg::privacy::FilterOptions;
using pg::privacy::filter_text;

namespace {

// Synthetic personal data (test numbers and documentation addresses only): every line that
// holds something to remove, and lines of look-alikes that must stay.
const std::string kFixture =
    "Dear Jane, write to jane.doe@example.com or <bob+news@mail.example.co.uk>.\n"
    "Call +44 20 7946 0958, (555) 123-4567, 555-0134 or 1-800-555-0199 today.\n"
    "In Paris: +33 6 12 34 56 78. Bare: 5551234567.\n"
    "Card 4111 1111 1111 1111, also 5555-5555-5555-4444 and 378282246310005 (amex).\n"
    "IBAN DE89 3704 0044 0532 0130 00, GB82 WEST 1234 5698 7654 32 and NL91ABNA0417164300.\n"
    "Hosts 192.168.0.12 and 2001:db8::8a2e:370:7334, fe80::1 and ::ffff:192.0.2.128.\n"
    "Keep: x@localhost, 2026-12-01, 01.12.2026, 12:30:45, v1.2.3.4, 10.0.0.256, std::vector,\n"
    "4111 1111 1111 1112 (bad Luhn), DE89 3704 0044 0532 0130 01 (bad check digits),\n"
    "3.14159265, 1000000 people, act 3 scene 2, A4 paper, 3rd of May, bad::face.\n";

struct Expected {
    pg_pii_kind kind;
    std::string text;
};

const std::vector<Expected> kExpected = {
    {PG_PII_EMAIL, "jane.doe@example.com"},
    {PG_PII_EMAIL, "bob+news@mail.example.co.uk"},
    {PG_PII_PHONE, "+44 20 7946 0958"},
    {PG_PII_PHONE, "(555) 123-4567"},
    {PG_PII_PHONE, "555-0134"},
    {PG_PII_PHONE, "1-800-555-0199"},
    {PG_PII_PHONE, "+33 6 12 34 56 78"},
    {PG_PII_PHONE, "5551234567"},
    {PG_PII_PAYMENT_CARD, "4111 1111 1111 1111"},
    {PG_PII_PAYMENT_CARD, "5555-5555-5555-4444"},
    {PG_PII_PAYMENT_CARD, "378282246310005"},
    {PG_PII_IBAN, "DE89 3704 0044 0532 0130 00"},
    {PG_PII_IBAN, "GB82 WEST 1234 5698 7654 32"},
    {PG_PII_IBAN, "NL91ABNA0417164300"},
    {PG_PII_IPV4, "192.168.0.12"},
    {PG_PII_IPV6, "2001:db8::8a2e:370:7334"},
    {PG_PII_IPV6, "fe80::1"},
    {PG_PII_IPV6, "::ffff:192.0.2.128"},
};

std::string describe(const std::string& text, const std::vector<pg::privacy::Span>& spans) {
    std::string s;
    for (const auto& sp : spans)
        s += std::string(pg::privacy::kind_name(sp.kind)) + " [" + text.substr(sp.begin, sp.end - sp.begin) + "]\n";
    return s;
}

}  // namespace

TEST_CASE("data filter: exact removals on synthetic personal data", "[coord][privacy]") {
    FilterOptions o;
    o.regions = "US";  // NANP's seven-digit local numbers (555-0134) count only with this hint
    const auto r = filter_text(kFixture, o);
    INFO(describe(kFixture, r.spans));
    REQUIRE(r.spans.size() == kExpected.size());
    std::size_t from = 0;
    std::string expected_text;
    for (std::size_t i = 0; i < kExpected.size(); ++i) {
        const std::size_t at = kFixture.find(kExpected[i].text, from);
        REQUIRE(at != std::string::npos);
        CHECK(r.spans[i].begin == at);
        CHECK(r.spans[i].end == at + kExpected[i].text.size());
        CHECK(r.spans[i].kind == kExpected[i].kind);
        expected_text += kFixture.substr(from, at - from);
        from = at + kExpected[i].text.size();
    }
    expected_text += kFixture.substr(from);
    CHECK(r.text == expected_text);
    // The look-alikes line by line survive untouched.
    CHECK(r.text.find("Keep: x@localhost, 2026-12-01, 01.12.2026, 12:30:45, v1.2.3.4, 10.0.0.256") != std::string::npos);
    CHECK(r.text.find("3.14159265, 1000000 people, act 3 scene 2, A4 paper, 3rd of May, bad::face.") != std::string::npos);
}

TEST_CASE("data filter: checksums", "[coord][privacy]") {
    CHECK(pg::privacy::luhn_valid("4111111111111111"));
    CHECK_FALSE(pg::privacy::luhn_valid("4111111111111112"));
    CHECK(pg::privacy::iban_checksum_valid("DE89370400440532013000"));
    CHECK_FALSE(pg::privacy::iban_checksum_valid("DE89370400440532013001"));
    CHECK(pg::privacy::iban_checksum_valid("FR1420041010050500013M02606"));
}

TEST_CASE("data filter: kinds can be switched off and a replacement written", "[coord][privacy]") {
    FilterOptions o;
    o.kinds = 1u << PG_PII_EMAIL;
    o.replacement = "[removed]";
    const auto r = filter_text("mail a@b.org, call 555-0134", o);
    REQUIRE(r.spans.size() == 1);
    CHECK(r.text == "mail [removed], call 555-0134");
}

TEST_CASE("data filter: Tiny Shakespeare loses nothing", "[coord][privacy][data]") {
    const std::string path = pg_test::data_path();
    if (path.empty()) {
        WARN("Tiny Shakespeare not found: skipped");
        return;
    }
    const std::string text = pg_test::read_text(path);
    REQUIRE(text.size() == 1115394);
    const auto r = filter_text(text, FilterOptions{});
    INFO(describe(text, r.spans));
    CHECK(r.spans.empty());
    CHECK(r.text == text);
}

TEST_CASE("data filter: the caller's rule", "[coord][privacy]") {
    const std::string text = "order ACME-123456 for Ada, mail ada@example.org";
    FilterOptions o;
    o.custom = [](std::string_view t, const pg::privacy::SpanSink& add) {
        for (std::size_t at = t.find("ACME-"); at != std::string_view::npos; at = t.find("ACME-", at + 1))
            REQUIRE(add(at, at + 11));
        REQUIRE(add(22, 25));                      // "Ada"
        REQUIRE(add(32, 40));                      // overlaps the e-mail address: unioned
        return true;
    };
    const auto r = filter_text(text, o);
    INFO(describe(text, r.spans));
    REQUIRE(r.spans.size() == 3);
    CHECK(r.spans[0].kind == PG_PII_CUSTOM);
    CHECK(r.spans[2].begin == 32);
    CHECK(r.spans[2].end == text.size());  // the rule's span grew to cover the address
    CHECK(r.text == "order  for , mail ");

    SECTION("a span splitting a character or beyond the text is refused by name") {
        const std::string accented = "caf\xc3\xa9";
        FilterOptions bad;
        bad.custom = [](std::string_view, const pg::privacy::SpanSink& add) { return add(0, 4), true; };
        try {
            filter_text(accented, bad);
            FAIL("no error");
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_INVALID_ARGUMENT);
            CHECK(std::string(e.what()).find("splits a UTF-8 character") != std::string::npos);
        }
        bad.custom = [](std::string_view, const pg::privacy::SpanSink& add) { return add(2, 99), true; };
        CHECK_THROWS_WITH(filter_text(accented, bad), Catch::Contains("beyond the text"));
    }
    SECTION("cancel") {
        FilterOptions stop;
        stop.custom = [](std::string_view, const pg::privacy::SpanSink&) { return false; };
        try {
            filter_text(text, stop);
            FAIL("no error");
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_CANCELLED);
        }
    }
}

TEST_CASE("data filter: invalid UTF-8 is refused with its offset", "[coord][privacy]") {
    const std::string text = std::string("ok a@b.org ") + "\xff" + " rest";
    CHECK_THROWS_WITH(filter_text(text, FilterOptions{}), Catch::Contains("byte offset 11"));
    FilterOptions o;
    o.replacement = "\xc3";
    CHECK_THROWS_WITH(filter_text("x", o), Catch::Contains("replacement is not valid UTF-8"));
}

TEST_CASE("data filter: hostile inputs stay linear", "[coord][privacy]") {
    // Each would make a naive or backtracking matcher quadratic.
    const std::size_t n = 4 << 20;
    const std::vector<std::string> patterns = {"a@", "a.", "1 ", "1-", "DE89", "a:", "::1", "@.", "+1",
                                               "4111 ", "(1", "0 0 "};
    // The thread's CPU time: other processes on a shared machine do not count against it.
    const auto cpu_seconds = [] {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    };
    for (const auto& p : patterns) {
        std::string text;
        while (text.size() < n) text += p;
        const double t0 = cpu_seconds();
        const auto r = filter_text(text, FilterOptions{});
        const double s = cpu_seconds() - t0;
        INFO(p << ": " << s << " s, " << r.spans.size() << " spans");
        CHECK(s < 5.0);  // at most about 0.4 s each when linear (4111 ); minutes when quadratic
        CHECK(r.text.size() <= text.size());
    }
}

TEST_CASE("data filter: the C API", "[coord][privacy][capi]") {
    pg_data_filter_config cfg;
    pg_data_filter_config_default(&cfg);
    CHECK(cfg.kinds == PG_PII_ALL_BUILTIN);
    cfg.replacement = "*";
    struct Rule {
        static int run(void* user, const char* text, size_t len, pg_pii_add_fn add, void* sink) {
            ++*static_cast<int*>(user);
            const std::string_view t(text, len);
            const std::size_t at = t.find("Ada");
            if (at != std::string_view::npos && add(sink, at, at + 3) != PG_OK) return 1;
            if (add(sink, 5, 5) != PG_ERR_INVALID_ARGUMENT) return 1;  // empty: refused
            return 0;
        }
    };
    int calls = 0;
    cfg.custom_rule = &Rule::run;
    cfg.custom_user = &calls;
    pg_data_filter* f = nullptr;
    REQUIRE(pg_data_filter_create(&cfg, &f) == PG_OK);

    const std::string text = "Ada: ada@example.org";
    pg_data_filter_report rep{};
    rep.struct_size = sizeof rep;
    // The empty span the rule reported makes the call fail with that status; nothing is kept.
    CHECK(pg_data_filter_apply(f, text.data(), text.size(), &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_data_filter_last_error(f)).find("span [5, 5)") != std::string::npos);
    size_t n = 99;
    CHECK(pg_data_filter_spans(f, nullptr, 0, &n) == PG_OK);
    CHECK(n == 0);
    pg_data_filter_free(f);

    cfg.custom_rule = nullptr;
    REQUIRE(pg_data_filter_create(&cfg, &f) == PG_OK);
    REQUIRE(pg_data_filter_apply(f, text.data(), text.size(), &rep) == PG_OK);
    CHECK(rep.bytes_in == text.size());
    CHECK(rep.n_spans == 1);
    CHECK(rep.n_email == 1);
    CHECK(rep.n_phone == 0);
    CHECK(rep.bytes_removed == 15);
    CHECK(rep.bytes_out == 6);
    size_t len = 0;
    CHECK(pg_data_filter_output(f, nullptr, 0, &len) == PG_ERR_BUFFER_TOO_SMALL);
    CHECK(len == 6);
    char out[7];
    REQUIRE(pg_data_filter_output(f, out, sizeof out, &len) == PG_OK);
    CHECK(std::string(out) == "Ada: *");
    pg_pii_span spans[1];
    REQUIRE(pg_data_filter_spans(f, spans, 1, &n) == PG_OK);
    CHECK(spans[0].begin == 5);
    CHECK(spans[0].end == text.size());
    CHECK(spans[0].kind == PG_PII_EMAIL);
    CHECK(std::string(pg_pii_kind_name(PG_PII_IBAN)) == "iban");
    CHECK(std::string(pg_pii_kind_name(static_cast<pg_pii_kind>(42))) == "unknown");

    CHECK(pg_data_filter_apply(f, "\xc0\x80", 2, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_data_filter_apply(f, nullptr, 3, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_data_filter_apply(nullptr, "x", 1, nullptr) == PG_ERR_INVALID_ARGUMENT);
    pg_data_filter_free(f);
    pg_data_filter_free(nullptr);

    cfg.kinds = 1u << 9;
    CHECK(pg_data_filter_create(&cfg, &f) == PG_ERR_INVALID_ARGUMENT);
    CHECK(f == nullptr);
    cfg.kinds = PG_PII_ALL_BUILTIN;
    cfg.replacement = "\xff";
    CHECK(pg_data_filter_create(&cfg, &f) == PG_ERR_INVALID_ARGUMENT);
}
