# The exported symbol set of libphonegpt.so equals the functions declared in phonegpt.h.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME abi_exports_match_header
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_exports.sh
            ${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt.h $<TARGET_FILE:phonegpt>)
endif()

# docs/api.md names every public function (and none the header lacks).
add_test(NAME api_doc_names_every_function
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_api_doc.sh
          ${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt.h ${PROJECT_SOURCE_DIR}/docs/api.md)
