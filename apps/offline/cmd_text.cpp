// `llaisys-offline tokenize | detokenize | render`: inspect a model directory's tokenizer and chat
// template over JSONL (a file argument or standard input), one result line per input line, in
// order; a bad line gets {"error": ...} and the run goes on.
//
//   tokenize:   {"text": str, "add_special_tokens"?: bool}                 -> {"ids": [int]}
//   detokenize: {"ids": [int], "skip_special_tokens"?: bool (default true)} -> {"text": str}
//   render:     {"messages": [...], "tools"?: [...], "add_generation_prompt"?: bool (default true),
//                + any extra template variables under "chat_template_kwargs"?: {...}}    -> {"text": str, "ids": [int]}
// An "id" field in the input is copied to the output.

#include <functional>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "jsonl.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "model_text.hpp"
#include "served_model.hpp"

namespace llaisys::offline {
namespace json = boost::json;
namespace {

struct TextOptions {
  std::filesystem::path model_dir;
  std::string input = "-";
  std::string template_file;   // render: overrides tokenizer_config.json's chat_template
  std::string template_name;   // render: which named template
};

using LineHandler = std::function<Result<json::object>(const json::object& line)>;

// Runs `handler` over every line; returns the exit code (1 when any line failed).
int run_lines(const std::string& input, const LineHandler& handler) {
  auto reader = app::JsonlReader::open(input);
  if (!reader.ok()) {
    fmt::print(stderr, "error: {}\n", reader.status().message());
    return 1;
  }
  std::size_t num_failed = 0;
  while (auto line = reader->next()) {
    Result<json::object> result = [&]() -> Result<json::object> {
      if (!line->value.ok()) return line->value.status();
      const json::object* object = line->value->if_object();
      if (object == nullptr) return Status(ErrorCode::invalid_argument, "each line must be a JSON object");
      LLAISYS_ASSIGN_OR_RETURN(json::object produced, handler(*object));
      json::object out;
      if (const json::value* id = object->if_contains("id")) out["id"] = *id;
      for (auto& entry : produced) out[entry.key()] = std::move(entry.value());
      return out;
    }();
    if (result.ok()) {
      app::write_json_line(stdout, result.value());
    } else {
      ++num_failed;
      app::write_json_line(stdout, app::error_object(result.status(), line->line_number));
    }
  }
  return num_failed == 0 ? 0 : 1;
}

Result<bool> optional_bool(const json::object& o, std::string_view key, bool fallback) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return fallback;
  if (!v->is_bool()) return make_error(ErrorCode::invalid_argument, "'{}' must be true or false", key);
  return v->get_bool();
}

Result<std::shared_ptr<const text::Tokenizer>> load_tokenizer(const TextOptions& options) {
  auto tokenizer = app::load_tokenizer(options.model_dir);
  if (!tokenizer.ok()) fmt::print(stderr, "error: {}\n", tokenizer.status().message());
  return tokenizer;
}

int run_tokenize(const TextOptions& options) {
  auto tokenizer = load_tokenizer(options);
  if (!tokenizer.ok()) return 1;
  return run_lines(options.input, [&](const json::object& line) -> Result<json::object> {
    const json::value* text = line.if_contains("text");
    if (text == nullptr || !text->is_string()) return Status(ErrorCode::invalid_argument, "'text' must be a string");
    LLAISYS_ASSIGN_OR_RETURN(bool add_special, optional_bool(line, "add_special_tokens", false));
    LLAISYS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, tokenizer.value()->encode(text->get_string(), add_special));
    return json::object{{"ids", json::value_from(ids)}};
  });
}

int run_detokenize(const TextOptions& options) {
  auto tokenizer = load_tokenizer(options);
  if (!tokenizer.ok()) return 1;
  return run_lines(options.input, [&](const json::object& line) -> Result<json::object> {
    const json::value* ids = line.if_contains("ids");
    if (ids == nullptr || !ids->is_array()) return Status(ErrorCode::invalid_argument, "'ids' must be an array of token ids");
    std::vector<TokenId> token_ids;
    for (const json::value& v : ids->get_array()) {
      if (!v.is_int64() || v.get_int64() < INT32_MIN || v.get_int64() > INT32_MAX) {
        return make_error(ErrorCode::invalid_argument, "'ids' holds {} which is not a token id", json::serialize(v));
      }
      token_ids.push_back(static_cast<TokenId>(v.get_int64()));
    }
    LLAISYS_ASSIGN_OR_RETURN(bool skip, optional_bool(line, "skip_special_tokens", true));
    LLAISYS_ASSIGN_OR_RETURN(std::string decoded, tokenizer.value()->decode(token_ids, skip));
    return json::object{{"text", decoded}};
  });
}

