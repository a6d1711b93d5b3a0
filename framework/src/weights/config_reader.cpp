#include "llaisys/model/config_reader.hpp"

#include <cmath>
#include <set>

#include <boost/json.hpp>

#include "llaisys/model/gguf_model.hpp"
#include "llaisys/model/safetensors.hpp"

#include "strict_json.hpp"

namespace llaisys {
namespace json = boost::json;

struct ConfigReader::Impl {
  json::object object;
  std::string source;
  // Keys read or marked so far. Loading is single-threaded; readers copied from one another share it.
  mutable std::set<std::string, std::less<>> read;
};

namespace {

Result<json::object> parse_object(std::string_view text, std::string_view source) {
  LLAISYS_ASSIGN_OR_RETURN(json::value value, weights::parse_json_text(text, source));
  if (!value.is_object()) return make_error(ErrorCode::parse_error, "{}: expected a JSON object", source);
  return std::move(value.as_object());
}

// A file's JSON object: read_json_file's rules (a regular file, at most kMaxFileBytes, strict JSON).
Result<json::object> read_object(const std::filesystem::path& path) {
  LLAISYS_ASSIGN_OR_RETURN(json::value value, weights::read_json_file(path.string(), ConfigReader::kMaxFileBytes));
  if (!value.is_object()) return make_error(ErrorCode::parse_error, "{}: expected a JSON object", path.string());
  return std::move(value.as_object());
}

}  // namespace

ConfigReader::ConfigReader(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
ConfigReader::ConfigReader(ConfigReader&&) noexcept = default;
ConfigReader& ConfigReader::operator=(ConfigReader&&) noexcept = default;
ConfigReader::~ConfigReader() = default;
ConfigReader::ConfigReader(const ConfigReader& other)
    : impl_(other.impl_),
      generation_(other.generation_ ? std::make_unique<ConfigReader>(*other.generation_) : nullptr) {}
ConfigReader& ConfigReader::operator=(const ConfigReader& other) {
  if (this != &other) {
    impl_ = other.impl_;
    generation_ = other.generation_ ? std::make_unique<ConfigReader>(*other.generation_) : nullptr;
  }
  return *this;
}

ConfigReader ConfigReader::from(json::object object, std::string source) {
  auto impl = std::make_shared<Impl>();
  impl->object = std::move(object);
  impl->source = std::move(source);
  return ConfigReader(std::move(impl));
}

Result<ConfigReader> ConfigReader::parse(std::string_view config_json,
                                         std::optional<std::string_view> generation_config_json, std::string source) {
  LLAISYS_ASSIGN_OR_RETURN(json::object config, parse_object(config_json, source));
  ConfigReader reader = from(std::move(config), source);
  if (generation_config_json) {
    const std::string gen_source = fmt::format("{} (generation_config.json)", source);
    LLAISYS_ASSIGN_OR_RETURN(json::object generation, parse_object(*generation_config_json, gen_source));
    reader.generation_ = std::make_unique<ConfigReader>(from(std::move(generation), gen_source));
  }
  return reader;
}

Result<ConfigReader> ConfigReader::load(const std::filesystem::path& model_dir) {
  if (gguf::is_gguf_file(model_dir)) {  // its metadata, as config.json (gguf_model.hpp)
    const std::string source = model_dir.string();
    LLAISYS_ASSIGN_OR_RETURN(auto opened, gguf::open_gguf(model_dir));
    LLAISYS_ASSIGN_OR_RETURN(std::string config, gguf::gguf_config_json(opened->parsed, source));
    return parse(config, std::nullopt, fmt::format("{} (metadata as config.json)", source));
  }
  const std::filesystem::path config_path = model_dir / "config.json";
  auto config = read_object(config_path);
  if (!config.ok()) {
    if (config.status().code() != ErrorCode::not_found) return config.status();
    return make_error(ErrorCode::not_found, "'{}' is not a model directory: {}", model_dir.string(),
                      config.status().message());
  }
  ConfigReader reader = from(std::move(config).value(), config_path.string());
  const std::filesystem::path gen_path = model_dir / "generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(gen_path, ec)) {
    LLAISYS_ASSIGN_OR_RETURN(json::object generation, read_object(gen_path));
    reader.generation_ = std::make_unique<ConfigReader>(
        from(std::move(generation), fmt::format("{} (generation_config.json)", config_path.string())));
  }
  return reader;
}

const std::string& ConfigReader::source() const { return impl_->source; }

bool ConfigReader::contains(std::string_view key) const {
  const json::value* v = impl_->object.if_contains(key);
  return v != nullptr && !v->is_null();
}

void ConfigReader::mark_read(std::initializer_list<std::string_view> keys) const {
  for (std::string_view key : keys) impl_->read.emplace(key);
}

std::string ConfigReader::value_text(std::string_view key) const {
  const json::value* v = impl_->object.if_contains(key);
  if (v == nullptr) return "null";
  // Boost writes 30.0 as "3E1"; messages show numbers as people write them.
  if (v->is_double()) return fmt::format("{}", v->as_double());
  return json::serialize(*v);
}

Status ConfigReader::unsupported(std::string_view key, std::string_view why) const {
  return make_error(ErrorCode::unsupported, "{}: \"{}\" = {} is not supported: {}", source(), key, value_text(key), why);
}

Status ConfigReader::invalid(std::string_view key, std::string_view why) const {
  return make_error(ErrorCode::invalid_argument, "{}: \"{}\" = {}: {}", source(), key, value_text(key), why);
}

Result<int32_t> ConfigReader::integer(std::string_view key, std::optional<int32_t> fallback, int64_t min,
                                      int64_t max) const {
  mark_read({key});
  const json::value* v = impl_->object.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (!fallback) return make_error(ErrorCode::invalid_argument, "{}: missing \"{}\"", source(), key);
    return *fallback;
  }
  int64_t value = 0;
  if (v->is_int64()) {
    value = v->as_int64();
  } else if (v->is_uint64()) {
    value = std::numeric_limits<int64_t>::max();
  } else if (v->is_double() && std::trunc(v->as_double()) == v->as_double() && std::abs(v->as_double()) < 9e15) {
    value = static_cast<int64_t>(v->as_double());  // 4096.0: some exporters write integers as floats
  } else {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be an integer, got {}", source(), key,
                      json::serialize(*v));
  }
  if (value < min || value > max) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" = {} is outside [{}, {}]", source(), key, value, min,
                      max);
  }
  return static_cast<int32_t>(value);
}

