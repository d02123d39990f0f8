# Every public top-level class of phonegpt.jar is named in JavaApiTest.java, except the ones a Java
# app has no use for (listed here with the reason), and every public method of the hand-written
# classes (javap -public) is called there by name (overloads share a name). The option and result
# classes generated from lib/core/c_struct_fields.def (named in PG_STRUCTS_KT) are left to the
# class check: their getters, constructors and copy are written by one generator for all of them.
# Run by ctest kotlin_java_api_coverage.
# -DPG_JAR=phonegpt.jar -DPG_JAVA_TEST=JavaApiTest.java -DPG_JAR_TOOL=jar -DPG_JAVAP=javap
# -DPG_STRUCTS_KT=CStructs.kt
execute_process(COMMAND ${PG_JAR_TOOL} tf ${PG_JAR} OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot list ${PG_JAR}")
endif()
file(READ ${PG_JAVA_TEST} source)
# Kotlin-internal classes (public in bytecode only): the shim's entry points and bridges, the
# binding's internal helpers; StreamingKt's suspend functions and channels are for Kotlin.
set(not_for_java Native Ints Floats LockOrder ProgressBridge TokenBridge RuleBridge HandleKt CoordinatorKt LoraKt
                 ModelKt StreamingKt)
string(REGEX MATCHALL "phonegpt/[A-Za-z0-9_]+\\.class" classes "${listing}")
set(missing "")
set(checked_classes "")
foreach(c ${classes})
  string(REGEX REPLACE "phonegpt/(.*)\\.class" "\\1" name ${c})
  list(FIND not_for_java ${name} skip)
  if(skip EQUAL -1)
    list(APPEND checked_classes phonegpt.${name})
    if(NOT source MATCHES "[^A-Za-z0-9_]${name}[^A-Za-z0-9_]")
      list(APPEND missing ${name})
    endif()
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "public classes JavaApiTest.java does not use: ${missing}")
endif()

# The generated classes, from CStructs.kt's "class Name(" lines.
file(STRINGS ${PG_STRUCTS_KT} generated_lines REGEX "^class [A-Za-z0-9_]+\\(")
set(generated "")
foreach(line ${generated_lines})
  string(REGEX REPLACE "^class ([A-Za-z0-9_]+)\\(.*" "\\1" g "${line}")
  list(APPEND generated phonegpt.${g})
endforeach()
list(LENGTH generated n_generated)
if(n_generated LESS 10)
  message(FATAL_ERROR "only ${n_generated} generated classes found in ${PG_STRUCTS_KT}: is it parsed?")
endif()

# Methods every class has or Kotlin writes for its own use: Object's and Enum's, destructuring,
# internal declarations (their names carry '$') and default-argument bridges.
set(not_api equals hashCode toString values valueOf component[0-9]+ copy)
# Kotlin-internal declarations that are public in bytecode only: top-level internal functions and
# NativeHandle's @PublishedApi members (for its inline functions); and a suspend function.
list(APPEND not_api ints floats cBits getLock getHandle live refuseReentry lockRead lockWrite unlockRead unlockWrite
                    reading writing getHandleKind doWork)
list(JOIN not_api "|" not_api_re)
set(hand_written ${checked_classes})
list(REMOVE_ITEM hand_written ${generated})
execute_process(COMMAND ${PG_JAVAP} -public -cp ${PG_JAR} ${hand_written} OUTPUT_VARIABLE api RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "javap failed on ${PG_JAR}")
endif()
string(REPLACE "\n" ";" api_lines "${api}")
set(uncalled "")
set(n_methods 0)
foreach(line ${api_lines})
  if(line MATCHES "^public .*(class|interface) ([A-Za-z0-9_.$]+)")
    set(current ${CMAKE_MATCH_2})
  elseif(line MATCHES "^  public [^(]* ([A-Za-z0-9_$]+)\\(")  # a method (a constructor has no space before its name)
    set(method ${CMAKE_MATCH_1})
    if(method MATCHES "\\$" OR method MATCHES "^(${not_api_re})$")
      continue()
    endif()
    math(EXPR n_methods "${n_methods} + 1")
    if(NOT source MATCHES "\\.${method}\\(" AND NOT source MATCHES "::${method}[^A-Za-z0-9_]")  # a call or a method reference
      list(APPEND uncalled "${current}.${method}")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES uncalled)
if(uncalled)
  list(JOIN uncalled "\n  " text)
  message(FATAL_ERROR "public methods JavaApiTest.java never calls:\n  ${text}")
endif()
message(STATUS "JavaApiTest.java uses every public class and calls all ${n_methods} public methods of the hand-written ones")
