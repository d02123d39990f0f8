// The data filter's number detectors with a checksum or a fixed grammar: IBANs (ISO 13616
// country lengths, mod-97), payment cards (issuer ranges and lengths, Luhn), IPv4 addresses,
// and the harmless numbers (dates, ISBNs) that phone candidates may not reach into. Each
// candidate starts at a word boundary and is read for a bounded number of characters, so every
// scan is linear in the text.
#include <string>

#include "privacy/data_filter.hpp"
#include "privacy/scan.hpp"

namespace pg::privacy {
using namespace scan;

// ---- IBAN -------------------------------------------------------------------------------------

namespace {

// IBAN lengths by country: the ISO 13616 registry (SWIFT's IBAN registry, release 99).
// Packed as "CCnn" entries, searched linearly (89 entries, only when a candidate starts).
constexpr const char kIbanLengths[] =
    "AD24AE23AL28AT20AZ28BA20BE16BG22BH22BI27BR29BY28CH21CR22CY28CZ24DE22DJ27DK18DO28EE20EG29"
    "ES24FI18FK18FO18FR27GB22GE22GI23GL18GR27GT28HN28HR21HU28IE22IL23IQ23IS26IT27JO30KW30KZ20"
    "LB28LC32LI21LT20LU20LV21LY25MC27MD24ME22MK19MN20MR27MT31MU30NI28NL18NO15OM23PK24PL28PS29"
    "PT25QA29RO24RS22RU33SA24SC31SD18SE24SI19SK24SM27SO23ST25SV28TL23TN24TR26UA29VA22VG24XK20"
    "YE30";

int iban_length(char a, char b) {
    a = to_upper(a), b = to_upper(b);
    for (const char* p = kIbanLengths; *p; p += 4)
        if (p[0] == a && p[1] == b) return (p[2] - '0') * 10 + (p[3] - '0');
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
            const unsigned v = unsigned(to_upper(c) - 'A') + 10;  // two digits
            remainder = (remainder * 100 + v) % 97;
        }
    };
    for (std::size_t i = 4; i < iban.size(); ++i) feed(iban[i]);
    for (std::size_t i = 0; i < 4; ++i) feed(iban[i]);
    return remainder == 1;
}

std::vector<Span> find_ibans(std::string_view t, std::vector<Span>* look_alikes) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i + 4 <= n; ++i) {
        if (!(is_alpha(t[i]) && is_alpha(t[i + 1]) && is_digit(t[i + 2]) && is_digit(t[i + 3])) || glued_before(t, i))
            continue;
        const int length = iban_length(t[i], t[i + 1]);
        if (length == 0) continue;
        // The compact form, or the printed one: groups of four separated by single spaces.
        std::string compact;
        std::size_t j = i, group = 0, end = i;
        while (j < n && compact.size() < std::size_t(length)) {
            if (is_alnum(t[j])) {
                compact.push_back(t[j]), ++group, end = ++j;
            } else if (t[j] == ' ' && group == 4 && j + 1 < n && is_alnum(t[j + 1])) {
                group = 0, ++j;
            } else {
                break;
            }
        }
        if (compact.size() == std::size_t(length) && !glued_after(t, end) && iban_checksum_valid(compact)) {
            out.push_back({i, end, PG_PII_IBAN});
            i = end - 1;
        } else if (look_alikes && compact.size() >= 12) {  // "DE89 3704 0044 ..." with a typo: no phone
            look_alikes->push_back({i, end, PG_PII_KIND_COUNT});
            i = end - 1;
        }
    }
    return out;
}

// ---- payment cards ----------------------------------------------------------------------------

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

