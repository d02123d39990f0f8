// libFuzzer target: the data filter on arbitrary bytes, through the C API. The first byte picks
// the policy (placeholders or removal, a region hint); the rest is the text. Properties checked
// on every input (a broken one aborts, which libFuzzer reports with the input saved):
//  - invalid UTF-8 (lone surrogates encoded, overlong forms, truncated sequences) is
//    PG_ERR_INVALID_ARGUMENT and leaves no spans; valid text (NULs included) is PG_OK;
//  - the spans are sorted, disjoint, inside the text and on UTF-8 character boundaries;
//  - the output is the input with each span replaced by what the policy says, byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "tokenizer/utf8.hpp"

namespace {

[[noreturn]] void property_failed(const char* what) {
    std::fprintf(stderr, "fuzz property broken: %s\n", what);
    std::abort();
}

bool valid_utf8(std::string_view t) {
    for (std::size_t i = 0; i < t.size();) {
        uint32_t cp;
        int len;
        if (pg::utf8::decode_at(t, i, &cp, &len)) return false;
        i += std::size_t(len);
    }
    return true;
}

bool boundary(std::string_view t, uint64_t pos) {
    return pos == 0 || pos >= t.size() || (static_cast<unsigned char>(t[pos]) & 0xC0) != 0x80;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

    pg_data_filter_config cfg;
    pg_data_filter_config_default(&cfg);
    cfg.placeholder_kinds = (mode & 1) ? PG_PII_ALL_BUILTIN : 0;
    cfg.replacement = (mode & 2) ? "\xc2\xb7" : "";
    static const char* const kRegions[] = {nullptr, "US", "DE,ES", "IN,GB,FR"};
    cfg.regions = kRegions[(mode >> 2) & 3];
    pg_data_filter* f = nullptr;
    if (pg_data_filter_create(&cfg, &f) != PG_OK) property_failed("create refused a valid config");

    pg_data_filter_report rep{};
    rep.struct_size = sizeof rep;
    const pg_status s = pg_data_filter_apply(f, text.data(), text.size(), &rep);
    size_t n = 0;
    const pg_status sn = pg_data_filter_spans(f, nullptr, 0, &n);
    if (!valid_utf8(text)) {
        if (s != PG_ERR_INVALID_ARGUMENT || sn != PG_OK || n != 0) property_failed("invalid UTF-8 not refused cleanly");
        pg_data_filter_free(f);
        return 0;
    }
    if (s != PG_OK) property_failed("valid UTF-8 refused");
    std::vector<pg_pii_span> spans(n);
    if (n && pg_data_filter_spans(f, spans.data(), n, &n) != PG_OK) property_failed("spans");
    size_t len = 0;
    pg_data_filter_output(f, nullptr, 0, &len);
    std::string out(len + 1, '\0');
    if (pg_data_filter_output(f, out.data(), out.size(), &len) != PG_OK) property_failed("output");
    out.resize(len);

    std::string expected;
    uint64_t pos = 0;
    for (const pg_pii_span& sp : spans) {
        if (sp.begin < pos || sp.end <= sp.begin || sp.end > text.size()) property_failed("spans not sorted/disjoint");
        if (!boundary(text, sp.begin) || !boundary(text, sp.end)) property_failed("span splits a character");
        if (sp.kind < 0 || sp.kind >= PG_PII_CUSTOM) property_failed("span kind");
        expected.append(text.substr(pos, sp.begin - pos));
        static const char* const kPlaceholders[] = {"<EMAIL>", "<PHONE>", "<CARD>", "<IBAN>", "<IP>", "<IP>"};
        expected.append(cfg.placeholder_kinds ? kPlaceholders[sp.kind] : cfg.replacement);
        pos = sp.end;
    }
    expected.append(text.substr(pos));
    if (out != expected) property_failed("output is not the input with the spans replaced");
    if (rep.n_spans != n || rep.bytes_in != text.size() || rep.bytes_out != out.size()) property_failed("report");
    pg_data_filter_free(f);
    return 0;
}
