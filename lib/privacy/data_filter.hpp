// The data filter: removes personal data from text before it is tokenized (the phone's "PII
// firewall"). Built-in detectors (e-mail addresses, phone numbers, Luhn-checked payment card
// numbers, mod-97-checked IBANs, IPv4 and IPv6 addresses) plus the app's own rule; the result
// is the filtered text and the list of removed byte ranges with their kind, never the removed
// text itself. Every detector is a hand-written linear scan (no regex engine: no backtracking
// blow-up and no recursion on hostile input), so the whole filter is O(n) in the text.
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
    uint32_t kinds = PG_PII_ALL_BUILTIN;  // bit (1u << kind) per built-in detector
    std::string replacement;              // written in place of each removed span
    CustomRule custom;                    // optional
};

struct FilterResult {
    std::string text;         // the filtered text
    std::vector<Span> spans;  // removed ranges of the input, sorted, never overlapping
};

// Candidates of each built-in detector (exposed for tests); spans of one detector never overlap.
std::vector<Span> find_emails(std::string_view text);
std::vector<Span> find_ibans(std::string_view text);
std::vector<Span> find_ip_v6(std::string_view text);
// Digit runs classified as IPv4 address, payment card (Luhn) or phone number, in that order.
std::vector<Span> find_numbers(std::string_view text);

bool luhn_valid(std::string_view digits);
// `iban` without spaces, upper-case letters and digits only.
bool iban_checksum_valid(std::string_view iban);

// Validates UTF-8 (PG_ERR_INVALID_ARGUMENT naming the byte offset), runs the enabled detectors
// and the custom rule, unions overlapping spans (the earliest-starting span keeps its kind and
// grows to cover the others) and writes the text without them.
FilterResult filter_text(std::string_view text, const FilterOptions& options);
// The checks of the options alone (the replacement is valid UTF-8), done when a filter is made.
void check_options(const FilterOptions& options);

const char* kind_name(pg_pii_kind kind);

}  // namespace pg::privacy