// Issuer identification ranges: the first `digits` digits of the number within [lo, hi], and
// the lengths the scheme issues (bit L for length L).
struct IssuerRange {
    unsigned lo, hi;
    int digits;
    uint32_t lengths;
};
constexpr uint32_t len_bits(int a, int b) { return ((1u << (b + 1)) - 1) & ~((1u << a) - 1); }
constexpr IssuerRange kIssuers[] = {
    {4, 4, 1, (1u << 13) | (1u << 16) | (1u << 19)},  // Visa
    {51, 55, 2, 1u << 16},                             // Mastercard
    {2221, 2720, 4, 1u << 16},                         // Mastercard 2-series
    {34, 34, 2, 1u << 15},                             // American Express
    {37, 37, 2, 1u << 15},
    {6011, 6011, 4, len_bits(16, 19)},                 // Discover
    {644, 649, 3, len_bits(16, 19)},
    {65, 65, 2, len_bits(16, 19)},                     // Discover, RuPay, Verve
    {62, 62, 2, len_bits(16, 19)},                     // UnionPay
    {300, 305, 3, len_bits(14, 19)},                   // Diners Club
    {3095, 3095, 4, len_bits(14, 19)},
    {36, 36, 2, len_bits(14, 19)},
    {38, 39, 2, len_bits(14, 19)},
    {3528, 3589, 4, len_bits(16, 19)},                 // JCB
    {2200, 2204, 4, len_bits(16, 19)},                 // Mir
    {50, 50, 2, len_bits(12, 19)},                     // Maestro, Verve, RuPay
    {56, 58, 2, len_bits(12, 19)},                     // Maestro
    {60, 60, 2, len_bits(16, 19)},                     // RuPay
    {63, 63, 2, len_bits(12, 19)},                     // Maestro
    {67, 67, 2, len_bits(12, 19)},
    {81, 82, 2, 1u << 16},                             // RuPay
    {353, 353, 3, 1u << 16},
    {356, 356, 3, 1u << 16},
    {9792, 9792, 4, 1u << 16},                         // Troy
    {1, 1, 1, 1u << 15},                               // UATP
};

bool issued(std::string_view digits) {
    for (const IssuerRange& r : kIssuers) {
        if (digits.size() < std::size_t(r.digits) || !(r.lengths & (1u << digits.size()))) continue;
        const unsigned v = digits_value(digits, 0, std::size_t(r.digits));
        if (v >= r.lo && v <= r.hi) return true;
    }
    return false;
}

// The groupings cards are printed in: all fours with a shorter last group, 4-6-5 (Amex),
// 4-6-4 (Diners), 4-4-5, or one group.
bool card_grouping(const int* g, std::size_t k) {
    if (k == 1) return true;
    if (k == 3 && g[0] == 4 && ((g[1] == 6 && (g[2] == 5 || g[2] == 4)) || (g[1] == 4 && g[2] == 5))) return true;
    for (std::size_t i = 0; i + 1 < k; ++i)
        if (g[i] != 4) return false;
    return g[k - 1] >= 1 && g[k - 1] <= 4;
}

}  // namespace

std::vector<Span> find_cards(std::string_view t) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_digit(t[i]) || continues_number(t, i) || (i > 0 && t[i - 1] == '+')) continue;
        const std::size_t first_end = digits_end(t, i);
        std::string digits;
        int groups[20];
        std::size_t k = 0, j = i, best_end = 0;
        std::string_view sep;  // the first separator; every other one must be the same
        while (k < 20) {
            const std::size_t e = digits_end(t, j);
            if (digits.size() + (e - j) > 19) break;
            digits.append(t.substr(j, e - j));
            groups[k++] = int(e - j);
            const bool ends_clean = !glued_after(t, e) && !(e + 1 < n && (t[e] == '.' || t[e] == ',') &&
                                                            is_digit(t[e + 1]) && sep != t.substr(e, 1));
            if (digits.size() >= 12 && ends_clean && card_grouping(groups, k) && issued(digits) && luhn_valid(digits))
                best_end = e;
            // Only the last group may differ: 4, then 4 or 6 (then the last), then fours.
            if (k >= 2) {
                const std::size_t p = k - 2;
                if (!(groups[p] == 4 ? p < 2 || groups[1] == 4 : p == 1 && groups[1] == 6)) break;
            }
            std::size_t len = 1;
            if (!(is_space_at(t, e, &len) || (e < n && (t[e] == '-' || t[e] == '.')))) break;
            if (e + len >= n || !is_digit(t[e + len]) || (!sep.empty() && t.substr(e, len) != sep)) break;
            sep = t.substr(e, len);
            j = e + len;
        }
        if (best_end) {
            out.push_back({i, best_end, PG_PII_PAYMENT_CARD});
            i = best_end - 1;
        } else {
            i = first_end - 1;  // a card may still start at the next group
        }
    }
    return out;
}

