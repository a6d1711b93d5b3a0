#pragma once
// ConfigReader: a model directory's config.json (and generation_config.json), read once with one size
// limit, behind a small accessor that remembers which keys were read.
//
// framework/ interprets none of an architecture's keys. The registry reads `architectures`; a plugin
// describes its architecture by reading the keys it implements (plugins/common/decoder_config.hpp),
// and whatever it never read is listed by unread_keys(), so nothing is ignored without a trace.
//
// Errors name the file and the key: a missing required key or a value of the wrong type or range is
// invalid_argument; unsupported() builds the message for a value the plugin does not implement.
// A reader is a cheap copy of shared, immutable JSON plus the shared set of keys read so far.

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/core/status.hpp"

namespace boost::json {
class object;
}

namespace llaisys {

class ConfigReader {
 public:
  // config.json and generation_config.json are each refused above this size.
  static constexpr std::size_t kMaxFileBytes = 4u << 20;

  // model_dir/config.json and, when it exists, model_dir/generation_config.json (strict JSON: a key
  // given twice is refused). not_found when config.json cannot be read, parse_error when it is not a
  // JSON object. When model_dir is a GGUF file: its metadata as config.json (gguf_model.hpp).
  static Result<ConfigReader> load(const std::filesystem::path& model_dir);
  // The same from texts; `source` names config.json in messages.
  static Result<ConfigReader> parse(std::string_view config_json,
                                    std::optional<std::string_view> generation_config_json = std::nullopt,
                                    std::string source = "config.json");

  ConfigReader(ConfigReader&&) noexcept;
  ConfigReader& operator=(ConfigReader&&) noexcept;
  ConfigReader(const ConfigReader&);
  ConfigReader& operator=(const ConfigReader&);
  ~ConfigReader();

  // "<dir>/config.json", or "<dir>/config.json: rope_scaling" for a nested object.
  const std::string& source() const;

  // Present and not null. Does not count as reading the key.
  bool contains(std::string_view key) const;

  // Typed reads; each marks the key as read. Absent or null without a fallback: invalid_argument
  // "<source>: missing "key"". Wrong type, or an integer outside [min, max], or a number that is not
  // finite: invalid_argument naming the key and the value.
  Result<int32_t> integer(std::string_view key, std::optional<int32_t> fallback = std::nullopt, int64_t min = 1,
                          int64_t max = std::numeric_limits<int32_t>::max()) const;
  Result<double> number(std::string_view key, std::optional<double> fallback = std::nullopt) const;
  Result<bool> boolean(std::string_view key, std::optional<bool> fallback = std::nullopt) const;
  // Absent or null: nullopt.
  Result<std::optional<std::string>> string(std::string_view key) const;
  // A list of strings; absent or null: empty.
  Result<std::vector<std::string>> strings(std::string_view key) const;
  // An integer or a list of integers in [min, max] (eos_token_id); absent or null: nullopt.
  Result<std::optional<std::vector<int32_t>>> integers(std::string_view key, int64_t min = 0,
                                                       int64_t max = std::numeric_limits<int32_t>::max()) const;
  // A nested object as a reader of its own (its keys tracked separately); absent or null: nullopt.
  // Anything else: invalid_argument.
  Result<std::optional<ConfigReader>> object(std::string_view key) const;

  // Marks keys as understood without reading them (settings that do not change what the model
  // computes: dropout, initializer_range, use_cache, ...).
  void mark_read(std::initializer_list<std::string_view> keys) const;
  // The JSON text of a key's value ("null" when absent), for messages.
  std::string value_text(std::string_view key) const;

  // unsupported: "<source>: "key" = <value> is not supported: <why>".
  Status unsupported(std::string_view key, std::string_view why) const;
  // invalid_argument: "<source>: "key" = <value>: <why>".
  Status invalid(std::string_view key, std::string_view why) const;

  // generation_config.json, when the directory has one (its own read set).
  const ConfigReader* generation() const;

  // Keys present (null ones included) that were neither read nor marked, in file order.
  std::vector<std::string> unread_keys() const;

 private:
  struct Impl;
  explicit ConfigReader(std::shared_ptr<const Impl> impl);
  static ConfigReader from(boost::json::object object, std::string source);
  std::shared_ptr<const Impl> impl_;
  std::unique_ptr<ConfigReader> generation_;
};

}  // namespace llaisys
