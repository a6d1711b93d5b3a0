#pragma once
// ChatTemplate: a Hugging Face chat template (Jinja) rendered exactly as transformers'
// apply_chat_template does (Jinja2 sandbox, trim_blocks + lstrip_blocks, loop controls, HF's
// tojson, raise_exception, strftime_now), by our own interpreter.
//
// Contract: parsed once at load (syntax errors and unknown filters/tests are reported then);
// render() is const and thread-safe. Every template error (syntax, raise_exception, undefined
// variables, type errors, limits on steps/output/recursion) comes back as a Status whose message
// says what and where: "TypeError at 12:34: can only concatenate str (not "dict") to str".
// Nothing a template or its input does can crash the process.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "llaisys/core/status.hpp"

namespace llaisys::text {

struct ChatRenderOptions {
  boost::json::value tools;                  // null or an array (OpenAI tools)
  bool add_generation_prompt = true;
  boost::json::object extra_context;         // extra template variables (e.g. enable_thinking)
  // The clock strftime_now reads (tests fix it); nullopt: now.
  std::optional<std::chrono::system_clock::time_point> now;
};

class ChatTemplate {
 public:
  // tokenizer_config.json "chat_template": a string, or a list of {name, template} (pick `name`,
  // default "default"; "tool_use" when tools are given and it exists). Falls back to a
  // chat_template.jinja file beside it. Also reads the special token strings (bos/eos/...).
  static Result<ChatTemplate> from_model_dir(const std::filesystem::path& dir, std::string_view name = "");
  // The same from tokenizer_config.json's text (no chat_template.jinja fallback), e.g. the one
  // gguf_tokenizer_files() writes for a GGUF file.
  static Result<ChatTemplate> from_config_json(std::string_view tokenizer_config_json, std::string_view name = "");
  // Empty token strings are left undefined in the template (as HF does for unset tokens).
  static Result<ChatTemplate> from_string(std::string source, std::string bos_token = "", std::string eos_token = "");
  // A template file overriding the model's; special tokens from model_dir's tokenizer_config.json
  // when model_dir is not empty.
  static Result<ChatTemplate> from_file(const std::filesystem::path& template_file,
                                        const std::filesystem::path& model_dir = {});

  // messages: OpenAI-style array of {role, content, tool_calls?, ...}.
  Result<std::string> render(const boost::json::value& messages, const ChatRenderOptions& options) const;

  // The template source that render() uses when no tools are given.
  const std::string& source() const;

 private:
  struct Impl;
  struct ConfigSource {
    std::string config;  // names the config in parse errors
    std::string dir;     // names the model in not_found errors
  };
  // `fallback`: the template used when the config has no chat_template.
  static Result<ChatTemplate> from_config(const boost::json::object& config, const ConfigSource& where,
                                          std::optional<std::string> fallback, std::string_view name);
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace llaisys::text
