// A small, strict JSON reader and writer for the interop files (safetensors headers,
// config.json). Strict means: RFC 8259 syntax only, valid UTF-8, bounded nesting depth,
// duplicate object keys refused (they would make a safetensors header ambiguous). Numbers keep
// their text so integers up to 2^64 are read exactly. Errors are PG_ERR_FORMAT with the byte
// offset.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pg::io {

class JsonValue {
public:
    enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::kNull; }
    bool is_string() const { return type_ == Type::kString; }
    bool is_number() const { return type_ == Type::kNumber; }
    bool is_array() const { return type_ == Type::kArray; }
    bool is_object() const { return type_ == Type::kObject; }

    // Accessors throw PG_ERR_FORMAT naming `what` when the type differs.
    bool as_bool(const std::string& what) const;
    const std::string& as_string(const std::string& what) const;
    // A non-negative integer that fits in uint64 (no sign, fraction or exponent).
    uint64_t as_u64(const std::string& what) const;
    double as_double(const std::string& what) const;
    const std::vector<JsonValue>& as_array(const std::string& what) const;
    // Object members in file order.
    const std::vector<std::pair<std::string, JsonValue>>& as_object(const std::string& what) const;
    // Member lookup in an object (nullptr when absent).
    const JsonValue* find(const std::string& key) const;

private:
    friend class JsonParser;
    Type type_ = Type::kNull;
    bool bool_ = false;
    std::string text_;  // string contents or number text
    std::vector<JsonValue> array_;
    std::vector<std::pair<std::string, JsonValue>> object_;
};

// Parses exactly one JSON value (surrounding whitespace allowed, nothing else). `context`
// prefixes messages ("safetensors header of x.safetensors").
JsonValue parse_json(const char* data, std::size_t size, const std::string& context);

// Writer helpers: a JSON string literal (with escapes), and the shortest decimal text of a
// float that reads back as the same float (1e-05f -> "1e-05").
std::string json_quote(const std::string& s);
std::string json_float(float v);
// The same for a double (up to 17 significant digits).
std::string json_double(double v);
// JSON has no NaN or infinity. Where a recorded float may be one (a loss trajectory: adapter
// format 1.2's training record, the signature manifest; docs/formats.md §5, §6) it is written as
// the string "nan", "inf" or "-inf". nonfinite_token gives that string for a non-finite v
// (nullptr for a finite one); parse_nonfinite_token reads one back (false for any other text).
const char* nonfinite_token(float v);
bool parse_nonfinite_token(const std::string& s, float* out);

// A JSON object written field by field, keys in the order added: the one JSON writer of the
// library, its tools and benchmarks (the phonegpt tool's results, docs/cli.md; safetensors
// headers; signature manifests; config.json, tokenizer.json). Numbers are the shortest text
// that reads back as the same value. A NaN or an infinity has no JSON form and is never a value
// here: adding one throws PG_ERR_INTERNAL naming the key (a missing figure is written as null()
// on purpose, not by accident).
class JsonObject {
public:
    JsonObject& str(const std::string& key, const std::string& v);
    JsonObject& num(const std::string& key, double v);
    JsonObject& flt(const std::string& key, float v);
    JsonObject& integer(const std::string& key, long long v);
    JsonObject& unsigned_integer(const std::string& key, unsigned long long v);
    JsonObject& boolean(const std::string& key, bool v);
    JsonObject& null(const std::string& key);
    JsonObject& object(const std::string& key, const JsonObject& v);
    JsonObject& array(const std::string& key, const std::vector<JsonObject>& items);
    JsonObject& numbers(const std::string& key, const std::vector<double>& vs);
    // Floats that may be non-finite: finite ones as numbers() writes them, the others as
    // nonfinite_token's strings.
    JsonObject& floats_or_tokens(const std::string& key, const std::vector<float>& vs);
    // One float as flt() writes it, or nonfinite_token's string for a NaN or an infinity.
    JsonObject& flt_or_token(const std::string& key, float v);
    JsonObject& integers(const std::string& key, const std::vector<long long>& vs);
    JsonObject& strings(const std::string& key, const std::vector<std::string>& vs);
    // [[a, b], ...]: a tokenizer.json's merges.
    JsonObject& string_pairs(const std::string& key, const std::vector<std::pair<std::string, std::string>>& pairs);
    // Compact: no white space at all (the bytes a signature or a checksum covers).
    std::string text() const;
    // One member a line, indented by two spaces (a file people open, like config.json); the
    // members' values compact.
    std::string indented_text() const;

private:
    JsonObject& raw(const std::string& key, const std::string& value);
    std::vector<std::pair<std::string, std::string>> members_;  // quoted key, value text
};

// A JSON array of objects, compact (a benchmark's rows).
std::string json_array(const std::vector<JsonObject>& items);

}  // namespace pg::io
