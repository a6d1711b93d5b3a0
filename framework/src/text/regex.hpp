#pragma once
// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) that finds all
// non-overlapping matches in a UTF-8 string. Thread-safe: match scratch space is per thread.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llaisys/core/status.hpp"

namespace llaisys::text {

class Regex {
 public:
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pcre2_pattern, bool caseless = false);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the [begin, end) byte ranges of every match in `subject` (valid UTF-8) to `matches`.
  // Empty matches are reported too (as Hugging Face's find_iter does); the search then moves on by
  // one character.
  Status find_all(std::string_view subject, std::vector<std::pair<uint32_t, uint32_t>>& matches) const;

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace llaisys::text
