// The character tokenizer: vocabulary, encode/decode, error messages, the serialised format
// (docs/tokenizer-format.md) against truncation and garbage, and every C entry point's bad
// arguments and buffer sizing.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "phonegpt/phonegpt.h"
#include "test_support.hpp"
#include "tokenizer/char_tokenizer.hpp"

namespace {

std::vector<uint8_t> serialize_c(pg_tokenizer* tok) {
    size_t len = 0;
    REQUIRE(pg_tokenizer_serialize(tok, nullptr, 0, &len) == PG_ERR_BUFFER_TOO_SMALL);
    std::vector<uint8_t> bytes(len);
    size_t len2 = 0;
    REQUIRE(pg_tokenizer_serialize(tok, bytes.data(), bytes.size(), &len2) == PG_OK);
    REQUIRE(len2 == len);
    return bytes;
}

pg_status deserialize_status(const std::vector<uint8_t>& bytes, std::string* message = nullptr) {
    pg_tokenizer* t = reinterpret_cast<pg_tokenizer*>(0x1);
    // An empty vector has no data pointer: pass a valid one so only the length is tested.
    static const uint8_t dummy = 0;
    pg_status s = pg_tokenizer_deserialize(bytes.empty() ? &dummy : bytes.data(), bytes.size(), &t);
    if (message) *message = pg_last_error();
    if (s == PG_OK) {
        REQUIRE(t != nullptr);
        pg_tokenizer_free(t);
    } else {
        REQUIRE(t == nullptr);
    }
    return s;
}

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + size_t(i)] = uint8_t(v >> (8 * i));
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("Tiny Shakespeare: 65 characters, ids in byte order, lossless round trip", "[tokenizer]") {
    const std::string path = pg_test::data_path();
    if (path.empty()) {
        WARN("Tiny Shakespeare not found: skipping (set PG_DATA_PATH)");
        return;
    }
    const std::string text = pg_test::read_text(path);
    REQUIRE(text.size() == 1115394);
    auto tok = pg::CharTokenizer::from_text(text);
    REQUIRE(tok->vocab_size() == 65);
    std::set<unsigned char> bytes(text.begin(), text.end());
    REQUIRE(bytes.size() == 65);
    int32_t id = 0;
    for (unsigned char b : bytes) {  // std::set iterates in byte order
        CHECK(tok->id_of(b) == id);
        CHECK(tok->code_points()[size_t(id)] == b);
        ++id;
    }
    CHECK(tok->id_of('\n') == 0);
    CHECK(tok->id_of(' ') == 1);
    const std::vector<int32_t> ids = tok->encode(text);
    REQUIRE(ids.size() == text.size());
    CHECK(tok->decode(ids.data(), ids.size()) == text);
}

TEST_CASE("non-ASCII text: one token per code point, ids in code point order", "[tokenizer]") {
    const std::string text = "h\xC3\xA9llo w\xC3\xB6rld \xF0\x9D\x84\x9E \xE2\x82\xAC";  // héllo wörld 𝄞 €
    auto tok = pg::CharTokenizer::from_text(text);
    const std::vector<uint32_t> expected = {' ', 'd', 'h', 'l', 'o', 'r', 'w', 0xE9, 0xF6, 0x20AC, 0x1D11E};
    CHECK(tok->code_points() == expected);
    CHECK(tok->vocab_size() == int32_t(expected.size()));
    const std::vector<int32_t> ids = tok->encode(text);
    CHECK(ids.size() == 15);  // 15 code points in 21 bytes
    CHECK(ids[1] == 7);       // é
    CHECK(ids[12] == 10);     // 𝄞
    CHECK(tok->decode(ids.data(), ids.size()) == text);
    CHECK(tok->encode("").empty());
    CHECK(tok->decode(nullptr, 0).empty());
}

