#include "byte_level.hpp"

#include "utf8.hpp"

namespace llaisys::text::byte_level {
namespace {

constexpr bool stands_for_itself(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> char_of{};
  std::array<std::string, 256> text_of;
  std::array<int16_t, 0x144> byte_of{};  // code points 0..0x143; -1: not in the alphabet

  Tables() {
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      char_of[b] = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
      utf8::append_code_point(text_of[b], char_of[b]);
      byte_of[char_of[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables instance;
  return instance;
}

}  // namespace

char32_t char_for_byte(uint8_t byte) { return tables().char_of[byte]; }

const std::array<std::string, 256>& byte_strings() { return tables().text_of; }

std::optional<uint8_t> byte_for_char(char32_t cp) {
  if (cp >= tables().byte_of.size() || tables().byte_of[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(tables().byte_of[cp]);
}

std::string encode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) out += tables().text_of[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  std::size_t i = 0;
  while (i < token.size()) {
    const std::size_t n = utf8::valid_sequence_length(token, i);
    if (n == 0) return std::nullopt;
    const auto byte = byte_for_char(utf8::decode_at(token, i, n));
    if (!byte) return std::nullopt;
    out.push_back(static_cast<char>(*byte));
    i += n;
  }
  return out;
}

}  // namespace llaisys::text::byte_level
