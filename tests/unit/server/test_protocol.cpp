// The transport-free pieces of llaisys-server: auth, SSE/chunk framing, the tool-call parser,
// Prometheus text, TOML/CLI config, log-line escaping and the routes (on a model that never loads).

#include <boost/json.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <utility>
#include <optional>
#include <cstdlib>
#include <sstream>
#include <regex>

#include <catch2/catch.hpp>

#include "auth.hpp"
#include "http/connection_gate.hpp"
#include "http/response_head.hpp"
#include "http/sse.hpp"
#include "metrics.hpp"
#include "model_router.hpp"
#include "openai/errors.hpp"
#include "openai/response.hpp"
#include "openai/tool_calls.hpp"
#include "request_log.hpp"
#include "server_app.hpp"
#include "server_config.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
using namespace llaisys::server;

TEST_CASE("constant_time_equal and authorized compare whole keys") {
  CHECK(constant_time_equal("secret", "secret"));
  CHECK_FALSE(constant_time_equal("secret", "secreT"));
  CHECK_FALSE(constant_time_equal("secret", "secret2"));
  CHECK_FALSE(constant_time_equal("", "x"));
  CHECK(constant_time_equal("", ""));
  const std::vector<std::string> keys = {"k1", "another-key"};
  CHECK(authorized({}, "", ""));
  CHECK(authorized(keys, "Bearer k1", ""));
  CHECK(authorized(keys, "Bearer another-key", ""));
  CHECK(authorized(keys, "", "k1"));
  CHECK_FALSE(authorized(keys, "Bearer k2", ""));
  CHECK(authorized(keys, "bearer k1", ""));    // the scheme is case-insensitive (RFC 9110)
  CHECK(authorized(keys, "BEARER  k1", ""));   // and may be followed by more than one space
  CHECK_FALSE(authorized(keys, "Bearer ", ""));
  CHECK_FALSE(authorized(keys, "Bearer   ", ""));
  CHECK_FALSE(authorized(keys, "Bearerk1", ""));
  CHECK_FALSE(authorized(keys, "", ""));
  CHECK_FALSE(authorized(keys, "Bearer k1x", ""));
  CHECK_FALSE(authorized(keys, "Basic k1", "k"));
}

TEST_CASE("SSE events and HTTP chunks are framed exactly") {
  CHECK(sse_data(R"({"a":1})") == "data: {\"a\":1}\n\n");
  CHECK(sse_data("x\ny") == "data: x\ndata: y\n\n");  // newlines never end an event early
  CHECK(sse_data("x\r\ny") == "data: x\ndata: y\n\n");
  CHECK(kSseDone == "data: [DONE]\n\n");
  CHECK(kSseKeepAlive.substr(0, 1) == ":");
  CHECK(http_chunk("hello") == "5\r\nhello\r\n");
  CHECK(http_chunk(std::string(300, 'a')) == "12c\r\n" + std::string(300, 'a') + "\r\n");
  CHECK(http_chunk("").empty());  // an empty chunk would end the body
}

namespace {
// Feeds `text` split at `cuts` and collects content and calls.
ToolParseResult feed_split(const std::string& text, std::vector<std::size_t> cuts) {
  ToolCallParser parser;
  ToolParseResult all;
  std::size_t start = 0;
  cuts.push_back(text.size());
  for (std::size_t cut : cuts) {
    all.append(parser.feed(std::string_view(text).substr(start, cut - start)));
    start = cut;
  }
  all.append(parser.finish());
  return all;
}
}  // namespace

TEST_CASE("tool calls are parsed at every split point") {
  const std::string text =
      "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  for (std::size_t a = 0; a <= text.size(); ++a) {
    for (std::size_t b = a; b <= text.size(); b += 7) {
      ToolParseResult r = feed_split(text, {a, b});
      INFO("splits " << a << ", " << b);
      REQUIRE(r.calls.size() == 2);
      CHECK(r.content == "Let me check.");
      CHECK(r.calls[0].name == "get_weather");
      CHECK(r.calls[0].arguments == R"({"city":"Paris"})");
      CHECK(r.calls[1].name == "get_time");
      CHECK(r.calls[1].arguments == "{}");
      CHECK(r.calls[0].id != r.calls[1].id);
      CHECK(r.calls[0].id.rfind("call_", 0) == 0);
      CHECK(r.call_offsets == std::vector<std::size_t>{13, 13});
    }
  }
}

