# libFuzzer target for the Hugging Face folder importer (config.json + model.safetensors of the
# Llama family) and its smoke run (label "fuzz"), built with the other loaders' fuzzers
# (tests/cmake/fuzz.cmake: PG_FUZZ=ON with clang) into pg_fuzz_all.
if(PG_FUZZ)
  pg_add_fuzzer(hf_folder 16384)
endif()