int run_render(const TextOptions& options) {
  auto tokenizer = load_tokenizer(options);
  if (!tokenizer.ok()) return 1;
  auto chat_template = [&]() -> Result<text::ChatTemplate> {
    if (!options.template_file.empty()) return app::load_chat_template_file(options.model_dir, options.template_file);
    auto from_model = app::load_chat_template(options.model_dir, options.template_name);
    if (from_model.ok() || from_model.status().code() != ErrorCode::not_found || !options.template_name.empty()) {
      return from_model;
    }
    // The same fallback generate uses for a model without a chat template.
    fmt::print(stderr, "note: {}; rendering with the fallback ChatML template\n", from_model.status().message());
    return app::fallback_chat_template(*tokenizer.value());
  }();
  if (!chat_template.ok()) {
    fmt::print(stderr, "error: {}\n", chat_template.status().message());
    return 1;
  }
  return run_lines(options.input, [&](const json::object& line) -> Result<json::object> {
    const json::value* messages = line.if_contains("messages");
    if (messages == nullptr || !messages->is_array()) return Status(ErrorCode::invalid_argument, "'messages' must be an array");
    text::ChatRenderOptions render_options;
    if (const json::value* tools = line.if_contains("tools"); tools != nullptr && !tools->is_null()) {
      if (!tools->is_array()) return Status(ErrorCode::invalid_argument, "'tools' must be an array");
      render_options.tools = *tools;
    }
    LLAISYS_ASSIGN_OR_RETURN(render_options.add_generation_prompt, optional_bool(line, "add_generation_prompt", true));
    if (const json::value* kwargs = line.if_contains("chat_template_kwargs")) {  // the server's name
      if (!kwargs->is_object()) return Status(ErrorCode::invalid_argument, "'chat_template_kwargs' must be an object");
      render_options.extra_context = kwargs->get_object();
    }
    LLAISYS_ASSIGN_OR_RETURN(std::string rendered, chat_template->render(*messages, render_options));
    LLAISYS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, tokenizer.value()->encode(rendered));
    return json::object{{"text", rendered}, {"ids", json::value_from(ids)}};
  });
}

CLI::App* add_text_subcommand(CLI::App& app, const char* name, const char* description,
                              const std::shared_ptr<TextOptions>& options) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("--model", options->model_dir, "model directory (tokenizer.json, tokenizer_config.json) or GGUF file")->required();
  cmd->add_option("input", options->input, "JSONL input file (default: standard input)");
  return cmd;
}

}  // namespace

void add_text_commands(CLI::App& app, int& exit_code) {
  auto tokenize = std::make_shared<TextOptions>();
  add_text_subcommand(app, "tokenize", "JSONL {\"text\"} -> {\"ids\"}", tokenize)
      ->callback([tokenize, &exit_code] { exit_code = run_tokenize(*tokenize); });
  auto detokenize = std::make_shared<TextOptions>();
  add_text_subcommand(app, "detokenize", "JSONL {\"ids\"} -> {\"text\"}", detokenize)
      ->callback([detokenize, &exit_code] { exit_code = run_detokenize(*detokenize); });
  auto render = std::make_shared<TextOptions>();
  CLI::App* cmd = add_text_subcommand(app, "render", "JSONL {\"messages\", \"tools\"?} -> {\"text\", \"ids\"}", render);
  cmd->add_option("--template", render->template_file, "chat template file (overrides tokenizer_config.json)");
  cmd->add_option("--template-name", render->template_name, "named template in tokenizer_config.json");
  cmd->callback([render, &exit_code] { exit_code = run_render(*render); });
}

}  // namespace llaisys::offline
