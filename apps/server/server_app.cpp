#include "server_app.hpp"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "jobs.hpp"
#include "openai/errors.hpp"
#include "openai/request_parse.hpp"
#include "openai/response.hpp"
#include "openai/responses_output.hpp"
#include "openai/responses_request.hpp"
#include "request_fields.hpp"

namespace llaisys::server {
namespace json = boost::json;

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Reply json_reply(int status, std::string body) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::string_view content_type_for(const std::filesystem::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".txt") return "text/plain; charset=utf-8";
  if (ext == ".woff2") return "font/woff2";
  return "application/octet-stream";
}

// A /tokenize or /detokenize answer: the JSON body, or the error.
Reply body_or_error(const Result<json::object>& body) {
  return body.ok() ? json_reply(200, json::serialize(*body)) : error_reply(from_parse_status(body.status()));
}

Reply submit_error(const Status& status) {
  if (status.code() == ErrorCode::invalid_argument) return error_reply(from_parse_status(status));
  // error_reply adds Retry-After to a 429.
  if (status.code() == ErrorCode::resource_exhausted) return error_reply(rate_limit_error(status.message()));
  if (status.code() == ErrorCode::cancelled) return error_reply(unavailable_error("the server is shutting down"));
  return error_reply(internal_error(status.message()));
}

}  // namespace

Reply error_reply(const ApiError& error) {
  Reply r = json_reply(error.status, error_body(error));
  if (error.status == 429) r.headers.emplace_back("Retry-After", "1");
  return r;
}

ServerApp::ServerApp(const ServerConfig& config, ModelRouter& router) : config_(config), router_(router) {
  if (!config.webui_dir.empty()) {
    webui_dir_ = config.webui_dir;
  } else {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) webui_dir_ = exe.parent_path() / ".." / "share" / "llaisys" / "webui";
  }
  std::error_code ec;
  if (!webui_dir_.empty()) webui_dir_ = std::filesystem::weakly_canonical(webui_dir_, ec);
}

Reply ServerApp::handle(const HttpRequestView& request, const OutputNotifier& notify) {
  try {
    return route(request, notify);
  } catch (const std::exception& e) {
    return error_reply(internal_error(fmt::format("internal error: {}", e.what())));
  }
}

void ServerApp::count_http(int status) { http_metrics_.count(status); }

void ServerApp::count(const Reply& reply) {
  if (reply.model.empty()) return;
  if (ModelEntry* m = router_.find(reply.model)) m->metrics.count_request(reply.status);
}

std::string ServerApp::metrics_text() const {
  std::vector<ModelMetricsView> views;
  for (const auto& m : router_.models()) {
    ModelMetricsView v{.model = m->spec.name, .metrics = m->metrics.snapshot()};
    if (m->ready.load(std::memory_order_acquire)) v.engine = m->engine->stats();
    views.push_back(std::move(v));
  }
  return render_prometheus(views, http_metrics_.snapshot(),
                           {.draining = drain_.draining(), .requests_in_flight = drain_.in_flight()});
}

// Liveness: the process serves (also while the models load and while it drains), so an orchestrator
// restarts only a server that no longer answers. The status says which phase it is in.
Reply ServerApp::health(const Call&) {
  const char* status = drain_.draining() ? "draining" : router_.all_ready() ? "ok" : "loading";
  return json_reply(200, fmt::format(R"({{"status":"{}"}})", status));
}

bool ServerApp::ready() const { return router_.all_ready() && !drain_.draining(); }

