// The data filter's detectors. Each one is a single left-to-right scan that jumps past every
// run it has looked at, so no character is examined more than a small constant number of times.
#include "privacy/data_filter.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "tokenizer/utf8.hpp"

namespace pg::privacy {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_alpha(char c) { return is_upper(c) || (c >= 'a' && c <= 'z'); }
bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// Characters of an e-mail address's local part (the common dot-atom subset).
bool is_local_char(char c) { return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'; }
bool is_label_char(char c) { return is_alnum(c) || c == '-'; }

// ---- e-mail: local@label.label...tld, the top-level label all letters (>= 2) ----------------

// The end of the longest valid domain starting at `begin` (labels of [A-Za-z0-9-] not starting
// or ending with '-', at least two, the last all letters), or `begin` if there is none.
std::size_t domain_end(std::string_view t, std::size_t begin) {
    std::size_t best = begin, pos = begin;
    int labels = 0;
    while (pos < t.size()) {
        std::size_t e = pos;
        bool letters_only = true;
        while (e < t.size() && is_label_char(t[e])) letters_only &= is_alpha(t[e]), ++e;
        if (e == pos || t[pos] == '-' || t[e - 1] == '-') break;
        ++labels;
        if (labels >= 2 && letters_only && e - pos >= 2) best = e;
        if (e < t.size() && t[e] == '.' && e + 1 < t.size() && is_label_char(t[e + 1]))
            pos = e + 1;
        else
            break;
    }
    return best;
}

}  // namespace

std::vector<Span> find_emails(std::string_view t) {
    std::vector<Span> out;
    std::size_t floor = 0;  // spans never reach back before the previous one's end
    for (std::size_t at = 0; at < t.size(); ++at) {
        if (t[at] != '@') continue;
        std::size_t l = at;
        while (l > floor && is_local_char(t[l - 1])) --l;
        while (l < at && t[l] == '.') ++l;  // "...john@x.org": the dots are not the address
        if (l == at) continue;
        const std::size_t e = domain_end(t, at + 1);
        if (e == at + 1) continue;
        out.push_back({l, e, PG_PII_EMAIL});
        floor = e;
        at = e - 1;
    }
    return out;
}

// ---- IBAN ----------------------------------------------------------------------------------

namespace {

// IBAN lengths by country (the SWIFT IBAN registry). Countries not listed are accepted at any
// length 15..34 that passes the mod-97 check.
int iban_length(char a, char b) {
    static const struct { char code[3]; int length; } kTable[] = {
        {"AD", 24}, {"AE", 23}, {"AL", 28}, {"AT", 20}, {"AZ", 28}, {"BA", 20}, {"BE", 16},
        {"BG", 22}, {"BH", 22}, {"BR", 29}, {"BY", 28}, {"CH", 21}, {"CR", 22}, {"CY", 28},
        {"CZ", 24}, {"DE", 22}, {"DK", 18}, {"DO", 28}, {"EE", 20}, {"EG", 29}, {"ES", 24},
        {"FI", 18}, {"FO", 18}, {"FR", 27}, {"GB", 22}, {"GE", 22}, {"GI", 23}, {"GL", 18},
        {"GR", 27}, {"GT", 28}, {"HR", 21}, {"HU", 28}, {"IE", 22}, {"IL", 23}, {"IQ", 23},
        {"IS", 26}, {"IT", 27}, {"JO", 30}, {"KW", 30}, {"KZ", 20}, {"LB", 28}, {"LC", 32},
        {"LI", 21}, {"LT", 20}, {"LU", 20}, {"LV", 21}, {"MC", 27}, {"MD", 24}, {"ME", 22},
        {"MK", 19}, {"MR", 27}, {"MT", 31}, {"MU", 30}, {"NL", 18}, {"NO", 15}, {"PK", 24},
        {"PL", 28}, {"PS", 29}, {"PT", 25}, {"QA", 29}, {"RO", 24}, {"RS", 22}, {"SA", 24},
        {"SC", 31}, {"SE", 24}, {"SI", 19}, {"SK", 24}, {"SM", 27}, {"ST", 25}, {"SV", 28},
        {"TL", 23}, {"TN", 24}, {"TR", 26}, {"UA", 29}, {"VA", 22}, {"VG", 24}, {"XK", 20},
    };
    for (const auto& e : kTable)
        if (e.code[0] == a && e.code[1] == b) return e.length;
    return 0;
}

}  // namespace

bool iban_checksum_valid(std::string_view iban) {
    if (iban.size() < 5) return false;
    unsigned remainder = 0;
    auto feed = [&](char c) {
        if (is_digit(c)) {
            remainder = (remainder * 10 + unsigned(c - '0')) % 97;
        } else {
            const unsigned v = unsigned(c - 'A') + 10;  // two digits
            remainder = (remainder * 100 + v) % 97;
        }
    };
    for (std::size_t i = 4; i < iban.size(); ++i) feed(iban[i]);
    for (std::size_t i = 0; i < 4; ++i) feed(iban[i]);
    return remainder == 1;
}

std::vector<Span> find_ibans(std::string_view t) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i + 4 <= n; ++i) {
        if (!(is_upper(t[i]) && is_upper(t[i + 1]) && is_digit(t[i + 2]) && is_digit(t[i + 3])) ||
            (i > 0 && is_alnum(t[i - 1])))
            continue;
        // Read the compact form: upper-case letters and digits, single spaces allowed only
        // after a group of four (the printed form "DE89 3704 0044 ...").
        std::string compact;
        std::vector<std::size_t> raw_end;  // raw end offset after each compact character
        std::size_t j = i, group = 0;
        while (j < n && compact.size() < 34) {
            const char c = t[j];
            if (is_upper(c) || is_digit(c)) {
                compact.push_back(c), raw_end.push_back(j + 1), ++group, ++j;
            } else if (c == ' ' && group == 4 && j + 1 < n && (is_upper(t[j + 1]) || is_digit(t[j + 1]))) {
                group = 0, ++j;
            } else {
                break;
            }
        }
        // An IBAN ends where the text's word ends: at the end of the run or before a space.
        auto ends_cleanly = [&](std::size_t len) {
            const std::size_t e = raw_end[len - 1];
            return e >= n || !is_alnum(t[e]);
        };
        const int expected = iban_length(t[i], t[i + 1]);
        std::size_t found = 0;
        if (expected > 0) {
            if (compact.size() >= std::size_t(expected) && ends_cleanly(expected) &&
                iban_checksum_valid(std::string_view(compact).substr(0, expected)))
                found = expected;
        } else {
            for (std::size_t len = compact.size(); len >= 15 && !found; --len)
                if (ends_cleanly(len) && iban_checksum_valid(std::string_view(compact).substr(0, len)))
                    found = len;
        }
        if (found) {
            out.push_back({i, raw_end[found - 1], PG_PII_IBAN});
            i = raw_end[found - 1] - 1;
        } else {
            i = j > i ? j - 1 : i;  // nothing starts inside the run just read
        }
    }
    return out;
}

