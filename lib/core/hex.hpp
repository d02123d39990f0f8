// Lower-case hexadecimal: the one spelling every phonegpt file format and message uses for
// hashes, keys, signatures and embedded bytes (docs/formats.md). The readers accept only that
// spelling, so a value has exactly one text (a signed manifest or a checksum compares as text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pg::io {

// Two digits per byte, in order.
std::string hex_encode(const void* data, std::size_t n);
inline std::string hex_encode(const std::vector<uint8_t>& bytes) { return hex_encode(bytes.data(), bytes.size()); }

// A 64-bit value (an XXH64, a flags word) as 16 digits, most significant first.
std::string hex64(uint64_t v);

// Exactly n bytes from 2n lower-case digits; false for any other text (out is then unspecified).
bool hex_decode(const std::string& hex, uint8_t* out, std::size_t n);

// Any even number of lower-case digits; PG_ERR_FORMAT naming `what` for anything else.
std::vector<uint8_t> parse_hex(const std::string& hex, const std::string& what);

// What hex64 wrote, back; PG_ERR_FORMAT naming `what` for anything but 16 lower-case digits.
uint64_t parse_hex64(const std::string& hex, const std::string& what);

}  // namespace pg::io
