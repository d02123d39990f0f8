#include "core/json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/hex.hpp"

namespace pg::io {

namespace {
constexpr int kMaxDepth = 64;
}

class JsonParser {
public:
    JsonParser(const char* data, std::size_t size, const std::string& context)
        : p_(data), n_(size), context_(context) {}

    JsonValue parse_document() {
        skip_ws();
        JsonValue v = parse_value(0);
        skip_ws();
        if (i_ != n_) fail("unexpected text after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { fail_at(i_, what); }
    [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
        throw Error(PG_ERR_FORMAT, context_ + ": invalid JSON at byte " + std::to_string(at) + ": " + what);
    }
    // Refuses an object with a key twice, naming the later one's byte. Checked once the object is
    // read, by sorting its keys in place of copying each into a set: a tokenizer.json vocabulary
    // is an object of 200,000 keys.
    void require_unique_keys(const JsonValue& object, const std::vector<std::size_t>& key_at) const {
        const auto& members = object.object_;
        std::vector<std::size_t> order(members.size());
        for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return members[a].first < members[b].first; });
        for (std::size_t k = 1; k < order.size(); ++k) {
            const std::size_t a = order[k - 1], b = order[k];
            if (members[a].first == members[b].first)
                fail_at(std::max(key_at[a], key_at[b]), "duplicate key \"" + members[b].first + "\"");
        }
    }
    void skip_ws() {
        while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r')) ++i_;
    }
    bool eat(char c) {
        if (i_ < n_ && p_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    void expect_word(const char* w) {
        for (const char* c = w; *c; ++c)
            if (!eat(*c)) fail(std::string("expected \"") + w + "\"");
    }

    JsonValue parse_value(int depth) {
        if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
        if (i_ >= n_) fail("unexpected end");
        JsonValue v;
        char c = p_[i_];
        if (c == '{') {
            ++i_;
            v.type_ = JsonValue::Type::kObject;
            std::vector<std::size_t> key_at;  // each key's byte, for require_unique_keys
            skip_ws();
            if (eat('}')) return v;
            for (;;) {
                skip_ws();
                if (i_ >= n_ || p_[i_] != '"') fail("expected a string key");
                key_at.push_back(i_);
                std::string key = parse_string();
                skip_ws();
                if (!eat(':')) fail("expected ':'");
                skip_ws();
                JsonValue member = parse_value(depth + 1);
                v.object_.emplace_back(std::move(key), std::move(member));
                skip_ws();
                if (eat(',')) continue;
                if (eat('}')) {
                    require_unique_keys(v, key_at);
                    return v;
                }
                fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            ++i_;
            v.type_ = JsonValue::Type::kArray;
            skip_ws();
            if (eat(']')) return v;
            for (;;) {
                skip_ws();
                v.array_.push_back(parse_value(depth + 1));
                skip_ws();
                if (eat(',')) continue;
                if (eat(']')) return v;
                fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v.type_ = JsonValue::Type::kString;
            v.text_ = parse_string();
            return v;
        }
        if (c == 't') {
            expect_word("true");
            v.type_ = JsonValue::Type::kBool;
            v.bool_ = true;
            return v;
        }
        if (c == 'f') {
            expect_word("false");
            v.type_ = JsonValue::Type::kBool;
            return v;
        }
        if (c == 'n') {
            expect_word("null");
            return v;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            v.type_ = JsonValue::Type::kNumber;
            v.text_ = parse_number();
            return v;
        }
        fail("unexpected character 0x" + hex_encode(&c, 1));
    }

    std::string parse_number() {
        std::size_t start = i_;
        auto digits = [&] {
            std::size_t s = i_;
            while (i_ < n_ && p_[i_] >= '0' && p_[i_] <= '9') ++i_;
            return i_ - s;
        };
        eat('-');
        if (eat('0')) {
        } else if (digits() == 0) {
            fail("bad number");
        }
        if (eat('.') && digits() == 0) fail("bad number fraction");
        if (i_ < n_ && (p_[i_] == 'e' || p_[i_] == 'E')) {
            ++i_;
            if (!eat('+')) eat('-');
            if (digits() == 0) fail("bad number exponent");
        }
        return std::string(p_ + start, i_ - start);
    }

    unsigned hex4() {
        if (n_ - i_ < 4) fail("truncated \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            char c = p_[i_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
            else fail("bad \\u escape");
        }
        return v;
    }
    static void put_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xF0 | (cp >> 18));
            out += char(0x80 | ((cp >> 12) & 0x3F));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        }
    }

    std::string parse_string() {
        ++i_;  // opening quote
        std::string out;
        for (;;) {
            if (i_ >= n_) fail("unterminated string");
            unsigned char c = (unsigned char)p_[i_];
            if (c == '"') {
                ++i_;
                return out;
            }
            if (c < 0x20) fail("control character in string");
            if (c == '\\') {
                ++i_;
                if (i_ >= n_) fail("unterminated escape");
                char e = p_[i_++];
                switch (e) {
                    case '"': out += '"'; break;
                    case '\\': out += '\\'; break;
                    case '/': out += '/'; break;
                    case 'b': out += '\b'; break;
                    case 'f': out += '\f'; break;
                    case 'n': out += '\n'; break;
                    case 'r': out += '\r'; break;
                    case 't': out += '\t'; break;
                    case 'u': {
                        unsigned cp = hex4();
                        if (cp >= 0xD800 && cp < 0xDC00) {  // surrogate pair
                            if (!(eat('\\') && eat('u'))) fail("lone high surrogate");
                            unsigned lo = hex4();
                            if (lo < 0xDC00 || lo >= 0xE000) fail("bad low surrogate");
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        } else if (cp >= 0xDC00 && cp < 0xE000) {
                            fail("lone low surrogate");
                        }
                        put_utf8(out, cp);
                        break;
                    }
                    default: fail("bad escape");
                }
                continue;
            }
            // Raw UTF-8: validate the sequence (shortest form, no surrogates, <= U+10FFFF).
            int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
            if (len == 0 || n_ - i_ < std::size_t(len)) fail("invalid UTF-8");
            unsigned cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
            for (int k = 1; k < len; ++k) {
                unsigned char d = (unsigned char)p_[i_ + k];
                if ((d & 0xC0) != 0x80) fail("invalid UTF-8");
                cp = (cp << 6) | (d & 0x3F);
            }
            static const unsigned kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
            if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) fail("invalid UTF-8");
            out.append(p_ + i_, std::size_t(len));
            i_ += std::size_t(len);
        }
    }