TEST_CASE("encode names the character and byte offset it cannot encode", "[tokenizer]") {
    auto tok = pg::CharTokenizer::from_text("abc \xC3\xA9");
    auto expect_tokenize = [&](const std::string& text, const std::vector<std::string>& parts) {
        try {
            tok->encode(text);
            FAIL("encode accepted " << text);
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_TOKENIZE);
            for (const auto& p : parts) CHECK_THAT(e.what(), Catch::Contains(p));
        }
    };
    expect_tokenize("abcz", {"'z' (U+007A)", "byte offset 3", "not in the tokenizer's vocabulary"});
    expect_tokenize("ab\n", {"U+000A", "byte offset 2"});
    expect_tokenize("\xC3\xA9\xC3\xB6", {"'\xC3\xB6' (U+00F6)", "byte offset 2"});
    expect_tokenize("a\xF0\x9F\x98\x80", {"U+1F600", "byte offset 1"});
    // Invalid UTF-8: the offset of the bad sequence and why.
    expect_tokenize("ab\x80", {"invalid UTF-8 at byte offset 2", "0x80", "continuation"});
    expect_tokenize("a\xC3", {"invalid UTF-8 at byte offset 1", "truncated"});
    expect_tokenize("a\xC3" "b", {"invalid UTF-8 at byte offset 1", "truncated"});
    expect_tokenize("\xC0\x80", {"byte offset 0", "overlong"});
    expect_tokenize("\xE0\x80\x80", {"byte offset 0", "overlong"});
    expect_tokenize("\xED\xA0\x80", {"byte offset 0", "surrogate"});
    expect_tokenize("\xF4\x90\x80\x80", {"byte offset 0", "above U+10FFFF"});
    expect_tokenize("abc\xFF", {"byte offset 3", "invalid lead byte"});
}

TEST_CASE("building a vocabulary rejects invalid UTF-8 and empty text", "[tokenizer]") {
    try {
        pg::CharTokenizer::from_text("hello\xE2\x82");
        FAIL("accepted a truncated sequence");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_TOKENIZE);
        CHECK_THAT(e.what(), Catch::Contains("byte offset 5"));
    }
    pg_tokenizer* t = reinterpret_cast<pg_tokenizer*>(0x1);
    CHECK(pg_tokenizer_create_char("ab\xC3", 3, &t) == PG_ERR_TOKENIZE);
    CHECK(t == nullptr);
    CHECK_THAT(pg_last_error(), Catch::Contains("byte offset 2"));
    CHECK(pg_tokenizer_create_char("", 0, &t) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_create_char(nullptr, 0, &t) == PG_ERR_INVALID_ARGUMENT);
    // A NUL byte is a character like any other when the length says so.
    REQUIRE(pg_tokenizer_create_char("a\0b", 3, &t) == PG_OK);
    int32_t v = 0;
    CHECK(pg_tokenizer_vocab_size(t, &v) == PG_OK);
    CHECK(v == 3);
    pg_tokenizer_free(t);
    // An explicit vocabulary must be strictly increasing scalar values.
    CHECK_THROWS_AS(pg::CharTokenizer(std::vector<uint32_t>{}), pg::Error);
    CHECK_THROWS_AS(pg::CharTokenizer(std::vector<uint32_t>{'b', 'a'}), pg::Error);
    CHECK_THROWS_AS(pg::CharTokenizer(std::vector<uint32_t>{'a', 'a'}), pg::Error);
    CHECK_THROWS_AS(pg::CharTokenizer(std::vector<uint32_t>{0xD800}), pg::Error);
    CHECK_THROWS_AS(pg::CharTokenizer(std::vector<uint32_t>{0x110000}), pg::Error);
}

TEST_CASE("serialised form is exactly the documented bytes", "[tokenizer][format]") {
    auto tok = pg::CharTokenizer::from_text("ba\xC3\xA9");
    const std::vector<uint8_t> expected = {
        'P', 'G', 'T', 'K',  // magic
        1, 0,                // format major 1
        0, 0,                // format minor 0
        1, 0, 0, 0,          // kind 1 = character
        16, 0, 0, 0,         // payload: 4 + 3 * 4 bytes
        3, 0, 0, 0,          // 3 code points
        'a', 0, 0, 0, 'b', 0, 0, 0, 0xE9, 0, 0, 0};
    CHECK(tok->serialize() == expected);
    auto back = pg::deserialize_tokenizer(expected.data(), expected.size());
    REQUIRE(back->kind() == PG_TOKENIZER_CHAR);
    CHECK(back->vocab_size() == 3);
    CHECK(back->serialize() == expected);
    auto clone = tok->clone();
    CHECK(clone->serialize() == expected);
}

