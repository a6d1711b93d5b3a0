#include "model_text.hpp"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "llaisys/model/gguf_model.hpp"
#include "llaisys/model/safetensors.hpp"
#include "llaisys/text/gguf_tokenizer.hpp"

namespace llaisys::app {
namespace fs = std::filesystem;

namespace {

using gguf::open_gguf;

}  // namespace

bool has_tokenizer(const fs::path& model) {
  if (!gguf::is_gguf_file(model)) return fs::exists(model / "tokenizer.json");
  auto opened = open_gguf(model);
  return !opened.ok() || (*opened)->parsed.find("tokenizer.ggml.model") != nullptr;  // a broken file says why later
}

Result<std::shared_ptr<const text::Tokenizer>> load_tokenizer(const fs::path& model) {
  if (!gguf::is_gguf_file(model)) return text::Tokenizer::from_model_dir(model);
  LLAISYS_ASSIGN_OR_RETURN(auto opened, open_gguf(model));
  auto tokenizer = text::tokenizer_from_gguf(opened->parsed.metadata());
  if (!tokenizer.ok()) return std::move(tokenizer).take_status().with_context(model.string());
  return tokenizer;
}

Result<text::ChatTemplate> load_chat_template(const fs::path& model, std::string_view name) {
  if (!gguf::is_gguf_file(model)) return text::ChatTemplate::from_model_dir(model, name);
  LLAISYS_ASSIGN_OR_RETURN(auto opened, open_gguf(model));
  auto chat_template = text::chat_template_from_gguf(opened->parsed.metadata(), name);
  if (!chat_template.ok()) return std::move(chat_template).take_status().with_context(model.string());
  return chat_template;
}

Result<text::ChatTemplate> load_chat_template_file(const fs::path& model, const fs::path& template_file) {
  if (!gguf::is_gguf_file(model)) return text::ChatTemplate::from_file(template_file, model);
  LLAISYS_ASSIGN_OR_RETURN(auto opened, open_gguf(model));
  LLAISYS_ASSIGN_OR_RETURN(text::GgufTokenizerFiles files, text::gguf_tokenizer_files(opened->parsed.metadata()));
  std::ifstream in(template_file, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot read the chat template {}", template_file.string());
  std::stringstream source;
  source << in.rdbuf();
  // The bos/eos strings the GGUF tokenizer's tokenizer_config.json names.
  const boost::json::value config = boost::json::parse(files.tokenizer_config_json);
  const auto token = [&](std::string_view key) -> std::string {
    const boost::json::value* v = config.as_object().if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  auto chat_template = text::ChatTemplate::from_string(source.str(), token("bos_token"), token("eos_token"));
  if (!chat_template.ok()) return std::move(chat_template).take_status().with_context(template_file.string());
  return chat_template;
}

}  // namespace llaisys::app