// Readiness: 503 while a model loads and from the first shutdown signal on, so load balancers and
// Kubernetes send the next requests elsewhere.
Reply ServerApp::readiness(const Call&) {
  if (ready()) return json_reply(200, R"({"status":"ready"})");
  Reply r = json_reply(503, drain_.draining() ? R"({"status":"draining"})" : R"({"status":"loading"})");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

Reply ServerApp::metrics(const Call&) {
  Reply r = json_reply(200, metrics_text());
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return r;
}

Reply ServerApp::chat_completions(const ModelCall& call) { return generate(call, /*chat=*/true); }

Reply ServerApp::completions(const ModelCall& call) { return generate(call, /*chat=*/false); }

Reply ServerApp::generate(const ModelCall& call, bool chat) {
  ModelEntry& model = call.model;
  auto parsed = chat ? parse_chat_request(call.body, model.text) : parse_completion_request(call.body, model.text);
  if (!parsed.ok()) return error_reply(from_parse_status(parsed.status(), chat ? "messages" : "prompt"));
  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + random_hex(24);
  auto response = std::make_unique<GenerationResponse>(*parsed, ResponseMeta{id, unix_now(), model.spec.name},
                                                       model.tokenizer);
  return submit_generation(call, std::move(parsed).value(), std::move(response), id);
}

Reply ServerApp::responses(const ModelCall& call) {
  ModelEntry& model = call.model;
  auto parsed = parse_responses_request(call.body, model.text);
  if (!parsed.ok()) return error_reply(responses_parse_error(parsed.status()));
  const std::string id = "resp_" + random_hex(32);
  auto writer = std::make_unique<ResponsesWriter>(std::move(parsed->settings), parsed->generate.parse_tools,
                                                  parsed->generate.reasoning, ResponseMeta{id, unix_now(), model.spec.name});
  return submit_generation(call, std::move(parsed->generate), std::move(writer), id);
}

Reply ServerApp::submit_generation(const ModelCall& call, ParsedGenerate parsed,
                                   std::unique_ptr<GenerationWriter> writer, const std::string& id) {
  ModelEntry& model = call.model;
  if (!model.admission.try_acquire()) {
    return error_reply(rate_limit_error(
        fmt::format("The model '{}' is at capacity ({} running + queued requests); retry later", model.spec.name,
                    model.admission.capacity())));
  }
  auto reservation = std::make_unique<Reservation>(&model.admission);
  // Chat (and the Responses API) is one engine request; a completions batch one per prompt.
  std::vector<GenerateRequest> requests;
  if (parsed.kind == ApiKind::chat) {
    requests.push_back(std::move(parsed.request));
  } else {
    for (std::size_t i = 0; i < parsed.prompts.size(); ++i) requests.push_back(parsed.prompt_request(i));
  }
  std::vector<RequestStream> streams;
  for (GenerateRequest& request : requests) {
    auto stream = model.engine->submit(std::move(request), call.notify);
    if (!stream.ok()) return submit_error(stream.status());  // the streams so far abort as they drop
    streams.push_back(std::move(stream).value());
  }
  Reply r;
  r.id = id;
  r.job = make_generation_job(model, std::move(reservation), std::move(streams), std::move(writer), parsed.stream);
  return r;
}

Reply ServerApp::embeddings(const ModelCall& call) {
  ModelEntry& model = call.model;
  auto parsed = parse_embedding_request(call.body, model.text);
  if (!parsed.ok()) return error_reply(from_parse_status(parsed.status(), "input"));
  if (!model.admission.try_acquire()) {
    return error_reply(rate_limit_error(fmt::format("The model '{}' is at capacity; retry later", model.spec.name)));
  }
  auto reservation = std::make_unique<Reservation>(&model.admission);
  auto job = start_embedding_job(model, std::move(reservation), std::move(parsed).value(), call.notify);
  if (!job.ok()) return submit_error(job.status());
  Reply r;
  r.id = "embd-" + random_hex(24);
  r.job = std::move(job).value();
  return r;
}

Reply ServerApp::tokenize(const ModelCall& call) {
  const ModelEntry& model = call.model;
  const json::value* prompt = call.body.if_contains("prompt");
  const json::value* messages = call.body.if_contains("messages");
  const json::value* add = call.body.if_contains("add_special_tokens");
  if (add != nullptr && !add->is_bool() && !add->is_null()) {
    return body_or_error(Status(ErrorCode::invalid_argument, "'add_special_tokens' must be true or false"));
  }
  Result<std::vector<TokenId>> ids = Status(ErrorCode::invalid_argument, "give 'prompt' (a string) or 'messages'");
  if (!model.tokenizer) {
    ids = Status(ErrorCode::invalid_argument, "this model has no tokenizer");
  } else if (prompt != nullptr && messages == nullptr) {
    if (!prompt->is_string()) {
      ids = Status(ErrorCode::invalid_argument, "'prompt' must be a string");
    } else {
      const bool special = add != nullptr && add->is_bool() ? add->as_bool() : true;
      ids = model.tokenizer->encode(prompt->as_string(), special);
    }
  } else if (messages != nullptr && prompt == nullptr) {
    json::value tools;
    if (const json::value* t = call.body.if_contains("tools"); t != nullptr && t->is_array()) tools = *t;
    ids = [&]() -> Result<std::vector<TokenId>> {
      LLAISYS_ASSIGN_OR_RETURN(json::object kwargs, template_kwargs(call.body, model.text));
      LLAISYS_ASSIGN_OR_RETURN(RenderedChat rendered, render_messages(*messages, tools, model.text, kwargs));
      return std::move(rendered.ids);
    }();
    if (ids.ok() && add != nullptr && add->is_bool() && add->as_bool()) {
      // Rendered chats carry their own special tokens; add_special_tokens adds BOS as encode() would.
      auto empty = model.tokenizer->encode("", true);
      if (empty.ok()) ids->insert(ids->begin(), empty->begin(), empty->end());
    }
  }
  if (!ids.ok()) return body_or_error(ids.status());
  json::array tokens;
  for (TokenId id : *ids) tokens.push_back(id);
  return body_or_error(json::object{{"tokens", std::move(tokens)},
                                    {"count", static_cast<int64_t>(ids->size())},
                                    {"max_model_len", model.text.max_model_len}});
}

Reply ServerApp::detokenize(const ModelCall& call) {
  const ModelEntry& model = call.model;
  Result<std::string> text = Status(ErrorCode::invalid_argument, "this model has no tokenizer");
  const json::value* tokens = call.body.if_contains("tokens");
  if (tokens == nullptr) {
    text = Status(ErrorCode::invalid_argument, "'tokens' must be a list of token ids");
  } else if (model.tokenizer) {
    if (tokens->is_array() && tokens->as_array().empty()) {
      text = std::string();
    } else {
      auto ids = app::token_ids_field(*tokens, "tokens", model.text.vocab_size);
      text = ids.ok() ? model.tokenizer->decode(*ids, false) : Result<std::string>(ids.status());
    }
  }
  if (!text.ok()) return body_or_error(text.status());
  return body_or_error(json::object{{"prompt", sanitize_utf8(*text)}});
}

// GET /v1/models lists every model; GET /v1/models/{id} (`call.rest`) answers one.
Reply ServerApp::models(const Call& call) {
  const std::string_view id = call.rest;
  json::array data;
  for (const auto& m : router_.models()) {
    if (!id.empty() && m->spec.name != id) continue;
    const bool ready = m->ready.load(std::memory_order_acquire);
    json::object o{{"id", m->spec.name},
                   {"object", "model"},
                   {"created", ready ? m->created : int64_t{0}},
                   {"owned_by", "llaisys"},
                   {"max_model_len", ready ? m->text.max_model_len : 0},
                   {"chat_template_source", m->chat_template_source}};
    if (!id.empty()) return json_reply(200, json::serialize(o));
    data.push_back(std::move(o));
  }
  if (!id.empty()) {
    return error_reply(not_found_error(fmt::format("The model '{}' does not exist. Available models: {}",
                                                   id.substr(0, 200), router_.available()),
                                       "model_not_found"));
  }
  return json_reply(200, json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}}));
}

Reply ServerApp::static_file(std::string_view path) const {
  auto missing = [&] { return error_reply(not_found_error(fmt::format("no such file: {}", path.substr(0, 100)))); };
  if (webui_dir_.empty() || path.empty() || path.front() != '/') return missing();
  std::string rel(path.substr(1));
  if (rel.empty() || rel.back() == '/') rel += "index.html";
  if (rel.find("..") != std::string::npos || rel.find('\0') != std::string::npos || rel.find('\\') != std::string::npos ||
      rel.find('%') != std::string::npos) {
    return missing();
  }
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::weakly_canonical(webui_dir_ / rel, ec);
  if (ec || !file.string().starts_with(webui_dir_.string() + "/") || !std::filesystem::is_regular_file(file, ec)) {
    return missing();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return missing();
  std::ostringstream s;
  s << in.rdbuf();
  Reply r = json_reply(200, s.str());
  r.content_type = std::string(content_type_for(file));
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return r;
}

}  // namespace llaisys::server
