#pragma once
// One HTTP/1.1 connection: keep-alive, header/body/idle deadlines, body limit (413 from
// Content-Length before the body is read), CORS, and the driving of engine Jobs: SSE streaming
// with keep-alive comments, and a read kept outstanding while generating so that a client that
// goes away (EOF, reset) has its request aborted in the engine, streaming or not.

#include <atomic>
#include <memory>

#include <boost/asio.hpp>

#include "server_app.hpp"
#include "server_config.hpp"

namespace llaisys::server {

// Starts a session on an accepted socket (its executor must be a strand). `open_connections` is
// decremented when the session ends. With `over_capacity`, answers 503 and closes.
void start_session(boost::asio::ip::tcp::socket socket, ServerApp& app, const ServerConfig& config,
                   std::shared_ptr<std::atomic<int32_t>> open_connections, bool over_capacity);

}  // namespace llaisys::server