// ---- numbers: IPv4, payment cards, phone numbers --------------------------------------------

bool luhn_valid(std::string_view digits) {
    if (digits.empty()) return false;
    unsigned sum = 0;
    bool twice = false;
    for (std::size_t k = digits.size(); k-- > 0;) {
        unsigned d = unsigned(digits[k] - '0');
        if (twice) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
        sum += d;
        twice = !twice;
    }
    return sum % 10 == 0;
}

namespace {

struct NumberRun {
    std::size_t begin = 0, end = 0;  // begin includes a leading '+' or '('
    bool plus = false, paren = false;
    std::vector<std::pair<std::size_t, std::size_t>> groups;  // digit groups [b, e)
    std::vector<std::string_view> seps;                        // between consecutive groups
};

// Separators allowed between two digit groups of one number.
bool is_number_separator(std::string_view s) {
    static const char* kAllowed[] = {" ", "-", ".", ")", ") ", ")-", "(", " (", "-("};
    for (const char* a : kAllowed)
        if (s == a) return true;
    return false;
}

// Reads the number run starting at `i` (a digit, or '+'/'(' followed by a digit).
NumberRun read_number_run(std::string_view t, std::size_t i) {
    NumberRun r;
    r.begin = i;
    std::size_t j = i;
    if (t[j] == '+') r.plus = true, ++j;
    else if (t[j] == '(') r.paren = true, ++j;
    for (;;) {
        std::size_t b = j;
        while (j < t.size() && is_digit(t[j])) ++j;
        r.groups.push_back({b, j});
        // Up to two separator characters, then a digit.
        std::size_t k = j;
        while (k < t.size() && k - j < 2 && t[k] != '\0' && std::strchr(" -.()", t[k])) ++k;
        std::size_t digit_at = j;
        bool more = false;
        for (std::size_t len = k - j; len >= 1; --len) {
            if (j + len < t.size() && is_digit(t[j + len]) && is_number_separator(t.substr(j, len))) {
                digit_at = j + len, more = true;
                break;
            }
        }
        if (!more) break;
        r.seps.push_back(t.substr(j, digit_at - j));
        j = digit_at;
    }
    r.end = j;
    return r;
}

std::size_t digits_in(const NumberRun& r, std::size_t n_groups) {
    std::size_t d = 0;
    for (std::size_t g = 0; g < n_groups; ++g) d += r.groups[g].second - r.groups[g].first;
    return d;
}

std::string digit_string(std::string_view t, const NumberRun& r, std::size_t n_groups) {
    std::string s;
    for (std::size_t g = 0; g < n_groups; ++g) s.append(t.substr(r.groups[g].first, r.groups[g].second - r.groups[g].first));
    return s;
}

bool is_ipv4(std::string_view t, const NumberRun& r) {
    if (r.plus || r.paren || r.groups.size() != 4) return false;
    for (auto s : r.seps)
        if (s != ".") return false;
    for (auto [b, e] : r.groups) {
        if (e - b < 1 || e - b > 3) return false;
        int v = 0;
        for (std::size_t k = b; k < e; ++k) v = v * 10 + (t[k] - '0');
        if (v > 255) return false;
    }
    return true;
}

// The number of leading groups that form a Luhn-valid card number (13-19 digits, separated by
// single spaces or hyphens), the longest such prefix; 0 if none. At most 19 groups are looked
// at, so a run of a million "1 " stays linear.
std::size_t card_groups(std::string_view t, const NumberRun& r) {
    if (r.plus || r.paren) return 0;
    std::size_t best = 0, digits = 0;
    for (std::size_t g = 1; g <= r.groups.size(); ++g) {
        if (g > 1 && r.seps[g - 2] != " " && r.seps[g - 2] != "-") break;
        digits += r.groups[g - 1].second - r.groups[g - 1].first;
        if (digits > 19) break;
        if (digits >= 13 && luhn_valid(digit_string(t, r, g))) best = g;
    }
    return best;
}

bool is_phone(const NumberRun& r) {
    const std::size_t d = digits_in(r, r.groups.size());
    if (d < 7 || d > 15) return false;
    const std::size_t k = r.groups.size();
    if (k == 1) return r.plus ? d >= 8 : d >= 10;  // a bare 7-digit number is a count, not a phone
    for (std::size_t g = 0; g < k; ++g) {
        const std::size_t len = r.groups[g].second - r.groups[g].first;
        if (len > 5 || (g > 0 && len < 2 && !r.plus)) return false;  // "+33 6 12 34 56 78"
    }
    // Dates (2026-12-01, 01.12.2026) are not phone numbers.
    if (!r.plus && !r.paren && k == 3) {
        const std::size_t a = r.groups[0].second - r.groups[0].first;
        const std::size_t b = r.groups[1].second - r.groups[1].first;
        const std::size_t c = r.groups[2].second - r.groups[2].first;
        if (b == 2 && ((a == 4 && c == 2) || (a == 2 && c == 4))) return false;
    }
    return true;
}

}  // namespace