TEST_CASE("each call's offset says where it came in the text") {
  const std::string call = "<tool_call>\n{\"name\": \"f\"}\n</tool_call>";
  const std::string text = "A" + call + "B" + call + "CD";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    ToolParseResult r = feed_split(text, {cut});
    INFO("split at " << cut);
    CHECK(r.content == "ABCD");
    REQUIRE(r.calls.size() == 2);
    CHECK(r.call_offsets == std::vector<std::size_t>{1, 2});
  }
}

TEST_CASE("text that is not a tool call comes back unchanged") {
  for (const std::string& text : {std::string("a < b and <tool is not a marker"), std::string("ends with <tool_ca"),
                                 std::string("<tool_call>not json</tool_call> after"),
                                 std::string("<tool_call>{\"arguments\": {}}</tool_call>"),
                                 std::string("unterminated <tool_call>{\"name\": \"f\""), std::string("")}) {
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      ToolParseResult r = feed_split(text, {cut});
      INFO(text << " split at " << cut);
      CHECK(r.calls.empty());
      CHECK(r.content == text);
    }
  }
}

TEST_CASE("an unterminated tool call with complete JSON is still a call") {
  ToolParseResult r = feed_split("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n", {5});
  REQUIRE(r.calls.size() == 1);
  CHECK(r.calls[0].name == "f");
  CHECK(r.calls[0].arguments == R"({"x":1})");
  CHECK(r.content.empty());
}

TEST_CASE("Prometheus text: cumulative buckets, label escaping, every series labelled") {
  ModelMetrics m;
  m.count_request(200);
  m.count_request(200);
  m.count_request(429);
  m.observe_ttft(0.003);
  m.observe_ttft(0.2);
  m.observe_ttft(100.0);
  m.add_tokens(10, 5, 4);
  EngineStats stats;
  stats.num_running_seqs = 3;
  stats.num_waiting_seqs = 2;
  stats.kv.num_blocks = 100;
  stats.kv.num_free_blocks = 60;
  stats.kv.num_evictable_blocks = 10;
  stats.prefix_query_tokens = 8;
  stats.prefix_hit_tokens = 2;
  const std::string text = render_prometheus({{.model = "a\"b", .metrics = m.snapshot(), .engine = stats},
                                              {.model = "loading", .metrics = {}, .engine = std::nullopt}});
  CHECK(text.find("llaisys_requests_total{model=\"a\\\"b\",status=\"200\"} 2\n") != std::string::npos);
  CHECK(text.find("llaisys_requests_total{model=\"a\\\"b\",status=\"429\"} 1\n") != std::string::npos);
  CHECK(text.find("llaisys_requests_running{model=\"a\\\"b\"} 3\n") != std::string::npos);
  CHECK(text.find("llaisys_requests_waiting{model=\"a\\\"b\"} 2\n") != std::string::npos);
  CHECK(text.find("llaisys_kv_blocks_used{model=\"a\\\"b\"} 30\n") != std::string::npos);
  CHECK(text.find("llaisys_kv_blocks_total{model=\"a\\\"b\"} 100\n") != std::string::npos);
  CHECK(text.find("llaisys_kv_cache_usage_ratio{model=\"a\\\"b\"} 0.3\n") != std::string::npos);
  CHECK(text.find("llaisys_prefix_cache_hit_ratio{model=\"a\\\"b\"} 0.25\n") != std::string::npos);
  CHECK(text.find("llaisys_cached_prompt_tokens_total{model=\"a\\\"b\"} 4\n") != std::string::npos);
  CHECK(text.find("llaisys_time_to_first_token_seconds_bucket{model=\"a\\\"b\",le=\"0.005\"} 1\n") != std::string::npos);
  CHECK(text.find("llaisys_time_to_first_token_seconds_bucket{model=\"a\\\"b\",le=\"0.25\"} 2\n") != std::string::npos);
  CHECK(text.find("llaisys_time_to_first_token_seconds_bucket{model=\"a\\\"b\",le=\"30\"} 2\n") != std::string::npos);
  CHECK(text.find("llaisys_time_to_first_token_seconds_bucket{model=\"a\\\"b\",le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("llaisys_time_to_first_token_seconds_count{model=\"a\\\"b\"} 3\n") != std::string::npos);
  CHECK(text.find("llaisys_kv_blocks_used{model=\"loading\"} 0\n") != std::string::npos);
  // Every sample line: name{labels} value, and every name has a TYPE line.
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(model|model_name|status)="[^\n]*\})? [-+0-9.eInf]+$)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#", 0) == 0) continue;
    std::smatch match;
    INFO(line);
    REQUIRE(std::regex_match(line, match, sample));
    std::string base = match[1];
    for (std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (base.size() > suffix.size() && base.ends_with(suffix) && base.find("_seconds") != std::string::npos) {
        base.resize(base.size() - suffix.size());
      }
    }
    CHECK(text.find("# TYPE " + base + " ") != std::string::npos);
  }
}

