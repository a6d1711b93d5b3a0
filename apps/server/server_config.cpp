#include "server_config.hpp"

#include "llaisys/core/log.hpp"
#include "reasoning.hpp"
#include "value_range.hpp"

#include <cstdlib>
#include <fstream>
#include <limits>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace llaisys::server {

namespace {

Result<toml::table> parse_toml(const std::string& text, const std::string& origin) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return make_error(ErrorCode::parse_error, "{}: {}", origin, e.description());
  }
}

template <class T>
Status read_value(const toml::node& node, std::string_view key, const std::string& where, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (auto v = node.value<bool>()) {
      out = *v;
      return Status();
    }
    return make_error(ErrorCode::invalid_argument, "{}: '{}' must be true or false", where, key);
  } else if constexpr (std::is_integral_v<T>) {
    if (auto v = node.value_exact<int64_t>()) {
      if (*v < static_cast<int64_t>(std::numeric_limits<T>::min()) || *v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
        return make_error(ErrorCode::invalid_argument, "{}: '{}' is out of range", where, key);
      }
      out = static_cast<T>(*v);
      return Status();
    }
    return make_error(ErrorCode::invalid_argument, "{}: '{}' must be an integer", where, key);
  } else {
    if (auto v = node.value_exact<std::string>()) {
      out = *v;
      return Status();
    }
    return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a string", where, key);
  }
}

Status read_strings(const toml::node& node, std::string_view key, const std::string& where,
                    std::vector<std::string>& out) {
  if (auto s = node.value_exact<std::string>()) {
    out = {*s};
    return Status();
  }
  const toml::array* array = node.as_array();
  if (array == nullptr) return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a list of strings", where, key);
  out.clear();
  for (const toml::node& item : *array) {
    auto s = item.value_exact<std::string>();
    if (!s) return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a list of strings", where, key);
    out.push_back(*s);
  }
  return Status();
}

// Engine keys shared by [server] and [[model]]. Returns true when `key` was one of them.
Result<bool> read_engine_key(std::string_view key, const toml::node& node, const std::string& where,
                             app::EngineOptions& engine) {
  if (key == "max_context") {
    LLAISYS_RETURN_IF_ERROR(read_value(node, key, where, engine.max_context));
    return true;
  }
  if (key == "kv_cache_mb") {
    LLAISYS_RETURN_IF_ERROR(read_value(node, key, where, engine.kv_cache_mb));
    return true;
  }
  if (key == "block_size") {
    LLAISYS_RETURN_IF_ERROR(read_value(node, key, where, engine.block_size));
    return true;
  }
  if (key == "max_batched_tokens") {
    LLAISYS_RETURN_IF_ERROR(read_value(node, key, where, engine.max_batched_tokens));
    return true;
  }
  if (key == "no_prefix_cache") {
    LLAISYS_RETURN_IF_ERROR(read_value(node, key, where, engine.no_prefix_cache));
    return true;
  }
  if (key == "seed") {
    int64_t seed = 0;
    LLAISYS_RETURN_IF_ERROR(read_value(node, key, where, seed));
    engine.seed = static_cast<uint64_t>(seed);
    return true;
  }
  // speculative = { method = "ngram", num_tokens = 4 }, or { method = "draft", model = "DIR", num_tokens = 4 }
  // (method = "draft:DIR" is the same)
  if (key == "speculative") {
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: 'speculative' must be a table, e.g. speculative = {{ method = \"ngram\", num_tokens = 4 }}",
                        where);
    }
    std::string draft_model;
    for (const auto& [k, value] : *table) {
      if (k.str() == "method") {
        LLAISYS_RETURN_IF_ERROR(read_value(value, "speculative.method", where, engine.speculative));
      } else if (k.str() == "num_tokens") {
        LLAISYS_RETURN_IF_ERROR(read_value(value, "speculative.num_tokens", where, engine.num_speculative_tokens));
      } else if (k.str() == "model") {
        LLAISYS_RETURN_IF_ERROR(read_value(value, "speculative.model", where, draft_model));
      } else {
        return make_error(ErrorCode::invalid_argument, "{}: unknown key 'speculative.{}' (method, model, num_tokens)",
                          where, k.str());
      }
    }
    if (!draft_model.empty() && engine.speculative != "draft") {
      return make_error(ErrorCode::invalid_argument, "{}: 'speculative.model' goes with method = \"draft\", not \"{}\"",
                        where, engine.speculative);
    }
    if (engine.speculative == "draft") {
      if (draft_model.empty()) {
        return make_error(ErrorCode::invalid_argument, "{}: method = \"draft\" needs 'speculative.model' (the draft model's directory)", where);
      }
      engine.speculative = "draft:" + draft_model;
    }
    return true;
  }
  return false;
}

}  // namespace

