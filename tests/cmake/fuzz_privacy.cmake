# libFuzzer target for the data filter (tests/fuzz/fuzz_data_filter.cpp): arbitrary bytes through
# pg_data_filter_apply, and its smoke run (label "fuzz"), built with the other fuzzers
# (tests/cmake/fuzz.cmake: PG_FUZZ=ON with clang) into pg_fuzz_all. The seeds in
# tests/fuzz/corpus/data_filter are small text files: personal data of every kind, invalid
# UTF-8, an encoded lone surrogate, NULs.
if(PG_FUZZ)
  pg_add_fuzzer(data_filter 4096)
endif()
