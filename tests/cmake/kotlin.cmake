# The Kotlin binding's tests (bindings/kotlin): JUnit4 on the JVM, the C reference they compare
# with bit for bit, the Kotlin example's smoke run, and the shim's exported symbols.
if(TARGET phonegpt_jni AND NOT CMAKE_CROSSCOMPILING)
  set(PG_KT_TEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/kotlin)
  file(MAKE_DIRECTORY ${PG_KT_TEST_DIR}/reference ${CMAKE_CURRENT_BINARY_DIR}/tmp)
  set(PG_KT_JUNIT_CP ${PG_KT_JAVA_DIR}/junit4.jar:${PG_KT_JAVA_DIR}/hamcrest.jar)
  foreach(jar junit4.jar hamcrest.jar)
    if(NOT EXISTS ${PG_KT_JAVA_DIR}/${jar})
      message(FATAL_ERROR "PG_BUILD_KOTLIN: ${PG_KT_JAVA_DIR}/${jar} is missing (scripts/setup.sh installs junit4)")
    endif()
  endforeach()

  # The tests see the binding's internals (Native, the field arrays) as a friend module.
  file(GLOB PG_KT_TEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bindings/kotlin/test/phonegpt/*.kt)
  set(PG_KT_TEST_JAR ${PG_KT_TEST_DIR}/phonegpt-tests.jar)
  pg_kotlin_jar(phonegpt_kotlin_tests ${PG_KT_TEST_JAR} SOURCES ${PG_KT_TEST_SOURCES}
                CLASSPATH ${PG_KT_JUNIT_CP} FRIEND)

  add_executable(kotlin_c_reference ${PROJECT_SOURCE_DIR}/bindings/kotlin/test/c_reference.c)
  set_target_properties(kotlin_c_reference PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
  target_compile_options(kotlin_c_reference PRIVATE -Wall -Wextra -pedantic -Werror)
  target_link_libraries(kotlin_c_reference PRIVATE phonegpt)
  add_test(NAME kotlin_c_reference COMMAND kotlin_c_reference ${PG_KT_TEST_DIR}/reference)
  set_tests_properties(kotlin_c_reference PROPERTIES FIXTURES_SETUP pg_kotlin_reference)

  # Every *Test.kt is a JUnit class (BpeTest only with the npm peers, below).
  set(PG_KT_JUNIT_CLASSES)
  foreach(src ${PG_KT_TEST_SOURCES})
    get_filename_component(name ${src} NAME_WE)
    if(name MATCHES "Test$" AND NOT name STREQUAL "BpeTest")
      list(APPEND PG_KT_JUNIT_CLASSES phonegpt.${name})
    endif()
  endforeach()
  set(PG_KT_JUNIT_ENV "PG_KOTLIN_REFERENCE=${PG_KT_TEST_DIR}/reference" "PG_TEST_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/tmp")
  # BPE against npm tiktoken: the peer files bpe.cmake exports, and tiktoken's ids for the test
  # texts written in the same ctest run (defined where the peers are; PG_REQUIRE_TOKENIZER_PEERS
  # makes their absence a configure error in CI).
  if(PG_BPE_PEER_FILES)
    add_test(NAME kotlin_bpe_reference
      COMMAND ${PG_NODE} ${PROJECT_SOURCE_DIR}/bindings/kotlin/test/bpe_reference.js ${PG_NPM_DIR}/node_modules
              ${PG_KT_TEST_DIR}/bpe_reference.txt)
    set_tests_properties(kotlin_bpe_reference PROPERTIES FIXTURES_SETUP pg_kotlin_reference)
    list(APPEND PG_KT_JUNIT_CLASSES phonegpt.BpeTest)
    if(TARGET bpe_peer_files)
      add_dependencies(phonegpt_kotlin_tests bpe_peer_files)   # the rank files BpeTest reads
    endif()
    list(APPEND PG_KT_JUNIT_ENV "PG_BPE_PEERS=${PG_BPE_PEER_FILES}"
                                "PG_KOTLIN_BPE_REFERENCE=${PG_KT_TEST_DIR}/bpe_reference.txt")
  endif()

  set(PG_KT_JAVA ${Java_JAVA_EXECUTABLE} -Xmx256m -Djava.library.path=$<TARGET_FILE_DIR:phonegpt_jni>)
  set(PG_KT_JUNIT_RUN -cp ${PG_KT_TEST_JAR}:${PG_KT_RUNTIME_CP}:${PG_KT_JUNIT_CP} org.junit.runner.JUnitCore
                      ${PG_KT_JUNIT_CLASSES})

  # The JVM does not load the sanitizer runtimes itself: an instrumented shim needs them first
  # (LD_PRELOAD), with libstdc++ so that ASan's __cxa_throw interceptor finds the real one. The
  # JVM uses SIGSEGV itself (handle_segv=0). LeakSanitizer cannot stop the JVM's threads (it dies
  # with "Tracer caught signal 11"), so detect_leaks=0: LeakTest checks native memory by RSS
  # instead, with ASan's quarantine kept small enough for RSS to stay meaningful.
  set(PG_KT_ASAN_OPTIONS "ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:quarantine_size_mb=16"
                         "UBSAN_OPTIONS=print_stacktrace=1")
  function(pg_kt_sanitizer_env out)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                      OUTPUT_VARIABLE asan OUTPUT_STRIP_TRAILING_WHITESPACE)
    else()
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                      OUTPUT_VARIABLE asan OUTPUT_STRIP_TRAILING_WHITESPACE)
    endif()
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                    OUTPUT_VARIABLE stdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(${out} "LD_PRELOAD=${asan} ${stdcxx}" ${PG_KT_ASAN_OPTIONS} PARENT_SCOPE)
  endfunction()

  set(PG_KT_JUNIT_TEST_ENV ${PG_KT_JUNIT_ENV})
  if(PG_SANITIZE)   # the whole build is instrumented (the library and the shim)
    pg_kt_sanitizer_env(PG_KT_SAN_ENV)
    list(APPEND PG_KT_JUNIT_TEST_ENV ${PG_KT_SAN_ENV})
  endif()
  add_test(NAME kotlin_junit COMMAND ${PG_KT_JAVA} ${PG_KT_JUNIT_RUN})
  set_tests_properties(kotlin_junit PROPERTIES FIXTURES_REQUIRED pg_kotlin_reference TIMEOUT 300
    ENVIRONMENT "${PG_KT_JUNIT_TEST_ENV}")

  # The same suite on an ASan+UBSan build of the shim (libphonegpt_jni_asan.so, over the
  # uninstrumented library) in an ordinary build: every JNI path the tests reach (arrays, direct
  # buffers, strings, callbacks, handles) runs under the sanitizers. gcc only (its runtime is what
  # pg_kt_sanitizer_env preloads); about 20 s.
  if(NOT PG_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    pg_jni_library(phonegpt_jni_asan SANITIZE)
    add_dependencies(phonegpt_kotlin_tests phonegpt_jni_asan)
    pg_kt_sanitizer_env(PG_KT_SAN_ENV)
    add_test(NAME kotlin_junit_asan
      COMMAND ${PG_KT_JAVA} -Dphonegpt.jni.library=$<TARGET_FILE:phonegpt_jni_asan> ${PG_KT_JUNIT_RUN})
    set_tests_properties(kotlin_junit_asan PROPERTIES FIXTURES_REQUIRED pg_kotlin_reference TIMEOUT 300
      ENVIRONMENT "${PG_KT_JUNIT_ENV};${PG_KT_SAN_ENV}")
  endif()

  # Every PG_API function wrapped or listed with a reason; Kotlin's natives = the registered ones.
  get_filename_component(_pg_jdk_bin ${Java_JAVAC_EXECUTABLE} DIRECTORY)
  find_program(PG_JAVAP javap HINTS ${_pg_jdk_bin} REQUIRED)
  add_test(NAME kotlin_api_coverage
    COMMAND ${CMAKE_COMMAND} -DPG_HEADER=${PROJECT_SOURCE_DIR}/include/phonegpt/phonegpt.h
            -DPG_STRUCT_LIST=${PROJECT_SOURCE_DIR}/lib/core/c_struct_fields.def
            -DPG_JNI_DIR=${PROJECT_SOURCE_DIR}/bindings/kotlin/jni -DPG_JAVAP=${PG_JAVAP} -DPG_JAR=${PG_KT_JAR}
            -P ${PROJECT_SOURCE_DIR}/bindings/kotlin/jni/check_api_coverage.cmake)

  # The binding from Java: JavaApiTest.java compiled with javac against phonegpt.jar and run
  # (kotlin_java_api), and every public class of the jar used by it and every public method of
  # the hand-written ones called (kotlin_java_api_coverage).
  set(PG_JAVA_TEST_SRC ${PROJECT_SOURCE_DIR}/bindings/kotlin/test/java/JavaApiTest.java)
  set(PG_JAVA_TEST_DIR ${PG_KT_TEST_DIR}/java)
  add_custom_command(OUTPUT ${PG_JAVA_TEST_DIR}/JavaApiTest.class
    COMMAND ${Java_JAVAC_EXECUTABLE} -Xlint:all -Werror -d ${PG_JAVA_TEST_DIR} -cp ${PG_KT_RUNTIME_CP} ${PG_JAVA_TEST_SRC}
    DEPENDS ${PG_JAVA_TEST_SRC} ${PG_KT_JAR} COMMENT "javac JavaApiTest" VERBATIM)
  add_custom_target(phonegpt_java_api_test ALL DEPENDS ${PG_JAVA_TEST_DIR}/JavaApiTest.class)
  add_dependencies(phonegpt_java_api_test phonegpt_kotlin_jar)
  add_test(NAME kotlin_java_api COMMAND ${PG_KT_JAVA} -cp ${PG_JAVA_TEST_DIR}:${PG_KT_RUNTIME_CP} JavaApiTest
                                        ${CMAKE_CURRENT_BINARY_DIR}/tmp)
  set_tests_properties(kotlin_java_api PROPERTIES TIMEOUT 120)
  find_program(PG_JAR_TOOL jar HINTS ${_pg_jdk_bin} REQUIRED)
  add_test(NAME kotlin_java_api_coverage
    COMMAND ${CMAKE_COMMAND} -DPG_JAR=${PG_KT_JAR} -DPG_JAVA_TEST=${PG_JAVA_TEST_SRC} -DPG_JAR_TOOL=${PG_JAR_TOOL}
            -DPG_JAVAP=${PG_JAVAP} -DPG_STRUCTS_KT=${PG_KT_STRUCTS}
            -P ${PROJECT_SOURCE_DIR}/bindings/kotlin/test/java/check_java_coverage.cmake)

  # Binary compatibility of the option and result classes (bindings/kotlin/gen/kotlin_structs.cpp):
  # a client compiled against the classes as they were one field ago (every struct without its
  # last field) runs against the current classes, generated as if that list had been released,
  # with the real binding and shim. Compiled at build time (kotlinc takes 5-30 s a call); the
  # test only runs the client.
  set(compat ${PG_KT_TEST_DIR}/compat)
  add_custom_command(OUTPUT ${compat}/previous/CStructs.kt ${compat}/PreviousClient.kt ${compat}/current/CStructs.kt
    COMMAND ${CMAKE_COMMAND} -E make_directory ${compat}/previous ${compat}/current
    COMMAND pg_kotlin_structs ${compat}/previous/CStructs.kt ${PG_KT_RELEASED_FIELDS} --previous ${compat}/PreviousClient.kt
    COMMAND pg_kotlin_structs ${compat}/current/CStructs.kt ${PG_KT_RELEASED_FIELDS} --released-previous
    DEPENDS pg_kotlin_structs ${PG_KT_RELEASED_FIELDS} ${PROJECT_SOURCE_DIR}/lib/core/c_struct_fields.def VERBATIM)
  set(compat_kotlinc ${PG_KOTLINC} ${PG_KOTLINC_FLAGS} -module-name phonegpt -Xfriend-paths=${PG_KT_JAR}
                     -cp ${PG_KT_JAR}:${PG_KT_COROUTINES})
  add_custom_command(OUTPUT ${compat}/previous.jar ${compat}/current.jar ${compat}/client.jar
    COMMAND ${compat_kotlinc} -d ${compat}/previous.jar ${compat}/previous/CStructs.kt
    COMMAND ${compat_kotlinc} -d ${compat}/current.jar ${compat}/current/CStructs.kt
    COMMAND ${PG_KOTLINC} ${PG_KOTLINC_FLAGS} -cp ${compat}/previous.jar:${PG_KT_JAR} -d ${compat}/client.jar
            ${compat}/PreviousClient.kt
    DEPENDS ${compat}/previous/CStructs.kt ${compat}/PreviousClient.kt ${compat}/current/CStructs.kt ${PG_KT_JAR}
    COMMENT "kotlinc: the classes one field ago, the current ones, a client of the former" VERBATIM)
  add_custom_target(phonegpt_kotlin_compat ALL DEPENDS ${compat}/client.jar)
  add_dependencies(phonegpt_kotlin_compat phonegpt_kotlin_jar)
  add_test(NAME kotlin_config_binary_compat
    COMMAND ${PG_KT_JAVA} -cp ${compat}/client.jar:${compat}/current.jar:${PG_KT_RUNTIME_CP} PreviousClientKt)
  set_tests_properties(kotlin_config_binary_compat PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "classes: an app compiled one field ago links and runs")

  # The example on a generated text (no data file needed), a few steps of the tiny preset.
  if(TARGET phonegpt_kotlin_example)
    set(PG_KT_EXAMPLE_TEXT ${PG_KT_TEST_DIR}/example_text.txt)
    set(_text "")
    foreach(i RANGE 60)
      string(APPEND _text "ROMEO:\nBut soft, what light through yonder window breaks? It is the east, ${i} times.\n\n")
    endforeach()
    file(WRITE ${PG_KT_EXAMPLE_TEXT} "${_text}")
    add_test(NAME kotlin_example
      COMMAND ${PG_KT_JAVA} -cp ${PG_KT_EXAMPLE_JAR}:${PG_KT_RUNTIME_CP} TrainShakespeareKt
              --text ${PG_KT_EXAMPLE_TEXT} --steps 30 --batch 4 --preset tiny --threads 2 --eval-every 10 --tokens 40)
    set_tests_properties(kotlin_example PROPERTIES TIMEOUT 300)
  endif()
endif()

# What an Android app packages (docs/android.md), checked on the aarch64 build: libphonegpt.so and
# the shim need no shared zstd or libsodium, and every LOAD segment is 16 KB aligned.
if(TARGET phonegpt_jni AND PG_STATIC_DEPS)
  add_test(NAME android_native_libs
    COMMAND ${CMAKE_COMMAND} -DPG_READELF=${CMAKE_READELF} "-DPG_LIBS=$<TARGET_FILE:phonegpt_coordinator>;$<TARGET_FILE:phonegpt_jni>"
            -P ${PROJECT_SOURCE_DIR}/bindings/kotlin/jni/check_android_libs.cmake)
endif()

# Only JNI_OnLoad is exported (every native is registered from it), in every build of the shim,
# the aarch64 one included (scripts/cross_test_aarch64.sh runs this test there).
if(TARGET phonegpt_jni)
  add_test(NAME kotlin_jni_exports
    COMMAND ${CMAKE_COMMAND} -DPG_NM=${CMAKE_NM} -DPG_LIB=$<TARGET_FILE:phonegpt_jni>
            -P ${PROJECT_SOURCE_DIR}/bindings/kotlin/jni/check_exports.cmake)
endif()
