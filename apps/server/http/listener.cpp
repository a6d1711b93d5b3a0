#include "http/listener.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "http/session.hpp"
#include "llaisys/core/log.hpp"

namespace llaisys::server {
namespace net = boost::asio;
using tcp = net::ip::tcp;

Listener::Listener(net::io_context& io, ServerApp& app, const ServerConfig& config,
                   net::thread_pool::executor_type workers)
    : io_(io),
      acceptor_(net::make_strand(io)),
      retry_(acceptor_.get_executor()),
      app_(app),
      config_(config),
      gate_(std::make_shared<ConnectionGate>(config)),
      workers_(std::move(workers)) {}

Result<uint16_t> Listener::listen(const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || results.empty()) return make_error(ErrorCode::invalid_argument, "cannot resolve --host {}: {}", host, ec.message());
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return make_error(ErrorCode::io_error, "cannot listen on {}:{}: {}", host, port, ec.message());
  return acceptor_.local_endpoint().port();
}

void Listener::start() { accept(); }

void Listener::stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->acceptor_.close(ec);
    self->retry_.cancel();
  });
}

void Listener::accept() {
  acceptor_.async_accept(net::make_strand(io_), [self = shared_from_this()](boost::system::error_code ec,
                                                                            tcp::socket socket) {
    if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) return;
    if (!ec) {
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (self->config_.socket_send_buffer_bytes > 0) {
        const auto bytes = static_cast<int>(std::min<int64_t>(self->config_.socket_send_buffer_bytes, 1 << 30));
        socket.set_option(net::socket_base::send_buffer_size(bytes), ignored);
      }
      std::string client = socket.remote_endpoint(ignored).address().to_string();
      const ConnectionGate::Verdict verdict = self->gate_->admit_connection(client);
      start_session(std::move(socket), self->app_, self->config_, self->gate_, std::move(client), verdict,
                    self->workers_);
    } else {
      // Out of file descriptors (EMFILE / ENFILE) or memory, the pending connection stays in the
      // backlog and an immediate retry fails again at once: 100% CPU and a log flood. Retry after
      // a pause (connections finishing meanwhile free descriptors); one warning per pause.
      log::warn("accept failed: {}; retrying in {} ms", ec.message(), kAcceptRetryMs);
      self->retry_.expires_after(std::chrono::milliseconds(kAcceptRetryMs));
      self->retry_.async_wait([self](boost::system::error_code wait_ec) {
        if (!wait_ec && self->acceptor_.is_open()) self->accept();
      });
      return;
    }
    self->accept();
  });
}

}  // namespace llaisys::server
