# libFuzzer target for the LoRA adapter file reader and its smoke run (label "fuzz"), built with
# the other loaders' fuzzers (tests/cmake/fuzz.cmake: PG_FUZZ=ON with clang) into pg_fuzz_all.
if(PG_FUZZ)
  add_executable(fuzz_lora_adapter ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_lora_adapter.cpp)
  target_compile_options(fuzz_lora_adapter PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_lora_adapter PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_lora_adapter PRIVATE phonegpt_static)
  if(NOT TARGET pg_fuzz_all)
    add_custom_target(pg_fuzz_all)
  endif()
  add_dependencies(pg_fuzz_all fuzz_lora_adapter)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_out/lora_adapter)
  file(MAKE_DIRECTORY ${out})
  add_test(NAME fuzz_lora_adapter_smoke
           COMMAND fuzz_lora_adapter -runs=20000 -seed=1 -max_len=8192 -rss_limit_mb=1024
                   ${out} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/lora_adapter)
  set_tests_properties(fuzz_lora_adapter_smoke PROPERTIES LABELS fuzz TIMEOUT 300)
endif()
