// Scratch memory for the SIMD kernels, with every member function defined out of line in
// scratch.cpp, which is compiled for the baseline CPU.
//
// Why not std::vector: a kernel translation unit compiled with -mavx512f (or -mavx2) that
// instantiates std::vector<float>::assign emits a weak copy of it built for that instruction
// set, and the linker keeps one copy for the whole program: on a CPU without AVX-512 any caller
// of vector<float>::assign may then run AVX-512 code and die of SIGILL. Kernel TUs must only
// call functions that are compiled for their arch or, like these, for the baseline.
#pragma once

#include <cstddef>

namespace pg::kernels {

// A growable buffer of floats and one of pointers (a thread keeps one, thread_local).
class ScratchFloats {
public:
    ScratchFloats();
    ~ScratchFloats();
    ScratchFloats(const ScratchFloats&) = delete;
    ScratchFloats& operator=(const ScratchFloats&) = delete;

    float* sized(std::size_t n);   // at least n floats; their values are unspecified
    float* zeroed(std::size_t n);  // n floats set to 0
    const float** pointers(std::size_t n);  // at least n pointers; their values are unspecified

private:
    float* floats_;
    std::size_t n_floats_;
    const float** pointers_;
    std::size_t n_pointers_;
};

}  // namespace pg::kernels
