# Fails when an instruction-set-specific kernel object (kernels/simd/table_*, kernels/x86/*)
# defines a weak function that is not specific to its arch: the linker keeps one copy of a weak
# function for the whole program, so a std::vector<float> member instantiated in the AVX-512
# table (say) would run AVX-512 code for every caller on a CPU without it (SIGILL).
# xsimd's instantiations carry their arch in their template arguments and are distinct per TU.
# Run as: cmake -DNM=<nm> -DOBJECTS="<objects;...>" -P kernel_weak_symbols.cmake (ctest
# kernel_objects_share_no_weak_code, tests/cmake/kernels_dispatch.cmake)
set(bad "")
set(checked 0)
foreach(obj IN LISTS OBJECTS)
  if(NOT obj MATCHES "kernels/(simd/table_|x86/)")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  execute_process(COMMAND ${NM} -C --defined-only ${obj} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${obj}")
  endif()
  string(REPLACE "\n" ";" lines "${syms}")
  foreach(line IN LISTS lines)
    # W: weak function; a V is weak data (the personality reference), which holds no code.
    if(line MATCHES "^[0-9a-f]+ W (.*)$")
      set(symbol "${CMAKE_MATCH_1}")
      if(NOT symbol MATCHES "xsimd::")
        get_filename_component(name ${obj} NAME)
        string(APPEND bad "\n  ${name}: ${symbol}")
      endif()
    endif()
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no instruction-set-specific kernel object was given to check")
endif()
if(bad)
  message(FATAL_ERROR "weak functions in instruction-set-specific kernel objects (define them out of line "
                      "in a baseline file, as kernels/scratch.cpp does):${bad}")
endif()
message(STATUS "${checked} instruction-set-specific kernel objects define no shared weak function")
