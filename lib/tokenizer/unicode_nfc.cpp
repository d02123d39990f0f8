// NFC through utf8proc (unicode_nfc.hpp).
#include "tokenizer/unicode_nfc.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "core/error.hpp"
#include "tokenizer/utf8.hpp"

namespace pg::unicode {

namespace {

void append_nfc(std::string& out, std::string_view run) {
    if (run.empty()) return;
    utf8proc_uint8_t* composed = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()), utf8proc_ssize_t(run.size()), &composed,
                     utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(composed, &std::free);
    // The run is valid UTF-8, so only running out of memory fails.
    require(n >= 0, PG_ERR_OUT_OF_MEMORY, std::string("NFC normalization failed: ") + utf8proc_errmsg(n));
    out.append(reinterpret_cast<const char*>(composed), std::size_t(n));
}

}  // namespace

bool nfc_may_change(std::string_view text) {
    for (unsigned char c : text)
        if (c >= 0xCC) return true;
    return false;
}

std::string nfc(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t run = 0, i = 0;
    while (i < text.size()) {
        uint32_t cp;
        int len;
        if (utf8::decode_at(text, i, &cp, &len) == nullptr) {
            i += std::size_t(len);
            continue;
        }
        append_nfc(out, text.substr(run, i - run));
        out.push_back(text[i]);
        run = ++i;
    }
    append_nfc(out, text.substr(run));
    return out;
}

}  // namespace pg::unicode
