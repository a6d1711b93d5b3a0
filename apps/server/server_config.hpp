#pragma once
// The server's settings: command-line flags (CLI11) and a TOML file (--config) with a [server] table
// (the flags' names with underscores) and [[model]] tables. Flags given on the command line win over
// [server] keys; a [[model]] table's own keys win over the flags for that model.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "served_model.hpp"

namespace llaisys::server {

struct ModelSpec {
  std::string name;
  std::filesystem::path path;
  std::string options_json = "{}";      // plugin options
  std::filesystem::path chat_template_file;
  std::string reasoning_format;         // auto, deepseek or none; empty: --reasoning-format
  int32_t threads = -1;                 // -1: --model-threads
  int32_t max_running_requests = -1;    // -1: --max-running-requests
  int32_t max_queued_requests = -1;     // -1: --max-queued-requests
  app::EngineOptions engine;            // resolved by finalize()
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  int32_t port = 8080;
  std::vector<std::string> model_args;  // --model NAME=DIR or DIR
  std::string config_file;
  std::vector<std::string> api_keys;
  int32_t threads = 2;
  int32_t worker_threads = 2;  // handle POST requests (templates, tokenization) off the I/O threads
  int32_t model_threads = 0;
  std::string model_options = "{}";  // plugin options (JSON) of the --model models; TOML models have their own
  int32_t max_running_requests = 64;
  int32_t max_queued_requests = 256;
  int64_t max_body_bytes = 32ll << 20;
  // Request-body bytes being received at once, over every connection (503 beyond): 8 largest bodies.
  int64_t max_body_bytes_in_flight = 256ll << 20;
  int32_t max_connections = 1024;
  int32_t max_connections_per_client = 256;  // open connections of one client address (503 beyond)
  // Connections of one client address that have not yet sent a complete first request head (503
  // beyond): a slow sender of headers (slowloris) holds few slots, keep-alive clients are not capped.
  int32_t max_pending_heads_per_client = 32;
  int64_t header_timeout_ms = 10000;
  int64_t body_timeout_ms = 60000;
  int64_t idle_timeout_ms = 60000;
  int64_t sse_keepalive_ms = 10000;
  // A response write (SSE chunk or whole body) that the client does not take within this deadline
  // aborts the request (KV freed within one engine step) and closes the connection (logged as 499).
  int64_t write_timeout_ms = 30000;
  // Unwritten SSE bytes one connection may queue (in flight + pending) before it is treated the same.
  int64_t max_stream_backlog_bytes = 4ll << 20;
  // SO_SNDBUF of accepted connections (0: the kernel's autotuning, up to net.ipv4.tcp_wmem's max).
  // A fixed size bounds each connection's kernel memory, so that a stalled reader is noticed
  // after that much output rather than after megabytes.
  int64_t socket_send_buffer_bytes = 0;
  // After the first SIGTERM/SIGINT (drain.hpp): how long requests in flight may take to finish before
  // they are cut (0: cut at once, still with a clean end).
  int64_t drain_timeout_s = 30;
  std::vector<std::string> cors_origins;
  std::string webui_dir;                // empty: <exe dir>/../share/llaisys/webui
  std::string plugin_dir;
  std::string chat_template;            // default chat template file for every model
  std::string reasoning_format = "auto";  // every model's unless its [[model]] sets one (reasoning.hpp)
  std::string log_level = "info";
  std::string device = "cpu";
  app::EngineOptions engine;

  std::vector<ModelSpec> models;        // after finalize()
};

// Registers every flag on `app`, bound to `config`.
void add_server_options(CLI::App& app, ServerConfig& config);

// A TOML file's [server] table into `config` (keys as the flags, with underscores). Unknown keys
// and wrong types are errors (typos should not pass silently).
Status apply_toml_server(const std::string& text, const std::string& origin, ServerConfig& config);
// Its [[model]] tables appended to config.models, each starting from config's engine settings.
Status apply_toml_models(const std::string& text, const std::string& origin, ServerConfig& config);

// Parses the command line and --config (flags override the file) and fills config.models.
// Returns the exit code when the process should stop now (--help, bad flags, bad file).
std::optional<int> parse_command_line(int argc, char** argv, ServerConfig& config);

// "NAME=DIR" or "DIR" (served under the directory's name).
Result<ModelSpec> parse_model_arg(const std::string& arg);

// Every numeric setting (flags and file merged, models resolved) within its range, or an error
// naming the key: e.g. max_queued_requests = 2^31 - 1 would overflow the admission count.
Status validate_server_config(const ServerConfig& config);

}  // namespace llaisys::server