Status apply_toml_server(const std::string& text, const std::string& origin, ServerConfig& c) {
  LLAISYS_ASSIGN_OR_RETURN(toml::table root, parse_toml(text, origin));
  for (const auto& [k, node] : root) {
    if (k.str() != "server" && k.str() != "model") {
      return make_error(ErrorCode::invalid_argument, "{}: unknown table or key '{}' (expected [server] and [[model]])",
                        origin, k.str());
    }
  }
  const toml::table* server = root["server"].as_table();
  if (server == nullptr) {
    if (root.contains("server")) return make_error(ErrorCode::invalid_argument, "{}: 'server' must be a table", origin);
    return Status();
  }
  const std::string where = origin + " [server]";
  for (const auto& [k, node] : *server) {
    const std::string_view key = k.str();
    LLAISYS_ASSIGN_OR_RETURN(bool engine_key, read_engine_key(key, node, where, c.engine));
    if (engine_key) continue;
    Status s;
    if (key == "host") s = read_value(node, key, where, c.host);
    else if (key == "port") s = read_value(node, key, where, c.port);
    else if (key == "api_key" || key == "api_keys") s = read_strings(node, key, where, c.api_keys);
    else if (key == "threads") s = read_value(node, key, where, c.threads);
    else if (key == "worker_threads") s = read_value(node, key, where, c.worker_threads);
    else if (key == "model_threads") s = read_value(node, key, where, c.model_threads);
    else if (key == "max_running_requests" || key == "max_num_seqs") s = read_value(node, key, where, c.max_running_requests);
    else if (key == "max_queued_requests") s = read_value(node, key, where, c.max_queued_requests);
    else if (key == "max_body_bytes") s = read_value(node, key, where, c.max_body_bytes);
    else if (key == "max_connections") s = read_value(node, key, where, c.max_connections);
    else if (key == "max_connections_per_client") s = read_value(node, key, where, c.max_connections_per_client);
    else if (key == "max_pending_heads_per_client") s = read_value(node, key, where, c.max_pending_heads_per_client);
    else if (key == "max_body_bytes_in_flight") s = read_value(node, key, where, c.max_body_bytes_in_flight);
    else if (key == "header_timeout_ms") s = read_value(node, key, where, c.header_timeout_ms);
    else if (key == "body_timeout_ms") s = read_value(node, key, where, c.body_timeout_ms);
    else if (key == "idle_timeout_ms") s = read_value(node, key, where, c.idle_timeout_ms);
    else if (key == "sse_keepalive_ms") s = read_value(node, key, where, c.sse_keepalive_ms);
    else if (key == "write_timeout_ms") s = read_value(node, key, where, c.write_timeout_ms);
    else if (key == "max_stream_backlog_bytes") s = read_value(node, key, where, c.max_stream_backlog_bytes);
    else if (key == "socket_send_buffer_bytes") s = read_value(node, key, where, c.socket_send_buffer_bytes);
    else if (key == "drain_timeout") s = read_value(node, key, where, c.drain_timeout_s);
    else if (key == "cors_origin" || key == "cors_origins") s = read_strings(node, key, where, c.cors_origins);
    else if (key == "webui") s = read_value(node, key, where, c.webui_dir);
    else if (key == "plugin_dir") s = read_value(node, key, where, c.plugin_dir);
    else if (key == "chat_template") s = read_value(node, key, where, c.chat_template);
    else if (key == "reasoning_format") s = read_value(node, key, where, c.reasoning_format);
    else if (key == "log_level") s = read_value(node, key, where, c.log_level);
    else if (key == "device") s = read_value(node, key, where, c.device);
    else return make_error(ErrorCode::invalid_argument, "{}: unknown key '{}'", where, key);
    LLAISYS_RETURN_IF_ERROR(s);
  }
  return Status();
}

