// The data filter's detectors for e-mail addresses (RFC 5322 dot-atom and quoted local parts,
// RFC 6531 internationalised local parts and domains) and IPv6 addresses (RFC 4291 text form).
// Each candidate is read for a bounded number of bytes around its anchor ('@', or a run of hex
// digits and colons), so both scans are linear in the text.

#include "privacy/data_filter.hpp"
#include "privacy/scan.hpp"
#include "tokenizer/utf8.hpp"

namespace pg::privacy {
using namespace scan;

namespace {

// RFC 5321's limits: a local part of at most 64 octets, a domain of at most 255.
constexpr std::size_t kMaxLocal = 64, kMaxDomain = 255;

// Code points that are punctuation, symbols or spaces rather than letters of a word: they end
// an internationalised local part or label ("«jane@example.com»", "：", "→").
bool is_word_code_point(uint32_t cp) {
    if (cp < 0x80) return is_alnum(char(cp));
    if (cp <= 0xBF || cp == 0xD7 || cp == 0xF7) return false;
    if ((cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x2190 && cp <= 0x2BFF) || (cp >= 0x3000 && cp <= 0x303F)) return false;
    if ((cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF0F) || (cp >= 0xFF1A && cp <= 0xFF20)) return false;
    if ((cp >= 0xFF3B && cp <= 0xFF40) || (cp >= 0xFF5B && cp <= 0xFF65) || (cp >= 0x1F000 && cp <= 0x1FAFF)) return false;
    return true;
}

// The length of the non-ASCII word character at `pos`, or 0.
int word_char_at(std::string_view t, std::size_t pos) {
    uint32_t cp;
    int len;
    if (utf8::decode_at(t, pos, &cp, &len) || !is_word_code_point(cp)) return 0;
    return len;
}

// The start of the non-ASCII word character ending at `end`, or `end` if there is none.
std::size_t word_char_before(std::string_view t, std::size_t end, std::size_t floor) {
    std::size_t b = end;
    while (b > floor && end - b < 4 && (static_cast<unsigned char>(t[b - 1]) & 0xC0) == 0x80) --b;
    if (b == floor || b == end) return end;
    --b;
    return word_char_at(t, b) == int(end - b) ? b : end;
}

// RFC 5322 atext without the letters and digits.
bool is_atext_symbol(char c) { return is_one_of(c, "!#$%&'*+-/=?^_`{|}~"); }

// The start of the local part ending at `at` (the '@'), or `at` when there is none.
std::size_t local_begin(std::string_view t, std::size_t at, std::size_t floor) {
    const std::size_t limit = at - std::min(at - floor, kMaxLocal + 2);
    if (at > floor && t[at - 1] == '"') {  // a quoted local part: find its unescaped opening quote
        for (std::size_t k = at - 1; k-- > limit;) {
            if (t[k] == '\n') return at;
            if (t[k] != '"') continue;
            std::size_t slashes = 0;
            while (k - slashes > limit && t[k - slashes - 1] == '\\') ++slashes;
            if (slashes % 2 == 0) return k + 2 < at && !glued_before(t, k) ? k : at;
        }
        return at;
    }
    std::size_t b = at;
    while (b > limit) {
        if (is_alnum(t[b - 1]) || is_atext_symbol(t[b - 1]) || t[b - 1] == '.') {
            --b;
        } else if (is_non_ascii(t[b - 1])) {
            const std::size_t c = word_char_before(t, b, limit);
            if (c == b) break;
            b = c;
        } else {
            break;
        }
    }
    // Leading symbols are the text's punctuation ("'jane@...", "(bob@..."), not the address's.
    while (b < at && (is_atext_symbol(t[b]) || t[b] == '.') && t[b] != '_') ++b;
    if (b == at || t[at - 1] == '.') return at;
    for (std::size_t k = at - 1; k > b; --k)  // "a..b@x" is no address; its part after ".." is
        if (t[k] == '.' && t[k - 1] == '.') return k + 1 < at ? k + 1 : at;
    return b;
}

// File names that look like addresses ("icon@2x.png"): these endings are no top-level domain.
bool is_file_extension(std::string_view label) {
    static const char* const kExtensions[] = {"png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "tif", "tiff",
                                              "pdf", "txt", "json", "css", "js", "heic", "ico"};
    for (const char* e : kExtensions)
        if (equals_ci(label, e)) return true;
    return false;
}

bool is_top_level_label(std::string_view label) {
    if (label.size() >= 5 && equals_ci(label.substr(0, 4), "xn--")) return true;
    bool letters = label.size() >= 2, ascii = true;
    for (char c : label) letters &= is_alpha(c) || is_non_ascii(c), ascii &= !is_non_ascii(c);
    return letters && !(ascii && is_file_extension(label));
}

// The end of the domain starting at `begin`, or `begin` if there is none: a domain literal
// ("[192.0.2.1]", "[IPv6:2001:db8::1]") or at least two labels (letters, digits, '-' inside,
// internationalised letters) whose last is a top-level label.
std::size_t domain_end(std::string_view t, std::size_t begin) {
    const std::size_t n = t.size(), limit = std::min(n, begin + kMaxDomain);
    if (begin < n && t[begin] == '[') {
        std::size_t e = begin + 1;
        while (e < limit && (is_hex(t[e]) || t[e] == ':' || t[e] == '.' || is_one_of(t[e], "IPvV6"))) ++e;
        return e < limit && t[e] == ']' && e > begin + 7 ? e + 1 : begin;
    }
    std::size_t best = begin, pos = begin;
    int labels = 0;
    bool scale_label = false;  // "2x", "1.5x": an image scale, so "icon@2x.png" is a file name
    while (pos < limit) {
        std::size_t e = pos;
        while (e < limit) {
            if (is_alnum(t[e]) || t[e] == '-') {
                ++e;
            } else if (const int len = is_non_ascii(t[e]) ? word_char_at(t, e) : 0) {
                e += std::size_t(len);
            } else {
                break;
            }
        }
        if (e == pos || t[pos] == '-' || t[e - 1] == '-' || e - pos > 63) break;
        const std::string_view label = t.substr(pos, e - pos);
        if (labels == 0) scale_label = label.size() >= 2 && (label.back() == 'x' || label.back() == 'X') &&
                                       digits_end(label, 0) == label.size() - 1;
        ++labels;
        if (labels >= 2 && is_top_level_label(label) && !scale_label) best = e;
        if (e + 1 < limit && t[e] == '.' && (is_alnum(t[e + 1]) || is_non_ascii(t[e + 1])))
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
    for (std::size_t at = t.find('@'); at != std::string_view::npos; at = t.find('@', at + 1)) {
        if (at < floor) continue;
        const std::size_t b = local_begin(t, at, floor);
        if (b == at) continue;
        const std::size_t e = domain_end(t, at + 1);
        if (e == at + 1) continue;
        out.push_back({b, e, PG_PII_EMAIL});
        floor = e;
        at = e - 1;
    }
    return out;
}

// ---- IPv6 -------------------------------------------------------------------------------------

namespace {

// RFC 4291 text form: eight groups of 1-4 hex digits, one "::" standing for one or more zero
// groups, optionally ending in a dotted IPv4 address (two groups). `hex_digits` gets the count.
bool is_ipv6(std::string_view s, std::size_t* hex_digits) {
    std::size_t groups = 0, digits = 0;
    bool compressed = false, any_decimal = false;
    std::size_t i = 0;
    if (s.substr(0, 2) == "::") compressed = true, i = 2;
    else if (!s.empty() && s[0] == ':') return false;
    while (i < s.size()) {
        std::size_t e = i;
        while (e < s.size() && is_hex(s[e])) any_decimal |= is_digit(s[e]), ++e;
        if (e < s.size() && s[e] == '.') {  // the IPv4 tail
            const std::string_view tail = s.substr(i);
            int parts = 0;
            for (std::size_t p = 0;;) {
                std::size_t q = p;
                while (q < tail.size() && is_digit(tail[q])) ++q;
                if (q == p || q - p > 3 || digits_value(tail, p, q) > 255) return false;
                ++parts;
                if (q == tail.size()) break;
                if (tail[q] != '.') return false;
                p = q + 1;
            }
            if (parts != 4) return false;
            groups += 2, digits += 8, any_decimal = true;
            break;
        }
        if (e == i || e - i > 4) return false;
        ++groups, digits += e - i;
        if (e == s.size()) break;
        if (s[e] != ':') return false;
        if (e + 1 < s.size() && s[e + 1] == ':') {
            if (compressed) return false;
            compressed = true;
            i = e + 2;
        } else {
            if (e + 1 == s.size()) return false;
            i = e + 1;
        }
    }
    *hex_digits = digits;
    if (!any_decimal) return false;  // "bad::face" is C++ or prose, not an address
    return compressed ? groups <= 7 : groups == 8;
}

bool is_ipv6_char(char c) { return is_hex(c) || c == ':' || c == '.'; }

}  // namespace

std::vector<Span> find_ipv6(std::string_view t) {
    std::vector<Span> out;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_ipv6_char(t[i]) || t[i] == '.') continue;
        std::size_t e = i, colons = 0;
        while (e < n && is_ipv6_char(t[e])) colons += t[e] == ':', ++e;
        std::size_t end = e;
        while (end > i && t[end - 1] == '.') --end;  // a sentence's full stop
        if (end > i + 1 && t[end - 1] == ':' && t[end - 2] != ':') --end;  // "at 2001:db8::1: up"
        // An array slice ("a[1::2]", "x[::4]") is no address: '[' right after a name or ']'.
        const bool slice = i >= 2 && t[i - 1] == '[' && (is_alnum(t[i - 2]) || is_one_of(t[i - 2], "_])"));
        const bool glued = glued_before(t, i) || (e < n && is_alnum(t[e]));
        std::size_t digits = 0;
        // At least five hex digits ("fe80::1"), so slices and ratios like "1::2" stay.
        if (!glued && !slice && colons >= 2 && is_ipv6(t.substr(i, end - i), &digits) && digits >= 5)
            out.push_back({i, end, PG_PII_IPV6});
        i = e - 1;
    }
    return out;
}

}  // namespace pg::privacy
