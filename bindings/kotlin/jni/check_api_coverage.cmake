# cmake -DPG_HEADER=phonegpt.h -DPG_STRUCT_LIST=lib/core/c_struct_fields.def -DPG_JNI_DIR=bindings/kotlin/jni
#       -DPG_JAVAP=javap -DPG_JAR=phonegpt.jar -P check_api_coverage.cmake
# Fails unless
#  1. every PG_API function of phonegpt.h is called by the JNI shim or is listed in
#     api_not_wrapped.txt beside this file with the reason it is not wrapped (and every listed one
#     exists and is not called: no stale entries); cmake/check_api_coverage.cmake does this check,
#     for the Python binding too;
#  2. the native methods of phonegpt.Native (javap's view of the jar) are exactly the methods the
#     shim registers (PG_NATIVE entries): RegisterNatives already fails the library's load on a
#     registered method whose name or signature Kotlin lacks; this catches the other direction,
#     a Kotlin declaration nothing implements (which would fail only when called).

cmake_minimum_required(VERSION 3.25)

# 1. The functions the shim calls.
set(PG_BINDING Kotlin)
set(PG_BINDING_DIR ${PG_JNI_DIR})
set(PG_NOT_WRAPPED ${CMAKE_CURRENT_LIST_DIR}/api_not_wrapped.txt)
include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/check_api_coverage.cmake)

# 2. javap's native methods of phonegpt.Native against the registered ones.
execute_process(COMMAND ${PG_JAVAP} -p -cp ${PG_JAR} phonegpt.Native
                OUTPUT_VARIABLE javap ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "javap failed: ${err}")
endif()
pg_matched_names(declared " native [^\n(]* ([A-Za-z0-9_]+)\\(" "${javap}")
# binding_code: the shim's text (cmake/check_api_coverage.cmake)
pg_matched_names(registered "PG_NATIVE\\(\"([A-Za-z0-9_]+)\"" "${binding_code}")
list(SORT declared)
list(SORT registered)
if(NOT declared STREQUAL registered)
  set(only_kotlin ${declared})
  list(REMOVE_ITEM only_kotlin ${registered})
  set(only_shim ${registered})
  list(REMOVE_ITEM only_shim ${declared})
  message(FATAL_ERROR "phonegpt.Native and the shim's registrations differ: declared in Kotlin only [${only_kotlin}], "
                      "registered only [${only_shim}]")
endif()
list(LENGTH declared n_natives)
message(STATUS "${n_natives} natives, declared = registered")