namespace {

RequestOutput delta_at(RequestTimes::TimePoint at, std::vector<std::size_t> tokens_per_choice) {
  RequestOutput out;
  out.times.last_token = at;
  for (std::size_t i = 0; i < tokens_per_choice.size(); ++i) {
    ChoiceDelta c;
    c.index = static_cast<int32_t>(i);
    c.token_ids.assign(tokens_per_choice[i], 7);
    out.choices.push_back(std::move(c));
  }
  return out;
}

}  // namespace

TEST_CASE("inter-token latency: one observation per token after the first, timed by the engine") {
  using std::chrono::milliseconds;
  const RequestTimes::TimePoint t0{std::chrono::seconds(1000)};
  ModelMetrics m;
  TokenGapTracker gaps;
  CHECK(gaps.observe(delta_at(t0, {1}), m) == 0);                       // the first token: TTFT, no gap
  CHECK(gaps.observe(delta_at(t0 + milliseconds(12), {1}), m) == 1);    // 12 ms
  CHECK(gaps.observe(delta_at(t0 + milliseconds(42), {1, 1}), m) == 1); // n=2: one step, one gap of 30 ms
  CHECK(gaps.observe(delta_at(t0 + milliseconds(50), {}), m) == 0);     // no new tokens (a finish delta)
  CHECK(gaps.observe(delta_at(t0 + milliseconds(122), {2, 1}), m) == 2); // two tokens in 80 ms: 2 x 40 ms
  CHECK(gaps.observe(delta_at(RequestTimes::TimePoint{}, {1}), m) == 0); // untimed: ignored
  const Histogram& itl = m.snapshot().itl;
  CHECK(itl.count() == 4);
  CHECK(itl.sum() == Approx(0.012 + 0.030 + 0.040 + 0.040));
  // Buckets (le): 0.015 holds the 12 ms gap, 0.03 the 30 ms one, 0.04 the two 40 ms ones.
  const auto bucket = [&](double le) {
    const auto& b = itl.bounds();
    return itl.counts()[static_cast<std::size_t>(std::find(b.begin(), b.end(), le) - b.begin())];
  };
  CHECK(bucket(0.015) == 1);
  CHECK(bucket(0.03) == 1);
  CHECK(bucket(0.04) == 2);
  // A second request starts its own clock.
  TokenGapTracker other;
  CHECK(other.observe(delta_at(t0 + milliseconds(500), {1}), m) == 0);
  CHECK(m.snapshot().itl.count() == 4);
}

TEST_CASE("server-wide HTTP responses by status, without a model label") {
  HttpMetrics http;
  http.count(400);
  http.count(401);
  http.count(400);
  http.count(499);
  const std::string text = render_prometheus({}, http.snapshot());
  CHECK(text.find("# TYPE llaisys_http_requests_total counter\n") != std::string::npos);
  CHECK(text.find("llaisys_http_requests_total{status=\"400\"} 2\n") != std::string::npos);
  CHECK(text.find("llaisys_http_requests_total{status=\"401\"} 1\n") != std::string::npos);
  CHECK(text.find("llaisys_http_requests_total{status=\"499\"} 1\n") != std::string::npos);
  CHECK(text.find("llaisys_http_requests_total{status=\"200\"}") == std::string::npos);
}

