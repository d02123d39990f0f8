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
  # One libFuzzer target fuzz_NAME from tests/fuzz/fuzz_NAME.cpp, part of pg_fuzz_all, and its
  # smoke run fuzz_NAME_smoke over the committed seeds in tests/fuzz/corpus/NAME (the other
  # tests/cmake/fuzz_*.cmake files sort after this one and call it too). -rss_limit_mb keeps a
  # pathological input from eating the shared machine.
  function(pg_add_fuzzer name max_len)
    add_executable(fuzz_${name} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${name}.cpp)
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(fuzz_${name} PRIVATE phonegpt_coordinator_static)
    add_dependencies(pg_fuzz_all fuzz_${name})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_out/${name})
    file(MAKE_DIRECTORY ${out})
    add_test(NAME fuzz_${name}_smoke
             COMMAND fuzz_${name} -runs=20000 -seed=1 -max_len=${max_len} -rss_limit_mb=1024
                     ${out} ${PG_FUZZ_CORPUS}/${name})
    set_tests_properties(fuzz_${name}_smoke PROPERTIES LABELS fuzz TIMEOUT 300)
  endfunction()
  # The native seeds include quantized bases (rows of 32 values: 17 KB for q8_0).
  pg_add_fuzzer(native 20480)
  foreach(loader llmc safetensors)
    pg_add_fuzzer(${loader} 8192)
  endforeach()
  # The corruption tests under ASan+UBSan (PG_SANITIZE=ON: scripts/test.sh always sets it here).
  add_executable(corruption_sanitized ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_checkpoint_corruption.cpp)
  target_link_libraries(corruption_sanitized PRIVATE phonegpt_static Catch2::Catch2WithMain)
  target_include_directories(corruption_sanitized PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_compile_definitions(corruption_sanitized PRIVATE
    PG_TEST_DATA_PATH="${PG_DATA_PATH}" PG_TEST_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures")
  add_dependencies(pg_fuzz_all corruption_sanitized)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/tmp)
  add_test(NAME corruption_matrix_sanitized COMMAND corruption_sanitized "corruption matrix*")
  set_tests_properties(corruption_matrix_sanitized PROPERTIES LABELS fuzz TIMEOUT 600
    ENVIRONMENT "PG_TEST_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/tmp")
  # The sweep (about 75 s of one core under the sanitizers on a Zen 5 host, the fuzz stage's
  # longest test; 340 s before the reader stopped allocating a 1 MiB buffer per load, 160 s
  # before the loaders stopped composing error messages for checks that pass) in
  # shards of the byte positions (PG_SWEEP_SHARD, test_checkpoint_support.hpp), so ctest -j runs
  # them on every core; each shard has its own scratch folder, since the mapped sweep writes a file.
  set(PG_SWEEP_SHARDS 2)
  math(EXPR last_shard "${PG_SWEEP_SHARDS} - 1")
  foreach(shard RANGE ${last_shard})
    set(name corruption_sweep_sanitized_${shard}of${PG_SWEEP_SHARDS})
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/tmp/${name})
    add_test(NAME ${name} COMMAND corruption_sanitized "every truncation and every single-byte flip*")
    # The timeout leaves room for a shared, loaded machine.
    set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 1800
      ENVIRONMENT "PG_TEST_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/tmp/${name};PG_SWEEP_SHARD=${shard}/${PG_SWEEP_SHARDS}")
  endforeach()
endif()