Status apply_toml_models(const std::string& text, const std::string& origin, ServerConfig& c) {
  LLAISYS_ASSIGN_OR_RETURN(toml::table root, parse_toml(text, origin));
  if (!root.contains("model")) return Status();
  const toml::array* models = root["model"].as_array();
  if (models == nullptr) return make_error(ErrorCode::invalid_argument, "{}: 'model' must be [[model]] tables", origin);
  int index = 0;
  for (const toml::node& item : *models) {
    const std::string where = fmt::format("{} [[model]] #{}", origin, ++index);
    const toml::table* table = item.as_table();
    if (table == nullptr) return make_error(ErrorCode::invalid_argument, "{}: not a table", where);
    ModelSpec spec;
    spec.engine = c.engine;
    std::string path;
    for (const auto& [k, node] : *table) {
      const std::string_view key = k.str();
      LLAISYS_ASSIGN_OR_RETURN(bool engine_key, read_engine_key(key, node, where, spec.engine));
      if (engine_key) continue;
      Status s;
      if (key == "name") s = read_value(node, key, where, spec.name);
      else if (key == "path") s = read_value(node, key, where, path);
      else if (key == "chat_template_file") {
        std::string file;
        s = read_value(node, key, where, file);
        spec.chat_template_file = file;
      } else if (key == "reasoning_format") {
        s = read_value(node, key, where, spec.reasoning_format);
      } else if (key == "threads" || key == "max_running_requests" || key == "max_num_seqs" ||
                 key == "max_queued_requests") {
        // Read into a checked local: the spec's own fields use -1 / 0 for "the [server] value".
        int32_t value = 0;
        s = read_value(node, key, where, value);
        const bool running = key == "max_running_requests" || key == "max_num_seqs";
        if (s.ok() && value < (running ? 1 : 0)) {
          return make_error(ErrorCode::invalid_argument, "{}: {} = {} must be at least {}", where, key, value,
                            running ? 1 : 0);
        }
        (key == "threads" ? spec.threads : running ? spec.max_running_requests : spec.max_queued_requests) = value;
      }
      else if (key == "options") {
        if (node.as_table() == nullptr) return make_error(ErrorCode::invalid_argument, "{}: 'options' must be a table", where);
        std::ostringstream json;
        json << toml::json_formatter{*node.as_table()};
        spec.options_json = json.str();
      } else {
        return make_error(ErrorCode::invalid_argument, "{}: unknown key '{}'", where, key);
      }
      LLAISYS_RETURN_IF_ERROR(s);
    }
    if (path.empty()) return make_error(ErrorCode::invalid_argument, "{}: 'path' is required", where);
    spec.path = path;
    if (spec.name.empty()) {
      std::filesystem::path p = spec.path.lexically_normal();
      if (!p.has_filename()) p = p.parent_path();
      spec.name = p.filename().string();
    }
    c.models.push_back(std::move(spec));
  }
  return Status();
}

Result<ModelSpec> parse_model_arg(const std::string& arg) {
  ModelSpec spec;
  const auto eq = arg.find('=');
  if (eq != std::string::npos && eq > 0) {
    spec.name = arg.substr(0, eq);
    spec.path = arg.substr(eq + 1);
  } else {
    spec.path = arg;
    std::filesystem::path p = spec.path.lexically_normal();
    if (!p.has_filename()) p = p.parent_path();
    spec.name = p.filename().string();
  }
  if (spec.path.empty() || spec.name.empty()) {
    return make_error(ErrorCode::invalid_argument, "--model '{}': expected NAME=DIR or DIR", arg);
  }
  return spec;
}

namespace {

// The settings' ranges: checked on the flags as they are parsed, and on the merged result (file and
// flags) by validate_server_config.
using app::ValueRange;
constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;
constexpr ValueRange kPort{0, 65535}, kIoThreads{1, 256}, kModelThreads{0, 1024}, kRunning{1, 4096}, kQueued{0, 1 << 20},
    kBodyBytes{1, int64_t{1} << 34}, kConnections{1, 1 << 20}, kTimeoutMs{1, kDayMs}, kKeepaliveMs{0, kDayMs},
    kBacklogBytes{4096, int64_t{1} << 40}, kSendBufferBytes{0, int64_t{1} << 30}, kDrainSeconds{0, 24 * 3600};

}  // namespace

