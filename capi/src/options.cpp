// llaisys_engine_open's options: a JSON object of the apps' engine settings (apps/common
// served_model.hpp's EngineOptions under the server TOML's key names, plus the model's own), checked
// with the apps' ranges. Unknown keys are refused by name: a misspelt option must not silently run
// with the default.

#include <algorithm>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capi_internal.hpp"
#include "request_fields.hpp"
#include "value_range.hpp"

namespace llaisys::capi {
namespace json = boost::json;
namespace {

constexpr const char* kKnownKeys[] = {"max_num_seqs",  "max_batched_tokens", "kv_cache_mb", "block_size",
                                      "max_context",   "no_prefix_cache",    "seed",        "threads",
                                      "device",        "model_options",      "chat_template_file",
                                      "plugin_dir",    "max_in_flight",      "speculative_config"};

constexpr app::ValueRange kThreads{0, 4096}, kMaxInFlight{1, 1 << 20}, kSeed{0, INT64_MAX};

Status refuse_unknown_keys(const json::object& object) {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : object) {
    if (std::find(std::begin(kKnownKeys), std::end(kKnownKeys), std::string_view(key)) == std::end(kKnownKeys)) {
      unknown.push_back(fmt::format("'{}'", std::string_view(key)));
    }
  }
  if (unknown.empty()) return Status();
  return make_error(ErrorCode::invalid_argument, "unknown engine option{} {} (known: {})",
                    unknown.size() > 1 ? "s" : "", fmt::join(unknown, ", "), fmt::join(kKnownKeys, ", "));
}

// Reads an integer option into `out` when present, within `range`.
template <class T>
Status read_int(const json::object& object, std::string_view key, app::ValueRange range, T& out) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> value, app::int_field(object, key));
  if (!value) return Status();
  LLAISYS_RETURN_IF_ERROR(app::check_range(key, *value, range));
  out = static_cast<T>(*value);
  return Status();
}

// vLLM's speculative_config: {"method": "ngram"} or {"model": DIR} (method "draft" / "draft_model"
// with it), and "num_speculative_tokens". Other keys (vLLM's prompt_lookup_max, ...) are refused.
Status read_speculative_config(const json::value& value, app::EngineOptions& engine) {
  if (!value.is_object()) {
    return app::bad_field("speculative_config", "an object such as {\"method\": \"ngram\", \"num_speculative_tokens\": 4}");
  }
  const json::object& config = value.as_object();
  for (const auto& [key, v] : config) {
    if (key != "method" && key != "model" && key != "num_speculative_tokens") {
      return make_error(ErrorCode::invalid_argument,
                        "unknown speculative_config key '{}' (known: method, model, num_speculative_tokens)",
                        std::string_view(key));
    }
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> method, app::string_field(config, "method"));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> model, app::string_field(config, "model"));
  if (model) {
    if (method && *method != "draft" && *method != "draft_model") {
      return make_error(ErrorCode::invalid_argument,
                        "speculative_config: 'model' is a draft model, which method '{}' does not take", *method);
    }
    engine.speculative = "draft:" + *model;
  } else if (method) {
    if (*method == "draft" || *method == "draft_model") {
      return Status(ErrorCode::invalid_argument, "speculative_config: method 'draft' needs 'model' (its directory)");
    }
    engine.speculative = *method;
  } else {
    return Status(ErrorCode::invalid_argument, "speculative_config needs 'method' (ngram) or 'model' (a draft model)");
  }
  return read_int(config, "num_speculative_tokens", {INT32_MIN, INT32_MAX}, engine.num_speculative_tokens);
}

}  // namespace