    const char* p_;
    std::size_t n_;
    std::size_t i_ = 0;
    const std::string& context_;
};

namespace {
[[noreturn]] void type_error(const std::string& what, const char* expected) {
    throw Error(PG_ERR_FORMAT, what + " must be " + expected);
}
}  // namespace

bool JsonValue::as_bool(const std::string& what) const {
    if (type_ != Type::kBool) type_error(what, "true or false");
    return bool_;
}
const std::string& JsonValue::as_string(const std::string& what) const {
    if (type_ != Type::kString) type_error(what, "a string");
    return text_;
}
uint64_t JsonValue::as_u64(const std::string& what) const {
    if (type_ != Type::kNumber) type_error(what, "a non-negative integer");
    uint64_t v = 0;
    for (char c : text_) {
        if (c < '0' || c > '9') type_error(what, "a non-negative integer");
        uint64_t d = uint64_t(c - '0');
        if (v > (UINT64_MAX - d) / 10) throw Error(PG_ERR_FORMAT, what + " does not fit in 64 bits");
        v = v * 10 + d;
    }
    return v;
}
double JsonValue::as_double(const std::string& what) const {
    if (type_ != Type::kNumber) type_error(what, "a number");
    double v = std::strtod(text_.c_str(), nullptr);
    if (!std::isfinite(v)) throw Error(PG_ERR_FORMAT, what + " is out of range");
    return v;
}
const std::vector<JsonValue>& JsonValue::as_array(const std::string& what) const {
    if (type_ != Type::kArray) type_error(what, "an array");
    return array_;
}
const std::vector<std::pair<std::string, JsonValue>>& JsonValue::as_object(const std::string& what) const {
    if (type_ != Type::kObject) type_error(what, "an object");
    return object_;
}
const JsonValue* JsonValue::find(const std::string& key) const {
    for (const auto& kv : object_)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

JsonValue parse_json(const char* data, std::size_t size, const std::string& context) {
    return JsonParser(data, size, context).parse_document();
}

std::string json_quote(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += char(c);
                }
        }
    }
    return out + "\"";
}

namespace {

// The shortest %g text with at most max_digits significant digits that `parse` reads back as
// v; in fixed notation whenever its decimal exponent is in [-5, max_digits) ("10", not "1e+01").
template <class T, class Parse>
std::string shortest_text(T v, int max_digits, Parse parse) {
    char buf[48];
    int digits = 1;
    for (; digits < max_digits; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, double(v));
        if (parse(buf) == v) break;
    }
    const int exponent = v == 0 || !std::isfinite(v) ? 0 : int(std::floor(std::log10(std::fabs(double(v)))));
    if (exponent >= digits && exponent < max_digits) digits = exponent + 1;
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(v));
    return buf;
}

}  // namespace

