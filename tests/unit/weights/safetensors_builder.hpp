#pragma once
// Builds safetensors file images byte by byte, so each test can make exactly the corruption it wants.

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace llaisys::test {

// [u64 header length][header][data]. `declared_length` overrides the length field.
inline std::vector<std::byte> safetensors_image(const std::string& header, std::size_t data_bytes,
                                                std::optional<uint64_t> declared_length = std::nullopt) {
  const uint64_t length = declared_length.value_or(header.size());
  std::vector<std::byte> file(8 + header.size() + data_bytes);
  for (int b = 0; b < 8; ++b) file[static_cast<std::size_t>(b)] = static_cast<std::byte>(length >> (8 * b));
  std::memcpy(file.data() + 8, header.data(), header.size());
  for (std::size_t i = 0; i < data_bytes; ++i) file[8 + header.size() + i] = static_cast<std::byte>(i * 7 + 1);
  return file;
}

// One header entry: "name":{"dtype":..,"shape":[..],"data_offsets":[begin,end]}
inline std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                         uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// A header (8-byte padded) with __metadata__ and `entries`.
inline std::string header_of(const std::vector<std::string>& entries) {
  std::string h = "{\"__metadata__\":{\"format\":\"pt\"}";
  for (const std::string& e : entries) h += "," + e;
  h += "}";
  h.append((8 - h.size() % 8) % 8, ' ');  // data 8-byte aligned, as real writers do
  return h;
}

}  // namespace llaisys::test
