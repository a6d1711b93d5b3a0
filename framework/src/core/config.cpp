#include "llaisys/core/config.hpp"

#include <fstream>
#include <sstream>

namespace llaisys::config {
namespace {

Status parse_error_status(const toml::parse_error& error, std::string_view source_name) {
  const auto& where = error.source().begin;
  return make_error(ErrorCode::parse_error, "{}:{}:{}: {}", source_name, where.line, where.column,
                    error.description());
}

template <class T>
constexpr std::string_view type_name() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  else if constexpr (std::is_same_v<T, int64_t>) return "integer";
  else if constexpr (std::is_same_v<T, double>) return "float";
  else return "string";
}

std::string_view node_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: return "none";
  }
  return "unknown";
}

}  // namespace

Result<toml::table> parse(std::string_view text, std::string_view source_name) {
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& error) {
    return parse_error_status(error, source_name);
  }
#else
  toml::parse_result result = toml::parse(text, source_name);
  if (!result) return parse_error_status(result.error(), source_name);
  return std::move(result).table();
#endif
}

Result<toml::table> load_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::io_error, "cannot open config file '{}'", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path.string());
}

template <class T>
Result<std::optional<T>> get(const toml::table& table, std::string_view dotted_key) {
  const toml::node_view<const toml::node> node = table.at_path(dotted_key);
  if (!node) return std::optional<T>();
  if constexpr (std::is_same_v<T, double>) {
    // Integers are acceptable where a float is expected ("temperature = 1").
    if (auto v = node.value<double>()) return std::optional<T>(*v);
  } else {
    if (node.node()->is<T>()) return std::optional<T>(*node.value<T>());
  }
  return make_error(ErrorCode::invalid_argument, "config key '{}': expected {}, found {}", dotted_key,
                    type_name<T>(), node_type_name(*node.node()));
}

template Result<std::optional<bool>> get<bool>(const toml::table&, std::string_view);
template Result<std::optional<int64_t>> get<int64_t>(const toml::table&, std::string_view);
template Result<std::optional<double>> get<double>(const toml::table&, std::string_view);
template Result<std::optional<std::string>> get<std::string>(const toml::table&, std::string_view);

}  // namespace llaisys::config
