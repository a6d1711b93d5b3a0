#include "llaisys/model/model_options.hpp"

#include <algorithm>
#include <vector>

#include <boost/json.hpp>

namespace llaisys {
namespace json = boost::json;

Status read_model_options(std::string_view options_json, std::span<const OptionReader> readers) {
  json::error_code ec;
  const json::value value = json::parse(options_json.empty() ? std::string_view("{}") : options_json, ec);
  if (ec || !value.is_object()) {
    return make_error(ErrorCode::invalid_argument, "model options must be a JSON object, got '{}'", options_json);
  }
  for (const auto& entry : value.as_object()) {
    const std::string_view key(entry.key().data(), entry.key().size());
    const auto reader =
        std::find_if(readers.begin(), readers.end(), [&](const OptionReader& r) { return r.key == key; });
    if (reader == readers.end()) {
      std::vector<std::string_view> valid;
      for (const OptionReader& r : readers) valid.push_back(r.key);
      std::sort(valid.begin(), valid.end());
      return make_error(ErrorCode::invalid_argument, "unknown model option \"{}\" (valid options: {})", key,
                        valid.empty() ? std::string("none") : fmt::format("{}", fmt::join(valid, ", ")));
    }
    LLAISYS_RETURN_IF_ERROR(reader->read(entry.value()));
  }
  return Status();
}

Status read_option_choice(const json::value& value, std::string_view key, std::initializer_list<std::string_view> choices,
                          std::string& out) {
  if (const json::string* text = value.if_string()) {
    const std::string_view name(text->data(), text->size());
    if (std::find(choices.begin(), choices.end(), name) != choices.end()) {
      out = std::string(name);
      return Status();
    }
  }
  std::vector<std::string_view> list(choices);
  const std::string expected =
      list.size() <= 1 ? fmt::format("{}", fmt::join(list, ""))
                       : fmt::format("{} or {}", fmt::join(list.begin(), list.end() - 1, ", "), list.back());
  return make_error(ErrorCode::invalid_argument, "option {}: expected {}, got {}", key, expected, json::serialize(value));
}

}  // namespace llaisys
