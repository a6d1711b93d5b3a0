#include "weight_values.hpp"

#include <bit>

namespace llaisys::mkmodel {

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_bf16(std::string_view name, uint64_t seed, double scale, double offset, uint64_t first,
               std::span<bf16_t> out) {
  const uint64_t key = fnv1a64(name) ^ seed;
  for (std::size_t j = 0; j < out.size(); ++j) {
    const uint64_t h = splitmix64(key + first + j);
    const double u = static_cast<double>(h >> 40) / 16777216.0;  // exact, in [0, 1)
    const double v = offset + (2.0 * u - 1.0) * scale;
    // WEIGHTS.md rounds the float's bits to nearest even without a NaN case: values are finite.
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    out[j] = static_cast<bf16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
  }
}

}  // namespace llaisys::mkmodel