// ---- IPv4 ---------------------------------------------------------------------------------------

namespace {

// Words after which a dotted number is a section, version or clause number, not an address.
bool numbering_word_before(std::string_view t, std::size_t pos) {
    std::size_t e = pos;
    while (e > 0 && t[e - 1] == ' ') --e;
    if (e >= 2 && t.substr(e - 2, 2) == "\xc2\xa7") return true;  // "§ 1.2.3.4"
    if (e > 0 && t[e - 1] == '.') --e;                           // "Sec. 1.2.3.4"
    std::size_t b = e;
    while (b > 0 && e - b < 12 && (is_alpha(t[b - 1]) || is_non_ascii(t[b - 1]))) --b;
    if (b == e || (b > 0 && (is_alpha(t[b - 1]) || is_non_ascii(t[b - 1])))) return false;
    static const char* const kWords[] = {
        "section", "sections", "sec", "chapter", "chap", "ch", "clause", "article", "art", "paragraph", "para",
        "rule", "step", "item", "figure", "fig", "table", "tab", "appendix", "annex", "version", "ver", "v",
        "release", "rev", "revision", "build", "firmware", "abschnitt", "kapitel", "artikel", "absatz",
        "ziffer", "punkt", "anhang", "tabelle", "abbildung", "secci\xc3\xb3n", "cap\xc3\xadtulo", ("art\xc3\xad" "culo"),
        "chapitre", "paragraphe", "capitolo", "articolo", "sezione", "hoofdstuk", "rozdzia\xc5\x82", "oid",
    };
    const std::string_view word = t.substr(b, e - b);
    for (const char* w : kWords)
        if (equals_ci(word, w)) return true;
    return false;
}

}  // namespace

std::vector<Span> find_ipv4(std::string_view t) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_digit(t[i])) continue;
        // The whole dotted-decimal run: exactly four groups, or it is no address.
        std::size_t j = i, groups = 0;
        bool octets = true;
        for (;;) {
            const std::size_t e = digits_end(t, j);
            const std::size_t len = e - j;
            octets &= len <= 3 && !(len > 1 && t[j] == '0') && digits_value(t, j, std::min(e, j + 4)) <= 255;
            ++groups;
            j = e;
            if (groups > 4 || !(j + 1 < n && t[j] == '.' && is_digit(t[j + 1]))) break;
            ++j;
        }
        const bool boundary = !glued_before(t, i) && !(i >= 2 && t[i - 1] == '.' && is_digit(t[i - 2]));
        const bool versioned = j + 1 < n && t[j] == '-' && is_alpha(t[j + 1]);  // "1.2.3.4-beta"
        if (boundary && groups == 4 && octets && !glued_after(t, j) && !versioned && !numbering_word_before(t, i))
            out.push_back({i, j, PG_PII_IPV4});
        i = j - 1;
        while (i + 1 < n && is_digit(t[i + 1])) ++i;
    }
    return out;
}

// ---- harmless numbers: dates and ISBNs -----------------------------------------------------

