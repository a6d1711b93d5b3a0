#include "llaisys/text/chat_template.hpp"

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "jinja/interpreter.hpp"
#include "jinja/parser.hpp"

namespace llaisys::text {
namespace json = boost::json;

namespace {

struct NamedTemplate {
  std::string name;
  std::string source;
  std::shared_ptr<const jinja::Template> parsed;
};

Status to_status(const jinja::Error& e, ErrorCode code) {
  const jinja::SourceLocation& w = e.where();
  if (w.line <= 0) return make_error(code, "chat template {}: {}", e.kind(), e.message());
  return make_error(code, "chat template {} at {}:{}: {}", e.kind(), w.line, w.column, e.message());
}

Result<NamedTemplate> compile(std::string name, std::string source) {
  try {
    auto parsed = std::make_shared<jinja::Template>(jinja::parse(source));
    jinja::validate(*parsed);
    return NamedTemplate{std::move(name), std::move(source), std::move(parsed)};
  } catch (const jinja::Error& e) {
    return to_status(e, ErrorCode::parse_error);
  }
}

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot open '{}'", path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return std::move(buffer).str();
}

// Special token strings as tokenizer_config.json writes them: a string or {"content": ...}.
std::vector<std::pair<std::string, std::string>> special_tokens(const json::object& config) {
  std::vector<std::pair<std::string, std::string>> tokens;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"}) {
    const json::value* v = config.if_contains(key);
    if (v == nullptr) continue;
    if (v->is_string()) {
      tokens.emplace_back(key, std::string(v->get_string()));
    } else if (v->is_object()) {
      if (const json::value* c = v->get_object().if_contains("content"); c != nullptr && c->is_string()) {
        tokens.emplace_back(key, std::string(c->get_string()));
      }
    }
  }
  return tokens;
}

}  // namespace

struct ChatTemplate::Impl {
  std::vector<NamedTemplate> templates;  // [0] is used without tools
  std::optional<std::size_t> tool_use;   // index used when tools are given
  std::vector<std::pair<std::string, std::string>> special_tokens;

  Result<std::string> render(const json::value& messages, const ChatRenderOptions& options) const {
    const NamedTemplate& chosen = !options.tools.is_null() && tool_use ? templates[*tool_use] : templates[0];
    try {
      auto context = std::make_shared<jinja::Frame>();
      context->set("messages", jinja::Value::from_json(messages));
      // Like apply_chat_template with tools=None: the variable stays undefined (so `tools is
      // defined` is false and iterating it yields nothing).
      if (!options.tools.is_null()) context->set("tools", jinja::Value::from_json(options.tools));
      context->set("add_generation_prompt", jinja::Value::boolean(options.add_generation_prompt));
      for (const auto& [name, text] : special_tokens) context->set(name, jinja::Value::string(text));
      for (const auto& entry : options.extra_context) {
        context->set(std::string(entry.key()), jinja::Value::from_json(entry.value()));
      }
      jinja::Interpreter interpreter(*chosen.parsed, jinja::make_globals(options.now.value_or(std::chrono::system_clock::now())),
                                     jinja::Limits{});
      return interpreter.render(std::move(context));
    } catch (const jinja::Error& e) {
      const bool limit = e.kind() == "LimitError";
      return to_status(e, limit ? ErrorCode::resource_exhausted : ErrorCode::invalid_argument);
    } catch (const std::bad_alloc&) {
      return Status(ErrorCode::resource_exhausted, "chat template: out of memory while rendering");
    } catch (const std::length_error&) {
      return Status(ErrorCode::resource_exhausted, "chat template: a value grew beyond what can be stored");
    }
  }
};

Result<ChatTemplate> ChatTemplate::from_string(std::string source, std::string bos_token, std::string eos_token) {
  auto impl = std::make_shared<Impl>();
  LLAISYS_ASSIGN_OR_RETURN(NamedTemplate t, compile("default", std::move(source)));
  impl->templates.push_back(std::move(t));
  if (!bos_token.empty()) impl->special_tokens.emplace_back("bos_token", std::move(bos_token));
  if (!eos_token.empty()) impl->special_tokens.emplace_back("eos_token", std::move(eos_token));
  return ChatTemplate(std::move(impl));
}

Result<ChatTemplate> ChatTemplate::from_model_dir(const std::filesystem::path& dir, std::string_view name) {
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  json::object config;
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec)) {
    LLAISYS_ASSIGN_OR_RETURN(std::string text, read_file(config_path));
    boost::system::error_code parse_ec;
    json::value parsed = json::parse(text, parse_ec);
    if (parse_ec || !parsed.is_object()) {
      return make_error(ErrorCode::parse_error, "{} is not a JSON object", config_path.string());
    }
    config = std::move(parsed.get_object());
  }
  std::optional<std::string> fallback;
  const json::value* chat_template = config.if_contains("chat_template");
  if ((chat_template == nullptr || chat_template->is_null()) && std::filesystem::exists(dir / "chat_template.jinja", ec)) {
    LLAISYS_ASSIGN_OR_RETURN(fallback, read_file(dir / "chat_template.jinja"));
  }
  return from_config(config, {.config = config_path.string(), .dir = dir.string()}, std::move(fallback), name);
}

