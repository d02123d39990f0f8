# Kernel sources: the dispatcher and the scalar reference are plain C++; each instruction set
# gets its own translation units compiled with its own flags (xsimd picks the arch from them),
# so nothing built for AVX-512 can leak into code that runs on a lesser CPU.
file(GLOB PG_KERNEL_COMMON CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/*.cpp ${CMAKE_CURRENT_LIST_DIR}/reference/*.cpp)
target_sources(phonegpt_objects PRIVATE ${PG_KERNEL_COMMON})
