#include "http/session.hpp"

#include <array>
#include <chrono>
#include <utility>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "http/response_head.hpp"
#include "http/sse.hpp"
#include "llaisys/core/log.hpp"
#include "openai/errors.hpp"
#include "request_log.hpp"

namespace llaisys::server {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kHeaderLimit = 64 * 1024;
constexpr std::size_t kPipelineLimit = 64 * 1024;  // bytes buffered from the client while generating
constexpr std::size_t kReadSlack = 1024 * 1024;     // read buffer beyond the header limit

// The preflight's Access-Control-Allow-Headers: the headers the browser asks for (SDKs add their
// own, e.g. the openai package's x-stainless-*), when they are a plain comma-separated list of
// header names; otherwise the ones the API reads.
std::string allowed_request_headers(std::string_view requested) {
  constexpr std::string_view kDefault = "Authorization, Content-Type, x-api-key";
  if (requested.empty() || requested.size() > 2048) return std::string(kDefault);
  for (char c : requested) {
    const bool name = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!name && c != ',' && c != ' ') return std::string(kDefault);
  }
  return std::string(requested);
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, ServerApp& app, const ServerConfig& config, std::shared_ptr<ConnectionGate> gate,
          std::string client, WorkerExecutor workers)
      : socket_(std::move(socket)),
        deadline_(socket_.get_executor()),
        keepalive_(socket_.get_executor()),
        write_deadline_(socket_.get_executor()),
        hold_(socket_.get_executor()),
        probe_(socket_.get_executor()),
        app_(app),
        config_(config),
        gate_(std::move(gate)),
        client_(std::move(client)),
        workers_(std::move(workers)) {}

  ~Session() {
    if (job_ && !recorded_) {  // the connection died with a request in flight
      if (!job_->done()) job_->abort();
      record(499);
    }
    if (recorded_) write_log(DeliveryFailure::connection_gone);
    release_body();
    release_connection();
  }

  void start(ConnectionGate::Verdict verdict) {
    net::dispatch(socket_.get_executor(), [self = shared_from_this(), verdict] {
      if (verdict == ConnectionGate::Verdict::admitted) return self->read_header();
      if (verdict == ConnectionGate::Verdict::crowded) {
        self->crowded_ = true;
        return self->read_header();
      }
      if (verdict == ConnectionGate::Verdict::health_only) {
        self->health_only_ = true;
        return self->read_header();
      }
      const bool total = verdict == ConnectionGate::Verdict::over_total;
      self->refuse_busy({.finish = total ? "over --max-connections" : "over --max-connections-per-client"},
                        total ? "the server has too many open connections; retry later"
                              : "this client has too many open connections; retry later");
    });
  }

 private:
  // ---- deadlines: a timer that cancels the socket's operations (so we can still answer 408)
  void arm(int64_t ms) {
    timed_out_ = false;
    deadline_.expires_after(std::chrono::milliseconds(std::max<int64_t>(ms, 1)));
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->socket_.cancel(ignored);
    });
  }
  void disarm() { deadline_.cancel(); }

  // ---- the connection's phase. enter() is its one transition, and each phase owns its timers:
  //   reading_header  the head deadline (the first request's, short when crowded) or the idle one
  //   reading_body    the body deadline
  //   handling        the reply is being made; a job runs, kept alive by hold_ (its notifier holds
  //                   the session weakly)
  //   streaming       the SSE head is out, chunks follow as the job makes them; keep-alive comments
  //   responding      the complete response is queued or being written
  //   lingering       the response is out and the connection closing while the client may still
  //                   be sending (a body refused unread): our FIN first, then what still arrives
  //                   is read and dropped for up to kLingerMs. Closing at once would answer those
  //                   bytes with a reset, which can destroy the response in the client's receive
  //                   buffer before it reads it (nginx's lingering close)
  //   closed          final: no timer, no socket
  // Each write is under write_deadline_ whatever the phase; probe_ runs after a half-close.
  enum class Phase : uint8_t { reading_header, reading_body, handling, streaming, responding, lingering, closed };
  static constexpr int64_t kLingerMs = 2000;

  void enter(Phase next) {
    if (phase_ == Phase::closed) return;
    phase_ = next;
    switch (next) {
      case Phase::reading_header:
        keepalive_.cancel();
        hold_.cancel();
        // A connection admitted while its address had too many heads pending gets a short first deadline.
        return arm(requests_ > 0 ? config_.idle_timeout_ms
                   : crowded_    ? std::min(config_.header_timeout_ms, ConnectionGate::kCrowdedHeadTimeoutMs)
                                 : config_.header_timeout_ms);
      case Phase::reading_body:
        return arm(config_.body_timeout_ms);
      case Phase::handling:
        disarm();
        if (job_) hold_while_job();
        return;
      case Phase::streaming:
        disarm();
        return arm_keepalive();
      case Phase::responding:
        disarm();
        keepalive_.cancel();
        return;
      case Phase::lingering: {
        release_connection();  // it serves nothing more: no slot of --max-connections held while lingering
        keepalive_.cancel();
        hold_.cancel();
        probe_.cancel();
        beast::error_code ec;
        socket_.shutdown(tcp::socket::shutdown_send, ec);
        arm(kLingerMs);
        return discard();
      }
      case Phase::closed: {
        ticket_.release();  // the request, if any, is over for the drain
        disarm();
        keepalive_.cancel();
        hold_.cancel();
        write_deadline_.cancel();
        probe_.cancel();
        beast::error_code ec;
        socket_.shutdown(tcp::socket::shutdown_both, ec);
        socket_.close(ec);
        return;
      }
    }
  }
  void close() { enter(Phase::closed); }

  // Lingering: reads and drops until EOF, an error or the linger deadline, then closes.
  void discard() {
    buffer_.consume(buffer_.size());
    socket_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->buffer_.commit(n);
      if (ec || self->timed_out_ || self->phase_ != Phase::lingering) return self->close();
      self->discard();
    });
  }
  bool closed() const { return phase_ == Phase::closed; }

  void release_connection() {
    if (std::exchange(connection_released_, true)) return;
    gate_->release_connection(client_, requests_ == 0);
  }

  // ---- reading a request
  void release_body() {
    if (body_reserved_ > 0) gate_->release_body(body_reserved_);
    body_reserved_ = 0;
  }

  void read_header() {
    release_body();  // the previous request's body is done with
    // A new request: nothing of the previous one's (a HEAD without a body, HTTP/1.0 framing)
    // applies to what is answered next, even to a protocol error before handle() runs.
    head_ = false;
    chunked_ = true;
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(static_cast<uint64_t>(std::max<int64_t>(config_.max_body_bytes, 0)));
    enter(Phase::reading_header);
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) {
      const bool got_bytes = buffer_.size() > 0 || parser_->got_some();
      if (timed_out_ && got_bytes) return fail_request(408, "the request header did not arrive in time");
      if (ec == http::error::header_limit) return fail_request(431, "the request header is too large");
      if (ec == http::error::body_limit) {
        return fail_request(413, fmt::format("the request body is larger than the limit of {} bytes", config_.max_body_bytes));
      }
      if (ec == http::error::end_of_stream || timed_out_ || ec == net::error::eof ||
          ec == net::error::connection_reset || ec == net::error::operation_aborted) {
        return close();
      }
      return fail_request(400, fmt::format("malformed HTTP request: {}", ec.message()));
    }
    if (requests_++ == 0) gate_->head_received(client_);  // no longer a pending head (slowloris cap)
    started_ = Clock::now();
    const auto& req = parser_->get();
    // A connection on a reserved slot answers only the monitoring routes, once.
    if (health_only_) {
      if (!ServerApp::monitoring_request(req.method_string(), req.target())) {
        return refuse_busy({.method = std::string(req.method_string()), .target = std::string(req.target()),
                            .finish = "over --max-connections (reserved slot: /health, /ready and /metrics only)"},
                           "the server has too many open connections; retry later");
      }
    }
    // RFC 9112 6.1/6.3: a Transfer-Encoding whose last coding is not chunked leaves the body's end
    // unknown, and one beside Content-Length is ambiguous (the classic smuggling pair): both are
    // refused and the connection closed, never read as "no body".
    if (req.find(http::field::transfer_encoding) != req.end()) {
      if (!parser_->chunked()) {
        return fail_request(501, fmt::format("Transfer-Encoding '{}' is not supported: only chunked",
                                             std::string_view(req[http::field::transfer_encoding]).substr(0, 64)));
      }
      if (req.find(http::field::content_length) != req.end()) {
        return fail_request(400, "a request with both Transfer-Encoding and Content-Length is refused");
      }
    }
    // A keyed route without a valid key is answered from the head: no body byte is read (no 100
    // Continue either), and the connection closes since the unread body would follow. CORS
    // preflights (OPTIONS) never carry the key and are answered as before.
    if (auto refused = req.method() == http::verb::options
                           ? std::nullopt
                           : app_.refuse_before_body(req.target(), req[http::field::authorization], req["x-api-key"])) {
      note_request_head();
      begin_request({.method = method_, .target = target_, .finish = refused->body.substr(0, 300)});
      record(refused->status);
      return send_simple(refused->status, refused->content_type, std::move(refused->body), refused->headers, false);
    }
    if (const auto length = parser_->content_length();
        length && *length > static_cast<uint64_t>(config_.max_body_bytes)) {
      return fail_request(413, fmt::format("the request body ({} bytes) is larger than the limit of {} bytes", *length,
                                           config_.max_body_bytes));
    }
    // The body's bytes come out of the server-wide budget before any is read: its Content-Length, or
    // the largest allowed body when chunked. Released when the next request starts or the connection
    // ends.
    const int64_t body_bytes = parser_->content_length() ? static_cast<int64_t>(*parser_->content_length())
                               : parser_->chunked()      ? config_.max_body_bytes
                                                         : 0;
    if (body_bytes > 0) {
      if (!gate_->reserve_body(body_bytes)) {
        return refuse_busy({.method = std::string(req.method_string()), .target = std::string(req.target()),
                            .finish = "over --max-body-bytes-in-flight"},
                           "the server is receiving too many request bodies at once; retry later");
      }
      body_reserved_ = body_bytes;
    }
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      net::async_write(socket_, net::buffer(kInterimContinue.data(), kInterimContinue.size()), [self = shared_from_this()](beast::error_code e, std::size_t) {
        if (e) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    enter(Phase::reading_body);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    enter(Phase::handling);
    if (ec == http::error::body_limit) {
      return fail_request(413, fmt::format("the request body is larger than the limit of {} bytes", config_.max_body_bytes));
    }
    if (timed_out_) return fail_request(408, "the request body did not arrive in time");
    if (ec) {
      if (ec == net::error::eof || ec == http::error::end_of_stream || ec == net::error::connection_reset ||
          ec == http::error::partial_message) {
        return close();
      }
      return fail_request(400, fmt::format("malformed HTTP request: {}", ec.message()));
    }
    handle();
  }

  // ---- answering
  using Fields = std::vector<std::pair<std::string, std::string>>;
  Fields cors_fields(std::string_view origin) const {
    if (origin.empty() || config_.cors_origins.empty()) return {};
    bool star = false;
    for (const std::string& allowed : config_.cors_origins) {
      if (allowed == origin) {
        // No Access-Control-Allow-Credentials: the API key travels in a header, never in a cookie.
        return {{"Access-Control-Allow-Origin", std::string(origin)}, {"Vary", "Origin"}};
      }
      star = star || allowed == "*";
    }
    return star ? Fields{{"Access-Control-Allow-Origin", "*"}} : Fields{};
  }

  // What the answer needs of the request's head: its method and target (log), origin (CORS), HEAD.
  void note_request_head() {
    const auto& req = parser_->get();
    method_ = std::string(req.method_string());
    target_ = std::string(req.target());
    origin_ = std::string(req[http::field::origin]);
    head_ = req.method() == http::verb::head;
    monitoring_ = ServerApp::monitoring_request(method_, target_);
  }

  void handle() {
    const auto& req = parser_->get();
    // While draining every answer closes its connection: the client's next request goes elsewhere.
    keep_alive_ = req.keep_alive() && !health_only_ && !app_.drain().draining();
    note_request_head();
    // HTTP/1.0 has no chunked encoding: a stream is sent unframed and ends with the connection.
    chunked_ = req.version() >= 11;
    if (req.method() == http::verb::options) {
      ResponseHead preflight{.status = 204, .cors = cors_fields(origin_), .close = !keep_alive_};
      if (!preflight.cors.empty()) {
        preflight.cors.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        preflight.cors.emplace_back("Access-Control-Allow-Headers",
                                    allowed_request_headers(req[http::field::access_control_request_headers]));
        preflight.cors.emplace_back("Access-Control-Max-Age", "600");
      }
      begin_request({.method = method_, .target = target_});
      record(204);
      return send_raw(response_head(preflight), true);
    }
    const HttpRequestView view{.method = req.method_string(),
                               .target = req.target(),
                               .body = req.body(),
                               .authorization = req[http::field::authorization],
                               .x_api_key = req["x-api-key"]};
    std::weak_ptr<Session> weak = weak_from_this();
    auto executor = socket_.get_executor();
    // In flight until its response is complete (drain.hpp); the drain timeout cuts it on this strand.
    cut_ = false;
    ticket_ = app_.drain().admit([weak, executor] {
      net::post(executor, [weak] {
        if (auto self = weak.lock()) self->cut();
      });
    });
    OutputNotifier notify = [weak, executor] {
      net::post(executor, [weak] {
        if (auto self = weak.lock()) self->on_notify();
      });
    };
    if (req.method() == http::verb::post) {
      // The API's POST routes render templates and tokenize (seconds for a prompt of megabytes): that
      // runs on the worker pool, never on an I/O thread, so /health and every stream on this thread
      // keep going; the reply comes back on this session's strand. `view` points into parser_, which
      // stays as it is until the next request starts.
      net::post(workers_, [self = shared_from_this(), view, notify = std::move(notify)]() mutable {
        Reply reply = self->app_.handle(view, notify);
        const auto strand = self->socket_.get_executor();
        net::post(strand, [self = std::move(self), reply = std::move(reply)]() mutable { self->answer(std::move(reply)); });
      });
      return;
    }
    answer(app_.handle(view, notify));
  }

  void answer(Reply reply) {
    begin_request({.id = reply.id, .method = method_, .target = target_, .model = reply.model});
    if (!reply.job) {
      app_.count(reply);
      if (reply.status >= 400) log_entry_.finish = reply.body.substr(0, 300);
      record(reply.status);
      return send_simple(reply.status, reply.content_type, std::move(reply.body), reply.headers, keep_alive_);
    }
    start_job(std::move(reply.job));
  }

  void send_simple(int status, std::string_view content_type, std::string body, Fields headers, bool keep_alive) {
    keep_alive_ = keep_alive;
    std::string out = response_head({.status = status,
                                     .content_type = content_type,
                                     .content_length = body.size(),
                                     .headers = std::move(headers),
                                     .cors = cors_fields(origin_),
                                     .close = !keep_alive_});
    if (!head_) out += body;
    send_raw(std::move(out), true);
  }

  // 503 + Retry-After for a limit met before the request's body (ConnectionGate's), then close.
  void refuse_busy(RequestLogEntry entry, std::string_view message) {
    keep_alive_ = false;
    entry.status = 503;
    begin_request(std::move(entry));
    record(503);
    const ApiError e = unavailable_error(std::string(message));
    send_simple(503, "application/json", error_body(e), {{"Retry-After", "1"}}, false);
  }

  // Answers a request that cannot be read to the end and closes the connection.
  void fail_request(int status, std::string message) {
    ApiError e{.status = status, .message = std::move(message), .type = "invalid_request_error"};
    begin_request({.method = parser_ ? std::string(parser_->get().method_string()) : "", .finish = e.message});
    record(status);
    send_simple(status, "application/json", error_body(e), {}, false);
  }

  // `complete`: the bytes end the response (responding); otherwise more follow (a stream's head).
  void send_raw(std::string bytes, bool complete) {
    pending_ += bytes;
    if (complete) enter(Phase::responding);
    flush();
  }

  void flush() {
    if (writing_ || pending_.empty() || closed()) return;
    writing_ = true;
    sending_ = std::move(pending_);
    pending_.clear();
    written_ = 0;
    write_some();
  }

  // The bytes in flight go out in write_some steps, each under the write deadline: the deadline
  // bounds the time without progress (a slow reader that keeps taking bytes is served; one that
  // stops is not), while --max-stream-backlog-bytes bounds what piles up behind it.
  void write_some() {
    arm_write_deadline();
    socket_.async_write_some(net::buffer(sending_.data() + written_, sending_.size() - written_),
                             [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                               if (!ec) self->written_ += n;
                               if (!ec && self->written_ < self->sending_.size() && !self->closed()) {
                                 return self->write_some();
                               }
                               self->on_write(ec);
                             });
  }

  std::size_t unwritten() const { return pending_.size() + (sending_.size() - written_); }

  // A client that keeps the connection open but stops reading would otherwise hold its request
  // (and its KV blocks) forever: no progress within --write-timeout-ms drops it.
  void arm_write_deadline() {
    const uint64_t generation = ++write_generation_;
    write_deadline_.expires_after(std::chrono::milliseconds(std::max<int64_t>(config_.write_timeout_ms, 1)));
    write_deadline_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      if (ec || !self->writing_ || self->write_generation_ != generation || self->closed()) return;
      self->drop_slow_reader(fmt::format("the client took no byte for {} ms ({} bytes unwritten)",
                                         self->config_.write_timeout_ms, self->unwritten()));
    });
  }

  // The client does not take what we send (write deadline or backlog bound): abort its request in
  // the engine (KV freed within one step) and close; counted and logged like a disconnect (499).
  void drop_slow_reader(const std::string& why) {
    log::warn("slow reader dropped ({} {} {}): {}", log_entry_.id.empty() ? "-" : log_entry_.id,
              escape_for_log(method_, 16), escape_for_log(redact_secrets(target_), 100), why);
    slow_reader_ = why;
    if (job_ && !job_->done()) job_->abort();
    peer_gone_ = true;
    close();  // cancels the write and the watch read; their handlers find the session closed
    if (recorded_) {  // the response was complete (counted when it finished), not delivered
      write_log(DeliveryFailure::slow_reader);
      job_.reset();
    }  // otherwise the engine's final output follows within a step; on_notify counts it as 499
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    write_deadline_.cancel();
    sending_.clear();
    written_ = 0;
    last_write_ = Clock::now();
    if (ec) {
      // The client is gone: stop the engine's work for it.
      if (job_ && !job_->done()) job_->abort();
      peer_gone_ = true;
      close();
      if (recorded_) {  // a complete response the client did not take
        write_log(slow_reader_.empty() ? DeliveryFailure::connection_gone : DeliveryFailure::slow_reader);
        job_.reset();
      }
      return;
    }
    if (!pending_.empty()) return flush();
    if (phase_ == Phase::responding) after_response();
  }

  // A new request on this connection: its log fields; it is neither counted nor logged yet.
  void begin_request(RequestLogEntry entry) {
    log_entry_ = std::move(entry);
    recorded_ = false;
    logged_ = false;
    slow_reader_.clear();
  }

  // Once per request, as soon as its status is final and before the response goes out (so that
  // /metrics shows it by the time the client has read it): llaisys_http_requests_total and, for a
  // job, its model's metrics and log fields. 499: the client went away (or stopped reading) before
  // the request finished.
  void record(int status) {
    if (recorded_) return;
    recorded_ = true;
    log_entry_.status = status;
    app_.count_http(status);
    if (job_) job_->finish(status, log_entry_);
    if (!slow_reader_.empty()) log_entry_.finish = "dropped as a slow reader: " + slow_reader_;
  }

  enum class DeliveryFailure { none, connection_gone, slow_reader };

  // Once per request, when its response was delivered or could not be: the log line (a finished
  // response that did not reach the client says so; it is counted as it finished).
  void write_log(DeliveryFailure failure = DeliveryFailure::none) {
    if (logged_) return;
    logged_ = true;
    if (failure != DeliveryFailure::none && log_entry_.status != 499) {
      log_entry_.finish += failure == DeliveryFailure::slow_reader ? " (not delivered: slow reader: " + slow_reader_ + ")"
                                                                   : std::string(" (not delivered: connection gone)");
    }
    log_entry_.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - started_).count();
    // Probes and scrapes (a load balancer checks /ready every second) would drown the requests.
    if (monitoring_) {
      log::debug("{}", format_log_line(log_entry_));
    } else {
      log::info("{}", format_log_line(log_entry_));
    }
  }

  void after_response() {
    write_log();
    ticket_.release();
    job_.reset();
    if (peer_gone_) return close();
    // A watch read may be outstanding (a job's response): one read at a time, so no lingering then.
    if (!keep_alive_ || app_.drain().draining()) return watching_ ? close() : enter(Phase::lingering);
    if (watching_) {  // read_header() once the watch read has ended; meanwhile the idle deadline runs
      enter(Phase::reading_header);
      next_after_watch_ = true;
      beast::error_code ignored;
      socket_.cancel(ignored);  // the watch read ends; its handler reads the next request
      return;
    }
    read_header();
  }

  // ---- jobs
  // The drain timeout passed with this request in flight: its job ends with an error that says so.
  // A job that has not started yet (its request is on the worker pool) is cut as it starts.
  void cut() {
    cut_ = true;
    if (job_ && !job_->done() && phase_ != Phase::responding) job_->shut_down();
  }

  void start_job(std::unique_ptr<Job> job) {
    job_ = std::move(job);
    if (cut_) job_->shut_down();
    streaming_ = job_->streaming();
    enter(Phase::handling);
    watch();
    if (streaming_) {
      if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the stream ends with the connection
      log_entry_.status = 200;
      send_raw(response_head({.status = 200,
                              .content_type = "text/event-stream",
                              .chunked = chunked_,
                              .event_stream = true,
                              .cors = cors_fields(origin_),
                              .close = !keep_alive_}),
               false);
      enter(Phase::streaming);
    }
    on_notify();
  }

  void on_notify() {
    if (!job_ || phase_ == Phase::responding || closed()) return;
    std::string bytes = job_->poll();
    if (streaming_ && !bytes.empty()) pending_ += framed(bytes);
    if (streaming_ && !closed() && !job_->done() &&
        static_cast<int64_t>(unwritten()) > std::max<int64_t>(config_.max_stream_backlog_bytes, 4096)) {
      return drop_slow_reader(fmt::format("{} unwritten stream bytes exceed --max-stream-backlog-bytes {}", unwritten(),
                                          config_.max_stream_backlog_bytes));
    }
    if (job_->done()) {
      if (streaming_ && chunked_) pending_ += kLastChunk;
      // 499: the client closed the connection (as nginx logs it)
      record(peer_gone_ ? 499 : streaming_ ? 200 : job_->status());
      if (peer_gone_) {
        write_log();
        job_.reset();
        return close();
      }
      if (!streaming_) {
        std::string body = job_->body();
        pending_ += response_head({.status = job_->status(),
                                   .content_type = "application/json",
                                   .content_length = body.size(),
                                   .cors = cors_fields(origin_),
                                   .close = !keep_alive_});
        pending_ += body;
      }
      enter(Phase::responding);
    }
    flush();
  }

  std::string framed(std::string_view bytes) const { return chunked_ ? http_chunk(bytes) : std::string(bytes); }

  void arm_keepalive() {
    if (config_.sse_keepalive_ms <= 0) return;
    keepalive_.expires_after(std::chrono::milliseconds(config_.sse_keepalive_ms));
    keepalive_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->job_ || self->phase_ != Phase::streaming) return;
      const auto idle = Clock::now() - self->last_write_;
      if (!self->writing_ && idle >= std::chrono::milliseconds(self->config_.sse_keepalive_ms) - std::chrono::milliseconds(5)) {
        self->pending_ += self->framed(kSseKeepAlive);
        self->flush();
      }
      self->arm_keepalive();
    });
  }

  // The engine's notifier holds the session weakly; the watch read, the writes and the SSE
  // keep-alive timer hold it strongly, but none may be pending (a pipelined request filling the
  // read buffer stops the watch, a non-streamed job writes nothing until it ends). This timer keeps
  // the session alive while its job runs, so such a job is answered instead of destroyed (499).
  void hold_while_job() {
    hold_.expires_after(std::chrono::seconds(1));
    hold_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec && self->job_ && !self->closed()) self->hold_while_job();
    });
  }

  // A read kept outstanding while a job runs: EOF or an error means the client went away.
  void watch() {
    if (watching_ || buffer_.size() >= kPipelineLimit) return;
    watching_ = true;
    socket_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->on_watch(ec, n);
    });
  }

  void on_watch(beast::error_code ec, std::size_t n) {
    watching_ = false;
    if (!ec) buffer_.commit(n);
    const bool gone = ec && ec != net::error::operation_aborted;
    if (gone && ec == net::error::eof && job_ && !job_->done() && !closed() && can_probe()) {
      // The client shut down its sending side after a complete request (HTTP allows it) or closed
      // the connection: only a write tells them apart (a closed peer answers data with a reset).
      half_closed_ = true;
      keep_alive_ = false;  // nothing more will come from this client
      return probe_peer(0);
    }
    if (gone) {
      peer_gone_ = true;
      if (job_ && !job_->done()) {
        job_->abort();  // the final output follows within one engine step; on_notify then closes
        return;
      }
      if (!writing_) close();
      return;
    }
    if (next_after_watch_) {
      next_after_watch_ = false;
      return read_header();
    }
    if (job_ && !closed()) watch();
  }

  // After EOF with a request in flight: bytes the client's parser skips (an SSE comment once the
  // stream's head is out, else an interim 100 Continue, which HTTP/1.1 clients must accept unasked),
  // written at once and again kProbeDelays later. A peer that closed resets the connection at the
  // first, so a later write fails and the request is aborted as a disconnect; a peer that only
  // half-closed takes them and gets its response. HTTP/1.0 gets no interim response: there EOF
  // stays a disconnect.
  static constexpr std::array<int, 3> kProbeDelaysMs = {0, 50, 500};
  bool can_probe() const { return streaming_ || chunked_; }  // a stream's head is out at start_job
  void probe_peer(std::size_t index) {
    if (closed() || !job_ || phase_ == Phase::responding || index >= kProbeDelaysMs.size()) return;
    probe_.expires_after(std::chrono::milliseconds(kProbeDelaysMs[index]));
    probe_.async_wait([self = shared_from_this(), index](beast::error_code ec) {
      if (ec || self->closed() || !self->job_ || self->phase_ == Phase::responding) return;
      self->pending_ += self->streaming_ ? self->framed(kSseKeepAlive) : std::string(kInterimContinue);
      self->flush();
      self->probe_peer(index + 1);
    });
  }

  tcp::socket socket_;
  net::steady_timer deadline_;
  net::steady_timer keepalive_;
  net::steady_timer write_deadline_;
  net::steady_timer hold_;
  net::steady_timer probe_;     // half-close probes (probe_peer)
  ServerApp& app_;
  const ServerConfig& config_;
  std::shared_ptr<ConnectionGate> gate_;
  std::string client_;          // the peer's address (per-client connection count)
  WorkerExecutor workers_;      // where POST requests are handled (off the I/O threads)
  int64_t body_reserved_ = 0;   // this request's share of --max-body-bytes-in-flight
  bool health_only_ = false;    // admitted on a reserved slot: GET /health, /ready or /metrics, then close
  bool crowded_ = false;        // admitted over --max-pending-heads-per-client: a short first deadline

  // Bounded: bytes read but not yet parsed (a header, a chunk-size line, pipelined requests) never
  // exceed this; a chunk line without end fails the read instead of growing without limit.
  beast::flat_buffer buffer_{kHeaderLimit + kReadSlack};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string pending_, sending_;
  std::unique_ptr<Job> job_;
  RequestLogEntry log_entry_;
  std::string method_, target_, origin_;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_write_ = Clock::now();
  int64_t requests_ = 0;
  bool timed_out_ = false;
  bool keep_alive_ = true;
  bool head_ = false;
  bool monitoring_ = false;  // GET /health, /ready or /metrics: logged at debug level
  bool chunked_ = true;  // the request is HTTP/1.1 (a stream may use chunked encoding)
  bool writing_ = false;
  bool streaming_ = false;
  bool watching_ = false;
  bool next_after_watch_ = false;
  bool peer_gone_ = false;
  bool half_closed_ = false;  // EOF read with a request in flight (probe_peer tells a close from it)
  Phase phase_ = Phase::reading_header;
  bool connection_released_ = false;  // given back to the gate (lingering, or the end)
  bool recorded_ = false;  // the current request is counted (record)
  bool logged_ = false;    // ... and its log line written (write_log)
  uint64_t write_generation_ = 0;
  std::size_t written_ = 0;  // bytes of sending_ already written
  std::string slow_reader_;  // why the connection was dropped as a slow reader (for the log line)
  Drain::Ticket ticket_;     // the current request, in flight for the drain (drain.hpp)
  bool cut_ = false;         // ... and cut at the drain timeout
};

}  // namespace

void start_session(tcp::socket socket, ServerApp& app, const ServerConfig& config, std::shared_ptr<ConnectionGate> gate,
                   std::string client, ConnectionGate::Verdict verdict, WorkerExecutor workers) {
  std::make_shared<Session>(std::move(socket), app, config, std::move(gate), std::move(client), std::move(workers))
      ->start(verdict);
}

}  // namespace llaisys::server
