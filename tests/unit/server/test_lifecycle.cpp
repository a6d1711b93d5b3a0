// The server's lifecycle as routers and orchestrators see it: liveness and readiness, the graceful
// drain's bookkeeping (drain.hpp) and refusals, and the metrics a router or autoscaler reads under
// llaisys' and vLLM's names. The drain's end-to-end behaviour (signals, cut streams, exit codes) is
// tests/e2e/server/suites/drain.test.mjs.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "drain.hpp"
#include "metrics.hpp"
#include "model_router.hpp"
#include "server_app.hpp"
#include "server_config.hpp"

using namespace llaisys;
using namespace llaisys::server;

namespace {

struct App {
  ServerConfig config;
  ModelRouter router{{ModelSpec{.name = "mock", .path = "/nonexistent/mock"}}};  // never loaded
  ServerApp app{config, router};

  Reply call(std::string_view method, std::string_view target, std::string_view body = {}) {
    return app.handle({.method = method, .target = target, .body = body}, [] {});
  }
};

std::string status_of(const Reply& reply) {
  return std::string(boost::json::parse(reply.body).at("status").as_string());
}

std::string header(const Reply& reply, std::string_view name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return "(none)";
}

// The value of the one sample line `series` (name and labels exactly), or NaN.
double sample(const std::string& text, const std::string& series) {
  const std::string prefix = series + " ";
  std::size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      const std::size_t end = text.find('\n', at);
      return std::stod(text.substr(at + prefix.size(), end - at - prefix.size()));
    }
    ++at;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

TEST_CASE("drain: tickets count requests in flight, begin runs on_idle once, when the last is released") {
  Drain drain;
  int idle = 0;
  int cuts = 0;
  {
    Drain::Ticket a = drain.admit([&] { ++cuts; });
    Drain::Ticket b = drain.admit([&] { ++cuts; });
    CHECK(drain.in_flight() == 2);
    CHECK_FALSE(drain.draining());
    CHECK(drain.begin([&] { ++idle; }));
    CHECK(drain.draining());
    CHECK_FALSE(drain.begin([&] { idle += 100; }));  // the second signal does not restart it
    a.release();
    a.release();  // released once only
    CHECK(drain.in_flight() == 1);
    CHECK(idle == 0);
    CHECK(drain.cut_all() == 1);
    CHECK(cuts == 1);
    CHECK(drain.cut_all() == 0);  // each cut runs at most once
    Drain::Ticket moved = std::move(b);
    CHECK(drain.in_flight() == 1);
  }  // `moved` released here
  CHECK(drain.in_flight() == 0);
  CHECK(idle == 1);
  Drain::Ticket late = drain.admit({});
  late.release();
  CHECK(idle == 1);  // on_idle ran once
}

TEST_CASE("drain: begin with nothing in flight is idle at once, tickets released from many threads") {
  Drain quiet;
  int idle = 0;
  CHECK(quiet.begin([&] { ++idle; }));
  CHECK(idle == 1);

  Drain busy;
  std::atomic<int> busy_idle{0};
  std::vector<Drain::Ticket> tickets;
  for (int i = 0; i < 400; ++i) tickets.push_back(busy.admit({}));
  busy.begin([&] { ++busy_idle; });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&tickets, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < tickets.size(); i += 4) tickets[i].release();
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(busy.in_flight() == 0);
  CHECK(busy_idle.load() == 1);
}

TEST_CASE("lifecycle: /health is liveness, /ready is readiness: loading, then draining") {
  App a;
  const Reply health = a.call("GET", "/health");
  CHECK(health.status == 200);
  CHECK(status_of(health) == "loading");
  const Reply ready = a.call("GET", "/ready");
  CHECK(ready.status == 503);
  CHECK(status_of(ready) == "loading");
  CHECK_FALSE(a.app.ready());

  a.app.drain().begin([] {});
  CHECK(a.call("GET", "/health").status == 200);
  CHECK(status_of(a.call("GET", "/health")) == "draining");
  const Reply draining = a.call("HEAD", "/ready");
  CHECK(draining.status == 503);
  CHECK(status_of(draining) == "draining");
  CHECK(header(draining, "Retry-After") == "1");
}

