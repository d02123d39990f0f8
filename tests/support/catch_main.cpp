// Catch2's main for cross builds (Debian's prebuilt Catch2WithMain is amd64 only).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
