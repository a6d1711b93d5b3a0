#pragma once
// What the GGUF parser and writer share (gguf_parse.cpp, gguf_writer.cpp): the format's constants,
// the checks both apply (UTF-8, value types, tensor sizes) and their answers, so the writer never
// builds a file the parser refuses.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "llaisys/model/gguf.hpp"

namespace llaisys::gguf::detail {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr std::size_t kHeaderBytes = 24;   // magic, version, tensor count, metadata count
inline constexpr uint32_t kWrittenVersion = 3;
// Fewest bytes one metadata entry (key length, type, a one-byte value) and one tensor info (name
// length, dims count, one dim, type, offset) take: counts above bytes left / these are truncated.
inline constexpr uint64_t kMinEntryBytes = 8 + 4 + 1;
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

// Well-formed UTF-8 (Unicode Table 3-7: no overlong forms, surrogates or code points past U+10FFFF).
// llaisys_text has its own (text/utf8.hpp); the weights library does not link it.
bool is_valid_utf8(std::string_view s) noexcept;

bool is_value_type(uint32_t id) noexcept;
// Fewest bytes one value of a (valid) type takes in a file: its width, 8 for a string (the length),
// 12 for an array (element type and count).
uint64_t min_encoded_bytes(ValueType type) noexcept;

// Why a tensor's dims and type cannot make a tensor, or ok (`bytes` then holds its size).
enum class ShapeCheck { ok, dims, element_overflow, unknown_type, block, byte_overflow };
ShapeCheck check_shape(std::span<const uint64_t> dims, uint32_t type, uint64_t& bytes) noexcept;

// `value` rounded up to a multiple of `alignment` (a power of two); false when that overflows.
inline bool align_up(uint64_t value, uint64_t alignment, uint64_t& out) noexcept {
  if (__builtin_add_overflow(value, alignment - 1, &out)) return false;
  out &= ~(alignment - 1);
  return true;
}

}  // namespace llaisys::gguf::detail