TEST_CASE("deserialisation rejects truncated, corrupted and garbage bytes", "[tokenizer][format]") {
    pg_tokenizer* tok = nullptr;
    const std::string text = "The quick brown fox \xE2\x82\xAC\n";
    REQUIRE(pg_tokenizer_create_char(text.data(), text.size(), &tok) == PG_OK);
    const std::vector<uint8_t> good = serialize_c(tok);
    REQUIRE(deserialize_status(good) == PG_OK);

    SECTION("every truncation is PG_ERR_FORMAT") {
        for (size_t n = 0; n < good.size(); ++n) {
            std::vector<uint8_t> cut(good.begin(), good.begin() + long(n));
            INFO("length " << n);
            CHECK(deserialize_status(cut) == PG_ERR_FORMAT);
        }
    }
    SECTION("trailing bytes are PG_ERR_FORMAT") {
        std::vector<uint8_t> longer = good;
        longer.push_back(0);
        std::string msg;
        CHECK(deserialize_status(longer, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "trailing"));
    }
    SECTION("each field is validated") {
        std::string msg;
        std::vector<uint8_t> b = good;
        b[0] = 'X';
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "PGTK"));

        b = good;
        b[4] = 2;  // major 2
        CHECK(deserialize_status(b, &msg) == PG_ERR_VERSION);
        CHECK(contains(msg, "version 2.0"));
        b[4] = 0;  // major 0 was never written
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);

        b = good;
        put_u32(b, 8, 2);  // a character payload read as byte-level BPE
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "BPE"));
        put_u32(b, 8, 7);
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "unknown kind 7"));

        b = good;
        put_u32(b, 12, uint32_t(good.size()));  // payload length past the end
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "truncated"));

        b = good;
        put_u32(b, 16, 0);  // empty vocabulary
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        put_u32(b, 16, 0xFFFFFFFFu);  // a count that would need 16 GB
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "truncated"));
        put_u32(b, 16, 2);  // fewer code points than bytes: trailing bytes in the payload
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);

        b = good;
        put_u32(b, 24, 0x0A);  // entry 1 equal to entry 0 ('\n' then ' ' in the original)
        put_u32(b, 20, 0x0A);
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "does not increase"));
        b = good;
        put_u32(b, good.size() - 4, 0xD800);  // a surrogate as the last entry
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
        CHECK(contains(msg, "U+D800"));
        put_u32(b, good.size() - 4, 0x110000);
        CHECK(deserialize_status(b, &msg) == PG_ERR_FORMAT);
    }
    SECTION("a newer minor version may append payload fields") {
        std::vector<uint8_t> b = good;
        b[6] = 1;  // minor 1
        b.insert(b.end(), {9, 9, 9, 9});
        put_u32(b, 12, uint32_t(b.size() - 16));
        CHECK(deserialize_status(b) == PG_OK);
    }
    SECTION("any single corrupted byte is an error or reads back exactly") {
        for (size_t i = 0; i < good.size(); ++i) {
            for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
                std::vector<uint8_t> b = good;
                b[i] ^= flip;
                auto s = deserialize_status(b);
                INFO("byte " << i << " ^ " << int(flip));
                if (s == PG_OK) {
                    // Still a valid description: another increasing vocabulary, read
                    // faithfully, or a newer minor version (bytes 6-7) of the same vocabulary,
                    // which is written back as this library's version.
                    auto t = pg::deserialize_tokenizer(b.data(), b.size());
                    CHECK(t->serialize() == (i == 6 || i == 7 ? good : b));
                } else {
                    CHECK((s == PG_ERR_FORMAT || s == PG_ERR_VERSION || s == PG_ERR_UNSUPPORTED));
                }
            }
        }
    }
    SECTION("random garbage never crashes and is never accepted") {
        pg::Rng rng(99);
        for (int trial = 0; trial < 2000; ++trial) {
            std::vector<uint8_t> b(rng.below(64));
            for (auto& x : b) x = uint8_t(rng.next_u64());
            if (trial % 2 == 0 && b.size() >= 4) std::memcpy(b.data(), "PGTK", 4);
            auto s = deserialize_status(b);
            CHECK(s != PG_OK);
            CHECK(s != PG_ERR_INTERNAL);
        }
    }
    pg_tokenizer_free(tok);
}

