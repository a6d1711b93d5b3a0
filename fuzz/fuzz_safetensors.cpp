// libFuzzer target: arbitrary bytes as a .safetensors file. Parsing must give a header or a clear
// Status, never read outside the buffer (ASan checks that: the input is copied into an exactly
// sized heap block), and every tensor it accepts must lie inside the data section, in order,
// without overlap, with a byte range equal to shape x dtype size.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "llaisys/model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  auto copy = std::make_unique<std::byte[]>(size);
  if (size > 0) std::memcpy(copy.get(), data, size);
  const auto header = llaisys::parse_safetensors(std::span<const std::byte>(copy.get(), size), "fuzz.safetensors");
  if (!header.ok()) return 0;
  const uint64_t data_size = size - header->data_offset;
  uint64_t previous_end = 0;
  for (const llaisys::SafetensorsTensor& t : header->tensors) {
    if (t.data_begin != previous_end || t.data_end < t.data_begin || t.data_end > data_size) std::abort();
    uint64_t bytes = llaisys::dtype_size(t.dtype);
    for (int64_t d : t.shape.dims()) bytes *= static_cast<uint64_t>(d);
    if (bytes != t.data_end - t.data_begin) std::abort();
    previous_end = t.data_end;
  }
  if (previous_end != data_size) std::abort();
  return 0;
}
