// The generated class table and strict UTF-8 decoding for the pre-tokenizers.
#include "tokenizer/bpe_unicode.hpp"

#include "tokenizer/utf8.hpp"

namespace pg::bpe {

namespace {
#include "tokenizer/bpe_unicode_table.inc"
}  // namespace

const char* const kUnicodeVersion = PG_BPE_UNICODE_VERSION;

uint8_t class_of(uint32_t cp) {
    if (cp >= 0x110000) return kOther;
    return kBlocks[kBlockOf[cp >> 8]][cp & 0xFF];
}

const uint8_t kAsciiClass[128] = {
#define PG_C(i) kBlocks[kBlockOf[0]][i]
    // Filled from the generated table's first block (ASCII is its first 128 entries).
    PG_C(0), PG_C(1), PG_C(2), PG_C(3), PG_C(4), PG_C(5), PG_C(6), PG_C(7), PG_C(8), PG_C(9),
    PG_C(10), PG_C(11), PG_C(12), PG_C(13), PG_C(14), PG_C(15), PG_C(16), PG_C(17), PG_C(18),
    PG_C(19), PG_C(20), PG_C(21), PG_C(22), PG_C(23), PG_C(24), PG_C(25), PG_C(26), PG_C(27),
    PG_C(28), PG_C(29), PG_C(30), PG_C(31), PG_C(32), PG_C(33), PG_C(34), PG_C(35), PG_C(36),
    PG_C(37), PG_C(38), PG_C(39), PG_C(40), PG_C(41), PG_C(42), PG_C(43), PG_C(44), PG_C(45),
    PG_C(46), PG_C(47), PG_C(48), PG_C(49), PG_C(50), PG_C(51), PG_C(52), PG_C(53), PG_C(54),
    PG_C(55), PG_C(56), PG_C(57), PG_C(58), PG_C(59), PG_C(60), PG_C(61), PG_C(62), PG_C(63),
    PG_C(64), PG_C(65), PG_C(66), PG_C(67), PG_C(68), PG_C(69), PG_C(70), PG_C(71), PG_C(72),
    PG_C(73), PG_C(74), PG_C(75), PG_C(76), PG_C(77), PG_C(78), PG_C(79), PG_C(80), PG_C(81),
    PG_C(82), PG_C(83), PG_C(84), PG_C(85), PG_C(86), PG_C(87), PG_C(88), PG_C(89), PG_C(90),
    PG_C(91), PG_C(92), PG_C(93), PG_C(94), PG_C(95), PG_C(96), PG_C(97), PG_C(98), PG_C(99),
    PG_C(100), PG_C(101), PG_C(102), PG_C(103), PG_C(104), PG_C(105), PG_C(106), PG_C(107),
    PG_C(108), PG_C(109), PG_C(110), PG_C(111), PG_C(112), PG_C(113), PG_C(114), PG_C(115),
    PG_C(116), PG_C(117), PG_C(118), PG_C(119), PG_C(120), PG_C(121), PG_C(122), PG_C(123),
    PG_C(124), PG_C(125), PG_C(126), PG_C(127),
#undef PG_C
};

Char decode_char_slow(const unsigned char* p, const unsigned char* end) {
    uint32_t cp = 0;
    int len = 0;
    const std::string_view rest(reinterpret_cast<const char*>(p), std::size_t(end - p));
    if (utf8::decode_at(rest, 0, &cp, &len) != nullptr) return Char{kOther, 1, *p};
    return Char{class_of(cp), uint8_t(len), cp};
}

}  // namespace pg::bpe
