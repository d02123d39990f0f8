# ThreadSanitizer (label "tsan"): tests/unit/test_concurrent_readers.cpp, 8 threads reading one
# model and one tokenizer, in a clang build of its own where a data race is a report and the
# test fails. Only the library and this test are built (scripts/test.sh runs it):
#   cmake -S . -B build-tsan -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DPG_TSAN=ON \
#         -DPG_BUILD_PYTHON=OFF -DPG_BUILD_KOTLIN=OFF -DPG_BUILD_BENCHMARKS=OFF -DPG_BUILD_EXAMPLES=OFF
#   cmake --build build-tsan -j2 --target pg_tsan_all && (cd build-tsan && ctest -L tsan)
if(PG_TSAN)
  if(NOT PG_BPE_PEER_FILES)
    message(FATAL_ERROR "PG_TSAN=ON: the concurrency test reads the GPT-2 ranks exported from the npm peers "
                        "(tests/cmake/bpe.cmake); run scripts/setup.sh")
  endif()
  add_executable(concurrent_readers_tsan ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_concurrent_readers.cpp)
  target_link_libraries(concurrent_readers_tsan PRIVATE phonegpt_static Catch2::Catch2WithMain)
  target_include_directories(concurrent_readers_tsan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support
                                                            ${PROJECT_SOURCE_DIR}/bindings)  # session_calls.hpp
  target_compile_definitions(concurrent_readers_tsan PRIVATE PG_TEST_BPE_PEERS="${PG_BPE_PEER_FILES}")
  add_dependencies(concurrent_readers_tsan bpe_peer_files)
  add_custom_target(pg_tsan_all DEPENDS concurrent_readers_tsan)
  add_test(NAME concurrent_readers_tsan COMMAND concurrent_readers_tsan "[concurrency]")
  # halt_on_error: the first report fails the run (exitcode 66), never a warning in a log.
  set_tests_properties(concurrent_readers_tsan PROPERTIES LABELS tsan TIMEOUT 600
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")
endif()
