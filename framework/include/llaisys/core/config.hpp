#pragma once
// TOML configuration files (toml++), with errors that name the file, line and key.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "llaisys/core/status.hpp"

namespace llaisys::config {

// Parses a TOML document. Errors say "FILE:LINE:COLUMN: what".
Result<toml::table> parse(std::string_view text, std::string_view source_name = "<string>");
Result<toml::table> load_file(const std::filesystem::path& path);

// Typed lookup of a dotted key ("server.port"). A missing key gives std::nullopt; a key of the
// wrong type is an invalid_argument error naming the key, the expected and the actual type.
template <class T>
Result<std::optional<T>> get(const toml::table& table, std::string_view dotted_key);

// As get(), with `fallback` for a missing key.
template <class T>
Result<T> get_or(const toml::table& table, std::string_view dotted_key, T fallback) {
  auto found = get<T>(table, dotted_key);
  if (!found.ok()) return std::move(found).take_status();
  return found.value() ? std::move(*found.value()) : std::move(fallback);
}

extern template Result<std::optional<bool>> get<bool>(const toml::table&, std::string_view);
extern template Result<std::optional<int64_t>> get<int64_t>(const toml::table&, std::string_view);
extern template Result<std::optional<double>> get<double>(const toml::table&, std::string_view);
extern template Result<std::optional<std::string>> get<std::string>(const toml::table&,
                                                                    std::string_view);

}  // namespace llaisys::config
