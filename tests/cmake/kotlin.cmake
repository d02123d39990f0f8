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

  set(PG_KT_JUNIT_CLASSES phonegpt.PhoneGptTest phonegpt.SessionTest)
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
    list(APPEND PG_KT_JUNIT_ENV "PG_BPE_PEERS=${PG_BPE_PEER_FILES}"
                                "PG_KOTLIN_BPE_REFERENCE=${PG_KT_TEST_DIR}/bpe_reference.txt")
  endif()

  set(PG_KT_JAVA ${Java_JAVA_EXECUTABLE} -Xmx256m -Djava.library.path=$<TARGET_FILE_DIR:phonegpt_jni>)
  add_test(NAME kotlin_junit
    COMMAND ${PG_KT_JAVA} -cp ${PG_KT_TEST_JAR}:${PG_KT_RUNTIME_CP}:${PG_KT_JUNIT_CP}
            org.junit.runner.JUnitCore ${PG_KT_JUNIT_CLASSES})
  set_tests_properties(kotlin_junit PROPERTIES FIXTURES_REQUIRED pg_kotlin_reference TIMEOUT 300
    ENVIRONMENT "${PG_KT_JUNIT_ENV}")

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

# Only JNI_OnLoad is exported (every native is registered from it), in every build of the shim,
# the aarch64 one included (scripts/cross_test_aarch64.sh runs this test there).
if(TARGET phonegpt_jni)
  add_test(NAME kotlin_jni_exports
    COMMAND ${CMAKE_COMMAND} -DPG_NM=${CMAKE_NM} -DPG_LIB=$<TARGET_FILE:phonegpt_jni>
            -P ${PROJECT_SOURCE_DIR}/bindings/kotlin/jni/check_exports.cmake)
endif()
