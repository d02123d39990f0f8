# Tests at real model sizes (label "slow": a minute or more and gigabytes each), which the CI
# script leaves out (scripts/test.sh runs ctest -LE slow) and a developer runs on request:
#   (cd build && ctest -L slow --output-on-failure)
# They run with the Python tests' environment (tests/cmake/python.cmake, included before this).
if(PG_BUILD_PYTHON AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME hf_import_smollm2_size
           COMMAND ${Python_EXECUTABLE} -m pytest -q -s -p no:cacheprovider
                   ${PROJECT_SOURCE_DIR}/tests/slow/test_hf_import_smollm2_size.py)
  set_tests_properties(hf_import_smollm2_size PROPERTIES LABELS slow TIMEOUT 1200 ENVIRONMENT "${PG_PY_TEST_ENV}")
endif()
