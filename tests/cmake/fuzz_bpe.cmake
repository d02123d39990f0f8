# libFuzzer targets of the byte-level BPE tokenizer (owner: bpe), beside tests/cmake/fuzz.cmake's
# (this file sorts after it, so pg_fuzz_all exists): every BPE loader, and decode(encode(x)) == x
# on arbitrary bytes for the three pre-tokenizers. Same build and smoke runs (label "fuzz").
if(PG_FUZZ)
  foreach(target bpe_loaders bpe_roundtrip)
    add_executable(fuzz_${target} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${target}.cpp)
    target_compile_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(fuzz_${target} PRIVATE phonegpt_static)
    add_dependencies(pg_fuzz_all fuzz_${target})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_out/${target})
    file(MAKE_DIRECTORY ${out})
    add_test(NAME fuzz_${target}_smoke
             COMMAND fuzz_${target} -runs=20000 -seed=1 -max_len=4096 -rss_limit_mb=1024
                     ${out} ${PG_FUZZ_CORPUS}/${target})
    set_tests_properties(fuzz_${target}_smoke PROPERTIES LABELS fuzz TIMEOUT 300)
  endforeach()
endif()
