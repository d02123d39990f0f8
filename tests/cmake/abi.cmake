# Each tier's shared library exports exactly the functions its headers declare: libphonegpt.so
# those of phonegpt.h (so none of the coordinator's), libphonegpt_coordinator.so those of both.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME abi_exports_match_header
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_exports.sh $<TARGET_FILE:phonegpt>
            ${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt.h)
  add_test(NAME abi_coordinator_exports_match_headers
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_exports.sh $<TARGET_FILE:phonegpt_coordinator>
            ${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt.h
            ${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt_coordinator.h)
endif()

# docs/api.md names every public function of both tiers (and none the headers lack).
add_test(NAME api_doc_names_every_function
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_api_doc.sh ${PROJECT_SOURCE_DIR}/docs/api.md
          ${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt.h
          ${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt_coordinator.h)

# No folder of lib/ includes one it does not depend on (docs/architecture.md's layout table).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME lib_layers_follow_architecture
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_layers.py ${PROJECT_SOURCE_DIR})

# Each PG_DEPRECATED function warns with its hint when used; the headers alone warn about nothing.
add_test(NAME deprecated_declarations_warn
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_deprecated.py ${CMAKE_C_COMPILER}
          ${PROJECT_SOURCE_DIR}/include)

# The experimental declarations of phonegpt.h are invisible to a C client by default and
# visible with PG_EXPERIMENTAL_API defined.
add_test(NAME experimental_declarations_need_the_macro
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_experimental.py ${CMAKE_C_COMPILER}
          ${PROJECT_SOURCE_DIR}/include)
