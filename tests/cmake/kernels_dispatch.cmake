# Every kernel path in ctest. The native run of phonegpt_unit_tests covers the best table of
# this CPU (and every lower table it can run, called directly). These runs check that dispatch
# itself picks the right table where the CPU is different: qemu-x86_64 -cpu max has AVX2+FMA but
# no AVX-512 (fma3+avx2 path), -cpu qemu64 is plain x86-64 (sse2 path). PG_EXPECT_ARCH names
# the table the test "dispatch picks a table..." requires. Only the dispatch tests and two GEMM
# checks through the chosen table run there (PG_TEST_TABLES=dispatched,
# tests/unit/kernel_tables_under_test.hpp): the tables' arithmetic is the native run's to check,
# and the whole [kernels] set under qemu's AVX2 emulation took a minute and a half of the suite.
# Never under a sanitizer: ASan under qemu-user eats the machine's memory (TOOLCHAIN.md §6).

# PG_KERNELS picks a named table natively (here the scalar reference).
add_test(NAME kernels_env_reference COMMAND phonegpt_unit_tests "[kernels]")
set_tests_properties(kernels_env_reference PROPERTIES
  ENVIRONMENT "PG_KERNELS=reference;PG_EXPECT_ARCH=reference;PG_EXPECT_BF16_GEMM=none;PG_EXPECT_INT8_GEMM=generic")

find_program(PG_QEMU_X86_64 qemu-x86_64)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64" AND NOT CMAKE_CROSSCOMPILING AND NOT PG_SANITIZE)
  pg_require_test_dependency("${PG_QEMU_X86_64}" "no qemu-x86_64: kernels_dispatch_fma3_avx2 and kernels_dispatch_sse2 are not registered")
endif()
if(PG_QEMU_X86_64 AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64" AND NOT CMAKE_CROSSCOMPILING
   AND NOT PG_SANITIZE)
  set(PG_X86_DISPATCH_TESTS "dispatch *,cpu_features reports*,sgemm matches a double-precision product*,sgemm at the PhoneGPT layer shapes*")
  add_test(NAME kernels_dispatch_fma3_avx2
           COMMAND ${PG_QEMU_X86_64} -cpu max $<TARGET_FILE:phonegpt_unit_tests> "${PG_X86_DISPATCH_TESTS}")
  # Neither emulated CPU has AVX512_BF16: a GEMM asking for bf16 arithmetic must be the exact one.
  set_tests_properties(kernels_dispatch_fma3_avx2 PROPERTIES ENVIRONMENT "PG_EXPECT_ARCH=fma3+avx2;PG_TEST_TABLES=dispatched;PG_EXPECT_BF16_GEMM=none")
  add_test(NAME kernels_dispatch_sse2
           COMMAND ${PG_QEMU_X86_64} -cpu qemu64 $<TARGET_FILE:phonegpt_unit_tests> "${PG_X86_DISPATCH_TESTS}")
  set_tests_properties(kernels_dispatch_sse2 PROPERTIES ENVIRONMENT "PG_EXPECT_ARCH=sse2;PG_TEST_TABLES=dispatched;PG_EXPECT_BF16_GEMM=none;PG_EXPECT_INT8_GEMM=generic")
endif()