TEST_CASE("log lines escape control characters and redact secrets") {
  CHECK(escape_for_log("a\nb\x01\"c\\") == "a\\nb\\x01\\\"c\\\\");
  CHECK(escape_for_log(std::string(500, 'x'), 10).size() == 13);
  CHECK(redact_secrets("/v1/x?api_key=abc&b=1") == "/v1/x?api_key=[redacted]&b=1");
  CHECK(redact_secrets("Authorization: Bearer sk-123 rest") == "Authorization: Bearer [redacted] rest");
  RequestLogEntry e{.id = "id1", .method = "GET", .target = "/x?token=s3cret\n[fake]", .model = "m", .status = 200};
  const std::string line = format_log_line(e);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("s3cret") == std::string::npos);
  CHECK(line.find("status=200") != std::string::npos);
}

TEST_CASE("TOML config: [server] keys, [[model]] tables, errors for unknown keys") {
  const std::string text = R"(
[server]
port = 9000
threads = 3
api_key = "k"
cors_origin = ["https://a.example", "https://b.example"]
max_context = 512
write_timeout_ms = 2500
max_stream_backlog_bytes = 65536
socket_send_buffer_bytes = 32768

[[model]]
name = "one"
path = "/models/one"
max_running_requests = 4
kv_cache_mb = 64
options = { delay_ms_per_step = 5, nested = { x = true } }

[[model]]
path = "/models/two/"
)";
  ServerConfig config;
  REQUIRE(apply_toml_server(text, "t.toml", config).ok());
  CHECK(config.port == 9000);
  CHECK(config.threads == 3);
  CHECK(config.api_keys == std::vector<std::string>{"k"});
  CHECK(config.cors_origins.size() == 2);
  CHECK(config.engine.max_context == 512);
  CHECK(config.write_timeout_ms == 2500);
  CHECK(config.max_stream_backlog_bytes == 65536);
  CHECK(config.socket_send_buffer_bytes == 32768);
  REQUIRE(apply_toml_models(text, "t.toml", config).ok());
  REQUIRE(config.models.size() == 2);
  CHECK(config.models[0].name == "one");
  CHECK(config.models[0].max_running_requests == 4);
  CHECK(config.models[0].engine.kv_cache_mb == 64);
  CHECK(config.models[0].engine.max_context == 512);  // inherited from [server]
  const auto options = boost::json::parse(config.models[0].options_json);
  CHECK(options.at("delay_ms_per_step").as_int64() == 5);
  CHECK(options.at("nested").at("x").as_bool());
  CHECK(config.models[1].name == "two");

  ServerConfig bad;
  CHECK_FALSE(apply_toml_server("[server]\nprot = 1\n", "t", bad).ok());
  CHECK_FALSE(apply_toml_server("[server]\nport = \"x\"\n", "t", bad).ok());
  CHECK_FALSE(apply_toml_server("[sever]\n", "t", bad).ok());
  CHECK_FALSE(apply_toml_server("[server\n", "t", bad).ok());
  CHECK_FALSE(apply_toml_models("[[model]]\nname = \"x\"\n", "t", bad).ok());  // no path
  CHECK_FALSE(apply_toml_models("[[model]]\npath = \"x\"\ncolour = 1\n", "t", bad).ok());
}

