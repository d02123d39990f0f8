// Unicode Normalization Form C for the tokenizer.json normalizer "NFC", through utf8proc (a
// maintained library with the Unicode data, rather than tables of our own).
#pragma once

#include <string>
#include <string_view>

namespace pg::unicode {

// True when NFC could change `text`: it has a byte that starts a code point at or above U+0300
// (or is not UTF-8). Below U+0300 every character is NFC-stable and composes with nothing
// before it, so most Latin text skips the normalizer entirely.
bool nfc_may_change(std::string_view text);

// The NFC form of `text`. Maximal valid UTF-8 runs are normalized; bytes that are not UTF-8
// pass through unchanged (a byte-level tokenizer encodes any bytes).
std::string nfc(std::string_view text);

}  // namespace pg::unicode
