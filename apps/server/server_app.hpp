#pragma once
// The routes, independent of the HTTP transport: a request (method, target, headers that matter,
// body) -> a Reply, which is either complete or carries a Job that the connection drives with the
// engine's notifications (streamed as SSE, or answered when finished).

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llaisys/engine/request_stream.hpp"
#include "model_router.hpp"
#include "metrics.hpp"
#include "request_log.hpp"
#include "server_config.hpp"

namespace llaisys::server {

class Job {
 public:
  virtual ~Job() = default;
  virtual bool streaming() const = 0;
  // Pops everything the engine has delivered. Streaming jobs return the bytes to send.
  virtual std::string poll() = 0;
  virtual bool done() const = 0;
  // The client went away: abort in the engine (frees its KV within one step).
  virtual void abort() = 0;
  // Non-streaming jobs once done: the HTTP status and JSON body.
  virtual int status() const = 0;
  virtual std::string body() const = 0;
  // Once, at the end: metrics (status as counted) and the log line's fields.
  virtual void finish(int status, RequestLogEntry& log) = 0;
};

struct HttpRequestView {
  std::string_view method;
  std::string_view target;
  std::string_view body;
  std::string_view authorization;
  std::string_view x_api_key;
};

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::unique_ptr<Job> job;
  std::string model;  // for the log and the metrics label
  std::string id;     // the request id (log line, response id)
};

class ServerApp {
 public:
  ServerApp(const ServerConfig& config, ModelRouter& router);
  // `notify` is handed to the engine for streamed outputs (called on the engine thread).
  Reply handle(const HttpRequestView& request, const OutputNotifier& notify);
  // Whether `path` is served only with an API key (when keys are configured): the API and /metrics.
  static bool needs_api_key(std::string_view path);
  // Decided from the request head alone, before any body byte is read: the 401 reply of a request to
  // a keyed route without a valid key, else nothing.
  std::optional<Reply> refuse_before_body(std::string_view target, std::string_view authorization,
                                          std::string_view x_api_key) const;
  // Counts a finished reply in the model's metrics (replies without a job).
  void count(const Reply& reply);
  // Every HTTP response the server sends (llaisys_http_requests_total{status}), also those refused
  // before a model is known; 499 for a client that went away (or did not read) before the end.
  void count_http(int status);
  std::string metrics_text() const;

 private:
  Reply route(const HttpRequestView& request, const OutputNotifier& notify);
  Reply generate(const HttpRequestView& request, bool chat, const OutputNotifier& notify);
  Reply embeddings(const HttpRequestView& request, const OutputNotifier& notify);
  Reply tokenize(const HttpRequestView& request);
  Reply detokenize(const HttpRequestView& request);
  Reply models(std::string_view id) const;
  Reply static_file(std::string_view path) const;

  const ServerConfig& config_;
  ModelRouter& router_;
  std::filesystem::path webui_dir_;
  HttpMetrics http_metrics_;
};

Reply error_reply(const struct ApiError& error);

}  // namespace llaisys::server
