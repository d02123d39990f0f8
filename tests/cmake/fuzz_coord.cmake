# libFuzzer target for the whole validation path of an upload (tests/fuzz/fuzz_lora_validate.cpp)
# and its smoke run (label "fuzz"), built with the other fuzzers (tests/cmake/fuzz.cmake:
# PG_FUZZ=ON with clang) into pg_fuzz_all. The seed corpus is written by the same source built
# with -DPG_FUZZ_WRITE_SEED (target fuzz_lora_validate_seed, any compiler):
#   cmake --build build --target fuzz_lora_validate_seed && build/tests/fuzz_lora_validate_seed tests/fuzz/corpus/lora_validate
add_executable(fuzz_lora_validate_seed EXCLUDE_FROM_ALL ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_lora_validate.cpp)
target_compile_definitions(fuzz_lora_validate_seed PRIVATE PG_FUZZ_WRITE_SEED)
target_link_libraries(fuzz_lora_validate_seed PRIVATE phonegpt_coordinator_static)
if(PG_FUZZ)
  pg_add_fuzzer(lora_validate 8192)
endif()