TEST_CASE("lifecycle: while draining, every route but the monitoring ones is 503 with Retry-After") {
  App a;
  const Reply before = a.call("POST", "/v1/chat/completions", R"({"model":"mock","messages":[]})");
  CHECK(before.status == 503);  // the model loads: also 503, but saying so
  CHECK(boost::json::parse(before.body).at("error").at("message").as_string().find("loading") != std::string::npos);
  CHECK(a.call("GET", "/v1/models").status == 200);

  a.app.drain().begin([] {});
  for (auto [method, target] : {std::pair{"GET", "/v1/models"}, {"POST", "/v1/chat/completions"},
                                {"POST", "/v1/completions"}, {"POST", "/v1/responses"}, {"POST", "/v1/embeddings"},
                                {"POST", "/tokenize"}, {"GET", "/"}, {"GET", "/index.html"}, {"POST", "/nope"}}) {
    INFO(method << " " << target);
    const Reply r = a.call(method, target, R"({"model":"mock"})");
    CHECK(r.status == 503);
    CHECK(header(r, "Retry-After") == "1");
    const auto error = boost::json::parse(r.body).at("error");
    CHECK(error.at("code").as_string() == "service_unavailable");
    CHECK(error.at("message").as_string().find("shutting down") != std::string::npos);
  }
  CHECK(a.call("GET", "/metrics").status == 200);
  CHECK(a.call("GET", "/health").status == 200);
  const std::string metrics = a.call("GET", "/metrics").body;
  CHECK(sample(metrics, "llaisys_server_draining") == 1);
}

