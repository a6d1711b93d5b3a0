// The route table and its walk: the paths there are, the methods each answers, which need the API
// key (asked from the request head as well, before any body byte is read), and the step every route
// that names a model starts with.

#include "server_app.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "auth.hpp"
#include "openai/errors.hpp"
#include "openai/request_parse.hpp"

namespace llaisys::server {

namespace {

std::string_view path_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

Reply no_route(std::string_view method, std::string_view path) {
  return error_reply(not_found_error(fmt::format("no route {} {}", method.substr(0, 16), path.substr(0, 100))));
}

}  // namespace

std::span<const ServerApp::Route> ServerApp::routes() {
  // /metrics is behind the key like the API (a scraper sends it as a bearer token): request counts
  // and model names are not for anonymous callers. The rest of /v1/ is reserved for the API and keyed
  // like it, so a caller without a key learns nothing about which paths exist there.
  static constexpr Route kRoutes[] = {
      {.path = "/health", .methods = {.get = true}, .monitoring = true, .handler = &ServerApp::health},
      {.path = "/ready", .methods = {.get = true}, .monitoring = true, .handler = &ServerApp::readiness},
      {.path = "/v1/models", .methods = {.get = true}, .handler = &ServerApp::models},
      {.path = "/v1/models/", .prefix = true, .methods = {.get = true}, .handler = &ServerApp::models},
      {.path = "/metrics", .methods = {.get = true}, .api_key = true, .monitoring = true, .handler = &ServerApp::metrics},
      {.path = "/v1/chat/completions", .methods = {.post = true}, .api_key = true, .handler = &ServerApp::chat_completions},
      {.path = "/v1/completions", .methods = {.post = true}, .api_key = true, .handler = &ServerApp::completions},
      {.path = "/v1/responses", .methods = {.post = true}, .api_key = true, .handler = &ServerApp::responses},
      {.path = "/v1/embeddings", .methods = {.post = true}, .api_key = true, .handler = &ServerApp::embeddings},
      {.path = "/tokenize", .methods = {.post = true}, .api_key = true, .handler = &ServerApp::tokenize},
      {.path = "/detokenize", .methods = {.post = true}, .api_key = true, .handler = &ServerApp::detokenize},
      {.path = "/v1/", .prefix = true, .api_key = true},
  };
  static_assert(std::ranges::all_of(kRoutes, [](const Route& r) {
                  return (r.methods.get || r.methods.post) != std::holds_alternative<std::monostate>(r.handler);
                }),
                "a route answers some method with a handler, or none (a reserved path) without one");
  return kRoutes;
}

const ServerApp::Route* ServerApp::find_route(std::string_view path) {
  for (const Route& route : routes()) {
    if (route.prefix ? path.starts_with(route.path) : path == route.path) return &route;
  }
  return nullptr;
}

bool ServerApp::Methods::allows(std::string_view method) const {
  return method == "GET" || method == "HEAD" ? get : method == "POST" && post;
}

std::string ServerApp::Methods::allow_header() const {
  if (get && post) return "GET, POST";
  return get ? "GET" : "POST";
}

bool ServerApp::needs_api_key(std::string_view path) {
  const Route* route = find_route(path);
  return route != nullptr && route->api_key;
}

bool ServerApp::monitoring_request(std::string_view method, std::string_view target) {
  const Route* route = find_route(path_of(target));
  return route != nullptr && route->monitoring && route->methods.allows(method);
}

std::optional<Reply> ServerApp::refuse_before_body(std::string_view target, std::string_view authorization,
                                                   std::string_view x_api_key) const {
  if (config_.api_keys.empty() || !needs_api_key(path_of(target))) return std::nullopt;
  if (authorized(config_.api_keys, authorization, x_api_key)) return std::nullopt;
  return error_reply(auth_error());
}

Reply ServerApp::route(const HttpRequestView& request, const OutputNotifier& notify) {
  const std::string_view path = path_of(request.target);
  const std::string_view method = request.method;
  const Route* route = find_route(path);
  // Draining (drain.hpp): only the monitoring routes are answered; the rest is for another replica.
  if (drain_.draining() && (route == nullptr || !route->monitoring)) {
    Reply r = error_reply(unavailable_error("the server is shutting down (draining); retry on another replica"));
    r.headers.emplace_back("Retry-After", "1");
    return r;
  }
  if (route == nullptr) {
    return method == "GET" || method == "HEAD" ? static_file(path) : no_route(method, path);
  }
  // The transport refuses a keyless request from its head already (refuse_before_body); checked here
  // too so that this answer does not depend on it.
  if (route->api_key && !authorized(config_.api_keys, request.authorization, request.x_api_key)) {
    return error_reply(auth_error());
  }
  if (!route->methods.get && !route->methods.post) return no_route(method, path);
  if (!route->methods.allows(method)) {
    const std::string allow = route->methods.allow_header();
    Reply r = error_reply({.status = 405,
                           .message = fmt::format("{} is not allowed on {}; use {}", method.substr(0, 16),
                                                  path.substr(0, 100), allow),
                           .type = "invalid_request_error",
                           .code = "method_not_allowed"});
    r.headers.emplace_back("Allow", allow);
    return r;
  }
  const Call call{.request = request, .rest = path.substr(route->prefix ? route->path.size() : path.size()),
                  .notify = notify};
  if (const Handler* handler = std::get_if<Handler>(&route->handler)) return (this->**handler)(call);
  return with_model(call, std::get<ModelHandler>(route->handler));
}

Reply ServerApp::with_model(const Call& call, ModelHandler handler) {
  auto body = parse_json_body(call.request.body);
  if (!body.ok()) return error_reply(from_parse_status(body.status()));
  auto name = model_field(*body);
  if (!name.ok()) return error_reply(from_parse_status(name.status()));
  ModelEntry* model = router_.find(*name);
  if (model == nullptr) {
    return error_reply(not_found_error(
        fmt::format("The model '{}' does not exist. Available models: {}", name->substr(0, 200), router_.available()),
        "model_not_found"));
  }
  if (!model->ready.load(std::memory_order_acquire)) {
    Reply r = error_reply(unavailable_error(fmt::format("The model '{}' is still loading", *name)));
    r.headers.emplace_back("Retry-After", "5");
    r.model = *name;
    return r;
  }
  Reply reply = (this->*handler)({.body = *body, .model = *model, .notify = call.notify});
  // From here every answer, the errors too, is the model's: its metrics and its log line.
  reply.model = model->spec.name;
  return reply;
}

}  // namespace llaisys::server
