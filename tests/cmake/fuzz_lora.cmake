# libFuzzer target for the LoRA adapter file reader and its smoke run (label "fuzz"), built with
# the other loaders' fuzzers (tests/cmake/fuzz.cmake: PG_FUZZ=ON with clang) into pg_fuzz_all.
if(PG_FUZZ)
  pg_add_fuzzer(lora_adapter 8192)
endif()
