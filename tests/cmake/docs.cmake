# The documents against the code: every path, pg_ name, preset, phonegpt command and option a
# page names exists (doc_links), and README.md's C examples compile and run
# (readme_examples_c; its Python example runs under pytest: tests/python/test_readme_example.py).
# doc_links reads the CLI's --help: it is defined in the builds that have the CLI (the main
# build; the fuzz and TSan builds have no examples and run only their own labels).
find_program(PG_DOCS_PYTHON NAMES python3 REQUIRED)
if(TARGET phonegpt_cli AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME doc_links
    COMMAND ${PG_DOCS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_doc_links.py ${PROJECT_SOURCE_DIR}
            $<TARGET_FILE:phonegpt_cli>)
endif()

if(NOT CMAKE_CROSSCOMPILING)
  set(PG_README_C ${CMAKE_CURRENT_BINARY_DIR}/readme_examples.c)
  add_custom_command(OUTPUT ${PG_README_C}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/docs/extract_readme_c.sh ${PROJECT_SOURCE_DIR}/README.md
            ${CMAKE_CURRENT_SOURCE_DIR}/docs/readme_examples_main.c ${PG_README_C}
    DEPENDS ${PROJECT_SOURCE_DIR}/README.md ${CMAKE_CURRENT_SOURCE_DIR}/docs/readme_examples_main.c
            ${CMAKE_CURRENT_SOURCE_DIR}/docs/extract_readme_c.sh
    COMMENT "Extracting README.md's C examples" VERBATIM)
  add_executable(readme_examples_c ${PG_README_C})
  target_link_libraries(readme_examples_c PRIVATE phonegpt)
  set_target_properties(readme_examples_c PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
  target_compile_options(readme_examples_c PRIVATE -Wall -Wextra -pedantic -Werror)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/tmp/readme_examples_c)
  add_test(NAME readme_examples_c COMMAND readme_examples_c ${CMAKE_CURRENT_BINARY_DIR}/tmp/readme_examples_c)
endif()
