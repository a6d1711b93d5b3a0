// llaisys-server: an OpenAI-compatible HTTP server (Boost.Beast) over llaisys models. See docs/SERVER.md.

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <malloc.h>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "app_log.hpp"
#include "http/listener.hpp"
#include "llaisys/core/log.hpp"
#include "model_router.hpp"
#include "server_app.hpp"
#include "server_config.hpp"

int main(int argc, char** argv) {
  using namespace llaisys::server;
  namespace net = boost::asio;
  // glibc serves allocations above M_MMAP_THRESHOLD with mmap and gives them back on free, but by
  // default raises that threshold to the size of each large block freed (up to 32 MiB): after a
  // burst of large request bodies (their JSON, token arrays, prompts) the same sizes come from the
  // heap and stay there, fragmented. Measured: 8 concurrent 28 MB bodies left RSS 100 MB above idle
  // per round, growing (203 -> 302 -> 389 MB); with the threshold fixed, back to idle (199 -> 199).
  // Setting it explicitly turns the adjustment off; nothing on the serving path allocates blocks
  // this large per token.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ServerConfig config;
  if (auto code = parse_command_line(argc, argv, config)) return *code;
  llaisys::app::init_logging(config.log_level);

  // The models outlive the io_context: the sessions still waiting in its queues when it is
  // destroyed finish their jobs into the models' metrics (router.shutdown() has stopped the engines
  // by then, so no notifier posts to a destroyed io_context).
  ModelRouter router(config.models);
  ServerApp app(config, router);
  net::io_context io(config.threads);
  // POST requests are handled here (template rendering, tokenization), off the I/O threads. Joined
  // below before the io_context goes: a task posts its reply back to a session's strand.
  net::thread_pool workers(static_cast<std::size_t>(config.worker_threads));
  auto listener = std::make_shared<Listener>(io, app, config, workers.get_executor());
  auto port = listener->listen(config.host, static_cast<uint16_t>(config.port));
  if (!port.ok()) {
    fmt::print(stderr, "error: {}\n", port.status().message());
    return 1;
  }
  listener->start();
  const std::string host = config.host.find(':') != std::string::npos ? "[" + config.host + "]" : config.host;
  fmt::print(stderr, "llaisys-server listening on http://{}:{}\n", host, *port);
  std::fflush(stderr);

  std::atomic<int> exit_code{0};
  router.start_loading(config.plugin_dir, config.device, [&](const llaisys::Status& status) {
    fmt::print(stderr, "error: {}\n", status.message());
    exit_code = 1;
    io.stop();
  });

  // SIGHUP (a closed terminal, a reload by habit) would end the process silently: it reloads nothing,
  // so it is logged and otherwise ignored.
  net::signal_set hangups(io, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_hangup = [&](const boost::system::error_code& ec,
                                                                                int) {
    if (ec) return;
    llaisys::log::warn("SIGHUP received: ignored (llaisys-server reloads nothing; restart it to change its configuration)");
    hangups.async_wait(on_hangup);
  };
  hangups.async_wait(on_hangup);

  // Graceful shutdown (drain.hpp): the first SIGTERM/SIGINT drains, the server exits 0 once nothing
  // is in flight; at --drain-timeout what is still running is cut (a clean end), and after
  // kCutGrace the server exits whatever is left (a client that does not read its error). A second
  // signal exits at once, cutting everything (exit code 1).
  constexpr auto kCutGrace = std::chrono::seconds(5);
  net::signal_set signals(io, SIGINT, SIGTERM);
  net::steady_timer drain_timer(io);
  auto stop = [&] {
    net::post(io, [&] {
      listener->stop();
      hangups.cancel();
      signals.cancel();
      drain_timer.cancel();
      io.stop();
    });
  };
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec,
                                                                               int signo) {
    if (ec) return;
    const char* name = signo == SIGINT ? "SIGINT" : "SIGTERM";
    Drain& drain = app.drain();
    if (drain.draining()) {
      llaisys::log::warn("{} again: exiting now, cutting {} requests in flight", name, drain.in_flight());
      exit_code = 1;
      listener->stop();
      io.stop();
      return;
    }
    llaisys::log::info("{}: draining ({} requests in flight; --drain-timeout {}s; /ready is 503, new requests get 503; "
                       "a second signal exits at once)", name, drain.in_flight(), config.drain_timeout_s);
    signals.async_wait(on_signal);
    drain_timer.expires_after(std::chrono::seconds(config.drain_timeout_s));
    drain_timer.async_wait([&](const boost::system::error_code& e) {
      if (e) return;
      llaisys::log::warn("drain timeout ({}s): cutting {} requests in flight", config.drain_timeout_s, drain.cut_all());
      drain_timer.expires_after(kCutGrace);
      drain_timer.async_wait([&](const boost::system::error_code& e2) {
        if (e2) return;
        llaisys::log::warn("exiting with {} requests not fully answered {}s after the cut", drain.in_flight(),
                           kCutGrace.count());
        stop();
      });
    });
    drain.begin([&] {
      llaisys::log::info("drained: nothing in flight, exiting");
      stop();
    });
  };
  signals.async_wait(on_signal);
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<std::thread> threads;
  for (int i = 1; i < config.threads; ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (std::thread& t : threads) t.join();
  workers.join();
  router.shutdown();
  return exit_code.load();
}
