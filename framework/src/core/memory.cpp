#include "llaisys/core/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace llaisys {

void AlignedBuffer::Free::operator()(std::byte* p) const noexcept { std::free(p); }

AlignedBuffer::AlignedBuffer(std::size_t bytes, bool zero) : size_(bytes) {
  if (bytes == 0) return;
  // Round up so the allocation is a whole number of alignment units (aligned_alloc's contract).
  const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (zero) std::memset(p, 0, rounded);
  data_.reset(static_cast<std::byte*>(p));
}

}  // namespace llaisys
