#pragma once
// The GPT-2 byte-level alphabet: every byte is shown as one printable code point (printable ASCII and
// Latin-1 bytes stand for themselves; the other 68 bytes map to U+0100..U+0143 in byte order).
// Byte-level BPE vocabularies are written in this alphabet ("Ġthe" is " the").

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llaisys::text::byte_level {

// The code point that stands for `byte`.
char32_t char_for_byte(uint8_t byte);

// The UTF-8 text of that code point, for every byte.
const std::array<std::string, 256>& byte_strings();

// The byte a code point stands for, or nullopt when it is not part of the alphabet.
std::optional<uint8_t> byte_for_char(char32_t cp);

// Maps every byte of `raw` to its alphabet character.
std::string encode(std::string_view raw);

// Maps a token's alphabet text back to bytes; nullopt when some character is outside the alphabet
// (Hugging Face then keeps the token's own bytes).
std::optional<std::string> decode(std::string_view token);

}  // namespace llaisys::text::byte_level
