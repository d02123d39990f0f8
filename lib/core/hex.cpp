#include "core/hex.hpp"

#include "core/error.hpp"

namespace pg::io {

namespace {

constexpr char kDigits[] = "0123456789abcdef";

int digit_value(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

// Decodes n bytes from the 2n digits at hex; false at the first character that is not one.
bool decode_digits(const char* hex, uint8_t* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const int hi = digit_value(hex[2 * i]), lo = digit_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = uint8_t(hi << 4 | lo);
    }
    return true;
}

}  // namespace

std::string hex_encode(const void* data, std::size_t n) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    std::string s(2 * n, '0');
    for (std::size_t i = 0; i < n; ++i) {
        s[2 * i] = kDigits[bytes[i] >> 4];
        s[2 * i + 1] = kDigits[bytes[i] & 15];
    }
    return s;
}

std::string hex64(uint64_t v) {
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4) s[std::size_t(i)] = kDigits[v & 15];
    return s;
}

bool hex_decode(const std::string& hex, uint8_t* out, std::size_t n) {
    return hex.size() == 2 * n && decode_digits(hex.data(), out, n);
}

std::vector<uint8_t> parse_hex(const std::string& hex, const std::string& what) {
    require(hex.size() % 2 == 0, PG_ERR_FORMAT, [&] { return what + ": an odd number of hex digits"; });
    std::vector<uint8_t> out(hex.size() / 2);
    require(decode_digits(hex.data(), out.data(), out.size()), PG_ERR_FORMAT,
            [&] { return what + ": not lower-case hex digits"; });
    return out;
}

uint64_t parse_hex64(const std::string& hex, const std::string& what) {
    uint8_t bytes[8];
    require(hex_decode(hex, bytes, 8), PG_ERR_FORMAT,
            [&] { return what + ": \"" + hex + "\" is not 16 lower-case hex digits"; });
    uint64_t v = 0;
    for (uint8_t b : bytes) v = v << 8 | b;
    return v;
}

}  // namespace pg::io
