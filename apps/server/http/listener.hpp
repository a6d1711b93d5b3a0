#pragma once
// Accepts connections on the I/O threads; each connection gets its own strand. Beyond
// --max-connections, or --max-connections-per-client from one address, a connection is answered
// 503 and closed (http/connection_gate.hpp).

#include <memory>
#include <string>

#include <boost/asio.hpp>

#include "http/connection_gate.hpp"
#include "server_app.hpp"
#include "server_config.hpp"

namespace llaisys::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(boost::asio::io_context& io, ServerApp& app, const ServerConfig& config,
           boost::asio::thread_pool::executor_type workers);
  // Binds and listens; returns the bound port.
  Result<uint16_t> listen(const std::string& host, uint16_t port);
  void start();
  void stop();

 private:
  void accept();

  boost::asio::io_context& io_;
  static constexpr int kAcceptRetryMs = 100;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // after a failed accept
  ServerApp& app_;
  const ServerConfig& config_;
  std::shared_ptr<ConnectionGate> gate_;
  boost::asio::thread_pool::executor_type workers_;
};

}  // namespace llaisys::server