void add_server_options(CLI::App& app, ServerConfig& c) {
  app.add_option("--host", c.host, "address to listen on")->capture_default_str();
  app.add_option("--port", c.port, "port (0: an ephemeral port)")->capture_default_str();
  app.add_option("--model", c.model_args, "NAME=PATH or PATH: a model directory or GGUF file (served under its file name); repeatable");
  app.add_option("--config", c.config_file, "TOML file with [server] and [[model]] tables");
  app.add_option("--api-key", c.api_keys, "required API key (repeatable; also env LLAISYS_API_KEY)");
  app.add_option("--threads", c.threads, "HTTP I/O threads")->capture_default_str()->check(CLI::Range(kIoThreads.lo, kIoThreads.hi));
  app.add_option("--worker-threads", c.worker_threads,
                 "threads that render templates and tokenize requests (off the I/O threads)")
      ->capture_default_str()->check(CLI::Range(kIoThreads.lo, kIoThreads.hi));
  app.add_option("--model-threads", c.model_threads, "compute threads per model (0: all cores)")->capture_default_str();
  app.add_option("--model-options", c.model_options,
                 "plugin options (JSON) of the --model models, e.g. '{\"matmul\": \"f32\"}'")->capture_default_str();
  app.add_option("--max-running-requests", c.max_running_requests, "per model: sequences in one batch")
      ->capture_default_str()->check(CLI::Range(kRunning.lo, kRunning.hi));
  app.add_option("--max-queued-requests", c.max_queued_requests, "per model: admitted requests beyond the running ones")
      ->capture_default_str()->check(CLI::Range(kQueued.lo, kQueued.hi));
  app.add_option("--max-body-bytes", c.max_body_bytes, "largest request body (413 beyond)")->capture_default_str();
  app.add_option("--max-connections", c.max_connections, "open connections (503 beyond)")->capture_default_str();
  app.add_option("--max-connections-per-client", c.max_connections_per_client,
                 "open connections of one client address (503 beyond)")->capture_default_str();
  app.add_option("--max-pending-heads-per-client", c.max_pending_heads_per_client,
                 "connections of one client address still sending their first request head (503 beyond)")
      ->capture_default_str();
  app.add_option("--max-body-bytes-in-flight", c.max_body_bytes_in_flight,
                 "request-body bytes received at once over all connections (503 beyond)")->capture_default_str();
  app.add_option("--header-timeout-ms", c.header_timeout_ms, "deadline for a request's header")->capture_default_str();
  app.add_option("--body-timeout-ms", c.body_timeout_ms, "deadline for a request's body")->capture_default_str();
  app.add_option("--idle-timeout-ms", c.idle_timeout_ms, "idle keep-alive connections are closed after this")
      ->capture_default_str();
  app.add_option("--sse-keepalive-ms", c.sse_keepalive_ms, "SSE keep-alive comment interval")->capture_default_str();
  app.add_option("--write-timeout-ms", c.write_timeout_ms,
                 "a response write the client does not take within this aborts the request and closes")
      ->capture_default_str()->check(CLI::Range(kTimeoutMs.lo, kTimeoutMs.hi));
  app.add_option("--max-stream-backlog-bytes", c.max_stream_backlog_bytes,
                 "unwritten SSE bytes per connection before the request is aborted as a slow reader")
      ->capture_default_str()->check(CLI::Range(kBacklogBytes.lo, kBacklogBytes.hi));
  app.add_option("--socket-send-buffer-bytes", c.socket_send_buffer_bytes,
                 "SO_SNDBUF of each connection (0: the kernel's autotuning)")
      ->capture_default_str()->check(CLI::Range(kSendBufferBytes.lo, kSendBufferBytes.hi));
  app.add_option("--drain-timeout", c.drain_timeout_s,
                 "seconds after SIGTERM/SIGINT for requests in flight to finish (new ones get 503, /ready is 503); "
                 "then they are cut with an error event and the server exits 0. A second signal exits at once")
      ->capture_default_str()->check(CLI::Range(kDrainSeconds.lo, kDrainSeconds.hi));
  app.add_option("--cors-origin", c.cors_origins, "allowed CORS origin (repeatable; * without credentials)");
  app.add_option("--webui", c.webui_dir, "web UI directory (default <exe>/../share/llaisys/webui)");
  app.add_option("--plugin-dir", c.plugin_dir, "directory of model plugins");
  app.add_option("--chat-template", c.chat_template, "chat template file for every model");
  app.add_option("--reasoning-format", c.reasoning_format,
                 "how chat answers of reasoning models are split: auto (deepseek when the model's template or "
                 "vocabulary has <think>), deepseek (a leading <think> block goes to reasoning_content), none "
                 "(the raw text in content)")
      ->capture_default_str();
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error or off")->capture_default_str();
  app.add_option("--device", c.device, "cpu or cuda:N")->capture_default_str();
  app::add_engine_options(app, c.engine);
  app::add_speculative_options(app, c.engine);
}

