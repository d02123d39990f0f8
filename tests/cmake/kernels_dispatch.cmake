# Every kernel path in ctest. The native run of phonegpt_unit_tests covers the best table of
# this CPU (and every lower table it can run, called directly). These runs check that dispatch
# itself picks the right table where the CPU is different: qemu-x86_64 -cpu max has AVX2+FMA but
# no AVX-512 (fma3+avx2 path), -cpu qemu64 is plain x86-64 (sse2 path). PG_EXPECT_ARCH names
# the table the test "dispatch picks a table..." requires. Only the [kernels] tests run there.
# Never under a sanitizer: ASan under qemu-user eats the machine's memory (TOOLCHAIN.md §6).

# PG_KERNELS picks a named table natively (here the scalar reference).
add_test(NAME kernels_env_reference COMMAND phonegpt_unit_tests "[kernels]")
set_tests_properties(kernels_env_reference PROPERTIES
  ENVIRONMENT "PG_KERNELS=reference;PG_EXPECT_ARCH=reference")

find_program(PG_QEMU_X86_64 qemu-x86_64)
if(PG_QEMU_X86_64 AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64" AND NOT CMAKE_CROSSCOMPILING
   AND NOT PG_SANITIZE)
  add_test(NAME kernels_dispatch_fma3_avx2
           COMMAND ${PG_QEMU_X86_64} -cpu max $<TARGET_FILE:phonegpt_unit_tests> "[kernels]")
  set_tests_properties(kernels_dispatch_fma3_avx2 PROPERTIES ENVIRONMENT "PG_EXPECT_ARCH=fma3+avx2")
  add_test(NAME kernels_dispatch_sse2
           COMMAND ${PG_QEMU_X86_64} -cpu qemu64 $<TARGET_FILE:phonegpt_unit_tests> "[kernels]")
  set_tests_properties(kernels_dispatch_sse2 PROPERTIES ENVIRONMENT "PG_EXPECT_ARCH=sse2")
endif()

# In an aarch64 cross build (scripts/cross_test_aarch64.sh) the tests run under qemu-aarch64 on
# the two CPUs that matter: a bare ARMv8.0 core and one with every extension.
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64" AND NOT PG_SANITIZE)
  find_program(PG_QEMU_AARCH64 qemu-aarch64)
  if(PG_QEMU_AARCH64)
    foreach(cpu cortex-a53 max)
      add_test(NAME kernels_aarch64_${cpu}
               COMMAND ${PG_QEMU_AARCH64} -cpu ${cpu} $<TARGET_FILE:phonegpt_unit_tests> "[kernels]")
      set_tests_properties(kernels_aarch64_${cpu} PROPERTIES ENVIRONMENT "PG_EXPECT_ARCH=arm64+neon")
    endforeach()
  endif()
endif()
