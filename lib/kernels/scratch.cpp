#include "kernels/scratch.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace pg::kernels {

namespace {
// Grows *buf to hold n elements of `size` bytes (keeping nothing); throws std::bad_alloc.
void* grow(void* buf, std::size_t& capacity, std::size_t n, std::size_t size) {
    if (n <= capacity) return buf;
    void* bigger = std::malloc(n * size);
    if (!bigger) throw std::bad_alloc();
    std::free(buf);
    capacity = n;
    return bigger;
}
}  // namespace

ScratchFloats::ScratchFloats() : floats_(nullptr), n_floats_(0), pointers_(nullptr), n_pointers_(0) {}

ScratchFloats::~ScratchFloats() {
    std::free(floats_);
    std::free(pointers_);
}

float* ScratchFloats::sized(std::size_t n) {
    floats_ = static_cast<float*>(grow(floats_, n_floats_, n, sizeof(float)));
    return floats_;
}

float* ScratchFloats::zeroed(std::size_t n) {
    float* p = sized(n);
    if (n) std::memset(p, 0, n * sizeof(float));
    return p;
}

const float** ScratchFloats::pointers(std::size_t n) {
    pointers_ = static_cast<const float**>(grow(static_cast<void*>(pointers_), n_pointers_, n, sizeof(const float*)));
    return pointers_;
}

}  // namespace pg::kernels
