# libFuzzer targets for every file loader (native checkpoint, llm.c, safetensors + config.json)
# and a short smoke run of each as a ctest (label "fuzz"); each target also checks a property of
# every input that loads (tests/fuzz/fuzz_property.hpp). The same sanitizer build runs the
# corruption matrix and the every-truncation / every-byte-flip sweep of
# tests/unit/test_checkpoint_corruption.cpp, where an out-of-bounds read that does not crash
# a Release build is an ASan report. Needs clang:
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
#         -DPG_FUZZ=ON -DPG_SANITIZE=ON
#   cmake --build build-fuzz -j2 --target pg_fuzz_all && (cd build-fuzz && ctest -L fuzz)
# Longer runs: build-fuzz/tests/fuzz_native -max_total_time=600 new-corpus/ tests/fuzz/corpus/native
# (libFuzzer writes new inputs into the FIRST folder; keep the committed seeds read-only).
if(PG_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PG_FUZZ=ON needs clang (e.g. -DCMAKE_CXX_COMPILER=clang++-14)")
  endif()
  # Coverage instrumentation for the library code the fuzzers reach.
  target_compile_options(phonegpt_objects PRIVATE -fsanitize=fuzzer-no-link)
  set(PG_FUZZ_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
  add_custom_target(pg_fuzz_all)
  foreach(loader native llmc safetensors)
    add_executable(fuzz_${loader} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${loader}.cpp)
    target_compile_options(fuzz_${loader} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${loader} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(fuzz_${loader} PRIVATE phonegpt_static)
    add_dependencies(pg_fuzz_all fuzz_${loader})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_out/${loader})
    file(MAKE_DIRECTORY ${out})
    # -rss_limit_mb keeps a pathological input from eating the shared machine.
    add_test(NAME fuzz_${loader}_smoke
             COMMAND fuzz_${loader} -runs=20000 -seed=1 -max_len=8192 -rss_limit_mb=1024
                     ${out} ${PG_FUZZ_CORPUS}/${loader})
    set_tests_properties(fuzz_${loader}_smoke PROPERTIES LABELS fuzz TIMEOUT 300)
  endforeach()
  # The corruption tests under ASan+UBSan (PG_SANITIZE=ON: scripts/test.sh always sets it here).
  add_executable(corruption_sanitized ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_checkpoint_corruption.cpp)
  target_link_libraries(corruption_sanitized PRIVATE phonegpt_static Catch2::Catch2WithMain)
  target_include_directories(corruption_sanitized PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_compile_definitions(corruption_sanitized PRIVATE
    PG_TEST_DATA_PATH="${PG_DATA_PATH}" PG_TEST_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures")
  add_dependencies(pg_fuzz_all corruption_sanitized)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/tmp)
  add_test(NAME corruption_sweep_sanitized
           COMMAND corruption_sanitized "corruption matrix*,every truncation and every single-byte flip*")
  # About a minute of CPU on 2 idle cores; the timeout leaves room for a shared, loaded machine.
  set_tests_properties(corruption_sweep_sanitized PROPERTIES LABELS fuzz TIMEOUT 1800
    ENVIRONMENT "PG_TEST_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/tmp")
endif()
