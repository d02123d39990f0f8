// pg::io::JsonObject, the one JSON writer (the phonegpt tool's results, the file formats' JSON):
// keys in order, numbers that read back exactly, never a NaN passed off as a value; and
// io/hex.hpp, the one hexadecimal spelling.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/hex.hpp"
#include "core/json.hpp"

TEST_CASE("JSON writer: fields in order, shortest exact numbers, no NaN or infinity", "[io][json]") {
    pg::io::JsonObject inner;
    inner.integer("step", 3).num("loss", 0.1);
    pg::io::JsonObject o;
    o.str("s", "a\"b").flt("lr", 2e-3f).num("third", 1.0 / 3.0).integer("n", -5).boolean("ok", true)
        .null("none").object("best", inner).array("evals", {inner, inner}).numbers("xs", {0.5, 1e-7})
        .integers("ids", {1, 2});
    CHECK(o.text() ==
          "{\"s\":\"a\\\"b\",\"lr\":0.002,\"third\":0.3333333333333333,\"n\":-5,\"ok\":true,\"none\":null,"
          "\"best\":{\"step\":3,\"loss\":0.1},\"evals\":[{\"step\":3,\"loss\":0.1},{\"step\":3,\"loss\":0.1}],"
          "\"xs\":[0.5,1e-07],\"ids\":[1,2]}");
    CHECK(std::strtod(pg::io::json_double(1.0 / 3.0).c_str(), nullptr) == 1.0 / 3.0);
    // Fixed notation where it is as short: 10, not 1e+01; tiny and huge values keep exponents.
    CHECK(pg::io::json_float(10.0f) == "10");
    CHECK(pg::io::json_double(20261105.0) == "20261105");
    CHECK(pg::io::json_double(1500.0) == "1500");
    CHECK(pg::io::json_double(0.0) == "0");
    CHECK(pg::io::json_double(-2.5) == "-2.5");
    CHECK(pg::io::json_float(1e-5f) == "1e-05");
    CHECK(pg::io::json_double(1e20) == "1e+20");
    // A NaN never becomes a value (null or "nan"): the writer refuses it, naming the key.
    pg::io::JsonObject bad;
    for (double v : {double(NAN), double(INFINITY), -double(INFINITY)}) {
        try {
            bad.num("loss", v);
            FAIL("no error for " << v);
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_INTERNAL);
            CHECK(std::string(e.what()).find("\"loss\"") != std::string::npos);
        }
    }
    CHECK_THROWS_AS(bad.flt("lr", NAN), pg::Error);
    CHECK_THROWS_AS(bad.numbers("xs", {1.0, NAN}), pg::Error);
    CHECK(bad.text() == "{}");
}

TEST_CASE("JSON writer: the file formats' members, compact and indented", "[io][json]") {
    pg::io::JsonObject o;
    o.unsigned_integer("seed", 18446744073709551615ull).flt_or_token("first", 0.1f).flt_or_token("last", NAN)
        .flt_or_token("inf", -INFINITY).strings("names", {"c_attn", "a\"b"})
        .string_pairs("merges", {{"a", "b"}, {"\u0120", "t"}})
        .object("empty", pg::io::JsonObject());
    // The signed manifest and the safetensors headers are these exact bytes: no white space.
    CHECK(o.text() ==
          "{\"seed\":18446744073709551615,\"first\":0.1,\"last\":\"nan\",\"inf\":\"-inf\","
          "\"names\":[\"c_attn\",\"a\\\"b\"],\"merges\":[[\"a\",\"b\"],[\"\u0120\",\"t\"]],\"empty\":{}}");
    pg::io::JsonObject config;
    config.str("model_type", "gpt2").integers("layers", {0, 1}).null("n_inner");
    CHECK(config.indented_text() == "{\n  \"model_type\": \"gpt2\",\n  \"layers\": [0,1],\n  \"n_inner\": null\n}");
    CHECK(pg::io::JsonObject().indented_text() == "{\n}");
    CHECK(pg::io::json_array({config, pg::io::JsonObject()}) ==
          "[{\"model_type\":\"gpt2\",\"layers\":[0,1],\"n_inner\":null},{}]");
    CHECK(pg::io::json_array({}) == "[]");
    // What the writer writes, the reader reads back.
    const std::string text = o.text();
    const pg::io::JsonValue v = pg::io::parse_json(text.data(), text.size(), "test");
    CHECK(v.find("seed")->as_u64("seed") == 18446744073709551615ull);
    CHECK(v.find("merges")->as_array("merges")[1].as_array("pair")[0].as_string("left") == "\u0120");
}

TEST_CASE("hex: one lower-case spelling, read back strictly", "[io][hex]") {
    const uint8_t bytes[] = {0x00, 0x0f, 0xa5, 0xff};
    CHECK(pg::io::hex_encode(bytes, 4) == "000fa5ff");
    CHECK(pg::io::hex_encode(std::vector<uint8_t>{}) == "");
    CHECK(pg::io::hex64(0) == "0000000000000000");
    CHECK(pg::io::hex64(0xEF46DB3751D8E999ull) == "ef46db3751d8e999");
    CHECK(pg::io::parse_hex64("ef46db3751d8e999", "x") == 0xEF46DB3751D8E999ull);
    CHECK(pg::io::parse_hex("000fa5ff", "x") == std::vector<uint8_t>(bytes, bytes + 4));
    uint8_t out[4];
    CHECK(pg::io::hex_decode("000fa5ff", out, 4));
    CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>(bytes, bytes + 4));
    // Anything but an even count of lower-case digits is refused, never read leniently: the
    // signed and checksummed texts compare as text.
    CHECK_FALSE(pg::io::hex_decode("000FA5FF", out, 4));
    CHECK_FALSE(pg::io::hex_decode("000fa5f", out, 4));
    CHECK_FALSE(pg::io::hex_decode("000fa5ff00", out, 4));
    CHECK_FALSE(pg::io::hex_decode("000fa5fg", out, 4));
    auto message = [](auto&& parse) -> std::string {
        try {
            parse();
        } catch (const pg::Error& e) {
            CHECK(e.status() == PG_ERR_FORMAT);
            return e.what();
        }
        return "(no error)";
    };
    CHECK(message([] { pg::io::parse_hex("abc", "metadata t"); }) == "metadata t: an odd number of hex digits");
    CHECK(message([] { pg::io::parse_hex("aB", "metadata t"); }) == "metadata t: not lower-case hex digits");
    CHECK(message([] { pg::io::parse_hex64("ef46db3751d8e99", "fingerprint"); }) ==
          "fingerprint: \"ef46db3751d8e99\" is not 16 lower-case hex digits");
    CHECK(message([] { pg::io::parse_hex64("EF46DB3751D8E999", "fingerprint"); }) ==
          "fingerprint: \"EF46DB3751D8E999\" is not 16 lower-case hex digits");
}
