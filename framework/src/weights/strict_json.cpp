#include "strict_json.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>

namespace llaisys::weights {
namespace json = boost::json;
namespace {

// A basic_parser handler that only checks keys: one set of seen keys per open object.
class DuplicateKeyFinder {
 public:
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  bool found = false;
  DuplicateKey duplicate;

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) {
    scopes_.push_back({.is_object = false, .keys = {}});
    return true;
  }
  bool on_array_end(std::size_t, json::error_code&) {
    scopes_.pop_back();
    return true;
  }
  bool on_object_begin(json::error_code&) {
    scopes_.push_back({.is_object = true, .keys = {}});
    return true;
  }
  bool on_object_end(std::size_t, json::error_code&) {
    scopes_.pop_back();
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
    key_.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view part, std::size_t, json::error_code& ec) {
    key_.append(part.data(), part.size());
    Scope& scope = scopes_.back();
    if (!scope.keys.insert(key_).second) {
      found = true;
      duplicate = {.key = key_, .depth = static_cast<int>(scopes_.size())};
      // Stop parsing: any error code will do, the caller reads `found`.
      ec = json::error::extra_data;
      return false;
    }
    key_.clear();
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(int64_t, json::string_view, json::error_code&) { return true; }
  bool on_uint64(uint64_t, json::string_view, json::error_code&) { return true; }
  bool on_double(double, json::string_view, json::error_code&) { return true; }
  bool on_bool(bool, json::error_code&) { return true; }
  bool on_null(json::error_code&) { return true; }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  struct Scope {
    bool is_object = false;
    std::set<std::string, std::less<>> keys;
  };
  std::vector<Scope> scopes_;
  std::string key_;
};

}  // namespace

json::value parse_strict_json(std::string_view text, StrictJsonError& error) {
  error = {};
  // Syntax first, with Boost.JSON's own messages.
  json::error_code ec;
  json::value value = json::parse(json::string_view(text.data(), text.size()), ec);
  if (ec) {
    error.kind = StrictJsonError::Kind::syntax;
    error.message = ec.message();
    return nullptr;
  }
  json::basic_parser<DuplicateKeyFinder> finder{json::parse_options{}};
  json::error_code finder_ec;
  finder.write_some(false, text.data(), text.size(), finder_ec);
  if (finder.handler().found) {
    error.kind = StrictJsonError::Kind::duplicate_key;
    error.duplicate = finder.handler().duplicate;
    return nullptr;
  }
  return value;
}

Result<json::value> parse_json_text(std::string_view text, std::string_view source) {
  StrictJsonError error;
  json::value value = parse_strict_json(text, error);
  switch (error.kind) {
    case StrictJsonError::Kind::none: return value;
    case StrictJsonError::Kind::syntax:
      return make_error(ErrorCode::parse_error, "{}: invalid JSON: {}", source, error.message);
    case StrictJsonError::Kind::duplicate_key:
      return make_error(ErrorCode::parse_error, "{}: duplicate key '{}'", source, error.duplicate.key);
  }
  return Status(ErrorCode::internal, "unreachable");
}

Result<json::value> read_json_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return make_error(ErrorCode::not_found, "cannot open {}: {}", path, ec ? ec.message() : "no such file");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return make_error(ErrorCode::not_found, "cannot read {}: not a regular file", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot open {}", path);
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return make_error(ErrorCode::parse_error, "{} is over the {} byte limit", path, max_bytes);
    }
  }
  if (in.bad()) return make_error(ErrorCode::io_error, "cannot read {}", path);
  return parse_json_text(text, path);
}

}  // namespace llaisys::weights
