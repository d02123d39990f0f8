# Kernel sources: the dispatcher and the scalar reference are plain C++; each instruction set
# gets its own translation unit (simd/table_<arch>.cpp) compiled with its own flags (xsimd picks
# the arch from them), so nothing built for AVX-512 can leak into code that runs on a lesser CPU.
file(GLOB PG_KERNEL_COMMON CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/*.cpp ${CMAKE_CURRENT_LIST_DIR}/reference/*.cpp)
target_sources(phonegpt_objects PRIVATE ${PG_KERNEL_COMMON})
# The scalar reference rounds once per operation on every target: no multiply-add that the
# compiler fuses where FMA is baseline (aarch64) and not elsewhere (x86-64), so SIMD kernels can
# be checked bit for bit against it (the dropout kernels are, tests/unit/test_dropout_kernel.cpp).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/reference/reference_kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/attention_reference.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/decoder_reference.cpp PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")

set(PG_KERNEL_SIMD_DIR ${CMAKE_CURRENT_LIST_DIR}/simd)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  target_sources(phonegpt_objects PRIVATE
    ${PG_KERNEL_SIMD_DIR}/table_avx512bw.cpp ${PG_KERNEL_SIMD_DIR}/table_avx2.cpp
    ${PG_KERNEL_SIMD_DIR}/table_sse2.cpp)
  # GCC 12's own avx512fintrin.h trips -Wuninitialized on its _mm512_undefined_ps() dummy values
  # (a false positive inside the compiler's header, not in our code).
  set(PG_AVX512_NO_FALSE_WARNINGS "-Wno-uninitialized;-Wno-maybe-uninitialized")
  # xsimd's avx512 batch needs DQ (its hadd uses _mm512_extractf32x8_ps) and BW.
  set_source_files_properties(${PG_KERNEL_SIMD_DIR}/table_avx512bw.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx512f;-mavx512cd;-mavx512dq;-mavx512bw;-mavx2;-mfma;-mf16c;${PG_AVX512_NO_FALSE_WARNINGS}")
  # The VDPBF16PS GEMM (kernels/bf16_gemm.hpp) is AVX512_BF16 code: only this file gets the
  # flag, and dispatch calls it only where CPUID reports AVX512_BF16 (Zen 4, Sapphire Rapids).
  target_sources(phonegpt_objects PRIVATE ${CMAKE_CURRENT_LIST_DIR}/x86/bf16_gemm.cpp)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/x86/bf16_gemm.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx512f;-mavx512cd;-mavx512dq;-mavx512bw;-mavx512vl;-mavx512bf16;-mavx2;-mfma;-mf16c;${PG_AVX512_NO_FALSE_WARNINGS}")
  # The int8 tiles of quant_linear (kernels/int8_tile.hpp): each file gets its instruction set,
  # and dispatch takes one only where CPUID reports it.
  set(PG_INT8_X86 ${CMAKE_CURRENT_LIST_DIR}/x86)
  target_sources(phonegpt_objects PRIVATE ${PG_INT8_X86}/int8_tile_avx2.cpp
    ${PG_INT8_X86}/int8_tile_avx_vnni.cpp ${PG_INT8_X86}/int8_tile_avx512_vnni.cpp)
  set_source_files_properties(${PG_INT8_X86}/int8_tile_avx2.cpp PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
  set_source_files_properties(${PG_INT8_X86}/int8_tile_avx_vnni.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mavxvnni")
  set_source_files_properties(${PG_INT8_X86}/int8_tile_avx512_vnni.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vnni;-mavx2;-mfma;${PG_AVX512_NO_FALSE_WARNINGS}")
  # F16C: the fp16 weight conversions (dispatch requires it for both AVX tables; every AVX2 CPU
  # has it).
  set_source_files_properties(${PG_KERNEL_SIMD_DIR}/table_avx2.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64|ARM64")
  # NEON is part of ARMv8-A: the baseline flags are the neon64 flags. Two tables: the xsimd one
  # and the same kernels with a raw-intrinsics GEMM around FMLA by element (kernels/neon/).
  target_sources(phonegpt_objects PRIVATE ${PG_KERNEL_SIMD_DIR}/table_neon64.cpp
    ${CMAKE_CURRENT_LIST_DIR}/neon/table_neon64_fmla_lane.cpp
    ${CMAKE_CURRENT_LIST_DIR}/neon/fp16_gemm.cpp)
  # The FMLA .8h inference GEMM (kernels/fp16_gemm.hpp) is ARMv8.2-FP16 code: only this file
  # gets the flag, and dispatch calls it only where HWCAP reports asimdhp; everything else stays
  # ARMv8.0.
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/neon/fp16_gemm.cpp PROPERTIES
    COMPILE_OPTIONS "-march=armv8.2-a+fp16")
  # The int8 tiles of quant_linear: ARMv8.0 NEON (SMULL), ARMv8.2 dotprod (SDOT) and ARMv8.6 i8mm
  # (SMMLA), each file with only its extension; dispatch takes them from HWCAP.
  target_sources(phonegpt_objects PRIVATE ${CMAKE_CURRENT_LIST_DIR}/neon/int8_tile_neon.cpp
    ${CMAKE_CURRENT_LIST_DIR}/neon/int8_tile_dotprod.cpp ${CMAKE_CURRENT_LIST_DIR}/neon/int8_tile_i8mm.cpp)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/neon/int8_tile_dotprod.cpp PROPERTIES
    COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/neon/int8_tile_i8mm.cpp PROPERTIES
    COMPILE_OPTIONS "-march=armv8.2-a+i8mm")
else()
  message(FATAL_ERROR "libphonegpt kernels: no SIMD table for ${CMAKE_SYSTEM_PROCESSOR} (x86_64 or aarch64)")
endif()
