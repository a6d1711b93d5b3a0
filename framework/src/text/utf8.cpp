#include "utf8.hpp"

namespace llaisys::text::utf8 {
namespace {

// The well-formed byte sequences of Unicode Table 3-7: for each lead byte, the allowed range of the
// second byte (later bytes are always 80..BF).
struct LeadInfo {
  uint8_t length;  // 0: not a lead byte
  uint8_t second_lo;
  uint8_t second_hi;
};

constexpr LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// How many bytes from s[i] match a well-formed sequence's prefix (stops at the first bad byte).
std::size_t matched_prefix(std::string_view s, std::size_t i, const LeadInfo& info) {
  std::size_t n = 1;
  while (n < info.length && i + n < s.size()) {
    const auto b = static_cast<uint8_t>(s[i + n]);
    const bool ok = n == 1 ? (b >= info.second_lo && b <= info.second_hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++n;
  }
  return n;
}

}  // namespace

std::size_t valid_sequence_length(std::string_view s, std::size_t i) {
  const LeadInfo info = lead_info(static_cast<uint8_t>(s[i]));
  if (info.length == 0) return 0;
  if (info.length == 1) return 1;
  return matched_prefix(s, i, info) == info.length ? info.length : 0;
}

std::size_t ill_formed_length(std::string_view s, std::size_t i) {
  const LeadInfo info = lead_info(static_cast<uint8_t>(s[i]));
  if (info.length <= 1) return 1;
  return matched_prefix(s, i, info);  // a truncated prefix is one maximal subpart
}

bool is_valid(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = valid_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void append_repaired(std::string& out, std::string_view s) {
  std::size_t i = 0;
  std::size_t run_start = 0;  // start of the current run of valid bytes
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = valid_sequence_length(s, i);
    if (n != 0) {
      i += n;
      continue;
    }
    out.append(s.substr(run_start, i - run_start));
    out.append(kReplacement);
    i += ill_formed_length(s, i);
    run_start = i;
  }
  out.append(s.substr(run_start));
}

std::size_t incomplete_tail_length(std::string_view s) {
  // A lead byte at most 3 bytes before the end whose sequence is a valid but unfinished prefix.
  const std::size_t limit = s.size() < 3 ? s.size() : 3;
  for (std::size_t back = 1; back <= limit; ++back) {
    const std::size_t i = s.size() - back;
    const auto b = static_cast<uint8_t>(s[i]);
    if (b >= 0x80 && b <= 0xBF) continue;  // continuation byte: keep looking for the lead
    const LeadInfo info = lead_info(b);
    if (info.length <= back) return 0;  // ASCII, stray, or complete
    return matched_prefix(s, i, info) == back ? back : 0;
  }
  return 0;
}

char32_t decode_at(std::string_view s, std::size_t i, std::size_t length) {
  const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<uint8_t>(s[i + k])); };
  switch (length) {
    case 1: return b(0);
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

void append_code_point(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace llaisys::text::utf8