TEST_CASE("command-line flags override the config file") {
  llaisys::test::TempDir dir;
  const auto file = dir.path() / "llaisys.toml";
  std::ofstream(file) << "[server]\nport = 9000\nthreads = 3\nwrite_timeout_ms = 5000\n[[model]]\nname = \"m\"\npath = \"/x\"\n";
  const std::string file_arg = file.string();
  std::vector<std::string> args = {"llaisys-server", "--config", file_arg, "--port", "9100", "--model", "b=/y",
                                   "--max-running-requests", "5", "--max-queued-requests", "7",
                                   "--write-timeout-ms", "750", "--model-options", R"({"kv_dtype": "bf16"})"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ServerConfig config;
  REQUIRE_FALSE(parse_command_line(static_cast<int>(argv.size()), argv.data(), config).has_value());
  CHECK(config.port == 9100);
  CHECK(config.threads == 3);
  CHECK(config.write_timeout_ms == 750);
  CHECK(config.max_stream_backlog_bytes == 4ll << 20);  // the default
  REQUIRE(config.models.size() == 2);
  CHECK(config.models[0].name == "m");
  CHECK(config.models[1].name == "b");
  CHECK(config.models[1].path == "/y");
  CHECK(config.models[1].engine.max_num_seqs == 5);
  CHECK(config.models[1].max_queued_requests == 7);
  // --model-options applies to the --model models; the file's model keeps its own options.
  CHECK(config.models[1].options_json == R"({"kv_dtype": "bf16"})");
  CHECK(config.models[0].options_json != config.models[1].options_json);
}

namespace {

// parse_command_line on `llaisys-server --config <dir>/s.toml --model m=/x ARGS...` with `toml` as the
// file: the exit code (none: parsed) and the resulting config.
std::pair<std::optional<int>, ServerConfig> parse_server(const llaisys::test::TempDir& dir, const std::string& toml,
                                                         std::vector<std::string> args) {
  const auto file = dir.path() / "s.toml";
  std::ofstream(file) << toml;
  args.insert(args.begin(), {"llaisys-server", "--config", file.string(), "--model", "m=/x"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ServerConfig config;
  auto code = parse_command_line(static_cast<int>(argv.size()), argv.data(), config);
  return {code, std::move(config)};
}

}  // namespace

TEST_CASE("settings out of range are refused, whether from flags or the file") {
  llaisys::test::TempDir dir;
  auto parse = [&](const std::string& toml, std::vector<std::string> args) {
    return parse_server(dir, toml, std::move(args)).first;
  };
  CHECK_FALSE(parse("[server]\nmax_queued_requests = 64\n", {}).has_value());
  // 2^31 - 1 queued requests overflowed the admission count: every request got 429.
  CHECK(parse("[server]\nmax_queued_requests = 2147483647\n", {}) == 2);
  CHECK(parse("[server]\nmax_running_requests = 100000000\n", {}) == 2);
  CHECK(parse("[server]\nheader_timeout_ms = -5\n", {}) == 2);
  CHECK(parse("[server]\n", {"--port", "83091"}) == 2);  // wrapped to 17555 before
  CHECK(parse("[server]\n", {"--port", "-1"}) == 2);
  CHECK(parse("[[model]]\nname = \"big\"\npath = \"/y\"\nmax_queued_requests = 2147483647\n", {}) == 2);
  ServerConfig c;
  c.port = 70000;
  CHECK_THAT(validate_server_config(c).message(), Catch::Contains("port = 70000 is outside [0, 65535]"));

  // Values that a "use the [server] value" sentinel or a clamp used to swallow.
  const std::string model = "[[model]]\nname = \"m2\"\npath = \"/y\"\n";
  CHECK_FALSE(parse(model + "threads = 3\nmax_running_requests = 2\nmax_queued_requests = 0\n", {}).has_value());
  CHECK(parse(model + "threads = -4\n", {}) == 2);
  CHECK(parse(model + "max_running_requests = 0\n", {}) == 2);
  CHECK(parse(model + "max_queued_requests = -1\n", {}) == 2);
  CHECK(parse(model + "kv_cache_mb = 100000000\n", {}) == 2);
  CHECK(parse("[server]\nmax_context = -1\n", {}) == 2);
  CHECK(parse("[server]\nlog_level = \"loud\"\n", {}) == 2);
  CHECK(parse("[server]\nmax_connections_per_client = 0\n", {}) == 2);
  CHECK(parse("[server]\nmax_pending_heads_per_client = 0\n", {}) == 2);
  CHECK(parse("[server]\n", {"--max-pending-heads-per-client", "-3"}) == 2);
  CHECK_FALSE(parse("[server]\nmax_pending_heads_per_client = 8\n", {}).has_value());
  CHECK(parse("[server]\nmax_body_bytes = 1000\nmax_body_bytes_in_flight = 999\n", {}) == 2);
  CHECK_FALSE(parse("[server]\nmax_body_bytes = 1000\nmax_body_bytes_in_flight = 1000\n", {}).has_value());
  CHECK_FALSE(parse("[server]\nlog_level = \"warn\"\n", {}).has_value());
  CHECK(parse("[server]\n", {"--kv-cache-mb", "0"}).value_or(0) != 0);  // CLI11's own exit code
  CHECK(parse("[server]\n", {"--block-size", "0"}).value_or(0) != 0);
  ServerConfig engine;
  engine.engine.max_batched_tokens = 0;
  CHECK_THAT(validate_server_config(engine).message(), Catch::Contains("max_batched_tokens = 0 is outside"));
}

TEST_CASE("an empty API key from any source is a start-up error, never 'no authentication'") {
  llaisys::test::TempDir dir;
  auto parse = [&](const std::string& toml, std::vector<std::string> args) {
    auto [code, config] = parse_server(dir, toml, std::move(args));
    return std::make_pair(code, config.api_keys);
  };
  ::unsetenv("LLAISYS_API_KEY");
  CHECK(parse("[server]\n", {"--api-key", "k1"}) == std::make_pair(std::optional<int>(), std::vector<std::string>{"k1"}));
  CHECK(parse("[server]\n", {"--api-key", ""}).first == 2);
  CHECK(parse("[server]\napi_key = [\"\"]\n", {}).first == 2);
  CHECK(parse("[server]\napi_keys = [\"a\", \"\"]\n", {}).first == 2);
  ::setenv("LLAISYS_API_KEY", "", 1);
  CHECK(parse("[server]\n", {}).first == 2);
  ::setenv("LLAISYS_API_KEY", "from-env", 1);
  CHECK(parse("[server]\n", {}) == std::make_pair(std::optional<int>(), std::vector<std::string>{"from-env"}));
  ::unsetenv("LLAISYS_API_KEY");
  // A directory given as the config file is refused by name (it used to read as an empty file).
  std::vector<std::string> args{"llaisys-server", "--config", dir.path().string(), "--model", "m=/x"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ServerConfig config;
  CHECK(parse_command_line(static_cast<int>(argv.size()), argv.data(), config) == 2);
}

TEST_CASE("logprobs are valid JSON numbers whatever the model computed") {
  const float inf = std::numeric_limits<float>::infinity();
  const boost::json::object o{{"finite", logprob_json(-1.5f)},
                              {"forbidden", logprob_json(-inf)},
                              {"nan", logprob_json(std::numeric_limits<float>::quiet_NaN())},
                              {"plus_inf", logprob_json(inf)}};
  const std::string text = boost::json::serialize(o);
  CHECK(text == R"({"finite":-1.5E0,"forbidden":-9.999E3,"nan":null,"plus_inf":0E0})");
  CHECK(boost::json::parse(text).as_object().at("forbidden").as_double() == -9999.0);
}

TEST_CASE("error bodies are valid UTF-8 JSON whatever the message quotes") {
  // A client's model name cut at 200 bytes in the middle of a character, and raw bytes.
  const std::string cut = std::string(199, 'a') + "\xc3";
  const std::string body = error_body(not_found_error("The model '" + cut + "' does not exist", "model_not_found"));
  CHECK(sanitize_utf8(body) == body);
  CHECK(boost::json::parse(body).at("error").at("message").as_string().ends_with("\xef\xbf\xbd' does not exist"));
  const std::string raw = error_body(invalid_request("no route GET /\xc3\xff", "\xff"));
  CHECK(sanitize_utf8(raw) == raw);
}

TEST_CASE("model arguments: NAME=DIR or DIR") {
  CHECK(parse_model_arg("a=/x/y")->name == "a");
  CHECK(parse_model_arg("/x/tiny/")->name == "tiny");
  CHECK(parse_model_arg("/x/tiny")->path == "/x/tiny");
  CHECK_FALSE(parse_model_arg("").ok());
}

namespace {

struct RoutedApp {
  ServerConfig config;
  ModelRouter router{{ModelSpec{.name = "mock", .path = "/nonexistent/mock"}}};  // never loaded: "loading"
  ServerApp app{config, router};
  RoutedApp() { config.api_keys = {"k"}; }

  Reply call(std::string_view method, std::string_view target, std::string_view body = {},
             std::string_view authorization = "Bearer k") {
    return app.handle({.method = method, .target = target, .body = body, .authorization = authorization}, [] {});
  }
};

std::string header(const Reply& reply, std::string_view name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return "(none)";
}

std::string error_code(const Reply& reply) {
  const boost::json::value body = boost::json::parse(reply.body);
  const auto& code = body.at("error").at("code");
  return code.is_null() ? "null" : std::string(code.as_string());
}

}  // namespace

TEST_CASE("routes: which paths need the API key, decided before the body is read") {
  for (std::string_view keyed : {"/metrics", "/v1/chat/completions", "/v1/completions", "/v1/responses",
                                 "/v1/embeddings", "/tokenize", "/detokenize", "/v1/", "/v1/unknown", "/v1/modelsx"}) {
    INFO(keyed);
    CHECK(ServerApp::needs_api_key(keyed));
  }
  for (std::string_view open : {"/", "/index.html", "/health", "/ready", "/v1/models", "/v1/models/", "/v1/models/mock", "/v1",
                                "/metrics/", "/tokenize/x", "http://host/v1/chat/completions"}) {
    INFO(open);
    CHECK_FALSE(ServerApp::needs_api_key(open));
  }
  RoutedApp routed;
  CHECK(routed.app.refuse_before_body("/v1/embeddings?x=1", "", "")->status == 401);
  CHECK(routed.app.refuse_before_body("/metrics", "Bearer nope", "")->status == 401);
  CHECK_FALSE(routed.app.refuse_before_body("/metrics", "", "k").has_value());
  CHECK_FALSE(routed.app.refuse_before_body("/health", "", "").has_value());
}

TEST_CASE("routes: the connections beyond --max-connections serve only GET /health, /ready and /metrics") {
  CHECK(ServerApp::monitoring_request("GET", "/health"));
  CHECK(ServerApp::monitoring_request("HEAD", "/health?verbose=1"));
  CHECK(ServerApp::monitoring_request("GET", "/metrics"));
  CHECK(ServerApp::monitoring_request("GET", "/ready"));
  CHECK_FALSE(ServerApp::monitoring_request("POST", "/health"));
  CHECK_FALSE(ServerApp::monitoring_request("GET", "/v1/models"));
  CHECK_FALSE(ServerApp::monitoring_request("POST", "/v1/chat/completions"));
  CHECK_FALSE(ServerApp::monitoring_request("GET", "/"));
}

TEST_CASE("routes: 405 with Allow for a known path, 404 for others, HEAD as GET") {
  RoutedApp routed;
  CHECK(routed.call("GET", "/health").status == 200);  // liveness, also while the model loads
  CHECK(routed.call("HEAD", "/ready?x").status == 503);  // readiness: the model is still loading
  for (auto [method, target, allow] : {std::tuple{"POST", "/health", "GET"}, {"POST", "/ready", "GET"}, {"DELETE", "/v1/models", "GET"},
                                       {"PUT", "/v1/models/mock", "GET"}, {"POST", "/metrics", "GET"},
                                       {"GET", "/v1/chat/completions", "POST"}, {"GET", "/v1/responses", "POST"},
                                       {"HEAD", "/tokenize", "POST"},
                                       {"PUT", "/detokenize?a=b", "POST"}}) {
    INFO(method << " " << target);
    const Reply reply = routed.call(method, target);
    CHECK(reply.status == 405);
    CHECK(header(reply, "Allow") == allow);
    CHECK(error_code(reply) == "method_not_allowed");
  }
  for (auto [method, target] : {std::pair{"POST", "/v1/unknown"}, {"GET", "/v1/"}, {"DELETE", "/v1/x"},
                                {"POST", "/"}, {"PUT", "/index.html"}, {"POST", "/v1"}}) {
    INFO(method << " " << target);
    const Reply reply = routed.call(method, target);
    CHECK(reply.status == 404);
    CHECK(error_code(reply) == "not_found");
    CHECK(header(reply, "Allow") == "(none)");
  }
  const Reply file = routed.call("GET", "/no-such-file.js");
  CHECK(file.status == 404);
  CHECK(boost::json::parse(file.body).at("error").at("message").as_string().starts_with("no such file"));
}

TEST_CASE("routes: keyed routes answer 401 without the key, whatever the method") {
  RoutedApp routed;
  for (auto [method, target] : {std::pair{"GET", "/metrics"}, {"POST", "/metrics"}, {"POST", "/v1/chat/completions"},
                                {"GET", "/tokenize"}, {"POST", "/v1/unknown"}}) {
    INFO(method << " " << target);
    CHECK(routed.call(method, target, "{}", "Bearer wrong").status == 401);
  }
  CHECK(routed.call("GET", "/health", "", "").status == 200);
  CHECK(routed.call("GET", "/ready", "", "").status == 503);
  CHECK(routed.call("GET", "/v1/models", "", "").status == 200);
  const Reply metrics = routed.call("GET", "/metrics");
  CHECK(metrics.status == 200);
  CHECK(metrics.content_type == "text/plain; version=0.0.4; charset=utf-8");
}

TEST_CASE("routes: /v1/models and /v1/models/{id}") {
  RoutedApp routed;
  const auto list = boost::json::parse(routed.call("GET", "/v1/models").body);
  CHECK(list.at("data").as_array().size() == 1);
  CHECK(boost::json::parse(routed.call("GET", "/v1/models/mock").body).at("id").as_string() == "mock");
  const Reply unknown = routed.call("GET", "/v1/models/nope");
  CHECK(unknown.status == 404);
  CHECK(error_code(unknown) == "model_not_found");
}

TEST_CASE("routes: every model route parses its body and resolves the model the same way") {
  RoutedApp routed;
  for (std::string_view target : {"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings",
                                  "/tokenize", "/detokenize"}) {
    INFO(target);
    const Reply malformed = routed.call("POST", target, "{\"model\":");
    CHECK(malformed.status == 400);
    CHECK(malformed.model.empty());
    CHECK(routed.call("POST", target, "[]").status == 400);
    CHECK(routed.call("POST", target, "{}").status == 400);
    CHECK(routed.call("POST", target, R"({"model": 7})").status == 400);
    const Reply unknown = routed.call("POST", target, R"({"model": "nope"})");
    CHECK(unknown.status == 404);
    CHECK(error_code(unknown) == "model_not_found");
    CHECK(unknown.model.empty());
    const Reply loading = routed.call("POST", target, R"({"model": "mock"})");
    CHECK(loading.status == 503);
    CHECK(header(loading, "Retry-After") == "5");
    CHECK(loading.model == "mock");
  }
}

TEST_CASE("connection gate: beyond the pending heads of an address, connections are crowded") {
  ServerConfig config;
  config.max_connections = 100;
  config.max_connections_per_client = 5;
  config.max_pending_heads_per_client = 2;
  ConnectionGate gate(config);
  using V = ConnectionGate::Verdict;
  CHECK(gate.admit_connection("a") == V::admitted);
  CHECK(gate.admit_connection("a") == V::admitted);
  CHECK(gate.admit_connection("a") == V::crowded);  // a third head pending: a short deadline
  gate.release_connection("a", true);               // it timed out before its head
  CHECK(gate.admit_connection("b") == V::admitted);  // other addresses are not affected
  gate.head_received("a");                           // one of a's heads arrived
  CHECK(gate.admit_connection("a") == V::admitted);
  gate.head_received("a");
  gate.head_received("a");
  // Three served connections of a: the per-address cap still holds, the heads are not pending.
  CHECK(gate.admit_connection("a") == V::admitted);
  CHECK(gate.admit_connection("a") == V::admitted);
  CHECK(gate.admit_connection("a") == V::over_client);  // a's sixth connection
  gate.release_connection("a", true);
  // Closing a connection whose head had arrived does not free a pending count it never held.
  gate.release_connection("a", false);
  gate.release_connection("a", false);
  gate.release_connection("a", false);
  CHECK(gate.admit_connection("a") == V::crowded);  // the two pending ones are still open
  gate.release_connection("a", true);
  gate.release_connection("a", true);
  gate.release_connection("a", true);
  CHECK(gate.admit_connection("a") == V::admitted);
}

TEST_CASE("response heads: one builder, Beast's wire format, fields in the order given") {
  using llaisys::server::ResponseHead;
  using llaisys::server::response_head;
  CHECK(response_head({.status = 503,
                       .content_type = "application/json",
                       .content_length = 42,
                       .headers = {{"Retry-After", "1"}},
                       .cors = {{"Access-Control-Allow-Origin", "https://app.example"}, {"Vary", "Origin"}},
                       .close = true}) ==
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 42\r\nRetry-After: 1\r\n"
        "Access-Control-Allow-Origin: https://app.example\r\nVary: Origin\r\nConnection: close\r\n\r\n");
  CHECK(response_head({.status = 200, .content_type = "text/event-stream", .chunked = true, .event_stream = true}) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
        "Transfer-Encoding: chunked\r\n\r\n");
  CHECK(response_head({.status = 204}) == "HTTP/1.1 204 No Content\r\n\r\n");
  CHECK(response_head({.status = 429, .content_type = "application/json", .content_length = 0}).starts_with(
      "HTTP/1.1 429 Too Many Requests\r\n"));
  CHECK(std::string(llaisys::server::kInterimContinue) == "HTTP/1.1 100 Continue\r\n\r\n");
}
