// libFuzzer target: every BPE loader. The first byte picks one: 0 a tiktoken rank file (cl100k's
// pre-tokenizer by its regex: the name pins 100,256 ranks, which a fuzzed file never has), 1 GPT-2's encoder.json and vocab.bpe (split at the first NUL), 2 a Hugging Face
// tokenizer.json (NFC normalizers, added tokens, Split regexes run by PCRE2 included), 3 a
// serialised tokenizer blob. Whatever loads must also encode and decode some text back to its
// bytes (to its NFC form for a tokenizer that normalizes).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "tokenizer/bpe_formats.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode_nfc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        std::unique_ptr<pg::Tokenizer> t;
        switch (data[0] % 4) {
            case 0: t = pg::bpe::load_tiktoken(body, pg::bpe::pattern_regex(pg::bpe::Pattern::kCl100k)); break;
            case 1: {
                const std::size_t nul = body.find('\0');
                if (nul == std::string_view::npos) return 0;
                t = pg::bpe::load_gpt2(body.substr(0, nul), body.substr(nul + 1));
                break;
            }
            case 2: t = pg::bpe::load_hf(body); break;
            default: t = pg::deserialize_tokenizer(data + 1, size - 1); break;
        }
        const std::string text = "Hello, world's caf" "e\xCC\x81 <think>!\n 123 \xF0\x9F\x91\x8D";
        const auto* bpe = dynamic_cast<const pg::BpeTokenizer*>(t.get());
        const std::string want = bpe && bpe->nfc() ? pg::unicode::nfc(text) : text;
        std::vector<int32_t> ids;
        try {
            ids = t->encode(text);
        } catch (const pg::Error& e) {
            if (e.status() != PG_ERR_TOKENIZE) __builtin_trap();  // a byte without a token is allowed
            return 0;
        }
        if (t->decode(ids.data(), ids.size()) != want) __builtin_trap();
    } catch (const pg::Error&) {
    }
    return 0;
}