Result<double> ConfigReader::number(std::string_view key, std::optional<double> fallback) const {
  mark_read({key});
  const json::value* v = impl_->object.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (!fallback) return make_error(ErrorCode::invalid_argument, "{}: missing \"{}\"", source(), key);
    return *fallback;
  }
  if (!v->is_number()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be a number, got {}", source(), key,
                      json::serialize(*v));
  }
  const double value = v->to_number<double>();
  if (!std::isfinite(value)) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be finite, got {}", source(), key,
                      json::serialize(*v));
  }
  return value;
}

Result<bool> ConfigReader::boolean(std::string_view key, std::optional<bool> fallback) const {
  mark_read({key});
  const json::value* v = impl_->object.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (!fallback) return make_error(ErrorCode::invalid_argument, "{}: missing \"{}\"", source(), key);
    return *fallback;
  }
  if (!v->is_bool()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be true or false, got {}", source(), key,
                      json::serialize(*v));
  }
  return v->as_bool();
}

Result<std::optional<std::string>> ConfigReader::string(std::string_view key) const {
  mark_read({key});
  const json::value* v = impl_->object.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be a string, got {}", source(), key,
                      json::serialize(*v));
  }
  return std::optional<std::string>(std::string(v->as_string()));
}

Result<std::vector<std::string>> ConfigReader::strings(std::string_view key) const {
  mark_read({key});
  const json::value* v = impl_->object.if_contains(key);
  std::vector<std::string> out;
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_array()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be a list of strings, got {}", source(), key,
                      json::serialize(*v));
  }
  for (const json::value& item : v->as_array()) {
    if (!item.is_string()) {
      return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must hold strings, got {}", source(), key,
                        json::serialize(item));
    }
    out.emplace_back(item.as_string());
  }
  return out;
}

Result<std::optional<std::vector<int32_t>>> ConfigReader::integers(std::string_view key, int64_t min,
                                                                   int64_t max) const {
  mark_read({key});
  const json::value* v = impl_->object.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<std::vector<int32_t>>();
  std::vector<int32_t> out;
  auto add = [&](const json::value& item) -> Status {
    if (!item.is_int64() || item.as_int64() < min || item.as_int64() > max) {
      return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must hold integers in [{}, {}], got {}", source(),
                        key, min, max, json::serialize(item));
    }
    out.push_back(static_cast<int32_t>(item.as_int64()));
    return Status();
  };
  if (v->is_array()) {
    for (const json::value& item : v->as_array()) LLAISYS_RETURN_IF_ERROR(add(item));
  } else {
    LLAISYS_RETURN_IF_ERROR(add(*v));
  }
  return std::optional<std::vector<int32_t>>(std::move(out));
}

Result<std::optional<ConfigReader>> ConfigReader::object(std::string_view key) const {
  mark_read({key});
  const json::value* v = impl_->object.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<ConfigReader>();
  if (!v->is_object()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be an object or null, got {}", source(), key,
                      json::serialize(*v));
  }
  return std::optional<ConfigReader>(from(v->as_object(), fmt::format("{}: {}", source(), key)));
}

const ConfigReader* ConfigReader::generation() const { return generation_.get(); }

std::vector<std::string> ConfigReader::unread_keys() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : impl_->object) {
    if (!impl_->read.contains(std::string_view(key))) out.emplace_back(key);
  }
  return out;
}

}  // namespace llaisys