Result<OpenOptions> parse_open_options(const std::filesystem::path& model, const char* options_json) {
  OpenOptions options;
  options.load.model_dir = model;
  if (options_json == nullptr) return options;

  boost::system::error_code ec;
  json::value parsed = json::parse(options_json, ec);
  if (ec) return make_error(ErrorCode::invalid_argument, "engine options are not valid JSON: {}", ec.message());
  if (!parsed.is_object()) return Status(ErrorCode::invalid_argument, "engine options must be a JSON object");
  const json::object& object = parsed.as_object();
  LLAISYS_RETURN_IF_ERROR(refuse_unknown_keys(object));

  // The ranges are the apps' (validate_engine_options below): read the raw values first so that a
  // message shows what the caller wrote, not a narrowed copy.
  app::EngineOptions& engine = options.load.engine;
  constexpr app::ValueRange kAnyInt32{INT32_MIN, INT32_MAX};
  LLAISYS_RETURN_IF_ERROR(read_int(object, "max_num_seqs", kAnyInt32, engine.max_num_seqs));
  LLAISYS_RETURN_IF_ERROR(read_int(object, "max_batched_tokens", kAnyInt32, engine.max_batched_tokens));
  LLAISYS_RETURN_IF_ERROR(read_int(object, "kv_cache_mb", {INT64_MIN, INT64_MAX}, engine.kv_cache_mb));
  LLAISYS_RETURN_IF_ERROR(read_int(object, "block_size", kAnyInt32, engine.block_size));
  LLAISYS_RETURN_IF_ERROR(read_int(object, "max_context", kAnyInt32, engine.max_context));
  if (const json::value* speculative = object.if_contains("speculative_config");
      speculative != nullptr && !speculative->is_null()) {
    LLAISYS_RETURN_IF_ERROR(read_speculative_config(*speculative, engine));
  }
  LLAISYS_RETURN_IF_ERROR(app::validate_engine_options(engine));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> no_prefix_cache, app::bool_field(object, "no_prefix_cache"));
  engine.no_prefix_cache = no_prefix_cache.value_or(false);
  uint64_t seed = 0;
  if (object.contains("seed") && !object.at("seed").is_null()) {
    LLAISYS_RETURN_IF_ERROR(read_int(object, "seed", kSeed, seed));
    engine.seed = seed;
  }
  LLAISYS_RETURN_IF_ERROR(read_int(object, "threads", kThreads, options.load.num_threads));
  LLAISYS_RETURN_IF_ERROR(read_int(object, "max_in_flight", kMaxInFlight, options.max_in_flight));

  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> device, app::string_field(object, "device"));
  if (device) {
    auto parsed_device = parse_device(*device);
    if (!parsed_device.ok()) return Status(parsed_device.status()).with_context("engine option 'device'");
    options.load.device = *parsed_device;
  }
  if (const json::value* model_options = object.if_contains("model_options");
      model_options != nullptr && !model_options->is_null()) {
    if (!model_options->is_object()) return app::bad_field("model_options", "an object of the plugin's options");
    options.load.plugin_options_json = json::serialize(*model_options);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> template_file, app::string_field(object, "chat_template_file"));
  if (template_file) options.load.chat_template_file = *template_file;
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> plugin_dir, app::string_field(object, "plugin_dir"));
  if (plugin_dir) options.plugin_dir = *plugin_dir;
  return options;
}

Result<OpenOptions> parse_model_open_options(const std::filesystem::path& model, const char* options_json) {
  if (options_json != nullptr) {
    boost::system::error_code ec;
    json::value parsed = json::parse(options_json, ec);
    if (ec) return make_error(ErrorCode::invalid_argument, "model options are not valid JSON: {}", ec.message());
    if (!parsed.is_object()) return Status(ErrorCode::invalid_argument, "model options must be a JSON object");
    std::vector<std::string> unknown;
    for (const auto& [key, value] : parsed.as_object()) {
      if (std::find(std::begin(kModelOptionKeys), std::end(kModelOptionKeys), std::string_view(key)) ==
          std::end(kModelOptionKeys)) {
        unknown.push_back(fmt::format("'{}'", std::string_view(key)));
      }
    }
    if (!unknown.empty()) {
      return make_error(ErrorCode::invalid_argument, "unknown model option{} {} (known: {}; the engine's other "
                        "options do not apply to a bare model)",
                        unknown.size() > 1 ? "s" : "", fmt::join(unknown, ", "), fmt::join(kModelOptionKeys, ", "));
    }
  }
  return parse_open_options(model, options_json);
}

}  // namespace llaisys::capi