TEST_CASE("C API: encode, decode and serialize follow the sizing protocol", "[tokenizer][capi]") {
    pg_tokenizer* tok = nullptr;
    const char* text = "hello, world";
    REQUIRE(pg_tokenizer_create_char(text, std::strlen(text), &tok) == PG_OK);
    pg_tokenizer_kind kind;
    REQUIRE(pg_tokenizer_get_kind(tok, &kind) == PG_OK);
    CHECK(kind == PG_TOKENIZER_CHAR);
    int32_t vocab = 0;
    REQUIRE(pg_tokenizer_vocab_size(tok, &vocab) == PG_OK);
    CHECK(vocab == 9);  // " ,dehlorw"

    // Encode: size, too small (nothing written), exact.
    size_t n = 99;
    CHECK(pg_tokenizer_encode(tok, text, 12, nullptr, 0, &n) == PG_ERR_BUFFER_TOO_SMALL);
    CHECK(n == 12);
    CHECK_THAT(pg_tokenizer_last_error(tok), Catch::Contains("12"));
    std::vector<int32_t> ids(12, -7);
    CHECK(pg_tokenizer_encode(tok, text, 12, ids.data(), 11, &n) == PG_ERR_BUFFER_TOO_SMALL);
    CHECK(n == 12);
    CHECK(ids[0] == -7);
    REQUIRE(pg_tokenizer_encode(tok, text, 12, ids.data(), 12, &n) == PG_OK);
    CHECK(n == 12);
    CHECK(ids[0] == 4);  // 'h' in " ,dehlorw"
    CHECK(pg_tokenizer_encode(tok, "", 0, nullptr, 0, &n) == PG_OK);
    CHECK(n == 0);
    CHECK(pg_tokenizer_encode(tok, "hex", 3, ids.data(), 12, &n) == PG_ERR_TOKENIZE);
    CHECK_THAT(pg_tokenizer_last_error(tok), Catch::Contains("'x' (U+0078) at byte offset 2"));
    CHECK_THAT(pg_last_error(), Catch::Contains("byte offset 2"));

    // Decode: the NUL needs one more byte; *len excludes it.
    size_t len = 0;
    CHECK(pg_tokenizer_decode(tok, ids.data(), 12, nullptr, 0, &len) == PG_ERR_BUFFER_TOO_SMALL);
    CHECK(len == 12);
    std::vector<char> buf(13, 'Z');
    CHECK(pg_tokenizer_decode(tok, ids.data(), 12, buf.data(), 12, &len) == PG_ERR_BUFFER_TOO_SMALL);
    CHECK(len == 12);
    CHECK(buf[0] == 'Z');
    REQUIRE(pg_tokenizer_decode(tok, ids.data(), 12, buf.data(), 13, &len) == PG_OK);
    CHECK(len == 12);
    CHECK(std::string(buf.data()) == text);
    char one = 'Z';
    CHECK(pg_tokenizer_decode(tok, nullptr, 0, &one, 1, &len) == PG_OK);
    CHECK(len == 0);
    CHECK(one == '\0');
    const int32_t bad_ids[2] = {0, 9};
    CHECK(pg_tokenizer_decode(tok, bad_ids, 2, buf.data(), 13, &len) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_tokenizer_last_error(tok), Catch::Contains("token id 9 at index 1"));
    const int32_t negative = -1;
    CHECK(pg_tokenizer_decode(tok, &negative, 1, buf.data(), 13, &len) == PG_ERR_INVALID_ARGUMENT);

    // Serialize: sizing, then a round trip through deserialize.
    size_t slen = 0;
    CHECK(pg_tokenizer_serialize(tok, nullptr, 0, &slen) == PG_ERR_BUFFER_TOO_SMALL);
    CHECK(slen == 16 + 4 + 4 * 9);
    std::vector<uint8_t> bytes(slen, 0xAB);
    CHECK(pg_tokenizer_serialize(tok, bytes.data(), slen - 1, &slen) == PG_ERR_BUFFER_TOO_SMALL);
    CHECK(bytes[0] == 0xAB);
    REQUIRE(pg_tokenizer_serialize(tok, bytes.data(), bytes.size(), &slen) == PG_OK);
    pg_tokenizer* back = nullptr;
    REQUIRE(pg_tokenizer_deserialize(bytes.data(), bytes.size(), &back) == PG_OK);
    std::vector<int32_t> ids2(12);
    REQUIRE(pg_tokenizer_encode(back, text, 12, ids2.data(), 12, &n) == PG_OK);
    CHECK(ids2 == ids);
    pg_tokenizer_free(back);
    pg_tokenizer_free(tok);
}

