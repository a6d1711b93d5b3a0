#pragma once
// One HTTP/1.1 connection: keep-alive, header/body/idle deadlines, body limit (413 from
// Content-Length before the body is read), CORS, and the driving of engine Jobs: SSE streaming
// with keep-alive comments, and a read kept outstanding while generating so that a client that
// goes away (EOF, reset) has its request aborted in the engine, streaming or not.

#include <memory>
#include <string>

#include <boost/asio.hpp>

#include "http/connection_gate.hpp"
#include "server_app.hpp"
#include "server_config.hpp"

namespace llaisys::server {

// Starts a session on an accepted socket (its executor must be a strand) from `client` (its address),
// admitted with `verdict`: anything but admitted is answered 503 and closed. The session releases its
// connection (and any body reservation) in `gate` when it ends. POST requests are handled on
// `workers`, the rest on the session's strand.
// The worker pool's executor: POST requests (template rendering, tokenization) are handled there.
using WorkerExecutor = boost::asio::thread_pool::executor_type;

void start_session(boost::asio::ip::tcp::socket socket, ServerApp& app, const ServerConfig& config,
                   std::shared_ptr<ConnectionGate> gate, std::string client, ConnectionGate::Verdict verdict,
                   WorkerExecutor workers);

}  // namespace llaisys::server
