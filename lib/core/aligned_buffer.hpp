// A zero-initialised, 64-byte aligned array of trivially copyable values: parameter, gradient,
// moment and activation storage. 64 bytes = one cache line = one AVX-512 register.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace pg {

template <class T>
class AlignedBuffer {
    static_assert(std::is_trivially_copyable<T>::value, "AlignedBuffer holds plain values");

public:
    static constexpr std::size_t kAlignment = 64;

    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t n) { resize(n); }
    AlignedBuffer(const AlignedBuffer& other) { *this = other; }
    AlignedBuffer(AlignedBuffer&& other) noexcept { swap(other); }
    AlignedBuffer& operator=(const AlignedBuffer& other) {
        if (this != &other) {
            resize(other.size_);
            if (size_) std::memcpy(data_, other.data_, size_ * sizeof(T));
        }
        return *this;
    }
    AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
        swap(other);
        return *this;
    }
    ~AlignedBuffer() { std::free(data_); }

    // Reallocates to n zeroed elements (old contents are dropped). Throws std::bad_alloc.
    void resize(std::size_t n) {
        std::free(data_);
        data_ = nullptr;
        size_ = 0;
        if (n == 0) return;
        if (n > (SIZE_MAX - kAlignment) / sizeof(T)) throw std::bad_alloc();
        std::size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
        data_ = static_cast<T*>(std::aligned_alloc(kAlignment, bytes));
        if (!data_) throw std::bad_alloc();
        std::memset(static_cast<void*>(data_), 0, bytes);
        size_ = n;
    }
    void zero() {
        if (size_) std::memset(static_cast<void*>(data_), 0, size_ * sizeof(T));
    }
    void swap(AlignedBuffer& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
    }

    T* data() { return data_; }
    const T* data() const { return data_; }
    std::size_t size() const { return size_; }
    T& operator[](std::size_t i) { return data_[i]; }
    const T& operator[](std::size_t i) const { return data_[i]; }

private:
    T* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace pg
