// libFuzzer target: decode(encode(x)) == x for arbitrary bytes x, for each of the three
// pre-tokenizers (the first byte picks one), on a byte-level vocabulary with merges over
// ASCII, UTF-8 lead/continuation bytes and whitespace; pieces must tile the input exactly.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.hpp"

namespace {

std::unique_ptr<pg::BpeTokenizer> make(pg::bpe::Pattern p) {
    std::vector<pg::BpeTokenizer::Token> vocab;
    for (int b = 0; b < 256; ++b) vocab.push_back({b, std::string(1, char(b))});
    std::vector<pg::BpeTokenizer::Merge> merges;
    const auto add = [&](int32_t l, int32_t r) {
        vocab.push_back({int32_t(vocab.size()), vocab[std::size_t(l)].bytes + vocab[std::size_t(r)].bytes});
        merges.push_back({l, r});
        return int32_t(vocab.size() - 1);
    };
    // Merges over frequent pairs and their results, so long pieces take many merges.
    const int32_t aa = add('a', 'a'), sp = add(' ', ' '), nl = add('\n', '\n'), c3 = add(0xE2, 0x80);
    add(aa, aa); add(sp, sp); add(nl, 'a'); add(c3, 0x8D); add(' ', 'a'); add('0', '0'); add(0xF0, 0x9F);
    return pg::BpeTokenizer::from_merges(p, vocab, merges, {{int32_t(vocab.size()), "<|endoftext|>"}}, false, false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    static const std::unique_ptr<pg::BpeTokenizer> tok[3] = {make(pg::bpe::Pattern::kGpt2),
                                                             make(pg::bpe::Pattern::kCl100k),
                                                             make(pg::bpe::Pattern::kO200k)};
    if (size < 1) return 0;
    const pg::BpeTokenizer& t = *tok[data[0] % 3];
    const std::string x(reinterpret_cast<const char*>(data + 1), size - 1);
    std::size_t covered = 0;
    pg::bpe::for_each_piece(t.pattern(), data + 1, size - 1, [&](std::size_t b, std::size_t e) {
        if (b != covered || e <= b || e > size - 1) __builtin_trap();
        covered = e;
    });
    if (covered != size - 1) __builtin_trap();
    const std::vector<int32_t> ids = t.encode(x);
    if (t.decode(ids.data(), ids.size()) != x) __builtin_trap();
    const std::vector<int32_t> special = t.encode_with_special(x, {}, true);
    if (t.decode(special.data(), special.size()) != x) __builtin_trap();
    return 0;
}