Status validate_server_config(const ServerConfig& c) {
  const auto range = &app::check_range;
  LLAISYS_RETURN_IF_ERROR(range("port", c.port, kPort));
  LLAISYS_RETURN_IF_ERROR(range("threads", c.threads, kIoThreads));
  LLAISYS_RETURN_IF_ERROR(range("worker_threads", c.worker_threads, kIoThreads));
  LLAISYS_RETURN_IF_ERROR(range("model_threads", c.model_threads, kModelThreads));
  LLAISYS_RETURN_IF_ERROR(range("max_running_requests", c.max_running_requests, kRunning));
  LLAISYS_RETURN_IF_ERROR(range("max_queued_requests", c.max_queued_requests, kQueued));
  LLAISYS_RETURN_IF_ERROR(range("max_body_bytes", c.max_body_bytes, kBodyBytes));
  LLAISYS_RETURN_IF_ERROR(range("max_connections", c.max_connections, kConnections));
  LLAISYS_RETURN_IF_ERROR(range("max_connections_per_client", c.max_connections_per_client, kConnections));
  LLAISYS_RETURN_IF_ERROR(range("max_pending_heads_per_client", c.max_pending_heads_per_client, kConnections));
  LLAISYS_RETURN_IF_ERROR(range("max_body_bytes_in_flight", c.max_body_bytes_in_flight, kBodyBytes));
  if (c.max_body_bytes_in_flight < c.max_body_bytes) {
    return make_error(ErrorCode::invalid_argument,
                      "max_body_bytes_in_flight = {} is below max_body_bytes = {}: a body of the largest size could "
                      "never be received",
                      c.max_body_bytes_in_flight, c.max_body_bytes);
  }
  LLAISYS_RETURN_IF_ERROR(range("header_timeout_ms", c.header_timeout_ms, kTimeoutMs));
  LLAISYS_RETURN_IF_ERROR(range("body_timeout_ms", c.body_timeout_ms, kTimeoutMs));
  LLAISYS_RETURN_IF_ERROR(range("idle_timeout_ms", c.idle_timeout_ms, kTimeoutMs));
  LLAISYS_RETURN_IF_ERROR(range("sse_keepalive_ms", c.sse_keepalive_ms, kKeepaliveMs));
  LLAISYS_RETURN_IF_ERROR(range("write_timeout_ms", c.write_timeout_ms, kTimeoutMs));
  LLAISYS_RETURN_IF_ERROR(range("max_stream_backlog_bytes", c.max_stream_backlog_bytes, kBacklogBytes));
  LLAISYS_RETURN_IF_ERROR(range("socket_send_buffer_bytes", c.socket_send_buffer_bytes, kSendBufferBytes));
  LLAISYS_RETURN_IF_ERROR(range("drain_timeout", c.drain_timeout_s, kDrainSeconds));
  for (const std::string& key : c.api_keys) {
    if (key.empty()) {
      return make_error(ErrorCode::invalid_argument,
                        "an API key is empty (--api-key, api_key / api_keys in the config); leave it out to run "
                        "without authentication");
    }
  }
  if (log::Level parsed{}; !log::parse_level(c.log_level, parsed)) {
    return make_error(ErrorCode::invalid_argument, "log_level = '{}' is not one of trace, debug, info, warn, error, off",
                      c.log_level);
  }
  LLAISYS_RETURN_IF_ERROR(app::validate_engine_options(c.engine));
  LLAISYS_RETURN_IF_ERROR(app::parse_reasoning_format(c.reasoning_format, "reasoning_format").status());
  for (const ModelSpec& m : c.models) {
    const std::string where = fmt::format("model '{}'", m.name);
    LLAISYS_RETURN_IF_ERROR(
        app::parse_reasoning_format(m.reasoning_format, "reasoning_format").status().with_context(where));
    LLAISYS_RETURN_IF_ERROR(range("threads", m.threads, kModelThreads).with_context(where));
    LLAISYS_RETURN_IF_ERROR(range("max_running_requests", m.max_running_requests, kRunning).with_context(where));
    LLAISYS_RETURN_IF_ERROR(range("max_queued_requests", m.max_queued_requests, kQueued).with_context(where));
    LLAISYS_RETURN_IF_ERROR(app::validate_engine_options(m.engine).with_context(where));
  }
  return Status();
}