std::string json_float(float v) {
    return shortest_text(v, 9, [](const char* s) { return std::strtof(s, nullptr); });
}

std::string json_double(double v) {
    return shortest_text(v, 17, [](const char* s) { return std::strtod(s, nullptr); });
}

const char* nonfinite_token(float v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return nullptr;
}

bool parse_nonfinite_token(const std::string& s, float* out) {
    if (s == "nan") *out = std::numeric_limits<float>::quiet_NaN();
    else if (s == "inf") *out = std::numeric_limits<float>::infinity();
    else if (s == "-inf") *out = -std::numeric_limits<float>::infinity();
    else return false;
    return true;
}

namespace {

void require_finite(double v, const std::string& key) {
    require(std::isfinite(v), PG_ERR_INTERNAL,
            "JSON output: \"" + key + "\" is " + (std::isnan(v) ? "NaN" : "infinite") +
                ", which has no JSON form (a caller must handle non-finite figures before writing them)");
}

template <class T, class Format>
std::string json_list(const std::vector<T>& items, Format format) {
    std::string s = "[";
    for (std::size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + format(items[i]);
    return s + "]";
}

}  // namespace

JsonObject& JsonObject::raw(const std::string& key, const std::string& value) {
    members_.emplace_back(json_quote(key), value);
    return *this;
}

std::string JsonObject::text() const {
    std::string s = "{";
    for (std::size_t i = 0; i < members_.size(); ++i)
        s += (i ? "," : "") + members_[i].first + ":" + members_[i].second;
    return s + "}";
}

std::string JsonObject::indented_text() const {
    std::string s = "{\n";
    for (std::size_t i = 0; i < members_.size(); ++i)
        s += "  " + members_[i].first + ": " + members_[i].second + (i + 1 < members_.size() ? ",\n" : "\n");
    return s + "}";
}

JsonObject& JsonObject::str(const std::string& key, const std::string& v) { return raw(key, json_quote(v)); }

JsonObject& JsonObject::num(const std::string& key, double v) {
    require_finite(v, key);
    return raw(key, json_double(v));
}

JsonObject& JsonObject::flt(const std::string& key, float v) {
    require_finite(v, key);
    return raw(key, json_float(v));
}

JsonObject& JsonObject::integer(const std::string& key, long long v) { return raw(key, std::to_string(v)); }
JsonObject& JsonObject::unsigned_integer(const std::string& key, unsigned long long v) {
    return raw(key, std::to_string(v));
}
JsonObject& JsonObject::boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
JsonObject& JsonObject::null(const std::string& key) { return raw(key, "null"); }
JsonObject& JsonObject::object(const std::string& key, const JsonObject& v) { return raw(key, v.text()); }

std::string json_array(const std::vector<JsonObject>& items) {
    return json_list(items, [](const JsonObject& o) { return o.text(); });
}

JsonObject& JsonObject::array(const std::string& key, const std::vector<JsonObject>& items) {
    return raw(key, json_array(items));
}

JsonObject& JsonObject::numbers(const std::string& key, const std::vector<double>& vs) {
    for (double v : vs) require_finite(v, key);
    return raw(key, json_list(vs, json_double));
}

JsonObject& JsonObject::floats_or_tokens(const std::string& key, const std::vector<float>& vs) {
    return raw(key, json_list(vs, [](float v) {
        const char* token = nonfinite_token(v);
        return token ? json_quote(token) : json_double(double(v));
    }));
}

JsonObject& JsonObject::flt_or_token(const std::string& key, float v) {
    const char* token = nonfinite_token(v);
    return token ? str(key, token) : flt(key, v);
}

JsonObject& JsonObject::integers(const std::string& key, const std::vector<long long>& vs) {
    return raw(key, json_list(vs, [](long long v) { return std::to_string(v); }));
}

JsonObject& JsonObject::strings(const std::string& key, const std::vector<std::string>& vs) {
    return raw(key, json_list(vs, json_quote));
}

JsonObject& JsonObject::string_pairs(const std::string& key,
                                     const std::vector<std::pair<std::string, std::string>>& pairs) {
    return raw(key, json_list(pairs, [](const std::pair<std::string, std::string>& p) {
        return "[" + json_quote(p.first) + "," + json_quote(p.second) + "]";
    }));
}

}  // namespace pg::io
