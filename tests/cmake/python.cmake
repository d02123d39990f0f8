# The Python binding's tests (pytest over tests/python), run with the interpreter the binding
# was built for. pytest exits 5 when it collected no test, which ctest counts as a failure. And
# python_api_coverage: which C API functions the binding calls.
if(PG_BUILD_PYTHON AND NOT CMAKE_CROSSCOMPILING)
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python for the binding and its tests")
  endif()
  find_package(Python 3.8 REQUIRED COMPONENTS Interpreter)
  set(PG_PY_TEST_ENV
    "PHONEGPT_PYDIR=${PROJECT_BINARY_DIR}/bindings/python"
    "PG_DATA_PATH=${PG_DATA_PATH}"
    "PG_TEST_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/tmp"
    "PG_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
    "PG_REQUIRE_ALL_TESTS=${PG_TEST_REQUIRE_ALL}"
    "PHONEGPT_LIB=$<TARGET_FILE:phonegpt>"
    # two threads for torch and the library: the machine has 2 cores shared by everyone
    "OMP_NUM_THREADS=1" "OPENBLAS_NUM_THREADS=1")
  if(TARGET phonegpt_cli)
    list(APPEND PG_PY_TEST_ENV "PHONEGPT_CLI=$<TARGET_FILE:phonegpt_cli>")
  endif()
  if(PG_SANITIZE)
    # Python is not instrumented: the ASan runtime must be loaded first, and libstdc++ with it,
    # or ASan's __cxa_throw interceptor finds no real __cxa_throw and aborts at the first C++
    # exception inside the library.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir
                      OUTPUT_VARIABLE PG_RT_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
      set(PG_LIBASAN ${PG_RT_DIR}/libclang_rt.asan-x86_64.so)
    else()
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                      OUTPUT_VARIABLE PG_LIBASAN OUTPUT_STRIP_TRAILING_WHITESPACE)
    endif()
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                    OUTPUT_VARIABLE PG_LIBSTDCXX OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND PG_PY_TEST_ENV "LD_PRELOAD=${PG_LIBASAN} ${PG_LIBSTDCXX}" "ASAN_OPTIONS=detect_leaks=0")
  endif()
  add_test(NAME python_binding
           COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/tests/python)
  set_tests_properties(python_binding PROPERTIES ENVIRONMENT "${PG_PY_TEST_ENV}" TIMEOUT 600)

  # Every PG_API function called by the binding's C++ files or listed with a reason in
  # bindings/python/api_not_wrapped.txt (the same check as kotlin_api_coverage).
  add_test(NAME python_api_coverage
    COMMAND ${CMAKE_COMMAND} -DPG_HEADER=${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt.h
            -DPG_STRUCT_LIST=${PROJECT_SOURCE_DIR}/lib/core/c_struct_fields.def -DPG_BINDING=Python
            -DPG_BINDING_DIR=${PROJECT_SOURCE_DIR}/bindings/python
            -DPG_NOT_WRAPPED=${PROJECT_SOURCE_DIR}/bindings/python/api_not_wrapped.txt
            -P ${PROJECT_SOURCE_DIR}/cmake/check_api_coverage.cmake)
endif()