std::optional<int> parse_command_line(int argc, char** argv, ServerConfig& config) {
  // Pass 1: only --config, so that its [server] table becomes the flags' defaults.
  {
    CLI::App pre;
    pre.allow_extras();
    pre.set_help_flag();
    pre.add_option("--config", config.config_file);
    try {
      pre.parse(argc, argv);
    } catch (const CLI::ParseError&) {
      // reported by pass 2
    }
  }
  std::string text;
  if (!config.config_file.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(config.config_file, ec)) {
      std::cerr << "error: --config " << config.config_file << " is a directory, not a TOML file\n";
      return 2;
    }
    std::ifstream in(config.config_file, std::ios::binary);
    if (!in) {
      std::cerr << "error: cannot read --config " << config.config_file << "\n";
      return 2;
    }
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
    if (Status st = apply_toml_server(text, config.config_file, config); !st.ok()) {
      std::cerr << "error: " << st.message() << "\n";
      return 2;
    }
  }
  CLI::App app{"llaisys-server: an OpenAI-compatible HTTP server for llaisys models"};
  add_server_options(app, config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // An empty key would either lock everyone out or, read as "no key", turn authentication off: it
  // is refused from every source (here the environment, below the flag and the file).
  if (const char* key = std::getenv("LLAISYS_API_KEY"); key != nullptr) {
    if (*key == '\0') {
      std::cerr << "error: LLAISYS_API_KEY is set but empty; unset it to run without authentication\n";
      return 2;
    }
    config.api_keys.emplace_back(key);
  }
  if (!text.empty()) {
    if (Status st = apply_toml_models(text, config.config_file, config); !st.ok()) {
      std::cerr << "error: " << st.message() << "\n";
      return 2;
    }
  }
  for (const std::string& arg : config.model_args) {
    auto spec = parse_model_arg(arg);
    if (!spec.ok()) {
      std::cerr << "error: " << spec.status().message() << "\n";
      return 2;
    }
    spec->engine = config.engine;
    spec->options_json = config.model_options;
    config.models.push_back(std::move(spec).value());
  }
  if (config.models.empty()) {
    std::cerr << "error: no models: give --model NAME=DIR or [[model]] tables in --config\n";
    return 2;
  }
  for (std::size_t i = 0; i < config.models.size(); ++i) {
    ModelSpec& m = config.models[i];
    for (std::size_t j = 0; j < i; ++j) {
      if (config.models[j].name == m.name) {
        std::cerr << "error: two models are named '" << m.name << "'\n";
        return 2;
      }
    }
    if (m.threads < 0) m.threads = config.model_threads;
    if (m.max_running_requests <= 0) m.max_running_requests = config.max_running_requests;
    if (m.max_queued_requests < 0) m.max_queued_requests = config.max_queued_requests;
    m.engine.max_num_seqs = m.max_running_requests;
    if (m.chat_template_file.empty() && !config.chat_template.empty()) m.chat_template_file = config.chat_template;
    if (m.reasoning_format.empty()) m.reasoning_format = config.reasoning_format;
  }
  // The file's values skip the flags' range checks, and some flags have none: check the result.
  if (Status st = validate_server_config(config); !st.ok()) {
    std::cerr << "error: " << st.message() << "\n";
    return 2;
  }
  for (const std::string& origin : config.cors_origins) {
    if (origin == "*" && !config.api_keys.empty()) {
      std::cerr << "warning: --cors-origin * is answered without credentials (Access-Control-Allow-Credentials)\n";
    }
  }
  return std::nullopt;
}

}  // namespace llaisys::server