# In an aarch64 cross build (scripts/cross_test_aarch64.sh) the tests run under qemu-aarch64 on
# the two CPUs that matter: a bare ARMv8.0 core (cortex-a53: NEON, none of the ARMv8.2
# extensions) and one with every extension (max: FP16, dot product, SVE, i8mm, bf16). Both get
# the lane-FMA table (plain ARMv8.0 NEON); PG_EXPECT_FEATURES / PG_EXPECT_NO_FEATURES name
# the HWCAP features dispatch must (not) have seen there (tests/unit/test_kernels_arm.cpp).
# kernels_aarch64_env_neon64 checks PG_KERNELS still selects the xsimd table by name.
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64" AND NOT PG_SANITIZE)
  find_program(PG_QEMU_AARCH64 qemu-aarch64)
  pg_require_test_dependency("${PG_QEMU_AARCH64}" "no qemu-aarch64: the kernels_aarch64_* tests are not registered")
  if(PG_QEMU_AARCH64)
    set(PG_AARCH64_FEATURES_cortex-a53 "PG_EXPECT_FEATURES=asimd"
        "PG_EXPECT_NO_FEATURES=fphp asimdhp(fp16) asimddp(dotprod) sve i8mm bf16")
    set(PG_AARCH64_FEATURES_max
        "PG_EXPECT_FEATURES=asimd fphp asimdhp(fp16) asimddp(dotprod) sve i8mm bf16")
    # Every table is plain ARMv8.0 code, so the bare core runs them all; `max` adds only the
    # detection of every extension, and checks the table dispatch chose there.
    set(PG_AARCH64_TABLES_cortex-a53 "PG_TEST_TABLES=all")
    set(PG_AARCH64_TABLES_max "PG_TEST_TABLES=dispatched")
    # The FMLA .8h inference GEMM (GemmArgs::fp16_arithmetic) is taken only where HWCAP has
    # asimdhp: on max, checked bit for bit against its scalar model; on cortex-a53 not, and a GEMM
    # asking for it must be the exact one (tests/unit/test_kernels_fp16.cpp).
    list(APPEND PG_AARCH64_FEATURES_cortex-a53 "PG_EXPECT_FP16_GEMM=none")
    list(APPEND PG_AARCH64_FEATURES_max "PG_EXPECT_FP16_GEMM=arm64+fp16+fmla-8h")
    # The int8 kernel of quant_linear (kernels/quant_gemm.hpp): SMMLA where HWCAP2 has i8mm, SDOT
    # where HWCAP has asimddp (the cortex-a76 run below checks that one), else the ARMv8.0 tile.
    list(APPEND PG_AARCH64_FEATURES_cortex-a53 "PG_EXPECT_INT8_GEMM=arm64+neon")
    list(APPEND PG_AARCH64_FEATURES_max "PG_EXPECT_INT8_GEMM=arm64+i8mm")
    # max runs only what needs its extensions (dispatch and detection, the FMLA .8h GEMM, the
    # SDOT and SMMLA int8 tiles): everything else is the ARMv8.0 code cortex-a53 checks.
    set(PG_AARCH64_TESTS_cortex-a53 "[kernels]")
    set(PG_AARCH64_TESTS_max "dispatch *,cpu_features reports*,the fp16-arithmetic GEMM*,every int8 tile equals*,quant_linear stays*")
    foreach(cpu cortex-a53 max)
      add_test(NAME kernels_aarch64_${cpu}
               COMMAND ${PG_QEMU_AARCH64} -cpu ${cpu} $<TARGET_FILE:phonegpt_unit_tests> "${PG_AARCH64_TESTS_${cpu}}")
      set_tests_properties(kernels_aarch64_${cpu} PROPERTIES ENVIRONMENT
        "PG_EXPECT_ARCH=arm64+neon+fmla-lane;${PG_AARCH64_FEATURES_${cpu}};${PG_AARCH64_TABLES_${cpu}}")
    endforeach()
    # The GEMM variant follows the core: qemu's cortex-a76 reports its real MIDR (read with mrs
    # MIDR_EL1, HWCAP_CPUID), and PG_CPU_MIDR stands in for the cores qemu does not emulate
    # (a Cortex-A55 little core gets the k-unrolled variant, kernels/arm_cores.def). Only the
    # dispatch tests run there: the kernels themselves are the same on every CPU.
    add_test(NAME kernels_aarch64_cortex-a76
             COMMAND ${PG_QEMU_AARCH64} -cpu cortex-a76 $<TARGET_FILE:phonegpt_unit_tests>
                     "dispatch picks a table this CPU runs*,cpu_features reports*,dispatch takes the FMLA .8h*,every int8 tile equals*,dispatch picks the int8 kernel*")
    set_tests_properties(kernels_aarch64_cortex-a76 PROPERTIES ENVIRONMENT
      "PG_EXPECT_ARCH=arm64+neon+fmla-lane;PG_EXPECT_CORE=cortex-a76;PG_EXPECT_FEATURES=asimd fphp asimdhp(fp16) asimddp(dotprod);PG_EXPECT_FP16_GEMM=arm64+fp16+fmla-8h;PG_EXPECT_INT8_GEMM=arm64+dotprod")
    add_test(NAME kernels_aarch64_midr_cortex-a55
             COMMAND ${PG_QEMU_AARCH64} -cpu cortex-a53 $<TARGET_FILE:phonegpt_unit_tests>
                     "dispatch picks a table this CPU runs*,cpu_features reports*")
    set_tests_properties(kernels_aarch64_midr_cortex-a55 PROPERTIES ENVIRONMENT
      "PG_CPU_MIDR=0x411fd050;PG_EXPECT_ARCH=arm64+neon+fmla-lane-8x12-k2;PG_EXPECT_CORE=cortex-a55")
    add_test(NAME kernels_aarch64_env_neon64
             COMMAND ${PG_QEMU_AARCH64} -cpu cortex-a53 $<TARGET_FILE:phonegpt_unit_tests>
                     "dispatch picks a table this CPU runs*")
    set_tests_properties(kernels_aarch64_env_neon64 PROPERTIES ENVIRONMENT
      "PG_KERNELS=arm64+neon;PG_EXPECT_ARCH=arm64+neon")
  endif()
endif()

# The aarch64 GEMM variant dispatch gives each phone core (lib/kernels/arm_cores.def) must be the
# one llvm-mca predicts fastest on that core's scheduling model, among the variants built
# (lib/kernels/neon/lane_variants.def). Needs the aarch64 cross compiler (the loops are the
# library's own code, compiled as the library is) and llvm-mca 19; about 30 s. Registered in the
# native build only (the cross build runs no host tools).
if(NOT CMAKE_CROSSCOMPILING)
  find_program(PG_LLVM_MCA llvm-mca-19)
  find_program(PG_AARCH64_CXX aarch64-linux-gnu-g++)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  pg_require_test_dependency("${PG_LLVM_MCA}" "no llvm-mca-19 (Debian's llvm-19): mca_variant_choice is not registered")
  pg_require_test_dependency("${PG_AARCH64_CXX}" "no aarch64-linux-gnu-g++: mca_variant_choice is not registered")
  if(PG_LLVM_MCA AND PG_AARCH64_CXX AND Python3_Interpreter_FOUND)
    add_test(NAME mca_variant_choice
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/mca_gemm_variants.py --check
                     --cxx ${PG_AARCH64_CXX} --llvm-mca ${PG_LLVM_MCA})
    # About a minute of compiling and llvm-mca runs; it only changes with the NEON loops or
    # arm_cores.def, so the default suite leaves it to scripts/test.sh --slow.
    set_tests_properties(mca_variant_choice PROPERTIES LABELS slow)
  endif()
endif()

# No instruction-set-specific kernel object may define a weak function that other objects share
# (a std::vector member built for AVX-512 would be the one the whole program runs): nm over the
# objects of the library (tests/support/kernel_weak_symbols.cmake).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64" AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME kernel_objects_share_no_weak_code
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} "-DOBJECTS=$<TARGET_OBJECTS:phonegpt_objects>"
            -P ${PROJECT_SOURCE_DIR}/tests/support/kernel_weak_symbols.cmake)
endif()
