#pragma once
// UTF-8 helpers shared by the tokenizer, the detokenizer and the template engine.
//
// Invalid input is never rejected here: repair() replaces every maximal ill-formed subpart with
// U+FFFD exactly as Rust's String::from_utf8_lossy (and Python's errors="replace") do, which is what
// Hugging Face's decoders produce.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llaisys::text::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid sequence starting at s[i], or 0 when s[i] starts an ill-formed subpart.
std::size_t valid_sequence_length(std::string_view s, std::size_t i);

// Length of the maximal ill-formed subpart starting at s[i] (>= 1): the bytes one U+FFFD replaces.
std::size_t ill_formed_length(std::string_view s, std::size_t i);

// True when s is well-formed UTF-8.
bool is_valid(std::string_view s);

// Appends s to out with every maximal ill-formed subpart replaced by U+FFFD.
void append_repaired(std::string& out, std::string_view s);
inline std::string repair(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_repaired(out, s);
  return out;
}

// Number of trailing bytes of s that form an incomplete (but so far valid) sequence: a prefix of a
// valid character that more bytes could complete. 0..3.
std::size_t incomplete_tail_length(std::string_view s);

// Decodes the code point at s[i] (which must start a valid sequence of `length` bytes).
char32_t decode_at(std::string_view s, std::size_t i, std::size_t length);

// Appends the UTF-8 encoding of `cp` (must be a scalar value).
void append_code_point(std::string& out, char32_t cp);

}  // namespace llaisys::text::utf8
