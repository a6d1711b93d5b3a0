#pragma once
// The routes, independent of the HTTP transport: a request (method, target, headers that matter,
// body) -> a Reply, which is either complete or carries a Job that the connection drives with the
// engine's notifications (streamed as SSE, or answered when finished).

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/json.hpp>

#include "drain.hpp"
#include "llaisys/engine/request_stream.hpp"
#include "model_router.hpp"
#include "metrics.hpp"
#include "request_log.hpp"
#include "server_config.hpp"

namespace llaisys::server {

struct ParsedGenerate;    // openai/request_parse.hpp
class GenerationWriter;   // openai/response.hpp

class Job {
 public:
  virtual ~Job() = default;
  virtual bool streaming() const = 0;
  // Pops everything the engine has delivered. Streaming jobs return the bytes to send.
  virtual std::string poll() = 0;
  virtual bool done() const = 0;
  // The client went away: abort in the engine (frees its KV within one step).
  virtual void abort() = 0;
  // The server's drain timeout passed (drain.hpp): abort in the engine, and end the answer with an
  // error that says so (a 503 body, or the stream's error event and end) rather than as a client
  // disconnect.
  virtual void shut_down() = 0;
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
  // Whether `path` is served only with an API key (when keys are configured), as its route says.
  static bool needs_api_key(std::string_view path);
  // Whether a request may be served on a connection kept beyond --max-connections: GET (or HEAD) of
  // a monitoring route (/health, /ready, /metrics).
  static bool monitoring_request(std::string_view method, std::string_view target);
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
  // Graceful shutdown: the transport takes a ticket per request; main starts the drain.
  Drain& drain() { return drain_; }
  // Readiness (/ready): every model loaded and not draining.
  bool ready() const;

 private:
  // What a handler gets. `rest` is the path after a prefix route's prefix (empty for an exact one).
  struct Call {
    const HttpRequestView& request;
    std::string_view rest;
    const OutputNotifier& notify;
  };
  // What a model route's handler gets: the body, parsed, and the ready model it names.
  struct ModelCall {
    const boost::json::object& body;
    ModelEntry& model;
    const OutputNotifier& notify;
  };
  using Handler = Reply (ServerApp::*)(const Call&);
  using ModelHandler = Reply (ServerApp::*)(const ModelCall&);
  // GET includes HEAD (the transport sends a HEAD answer's headers only).
  struct Methods {
    bool get = false;
    bool post = false;
    bool allows(std::string_view method) const;
    std::string allow_header() const;  // the Allow header of a 405
  };
  struct Route {
    std::string_view path;
    bool prefix = false;  // matches every path that starts with `path`
    Methods methods;      // none: a reserved path, 404 for every method
    bool api_key = false;
    // Answered on the connections kept beyond --max-connections (http/connection_gate.hpp).
    bool monitoring = false;
    std::variant<std::monostate, Handler, ModelHandler> handler;  // ModelHandler: see with_model
  };
  // Every route, walked in order (the first match wins). A path that none matches is a web UI file
  // for GET and HEAD, 404 for other methods.
  static std::span<const Route> routes();
  static const Route* find_route(std::string_view path);

  Reply route(const HttpRequestView& request, const OutputNotifier& notify);
  // Parses the body and resolves its "model" before `handler` runs, or replies the error: 400 for a
  // malformed body or "model", 404 for an unknown model, 503 + Retry-After while it loads.
  Reply with_model(const Call& call, ModelHandler handler);

  Reply health(const Call& call);
  Reply readiness(const Call& call);
  Reply models(const Call& call);
  Reply metrics(const Call& call);
  Reply chat_completions(const ModelCall& call);
  Reply completions(const ModelCall& call);
  Reply generate(const ModelCall& call, bool chat);
  Reply responses(const ModelCall& call);
  // Admission (429 when the model is full), then the engine (one request per prompt of a completions
  // batch, else one): the reply carries the job that renders the outputs with `writer`.
  Reply submit_generation(const ModelCall& call, ParsedGenerate parsed, std::unique_ptr<GenerationWriter> writer,
                          const std::string& id);
  Reply embeddings(const ModelCall& call);
  Reply tokenize(const ModelCall& call);
  Reply detokenize(const ModelCall& call);
  Reply static_file(std::string_view path) const;

  const ServerConfig& config_;
  ModelRouter& router_;
  std::filesystem::path webui_dir_;
  HttpMetrics http_metrics_;
  Drain drain_;
};

Reply error_reply(const struct ApiError& error);

}  // namespace llaisys::server