Result<ChatTemplate> ChatTemplate::from_config_json(std::string_view tokenizer_config_json, std::string_view name) {
  boost::system::error_code parse_ec;
  json::value parsed = json::parse(tokenizer_config_json, parse_ec);
  if (parse_ec || !parsed.is_object()) {
    return Status(ErrorCode::parse_error, "tokenizer_config.json is not a JSON object");
  }
  return from_config(parsed.get_object(), {.config = "tokenizer_config.json", .dir = "tokenizer_config.json"},
                     std::nullopt, name);
}

Result<ChatTemplate> ChatTemplate::from_config(const json::object& config, const ConfigSource& where,
                                               std::optional<std::string> fallback, std::string_view name) {
  auto impl = std::make_shared<Impl>();
  impl->special_tokens = special_tokens(config);

  std::vector<std::pair<std::string, std::string>> sources;  // (name, template)
  const json::value* chat_template = config.if_contains("chat_template");
  if (chat_template != nullptr && chat_template->is_string()) {
    sources.emplace_back("default", std::string(chat_template->get_string()));
  } else if (chat_template != nullptr && chat_template->is_array()) {
    for (const json::value& item : chat_template->get_array()) {
      const json::object* o = item.if_object();
      const json::value* n = o != nullptr ? o->if_contains("name") : nullptr;
      const json::value* t = o != nullptr ? o->if_contains("template") : nullptr;
      if (n == nullptr || t == nullptr || !n->is_string() || !t->is_string()) {
        return make_error(ErrorCode::parse_error, "{}: chat_template entries must be {{\"name\", \"template\"}}",
                          where.config);
      }
      sources.emplace_back(std::string(n->get_string()), std::string(t->get_string()));
    }
  } else if (chat_template != nullptr && !chat_template->is_null()) {
    return make_error(ErrorCode::parse_error, "{}: chat_template must be a string or a list", where.config);
  } else if (fallback) {
    sources.emplace_back("default", std::move(*fallback));
  }
  if (sources.empty()) return make_error(ErrorCode::not_found, "'{}' has no chat template", where.dir);

  auto find = [&](std::string_view wanted) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (sources[i].first == wanted) return i;
    }
    return std::nullopt;
  };
  std::optional<std::size_t> primary;
  if (!name.empty()) {
    primary = find(name);
    if (!primary) return make_error(ErrorCode::not_found, "'{}' has no chat template named '{}'", where.dir, name);
  } else {
    primary = sources.size() == 1 ? std::optional<std::size_t>(0) : find("default");
    if (!primary) return make_error(ErrorCode::not_found, "'{}' has named chat templates but none called 'default'", where.dir);
  }
  LLAISYS_ASSIGN_OR_RETURN(NamedTemplate first, compile(sources[*primary].first, sources[*primary].second));
  impl->templates.push_back(std::move(first));
  if (name.empty()) {
    if (auto tool_use = find("tool_use"); tool_use && *tool_use != *primary) {
      auto compiled = compile("tool_use", sources[*tool_use].second);
      if (!compiled.ok()) return std::move(compiled).take_status().with_context("chat template 'tool_use'");
      impl->templates.push_back(std::move(compiled).value());
      impl->tool_use = impl->templates.size() - 1;
    }
  }
  return ChatTemplate(std::move(impl));
}

Result<ChatTemplate> ChatTemplate::from_file(const std::filesystem::path& template_file,
                                             const std::filesystem::path& model_dir) {
  LLAISYS_ASSIGN_OR_RETURN(std::string source, read_file(template_file));
  auto impl = std::make_shared<Impl>();
  auto compiled = compile("default", std::move(source));
  if (!compiled.ok()) return std::move(compiled).take_status().with_context(template_file.string());
  impl->templates.push_back(std::move(compiled).value());
  if (!model_dir.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(model_dir / "tokenizer_config.json", ec)) {
      LLAISYS_ASSIGN_OR_RETURN(std::string text, read_file(model_dir / "tokenizer_config.json"));
      boost::system::error_code parse_ec;
      json::value parsed = json::parse(text, parse_ec);
      if (!parse_ec && parsed.is_object()) impl->special_tokens = special_tokens(parsed.get_object());
    }
  }
  return ChatTemplate(std::move(impl));
}

Result<std::string> ChatTemplate::render(const json::value& messages, const ChatRenderOptions& options) const {
  return impl_->render(messages, options);
}

const std::string& ChatTemplate::source() const { return impl_->templates[0].source; }

}  // namespace llaisys::text