namespace {

bool isbn10_valid(std::string_view chars) {
    unsigned sum = 0;
    for (std::size_t k = 0; k < 10; ++k) sum += unsigned(10 - k) * (chars[k] == 'X' || chars[k] == 'x' ? 10 : unsigned(chars[k] - '0'));
    return sum % 11 == 0;
}

bool isbn13_valid(std::string_view digits) {
    if (digits.substr(0, 3) != "978" && digits.substr(0, 3) != "979") return false;
    unsigned sum = 0;
    for (std::size_t k = 0; k < 13; ++k) sum += unsigned(digits[k] - '0') * (k % 2 ? 3 : 1);
    return sum % 10 == 0;
}

// A date at `i` (Y-M-D, D.M.Y, D/M/Y, M/D/Y with one separator throughout); its end or 0.
std::size_t date_end(std::string_view t, std::size_t i) {
    std::size_t e[3], b[3];
    std::size_t j = i;
    char sep = 0;
    for (int k = 0; k < 3; ++k) {
        b[k] = j;
        e[k] = digits_end(t, j);
        if (e[k] == j || e[k] - j > 4) return 0;
        if (k < 2) {
            if (e[k] + 1 >= t.size() || !is_one_of(t[e[k]], "-./") || !is_digit(t[e[k] + 1])) return 0;
            if (sep && t[e[k]] != sep) return 0;
            sep = t[e[k]];
            j = e[k] + 1;
        }
    }
    const std::size_t l0 = e[0] - b[0], l1 = e[1] - b[1], l2 = e[2] - b[2];
    const unsigned a = digits_value(t, b[0], e[0]), m = digits_value(t, b[1], e[1]), c = digits_value(t, b[2], e[2]);
    if (l0 == 4 && l1 <= 2 && l2 <= 2) return m >= 1 && m <= 12 && c >= 1 && c <= 31 ? e[2] : 0;
    if (l0 <= 2 && l1 <= 2 && (l2 == 4 || l2 == 2)) {
        const bool dmy = a >= 1 && a <= 31 && m >= 1 && m <= 12, mdy = a >= 1 && a <= 12 && m >= 1 && m <= 31;
        return dmy || mdy ? e[2] : 0;
    }
    return 0;
}

// An ISBN at `i`: 13 digits starting 978/979 (bare, or groups separated by hyphens or
// spaces), or 10 characters (last may be X) bare or hyphenated in four groups ending in the
// check character; its end or 0.
std::size_t isbn_end(std::string_view t, std::size_t i) {
    std::string chars;
    std::size_t j = i, end = 0, groups = 1, group_len = 0;
    char sep = 0;
    while (j < t.size() && chars.size() < 13) {
        if (is_digit(t[j]) || ((t[j] == 'X' || t[j] == 'x') && chars.size() == 9)) {
            chars.push_back(t[j++]), ++group_len;
            const bool as10 = chars.size() == 10 && (!sep || (sep == '-' && groups == 4 && group_len == 1)) &&
                              isbn10_valid(chars);
            if (as10 || (chars.size() == 13 && isbn13_valid(chars))) end = j;
        } else if ((t[j] == '-' || t[j] == ' ') && (!sep || t[j] == sep) && j + 1 < t.size() && is_digit(t[j + 1]) &&
                   !chars.empty()) {
            sep = t[j++], ++groups, group_len = 0;
        } else {
            break;
        }
    }
    return end && !glued_after(t, end) ? end : 0;
}

}  // namespace

namespace {

// True when the digits at `pos` follow "+<digits> " (a country code): they are a phone's.
bool after_country_code(std::string_view t, std::size_t pos) {
    std::size_t k = pos;
    if (k > 0 && t[k - 1] == ' ') --k;
    const std::size_t digits_end_at = k;
    while (k > 0 && digits_end_at - k < 4 && is_digit(t[k - 1])) --k;
    return k < digits_end_at && k > 0 && t[k - 1] == '+';
}

}  // namespace

std::vector<Span> find_harmless_numbers(std::string_view t) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_digit(t[i]) || glued_before(t, i) || after_country_code(t, i)) continue;
        std::size_t e = date_end(t, i);
        if (!e || glued_after(t, e)) e = isbn_end(t, i);
        if (e) {
            out.push_back({i, e, PG_PII_KIND_COUNT});  // no kind: these only block phones
            i = e - 1;
        } else {
            i = digits_end(t, i) - 1;
        }
    }
    return out;
}

}  // namespace pg::privacy
