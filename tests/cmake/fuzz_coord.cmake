# libFuzzer target for the whole validation path of an upload (tests/fuzz/fuzz_lora_validate.cpp)
# and its smoke run (label "fuzz"), built with the other fuzzers (tests/cmake/fuzz.cmake:
# PG_FUZZ=ON with clang) into pg_fuzz_all. The seed corpus is written by the same source built
# with -DPG_FUZZ_WRITE_SEED (target fuzz_lora_validate_seed, any compiler):
#   cmake --build build --target fuzz_lora_validate_seed && build/tests/fuzz_lora_validate_seed tests/fuzz/corpus/lora_validate
add_executable(fuzz_lora_validate_seed EXCLUDE_FROM_ALL ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_lora_validate.cpp)
target_compile_definitions(fuzz_lora_validate_seed PRIVATE PG_FUZZ_WRITE_SEED)
target_link_libraries(fuzz_lora_validate_seed PRIVATE phonegpt_static)
if(PG_FUZZ)
  add_executable(fuzz_lora_validate ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_lora_validate.cpp)
  target_compile_options(fuzz_lora_validate PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_lora_validate PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_lora_validate PRIVATE phonegpt_static)
  if(NOT TARGET pg_fuzz_all)
    add_custom_target(pg_fuzz_all)
  endif()
  add_dependencies(pg_fuzz_all fuzz_lora_validate)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_out/lora_validate)
  file(MAKE_DIRECTORY ${out})
  add_test(NAME fuzz_lora_validate_smoke
           COMMAND fuzz_lora_validate -runs=20000 -seed=1 -max_len=8192 -rss_limit_mb=1024
                   ${out} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/lora_validate)
  set_tests_properties(fuzz_lora_validate_smoke PROPERTIES LABELS fuzz TIMEOUT 300)
endif()
