# cmake -DPG_HEADER=phonegpt.h -DPG_STRUCT_LIST=lib/core/c_struct_fields.def -DPG_JNI_DIR=bindings/kotlin/jni
#       -DPG_JAVAP=javap -DPG_JAR=phonegpt.jar -P check_api_coverage.cmake
# Fails unless
#  1. every PG_API function of phonegpt.h is called by the JNI shim or is listed below with the
#     reason it is not wrapped (and every listed one exists and is not called: no stale entries);
#  2. the native methods of phonegpt.Native (javap's view of the jar) are exactly the methods the
#     shim registers (PG_NATIVE entries): RegisterNatives already fails the library's load on a
#     registered method whose name or signature Kotlin lacks; this catches the other direction,
#     a Kotlin declaration nothing implements (which would fail only when called).

cmake_minimum_required(VERSION 3.25)   # IN_LIST

# name -> why the binding does not call it
set(PG_NOT_WRAPPED
  "pg_tokenizer_encode=pg_tokenizer_encode_with with default options is the same call (phonegpt.h), and Tokenizer.encode always passes its EncodeOptions")

file(READ ${PG_HEADER} header)
string(REGEX MATCHALL "PG_API[^;(]*[ *](pg_[a-z0-9_]+)\\(" decls "${header}")
set(api)
foreach(d IN LISTS decls)
  string(REGEX REPLACE ".*[ *](pg_[a-z0-9_]+)\\($" "\\1" name "${d}")
  list(APPEND api ${name})
endforeach()
list(REMOVE_DUPLICATES api)
list(LENGTH api n_api)
if(n_api LESS 100)
  message(FATAL_ERROR "found only ${n_api} PG_API functions in ${PG_HEADER}: the pattern is broken")
endif()

file(GLOB shim_files ${PG_JNI_DIR}/*.cpp ${PG_JNI_DIR}/*.hpp)
set(shim "")
foreach(f IN LISTS shim_files)
  file(READ ${f} text)
  string(APPEND shim "${text}\n")
endforeach()
# Calls, not mentions: comments do not count.
string(REGEX REPLACE "//[^\n]*" "" code "${shim}")
string(REGEX MATCHALL "pg_[a-z0-9_]+" used "${code}")
# struct_jni.hpp calls pg_<struct>_default for every options struct of the field list by token
# pasting (defaults<S>()), which no text search sees.
file(READ ${PG_STRUCT_LIST} list_text)
string(REGEX MATCHALL "PG_STRUCT\\((pg_[a-z0-9_]+), [A-Za-z]+, PG_OPTIONS\\)" options_structs "${list_text}")
foreach(o IN LISTS options_structs)
  string(REGEX REPLACE "PG_STRUCT\\((pg_[a-z0-9_]+),.*" "\\1_default" name "${o}")
  list(APPEND used ${name})
endforeach()
list(REMOVE_DUPLICATES used)

set(not_wrapped)
foreach(entry IN LISTS PG_NOT_WRAPPED)
  string(REGEX REPLACE "=.*" "" name "${entry}")
  list(APPEND not_wrapped ${name})
  if(NOT name IN_LIST api)
    message(FATAL_ERROR "${name} is listed as not wrapped but phonegpt.h has no such function")
  endif()
  if(name IN_LIST used)
    message(FATAL_ERROR "${name} is listed as not wrapped but the shim calls it: remove it from the list")
  endif()
endforeach()

set(missing)
foreach(name IN LISTS api)
  if(NOT name IN_LIST used AND NOT name IN_LIST not_wrapped)
    list(APPEND missing ${name})
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "the Kotlin binding does not wrap: ${missing} (wrap them, or list them in "
                      "bindings/kotlin/jni/check_api_coverage.cmake with the reason)")
endif()
list(LENGTH not_wrapped n_not)
math(EXPR n_used "${n_api} - ${n_not}")

# 2. javap's native methods of phonegpt.Native against the registered ones.
execute_process(COMMAND ${PG_JAVAP} -p -cp ${PG_JAR} phonegpt.Native
                OUTPUT_VARIABLE javap ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "javap failed: ${err}")
endif()
string(REGEX MATCHALL " native [^\n(]* ([A-Za-z0-9_]+)\\(" natives "${javap}")
set(declared)
foreach(d IN LISTS natives)
  string(REGEX REPLACE ".* ([A-Za-z0-9_]+)\\($" "\\1" name "${d}")
  list(APPEND declared ${name})
endforeach()
string(REGEX MATCHALL "PG_NATIVE\\(\"[A-Za-z0-9_]+\"" entries "${shim}")
set(registered)
foreach(e IN LISTS entries)
  string(REGEX REPLACE "PG_NATIVE\\(\"([A-Za-z0-9_]+)\"" "\\1" name "${e}")
  list(APPEND registered ${name})
endforeach()
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
message(STATUS "the shim calls ${n_used} of ${n_api} PG_API functions (${n_not} not wrapped, with reasons); "
               "${n_natives} natives, declared = registered")
