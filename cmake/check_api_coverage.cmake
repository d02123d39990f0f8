# cmake -DPG_HEADER=phonegpt.h -DPG_STRUCT_LIST=lib/core/c_struct_fields.def -DPG_BINDING=Python
#       -DPG_BINDING_DIR=bindings/python -DPG_NOT_WRAPPED=bindings/python/api_not_wrapped.txt
#       -P check_api_coverage.cmake
# (or include()d with those variables set, as bindings/kotlin/jni/check_api_coverage.cmake does).
# Fails unless every PG_API function of phonegpt.h is called by the binding's C++ files
# (PG_BINDING_DIR/*.cpp and *.hpp), or reached through the struct field list, or listed in the
# PG_NOT_WRAPPED file with the reason it is not called; every listed one must exist and must not
# be called (no stale entries). The file's lines are "pg_name: reason" (several names, separated
# by spaces, may share one reason); blank lines and lines starting with # are skipped.

cmake_minimum_required(VERSION 3.25)   # IN_LIST

foreach(v PG_HEADER PG_STRUCT_LIST PG_BINDING PG_BINDING_DIR PG_NOT_WRAPPED)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_api_coverage.cmake needs -D${v}=...")
  endif()
endforeach()

# The names in `text` that `pattern` (a regular expression whose group 1 is the name) finds, in order.
function(pg_matched_names out pattern text)
  string(REGEX MATCHALL "${pattern}" matches "${text}")
  set(names)
  foreach(m IN LISTS matches)
    string(REGEX REPLACE "${pattern}" "\\1" name "${m}")
    list(APPEND names ${name})
  endforeach()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

# Every tier's functions: PG_HEADER and the other public headers beside it (phonegpt_coordinator.h).
get_filename_component(_pg_header_dir ${PG_HEADER} DIRECTORY)
file(GLOB _pg_headers ${_pg_header_dir}/*.h)
set(header "")
foreach(_pg_h IN LISTS _pg_headers)
  file(READ ${_pg_h} _pg_part)
  string(APPEND header "${_pg_part}")
endforeach()
pg_matched_names(api "PG_API[^;(]*[ *](pg_[a-z0-9_]+)\\(" "${header}")
list(REMOVE_DUPLICATES api)
list(LENGTH api n_api)
if(n_api LESS 100)
  message(FATAL_ERROR "found only ${n_api} PG_API functions in ${PG_HEADER}: the pattern is broken")
endif()

file(GLOB binding_files ${PG_BINDING_DIR}/*.cpp ${PG_BINDING_DIR}/*.hpp)
set(binding_code "")
foreach(f IN LISTS binding_files)
  file(READ ${f} text)
  string(APPEND binding_code "${text}\n")
endforeach()
# Calls, not mentions: comments do not count.
string(REGEX REPLACE "//[^\n]*" "" code "${binding_code}")
string(REGEX MATCHALL "pg_[a-z0-9_]+" used "${code}")
# Both bindings call pg_<struct>_default for every options struct of the field list by token
# pasting (defaults<S>() in Kotlin's struct_jni.hpp and Python's struct_bindings.cpp), which no
# text search sees.
file(READ ${PG_STRUCT_LIST} list_text)
pg_matched_names(options_structs "PG_STRUCT\\((pg_[a-z0-9_]+), [A-Za-z]+, PG_OPTIONS\\)" "${list_text}")
list(TRANSFORM options_structs APPEND _default)
list(APPEND used ${options_structs})
list(REMOVE_DUPLICATES used)

# name -> why the binding does not call it
file(STRINGS ${PG_NOT_WRAPPED} entries)
set(not_wrapped)
foreach(entry IN LISTS entries)
  if(entry MATCHES "^[ \t]*(#|$)")
    continue()
  endif()
  if(NOT entry MATCHES "^(pg_[a-z0-9_]+( +pg_[a-z0-9_]+)*): +[^ ]")
    message(FATAL_ERROR "${PG_NOT_WRAPPED}: \"${entry}\" is not \"pg_name: reason\"")
  endif()
  string(REPLACE " " ";" names "${CMAKE_MATCH_1}")
  foreach(name IN LISTS names)
    list(APPEND not_wrapped ${name})
    if(NOT name IN_LIST api)
      message(FATAL_ERROR "${name} is listed as not wrapped (${PG_NOT_WRAPPED}) but phonegpt.h has no such function")
    endif()
    if(name IN_LIST used)
      message(FATAL_ERROR "${name} is listed as not wrapped but the ${PG_BINDING} binding calls it: remove it "
                          "from ${PG_NOT_WRAPPED}")
    endif()
  endforeach()
endforeach()

set(missing)
foreach(name IN LISTS api)
  if(NOT name IN_LIST used AND NOT name IN_LIST not_wrapped)
    list(APPEND missing ${name})
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "the ${PG_BINDING} binding does not wrap: ${missing} (wrap them, or list them in "
                      "${PG_NOT_WRAPPED} with the reason)")
endif()
list(LENGTH not_wrapped n_not)
math(EXPR n_used "${n_api} - ${n_not}")
message(STATUS "the ${PG_BINDING} binding calls ${n_used} of ${n_api} PG_API functions (${n_not} not wrapped, "
               "with reasons)")
