# cmake -DPG_NM=nm -DPG_LIB=libphonegpt_jni.so -P check_exports.cmake: fails unless the shim's
# dynamic symbol table defines exactly JNI_OnLoad (RegisterNatives does the rest) and it is an
# ELF file of the machine it was built for (readable by this nm).
execute_process(COMMAND ${PG_NM} -D --defined-only ${PG_LIB} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PG_NM} ${PG_LIB} failed: ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(names)
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^[0-9a-fA-F ]* [A-Za-z] " "" name "${line}")
  list(APPEND names ${name})
endforeach()
if(NOT names STREQUAL "JNI_OnLoad")
  message(FATAL_ERROR "libphonegpt_jni exports [${names}], expected only JNI_OnLoad")
endif()
message(STATUS "libphonegpt_jni exports only JNI_OnLoad")