std::vector<Span> find_numbers(std::string_view t) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i < n; ++i) {
        const bool starts = is_digit(t[i]) || ((t[i] == '+' || t[i] == '(') && i + 1 < n && is_digit(t[i + 1]));
        if (!starts) continue;
        const NumberRun r = read_number_run(t, i);
        const bool glued = (i > 0 && is_alnum(t[i - 1])) || (r.end < n && is_alnum(t[r.end]));
        i = r.end - 1;  // nothing starts inside a run
        if (glued) continue;  // part of a word or code ("v1.2.3.4", "3rd", "A4")
        if (is_ipv4(t, r)) {
            out.push_back({r.begin, r.end, PG_PII_IPV4});
        } else if (const std::size_t g = card_groups(t, r)) {
            out.push_back({r.begin, r.groups[g - 1].second, PG_PII_PAYMENT_CARD});
        } else if (is_phone(r)) {
            out.push_back({r.begin, r.end, PG_PII_PHONE});
        }
    }
    return out;
}

// ---- IPv6 ------------------------------------------------------------------------------------

namespace {

// RFC 4291 text form: eight groups of 1-4 hex digits, one "::" standing for one or more zero
// groups, optionally ending in a dotted IPv4 address (two groups).
bool is_ipv6(std::string_view s) {
    std::size_t groups = 0;
    bool compressed = false, any_digit = false;
    std::size_t i = 0;
    if (s.substr(0, 2) == "::") compressed = true, i = 2;
    else if (!s.empty() && s[0] == ':') return false;
    while (i < s.size()) {
        std::size_t e = i;
        while (e < s.size() && is_hex(s[e])) any_digit |= is_digit(s[e]), ++e;
        if (e < s.size() && s[e] == '.') {  // the IPv4 tail
            std::string_view tail = s.substr(i);
            int parts = 0;
            std::size_t p = 0;
            while (p <= tail.size()) {
                std::size_t q = p;
                int v = 0;
                while (q < tail.size() && is_digit(tail[q])) v = v * 10 + (tail[q] - '0'), ++q;
                if (q == p || q - p > 3 || v > 255) return false;
                ++parts;
                if (q == tail.size()) break;
                if (tail[q] != '.') return false;
                p = q + 1;
            }
            if (parts != 4) return false;
            groups += 2, any_digit = true;
            i = s.size();
            break;
        }
        if (e == i || e - i > 4) return false;
        ++groups;
        if (e == s.size()) { i = e; break; }
        if (s[e] != ':') return false;
        if (e + 1 < s.size() && s[e + 1] == ':') {
            if (compressed) return false;
            compressed = true;
            i = e + 2;
        } else {
            if (e + 1 == s.size()) return false;  // a trailing single ':'
            i = e + 1;
        }
    }
    if (!any_digit) return false;  // "bad::face" is C++ or prose, not an address
    return compressed ? groups <= 7 : groups == 8;
}

bool is_ipv6_char(char c) { return is_hex(c) || c == ':' || c == '.'; }

}  // namespace

