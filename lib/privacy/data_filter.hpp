// The data filter: finds personal data in text before it is tokenized (the phone's "PII
// firewall") and removes it, replaces it with a typed placeholder or keeps it, per kind, as the
// app chooses. Built-in detectors (e-mail addresses, phone numbers by numbering plan, payment
// cards by issuer range and Luhn, IBANs by country length and mod-97, IPv4 and IPv6 addresses)
// plus the app's own rule; the result is the filtered text and the list of acted-on byte ranges
// with their kind, never the text itself. Every detector is a hand-written scan that does a
// bounded amount of work per candidate (no regex engine, no backtracking), so the whole filter
// is O(n) in the text. docs/privacy.md states each rule and the fixture's figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "phonegpt/phonegpt.h"

namespace pg::privacy {

struct Span {
    std::size_t begin = 0;  // byte range [begin, end) of the input
    std::size_t end = 0;
    pg_pii_kind kind = PG_PII_EMAIL;
};

// The app's rule: reports spans of `text` through `add(begin, end)`, which returns false for a
// span that is empty, out of range or splits a UTF-8 character (the filter then fails naming
// it); the rule returns false to cancel.
using SpanSink = std::function<bool(std::size_t begin, std::size_t end)>;
using CustomRule = std::function<bool(std::string_view text, const SpanSink& add)>;

struct FilterOptions {
    uint32_t kinds = PG_PII_ALL_BUILTIN;  // bit (1u << kind): the kind's spans are acted on
    uint32_t placeholder_kinds = 0;       // of those, the kinds written as "<EMAIL>", "<PHONE>", ...
    std::string replacement;              // written in place of every other acted-on span
    std::string regions;                  // "DE,GB": numbering plans for numbers without '+'
    CustomRule custom;                    // optional
};

struct FilterResult {
    std::string text;         // the filtered text
    std::vector<Span> spans;  // acted-on ranges of the input, sorted, never overlapping
};

// The numbering plans a national number (no '+') is judged by: a bit per plan of the phone
// table. parse_regions reads "DE,GB" (ISO 3166 alpha-2, case-insensitive, ',' or ' '
// separated; "" = the default set) and throws PG_ERR_INVALID_ARGUMENT naming an unknown code.
using RegionSet = uint64_t;
RegionSet parse_regions(std::string_view regions);
// The region codes the phone table knows, comma-separated (for messages and docs).
std::string known_regions();

// Candidates of each built-in detector (exposed for tests); the spans of one detector never
// overlap. Phones are judged after the other kinds and never overlap their spans or the
// harmless numbers (dates, ISBNs; kind PG_PII_KIND_COUNT) that `blockers` holds, sorted by begin.
std::vector<Span> find_emails(std::string_view text);
// `look_alikes` (optional) gets IBAN-shaped runs that fail the length or checksum (kind
// PG_PII_KIND_COUNT): they block phones but are not removed.
std::vector<Span> find_ibans(std::string_view text, std::vector<Span>* look_alikes = nullptr);
std::vector<Span> find_cards(std::string_view text);
std::vector<Span> find_ipv4(std::string_view text);
std::vector<Span> find_ipv6(std::string_view text);
std::vector<Span> find_harmless_numbers(std::string_view text);
std::vector<Span> find_phones(std::string_view text, RegionSet regions, const std::vector<Span>& blockers);

bool luhn_valid(std::string_view digits);
// `iban` without spaces, letters (either case) and digits only.
bool iban_checksum_valid(std::string_view iban);

// Validates UTF-8 (PG_ERR_INVALID_ARGUMENT naming the byte offset), runs every built-in
// detector (a kept kind still stops a phone from swallowing it) and the custom rule, unions
// overlapping acted-on spans (the earliest-starting span keeps its kind and grows to cover the
// others) and writes the text with each span removed, replaced or as a placeholder.
FilterResult filter_text(std::string_view text, const FilterOptions& options);
// The checks of the options alone (replacement valid UTF-8, regions known, placeholder kinds
// within the kinds), done when a filter is made.
void check_options(const FilterOptions& options);

const char* kind_name(pg_pii_kind kind);
// "<EMAIL>", "<PHONE>", "<CARD>", "<IBAN>", "<IP>" (both IP kinds), "<PII>" (custom).
const char* kind_placeholder(pg_pii_kind kind);

}  // namespace pg::privacy
