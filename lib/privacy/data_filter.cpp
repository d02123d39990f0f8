// The data filter: runs the detectors (detect_text.cpp, detect_numbers.cpp, detect_phone.cpp)
// and the app's rule, unions their spans and writes the text by each kind's policy.
#include "privacy/data_filter.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "tokenizer/utf8.hpp"

namespace pg::privacy {

// ---- the filter --------------------------------------------------------------------------------

const char* kind_name(pg_pii_kind kind) {
    switch (kind) {
        case PG_PII_EMAIL: return "email";
        case PG_PII_PHONE: return "phone";
        case PG_PII_PAYMENT_CARD: return "payment_card";
        case PG_PII_IBAN: return "iban";
        case PG_PII_IPV4: return "ipv4";
        case PG_PII_IPV6: return "ipv6";
        case PG_PII_CUSTOM: return "custom";
        default: return "unknown";
    }
}

const char* kind_placeholder(pg_pii_kind kind) {
    switch (kind) {
        case PG_PII_EMAIL: return "<EMAIL>";
        case PG_PII_PHONE: return "<PHONE>";
        case PG_PII_PAYMENT_CARD: return "<CARD>";
        case PG_PII_IBAN: return "<IBAN>";
        case PG_PII_IPV4:
        case PG_PII_IPV6: return "<IP>";
        default: return "<PII>";
    }
}

namespace {

void require_valid_utf8(std::string_view text, const char* what) {
    for (std::size_t i = 0; i < text.size();) {
        uint32_t cp;
        int len;
        if (const char* why = utf8::decode_at(text, i, &cp, &len))
            throw Error(PG_ERR_INVALID_ARGUMENT, std::string(what) + " is not valid UTF-8 at byte offset " +
                                                     std::to_string(i) + ": " + why);
        i += std::size_t(len);
    }
}

bool is_char_boundary(std::string_view t, std::size_t pos) {
    return pos == 0 || pos >= t.size() || (static_cast<unsigned char>(t[pos]) & 0xC0) != 0x80;
}

}  // namespace

void check_options(const FilterOptions& options) {
    require_valid_utf8(options.replacement, "data filter: replacement");
    const uint32_t all = PG_PII_ALL_BUILTIN | (1u << PG_PII_CUSTOM);
    if (options.placeholder_kinds & ~all)
        throw Error(PG_ERR_INVALID_ARGUMENT, "data filter: placeholder_kinds has bits beyond the kinds (" +
                                                 std::to_string(options.placeholder_kinds) + ")");
    parse_regions(options.regions);
}

FilterResult filter_text(std::string_view text, const FilterOptions& options) {
    require_valid_utf8(text, "data filter: text");
    check_options(options);
    std::vector<Span> all;
    if (options.custom) {
        std::string bad;
        const bool go_on = options.custom(text, [&](std::size_t b, std::size_t e) {
            std::string why;
            if (b >= e || e > text.size())
                why = "is empty or beyond the text's " + std::to_string(text.size()) + " bytes";
            else if (!is_char_boundary(text, b) || !is_char_boundary(text, e))
                why = "splits a UTF-8 character";
            if (why.empty()) {
                all.push_back({b, e, PG_PII_CUSTOM});
                return true;
            }
            if (bad.empty()) bad = "span [" + std::to_string(b) + ", " + std::to_string(e) + ") " + why;
            return false;
        });
        if (!bad.empty()) throw Error(PG_ERR_INVALID_ARGUMENT, "data filter: custom rule: " + bad);
        if (!go_on) throw Error(PG_ERR_CANCELLED, "data filter: the custom rule cancelled the call");
    }
    // Every detector runs whatever the policy: a kept kind still holds its digits, so that a
    // phone number never swallows a neighbouring card or address.
    const auto enabled = [&](pg_pii_kind k) { return (options.kinds & (1u << k)) != 0; };
    std::vector<Span> strong;  // the detectors' spans, IBAN look-alikes and harmless numbers
    const std::vector<Span> ibans = find_ibans(text, &strong);
    for (const auto& found : {find_emails(text), ibans, find_cards(text), find_ipv4(text), find_ipv6(text),
                       find_harmless_numbers(text)})
        strong.insert(strong.end(), found.begin(), found.end());
    std::sort(strong.begin(), strong.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    // Blockers for the phone scan, merged so that they are sorted and disjoint.
    std::vector<Span> blockers;
    for (const Span& s : strong) {
        if (!blockers.empty() && s.begin < blockers.back().end)
            blockers.back().end = std::max(blockers.back().end, s.end);
        else
            blockers.push_back(s);
    }
    for (const Span& s : strong)
        if (s.kind != PG_PII_KIND_COUNT && enabled(s.kind)) all.push_back(s);
    if (enabled(PG_PII_PHONE)) {
        const auto phones = find_phones(text, parse_regions(options.regions), blockers);
        all.insert(all.end(), phones.begin(), phones.end());
    }

    // Union overlapping spans: the earliest start (longest first at equal starts) keeps its kind.
    std::sort(all.begin(), all.end(), [](const Span& a, const Span& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
    FilterResult r;
    for (const Span& s : all) {
        if (!r.spans.empty() && s.begin < r.spans.back().end)
            r.spans.back().end = std::max(r.spans.back().end, s.end);
        else
            r.spans.push_back(s);
    }
    std::size_t removed = 0;
    for (const Span& s : r.spans) removed += s.end - s.begin;
    r.text.reserve(text.size() - removed + r.spans.size() * std::max<std::size_t>(options.replacement.size(), 7));
    std::size_t pos = 0;
    for (const Span& s : r.spans) {
        r.text.append(text.substr(pos, s.begin - pos));
        r.text.append(options.placeholder_kinds & (1u << s.kind) ? kind_placeholder(s.kind) : options.replacement);
        pos = s.end;
    }
    r.text.append(text.substr(pos));
    return r;
}

}  // namespace pg::privacy
