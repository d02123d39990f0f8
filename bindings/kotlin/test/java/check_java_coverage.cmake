# Every public top-level class of phonegpt.jar is named in JavaApiTest.java, except the ones a Java
# app has no use for (listed here with the reason). Run by ctest kotlin_java_api_coverage.
# -DPG_JAR=phonegpt.jar -DPG_JAVA_TEST=JavaApiTest.java -DPG_JAR_TOOL=jar
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
foreach(c ${classes})
  string(REGEX REPLACE "phonegpt/(.*)\\.class" "\\1" name ${c})
  list(FIND not_for_java ${name} skip)
  if(skip EQUAL -1 AND NOT source MATCHES "[^A-Za-z0-9_]${name}[^A-Za-z0-9_]")
    list(APPEND missing ${name})
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "public classes JavaApiTest.java does not use: ${missing}")
endif()