TEST_CASE("C API: every tokenizer entry point rejects bad arguments", "[tokenizer][capi]") {
    pg_tokenizer* tok = nullptr;
    REQUIRE(pg_tokenizer_create_char("abc", 3, &tok) == PG_OK);
    pg_tokenizer* out = reinterpret_cast<pg_tokenizer*>(0x1);
    int32_t ids[4];
    size_t n = 0;
    char text[8];
    uint8_t bytes[64];

    CHECK(pg_tokenizer_create_char("abc", 3, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("pg_tokenizer_create_char"));
    CHECK(pg_tokenizer_create_char(nullptr, 3, &out) == PG_ERR_INVALID_ARGUMENT);
    CHECK(out == nullptr);
    CHECK(pg_tokenizer_deserialize(bytes, 10, nullptr) == PG_ERR_INVALID_ARGUMENT);
    out = reinterpret_cast<pg_tokenizer*>(0x1);
    CHECK(pg_tokenizer_deserialize(nullptr, 10, &out) == PG_ERR_INVALID_ARGUMENT);
    CHECK(out == nullptr);
    CHECK_THAT(pg_last_error(), Catch::Contains("pg_tokenizer_deserialize"));

    pg_tokenizer_kind kind;
    int32_t v;
    CHECK(pg_tokenizer_get_kind(nullptr, &kind) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_get_kind(tok, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_vocab_size(nullptr, &v) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_vocab_size(tok, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_tokenizer_last_error(tok), Catch::Contains("pg_tokenizer_vocab_size"));

    CHECK(pg_tokenizer_encode(nullptr, "a", 1, ids, 4, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_encode(tok, nullptr, 1, ids, 4, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_encode(tok, "a", 1, nullptr, 4, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_encode(tok, "a", 1, ids, 4, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_encode(tok, nullptr, 0, nullptr, 0, &n) == PG_OK);
    CHECK(n == 0);

    CHECK(pg_tokenizer_decode(nullptr, ids, 1, text, 8, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_decode(tok, nullptr, 1, text, 8, &n) == PG_ERR_INVALID_ARGUMENT);
    ids[0] = 0;
    CHECK(pg_tokenizer_decode(tok, ids, 1, nullptr, 8, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_decode(tok, ids, 1, text, 8, nullptr) == PG_ERR_INVALID_ARGUMENT);

    CHECK(pg_tokenizer_serialize(nullptr, bytes, 64, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_serialize(tok, nullptr, 64, &n) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_tokenizer_serialize(tok, bytes, 64, nullptr) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_tokenizer_last_error(tok), Catch::Contains("pg_tokenizer_serialize"));

    CHECK(std::string(pg_tokenizer_last_error(nullptr)) == "tokenizer is NULL");
    pg_tokenizer_free(nullptr);
    pg_tokenizer_free(tok);
}
