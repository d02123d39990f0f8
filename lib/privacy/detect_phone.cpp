// The data filter's phone detector: numbering plans as a compact table (country code, trunk
// prefix, national significant number lengths) for the EU, the UK, NANP, India and a few
// neighbours. A number with '+' (or "00") is judged by its country's plan (any other country
// code: E.164's 8-15 digits); a national number by the plans of the app's regions (default:
// every plan with trunk prefix 0, NANP and Indian mobiles). docs/privacy.md explains why this
// table and not libphonenumber.
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "privacy/data_filter.hpp"
#include "privacy/scan.hpp"

namespace pg::privacy {
using namespace scan;

namespace {

struct Plan {
    char region[3];
    uint16_t country_code;
    char trunk[3];       // national (trunk) prefix, "" if numbers are dialled as they are
    uint8_t min_nsn;     // national significant number lengths
    uint8_t max_nsn;
    uint16_t leading;    // bit d: the national number may start with digit d
};
constexpr uint16_t kAny = 0x3FE;  // 1-9
constexpr Plan kPlans[] = {
    {"AT", 43, "0", 7, 13, kAny},  {"BE", 32, "0", 8, 9, kAny},   {"BG", 359, "0", 7, 9, kAny},
    {"HR", 385, "0", 8, 9, kAny},  {"CY", 357, "", 8, 8, 0x204},  {"CZ", 420, "", 9, 9, 0x3FC},
    {"DK", 45, "", 8, 8, 0x3FC},   {"EE", 372, "", 7, 8, 0x1F8},  {"FI", 358, "0", 6, 11, kAny},
    {"FR", 33, "0", 9, 9, kAny},   {"DE", 49, "0", 7, 12, kAny},  {"GR", 30, "", 10, 10, 0x44},
    {"HU", 36, "06", 8, 9, kAny},  {"IE", 353, "0", 7, 9, kAny},  {"IT", 39, "", 6, 11, 0x9},
    {"LV", 371, "", 8, 8, 0x44},   {"LT", 370, "8", 8, 8, kAny},  {"LU", 352, "", 6, 11, kAny},
    {"MT", 356, "", 8, 8, 0x284},  {"NL", 31, "0", 9, 9, kAny},   {"PL", 48, "", 9, 9, kAny},
    {"PT", 351, "", 9, 9, 0x204},  {"RO", 40, "0", 9, 9, kAny},   {"SK", 421, "0", 9, 9, kAny},
    {"SI", 386, "0", 8, 8, kAny},  {"ES", 34, "", 9, 9, 0x3C0},   {"SE", 46, "0", 7, 9, kAny},
    {"GB", 44, "0", 9, 10, kAny},  {"CH", 41, "0", 9, 9, kAny},   {"NO", 47, "", 8, 8, 0x3FC},
    {"IN", 91, "0", 10, 10, kAny}, {"US", 1, "1", 10, 10, 0x3FC}, {"CA", 1, "1", 10, 10, 0x3FC},
};
constexpr std::size_t kPlanCount = sizeof kPlans / sizeof kPlans[0];
constexpr std::size_t plan_index(const char* region) {
    for (std::size_t i = 0; i < kPlanCount; ++i)
        if (kPlans[i].region[0] == region[0] && kPlans[i].region[1] == region[1]) return i;
    return kPlanCount;
}
constexpr std::size_t kUs = plan_index("US"), kCa = plan_index("CA"), kIn = plan_index("IN");
static_assert(kUs < kPlanCount && kCa < kPlanCount && kIn < kPlanCount, "the plans the rules name");
static_assert(kPlanCount <= 63, "RegionSet is a 64-bit mask; bit 63 marks an explicit set");
constexpr RegionSet kExplicit = RegionSet(1) << 63;

const Plan* plan_of_country_code(std::string_view digits, std::size_t* cc_len) {
    for (std::size_t len = 1; len <= 3 && len <= digits.size(); ++len) {
        const unsigned cc = digits_value(digits, 0, len);
        for (const Plan& p : kPlans)
            if (p.country_code == cc) return *cc_len = len, &p;
    }
    return nullptr;
}

// A country code outside the table: E.164's limits (8-15 digits with the country code).
bool plausible_international(std::string_view digits) { return digits.size() >= 8 && digits.size() <= 15 && digits[0] != '0'; }

struct Candidate {
    std::string digits;           // every digit, "(0)" excluded
    int groups[12] = {};          // digit count per group
    std::size_t k = 0;            // groups read
    bool plus = false, paren_trunk = false;
};

bool nsn_fits(const Plan& p, std::string_view nsn) {
    return nsn.size() >= p.min_nsn && nsn.size() <= p.max_nsn && (p.leading >> (nsn[0] - '0') & 1);
}

bool nanp_grouping(const int* g, std::size_t k, std::size_t skip) {
    g += skip, k -= skip;
    return (k == 1) || (k == 2 && g[0] == 3 && g[1] == 7) || (k == 3 && g[0] == 3 && g[1] == 3 && g[2] == 4);
}

bool valid_international(const Candidate& c) {
    std::string_view d = c.digits;
    std::size_t cc_len = 0;
    const Plan* p = plan_of_country_code(d, &cc_len);
    if (!p) return plausible_international(d);
    std::string_view nsn = d.substr(cc_len);
    if (!nsn.empty() && nsn[0] == '0' && p->trunk[0] == '0' && !c.paren_trunk) nsn.remove_prefix(1);  // "+49 030 ..."
    return !nsn.empty() && nsn_fits(*p, nsn);
}

bool valid_national(const Candidate& c, RegionSet regions) {
    const std::string_view d = c.digits;
    if (d.empty()) return false;
    if (d.size() >= 10 && d.substr(0, 2) == "00") {  // the international prefix
        Candidate intl = c;
        intl.digits.erase(0, 2);
        std::size_t cc_len = 0;
        return plan_of_country_code(intl.digits, &cc_len) && valid_international(intl);
    }
    const bool explicit_set = regions & kExplicit;
    for (std::size_t i = 0; i < kPlanCount; ++i) {
        if (!(regions >> i & 1)) continue;
        const Plan& p = kPlans[i];
        const bool special = i == kUs || i == kCa || i == kIn;  // numbers without their trunk prefix
        if (p.trunk[0] && p.trunk[0] != d[0] && !special) continue;
        if (i == kUs || i == kCa) {
            const std::size_t skip = d.size() == 11 && d[0] == '1' && c.groups[0] == 1 ? 1 : 0;
            const std::string_view nsn = d.substr(skip);
            if (nsn.size() == 10 && nsn_fits(p, nsn) && nanp_grouping(c.groups, c.k, skip)) return true;
            // A local number (555-0134) only when the app says it writes NANP numbers.
            if (explicit_set && d.size() == 7 && c.k == 2 && c.groups[0] == 3 && d[0] >= '2') return true;
            continue;
        }
        const std::size_t trunk = std::strlen(p.trunk);
        if (trunk && d.substr(0, trunk) == p.trunk) {
            if (c.groups[0] >= 2 && d.size() > trunk && nsn_fits(p, d.substr(trunk))) return true;
        } else if (i == kIn) {
            if (d.size() == 10 && d[0] >= '6' && c.k <= 3) return true;  // mobiles: 98765 43210
        } else if (!trunk) {  // only in an explicit set: the default holds no such plan
            if (nsn_fits(p, d)) return true;
        }
    }
    return false;
}

// Reads a separator between two groups at `j`; returns the next group's start or 0. `paren`
// is 0 (none yet), 1 (open) or 2 (used); '(' is allowed at the number's start or after the
// country code or NANP's leading 1 only.
std::size_t read_separator(std::string_view t, std::size_t j, int* paren, bool paren_allowed) {
    const std::size_t n = t.size();
    std::size_t len = 0;
    if (*paren == 1) {
        if (j >= n || t[j] != ')') return 0;
        *paren = 2, ++j;
        if (is_space_at(t, j, &len)) j += len;
        else if (j < n && t[j] == '-') ++j;
        return j < n && is_digit(t[j]) ? j : 0;
    }
    if (is_space_at(t, j, &len)) {
        j += len;
        if (j + 1 < n && (t[j] == '-' || t[j] == '/') && is_space_at(t, j + 1, &len)) j += 1 + len;  // " - ", " / "
    } else if (j < n && is_one_of(t[j], "-./")) {
        ++j;
    }
    if (j < n && t[j] == '(' && paren_allowed && *paren == 0) *paren = 1, ++j;
    return j < n && is_digit(t[j]) ? j : 0;
}

// Reads the longest valid phone number starting at `s` (a digit, '+' or '('); its end or 0.
// `limit` is where the next blocker starts. With `stop_at_next` the number also ends where a
// second valid number starts ("030 1234567 0151 7654321").
std::size_t phone_end(std::string_view t, std::size_t s, std::size_t limit, RegionSet regions, bool stop_at_next) {
    const std::size_t n = std::min(t.size(), limit);
    Candidate c;
    std::size_t j = s;
    int paren = 0;
    if (t[j] == '+') c.plus = true, ++j;
    else if (t[j] == '(') paren = 1, ++j;
    std::size_t best = 0;
    while (j < n && is_digit(t[j]) && c.k < 12) {
        const std::size_t e = digits_end(t, j);
        // No plan writes two one-digit groups in a row ("1 2"), nor more than 17 digits.
        if (e > n || c.digits.size() + (e - j) > 17 || (e - j == 1 && c.k > 0 && c.groups[c.k - 1] == 1)) break;
        c.digits.append(t.substr(j, e - j));
        c.groups[c.k++] = int(e - j);
        const bool clean_end = !glued_after(t, e) && paren != 1 && (c.k == 1 || e - j >= 2) &&
                               !(e + 1 < t.size() && is_one_of(t[e], ".,") && is_digit(t[e + 1]) &&
                                 (c.k == 1 || t[e] != t[j - 1]));
        if (clean_end && c.digits.size() >= 7 &&
            (c.plus ? valid_international(c) : valid_national(c, regions)))
            best = e;
        // The trunk in parentheses after a country code: "+49 (0)30 ...".
        std::size_t len = 0, p = e;
        if (c.plus && c.k == 1 && !c.paren_trunk) {
            if (is_space_at(t, p, &len)) p += len;
            if (t.substr(p, 3) == "(0)") {
                c.paren_trunk = true, p += 3;
                if (is_space_at(t, p, &len)) p += len;
                if (p < n && is_digit(t[p])) { j = p; continue; }
                break;
            }
        }
        const std::size_t next = read_separator(t, e, &paren, c.k == 1 && (c.plus || c.digits == "1"));
        if (!next || next >= n) break;
        if (stop_at_next && best == e && (t[next - 1] == '(' || t[next] == '0') &&
            phone_end(t, t[next - 1] == '(' ? next - 1 : next, limit, regions, false))
            break;
        j = next;
    }
    return best;
}

}  // namespace

RegionSet parse_regions(std::string_view regions) {
    RegionSet set = 0;
    std::size_t i = 0;
    while (i < regions.size()) {
        if (regions[i] == ',' || regions[i] == ' ') { ++i; continue; }
        std::size_t e = i;
        while (e < regions.size() && regions[e] != ',' && regions[e] != ' ') ++e;
        const std::string_view code = regions.substr(i, e - i);
        bool found = false;
        for (std::size_t p = 0; p < kPlanCount; ++p)
            if (equals_ci(code, kPlans[p].region)) set |= RegionSet(1) << p, found = true;
        if (!found)
            throw Error(PG_ERR_INVALID_ARGUMENT, "data filter: regions: unknown region \"" + std::string(code) +
                                                     "\" (known: " + known_regions() + ")");
        i = e;
    }
    if (set) return set | kExplicit;
    // The default: every plan whose national numbers start with the trunk prefix 0, NANP's
    // ten-digit numbers and India's mobiles.
    for (std::size_t p = 0; p < kPlanCount; ++p)
        if (std::strcmp(kPlans[p].trunk, "0") == 0 || p == kUs) set |= RegionSet(1) << p;
    return set;
}

std::string known_regions() {
    std::string s;
    for (const Plan& p : kPlans) s += (s.empty() ? "" : ",") + std::string(p.region);
    return s;
}

std::vector<Span> find_phones(std::string_view t, RegionSet regions, const std::vector<Span>& blockers) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    std::size_t next_blocker = 0;
    for (std::size_t i = 0; i < n; ++i) {
        while (next_blocker < blockers.size() && blockers[next_blocker].end <= i) ++next_blocker;
        const std::size_t limit = next_blocker < blockers.size() ? blockers[next_blocker].begin : n;
        if (i >= limit) {
            i = blockers[next_blocker].end - 1;
            continue;
        }
        const bool opener = (t[i] == '+' || t[i] == '(') && i + 1 < n && is_digit(t[i + 1]) && !glued_before(t, i);
        if (!opener && !(is_digit(t[i]) && !continues_number(t, i))) continue;
        if (const std::size_t e = phone_end(t, i, limit, regions, true)) {
            out.push_back({i, e, PG_PII_PHONE});
            i = e - 1;
        } else if (is_digit(t[i])) {
            i = digits_end(t, i) - 1;  // a number may still start at the next group
        }
    }
    return out;
}

}  // namespace pg::privacy
