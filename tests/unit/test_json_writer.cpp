// pg::io::JsonObject, the one JSON writer (the phonegpt tool's results): keys in order, numbers
// that read back exactly, and never a NaN passed off as a value.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "io/json.hpp"

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