std::vector<Span> find_ip_v6(std::string_view t) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_ipv6_char(t[i]) || t[i] == '.') continue;
        std::size_t e = i;
        std::size_t colons = 0;
        while (e < n && is_ipv6_char(t[e])) colons += t[e] == ':', ++e;
        const bool glued = (i > 0 && is_alnum(t[i - 1])) || (e < n && is_alnum(t[e]));
        std::size_t end = e;
        while (end > i && t[end - 1] == '.') --end;  // a sentence's full stop
        if (!glued && colons >= 2 && is_ipv6(t.substr(i, end - i))) out.push_back({i, end, PG_PII_IPV6});
        i = e - 1;
    }
    return out;
}

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
    const auto enabled = [&](pg_pii_kind k) { return (options.kinds & (1u << k)) != 0; };
    const auto append = [&](const std::vector<Span>& found) { all.insert(all.end(), found.begin(), found.end()); };
    if (enabled(PG_PII_EMAIL)) append(find_emails(text));
    if (enabled(PG_PII_IBAN)) append(find_ibans(text));
    if (enabled(PG_PII_IPV6)) append(find_ip_v6(text));
    if (enabled(PG_PII_IPV4) || enabled(PG_PII_PAYMENT_CARD) || enabled(PG_PII_PHONE))
        for (const Span& s : find_numbers(text))
            if (enabled(s.kind)) all.push_back(s);

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
    r.text.reserve(text.size() - removed + r.spans.size() * options.replacement.size());
    std::size_t pos = 0;
    for (const Span& s : r.spans) {
        r.text.append(text.substr(pos, s.begin - pos));
        r.text.append(options.replacement);
        pos = s.end;
    }
    r.text.append(text.substr(pos));
    return r;
}

}  // namespace pg::privacy