TEST_CASE("metrics: the Model Server Protocol's series under vLLM's names equal llaisys' own") {
  ModelMetrics m;
  m.add_tokens(40, 12, 16);
  m.observe_ttft(0.02);
  EngineStats stats;
  stats.num_running_seqs = 5;
  stats.num_waiting_seqs = 7;
  stats.kv.block_size = 16;
  stats.kv.num_blocks = 200;
  stats.kv.num_free_blocks = 120;
  stats.kv.num_evictable_blocks = 30;
  stats.kv.num_evicted_blocks = 9;
  stats.prefix_query_tokens = 640;
  stats.prefix_hit_tokens = 480;
  stats.num_preemptions = 3;
  const std::string text =
      render_prometheus({{.model = "q", .metrics = m.snapshot(), .engine = stats}, {.model = "loading", .metrics = {}}},
                        {{200, 4}}, {.draining = false, .requests_in_flight = 6});
  // TotalQueuedRequests, TotalRunningRequests, KVCacheUtilization (0-1: pinned blocks), BlockSize,
  // NumGPUBlocks; prefix cache queries/hits in tokens.
  const std::map<std::string, double> expected = {
      {"llaisys_requests_waiting{model=\"q\"}", 7},         {"vllm:num_requests_waiting{model_name=\"q\"}", 7},
      {"llaisys_requests_running{model=\"q\"}", 5},         {"vllm:num_requests_running{model_name=\"q\"}", 5},
      {"llaisys_kv_cache_usage_ratio{model=\"q\"}", 0.25},  {"vllm:kv_cache_usage_perc{model_name=\"q\"}", 0.25},
      {"vllm:gpu_cache_usage_perc{model_name=\"q\"}", 0.25}, {"llaisys_kv_block_size{model=\"q\"}", 16},
      {"llaisys_kv_blocks_cached{model=\"q\"}", 30},         {"llaisys_kv_evicted_blocks_total{model=\"q\"}", 9},
      {"llaisys_prefix_cache_queries_total{model=\"q\"}", 640}, {"vllm:prefix_cache_queries_total{model_name=\"q\"}", 640},
      {"llaisys_prefix_cache_hits_total{model=\"q\"}", 480}, {"vllm:prefix_cache_hits_total{model_name=\"q\"}", 480},
      {"llaisys_preemptions_total{model=\"q\"}", 3},         {"vllm:num_preemptions_total{model_name=\"q\"}", 3},
      {"vllm:prompt_tokens_total{model_name=\"q\"}", 40},    {"vllm:generation_tokens_total{model_name=\"q\"}", 12},
      {"vllm:time_to_first_token_seconds_count{model_name=\"q\"}", 1},
      {"vllm:num_requests_waiting{model_name=\"loading\"}", 0},
      {"vllm:cache_config_info{model_name=\"q\",block_size=\"16\",num_gpu_blocks=\"200\"}", 1},
      {"llaisys_server_draining", 0},                        {"llaisys_http_requests_in_flight", 6},
  };
  for (const auto& [series, value] : expected) {
    INFO(series);
    CHECK(sample(text, series) == Approx(value));
  }
  // The loading model has no KV cache yet: no cache_config_info line for it.
  CHECK(text.find("vllm:cache_config_info{model_name=\"loading\"") == std::string::npos);
  // Gauges and counters are typed as the protocol says.
  for (const char* gauge : {"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                            "vllm:cache_config_info", "llaisys_server_draining"}) {
    CHECK(text.find(std::string("# TYPE ") + gauge + " gauge\n") != std::string::npos);
  }
  for (const char* counter : {"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                              "llaisys_prefix_cache_queries_total", "vllm:num_preemptions_total"}) {
    CHECK(text.find(std::string("# TYPE ") + counter + " counter\n") != std::string::npos);
  }
}

TEST_CASE("metrics: speculative decoding's drafts and acceptance per model and method") {
  EngineStats speculating;
  speculating.num_draft_tokens = 200;
  speculating.num_accepted_draft_tokens = 150;
  speculating.speculative_method = "draft";
  speculating.num_draft_kv_blocks_used = 12;
  const std::string text = render_prometheus(
      {{.model = "s", .metrics = {}, .engine = speculating}, {.model = "plain", .metrics = {}, .engine = EngineStats{}}}, {},
      {});
  CHECK(sample(text, "llaisys_spec_decode_draft_tokens_total{model=\"s\",method=\"draft\"}") == 200);
  CHECK(sample(text, "llaisys_spec_decode_accepted_tokens_total{model=\"s\",method=\"draft\"}") == 150);
  CHECK(sample(text, "llaisys_spec_decode_acceptance_ratio{model=\"s\",method=\"draft\"}") == Approx(0.75));
  CHECK(sample(text, "llaisys_spec_decode_draft_kv_blocks_used{model=\"s\",method=\"draft\"}") == 12);
  CHECK(sample(text, "vllm:spec_decode_num_draft_tokens_total{model_name=\"s\"}") == 200);
  CHECK(sample(text, "vllm:spec_decode_num_accepted_tokens_total{model_name=\"s\"}") == 150);
  // A model that does not speculate has no method, so no llaisys_spec_decode sample.
  CHECK(text.find("llaisys_spec_decode_draft_tokens_total{model=\"plain\"") == std::string::npos);
  CHECK(text.find("# TYPE llaisys_spec_decode_draft_tokens_total counter\n") != std::string::npos);
  CHECK(text.find("# TYPE llaisys_spec_decode_acceptance_ratio gauge\n") != std::string::npos);
}

namespace {

// parse_command_line on `llaisys-server --config FILE --model m=/x ARGS...` with `toml` in FILE.
std::pair<std::optional<int>, ServerConfig> parse_with(const std::string& toml, std::vector<std::string> args = {}) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / fmt::format("llaisys-lifecycle-{}.toml", ::getpid());
  std::ofstream(file) << toml;
  args.insert(args.begin(), {"llaisys-server", "--config", file.string(), "--model", "m=/x"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ServerConfig config;
  auto code = parse_command_line(static_cast<int>(argv.size()), argv.data(), config);
  std::filesystem::remove(file);
  return {code, std::move(config)};
}

}  // namespace

TEST_CASE("config: --drain-timeout and speculative decoding, from flags and the file") {
  CHECK(parse_with("[server]\n").second.drain_timeout_s == 30);
  CHECK(parse_with("[server]\ndrain_timeout = 5\n").second.drain_timeout_s == 5);
  CHECK(parse_with("[server]\n", {"--drain-timeout", "0"}).second.drain_timeout_s == 0);
  CHECK(parse_with("[server]\ndrain_timeout = -1\n").first == 2);
  CHECK(parse_with("[server]\ndrain_timeout = 86401\n").first == 2);

  const auto spec = parse_with("[server]\nspeculative = { method = \"ngram\", num_tokens = 6 }\n");
  REQUIRE_FALSE(spec.first.has_value());
  CHECK(spec.second.engine.speculative == "ngram");
  CHECK(spec.second.engine.num_speculative_tokens == 6);
  const auto flags = parse_with("[server]\n", {"--speculative", "ngram", "--num-speculative-tokens", "3"});
  REQUIRE_FALSE(flags.first.has_value());
  CHECK(flags.second.engine.speculative == "ngram");
  CHECK(flags.second.engine.num_speculative_tokens == 3);
  const auto draft = parse_with("[server]\nspeculative = { method = \"draft\", model = \"/m/small\", num_tokens = 5 }\n");
  REQUIRE_FALSE(draft.first.has_value());
  CHECK(draft.second.engine.speculative == "draft:/m/small");
  CHECK(app::draft_model_dir(draft.second.engine) == "/m/small");
  const auto draft_flag = parse_with("[server]\n", {"--speculative", "draft:/m/tiny"});
  REQUIRE_FALSE(draft_flag.first.has_value());
  CHECK(app::draft_model_dir(draft_flag.second.engine) == "/m/tiny");
  CHECK(app::draft_model_dir(flags.second.engine).empty());
  for (const char* bad : {"speculative = \"ngram\"\n", "speculative = { method = \"eagle\" }\n",
                          "speculative = { method = \"ngram\", num_tokens = 0 }\n",
                          "speculative = { method = \"ngram\", tokens = 4 }\n",
                          "speculative = { method = \"draft\" }\n", "speculative = { method = \"draft:\" }\n",
                          "speculative = { method = \"ngram\", model = \"/m/small\" }\n"}) {
    INFO(bad);
    CHECK(parse_with(std::string("[server]\n") + bad).first == 2);
  }
  CHECK(parse_with("[[model]]\nname = \"m2\"\npath = \"/y\"\nspeculative = { method = \"bogus\" }\n").first == 2);
}
