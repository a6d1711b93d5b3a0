#pragma once
// The value of every weight element, as WEIGHTS.md defines it: a hash of (tensor name, seed, element
// index) mapped to [offset - scale, offset + scale) and rounded to bf16. Anyone can regenerate the
// same bytes from that page alone.

#include <cstdint>
#include <span>
#include <string_view>

#include "llaisys/core/dtype.hpp"

namespace llaisys::mkmodel {

uint64_t fnv1a64(std::string_view bytes);
uint64_t splitmix64(uint64_t x);

// Writes elements [first, first + out.size()) of tensor `name` (seed `seed`) into `out`.
void fill_bf16(std::string_view name, uint64_t seed, double scale, double offset, uint64_t first,
               std::span<bf16_t> out);

}  // namespace llaisys::mkmodel
