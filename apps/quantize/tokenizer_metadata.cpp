// tokenizer.json + tokenizer_config.json as GGUF `tokenizer.ggml.*` keys, the way llama.cpp's
// converter writes them, so that llama.cpp reads the files llaisys-quantize writes:
// - byte-level BPE (a ByteLevel pre-tokenizer): model "gpt2", the tokens in id order (added tokens
//   included, then "[PAD<id>]" up to the model's vocabulary size, type 5 unused), the merges as
//   "left right", and `pre` named after the pre-tokenizer's split regex (refused when it is not one
//   llama.cpp names);
// - SentencePiece-style BPE (byte_fallback): model "llama", with scores that rank the pieces in id
//   order (0 for control, unknown and byte tokens, then -0, -1, -2, ... for the others: the order
//   SentencePiece's BPE gives its pieces, and what llama.cpp's converter writes for such models).
// Token types: 1 normal, 2 unknown, 3 control (special added tokens), 4 user-defined (other added
// tokens), 5 unused (padding), 6 byte (<0xNN>).

#include "tokenizer_metadata.hpp"

#include <fstream>
#include <map>
#include <tuple>
#include <sstream>

#include <boost/json.hpp>

#include "llaisys/text/gguf_tokenizer.hpp"

namespace llaisys::convert {
namespace fs = std::filesystem;
namespace json = boost::json;

Result<json::object> read_json_object(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot read {}", path.string());
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(text.str(), ec);
  if (ec || !v.is_object()) return make_error(ErrorCode::parse_error, "{}: not a JSON object", path.string());
  return std::move(v.as_object());
}

namespace {

std::string str(const json::value* v) {
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// tokenizer_config.json names a token as a string or {"content": ...}.
std::string token_name(const json::object& config, std::string_view key) {
  const json::value* v = config.if_contains(key);
  if (v == nullptr) return {};
  if (v->is_object()) return str(v->as_object().if_contains("content"));
  return str(v);
}

// The Split regex of a byte-level pre-tokenizer (alone or first in a Sequence), or empty.
std::string split_regex(const json::value& pre) {
  if (!pre.is_object()) return {};
  const json::object& o = pre.as_object();
  if (str(o.if_contains("type")) == "Split") {
    const json::value* pattern = o.if_contains("pattern");
    return pattern != nullptr && pattern->is_object() ? str(pattern->as_object().if_contains("Regex")) : std::string();
  }
  if (str(o.if_contains("type")) == "Sequence") {
    if (const json::value* list = o.if_contains("pretokenizers"); list != nullptr && list->is_array()) {
      for (const json::value& item : list->as_array()) {
        std::string regex = split_regex(item);
        if (!regex.empty()) return regex;
      }
    }
  }
  return {};
}

bool has_byte_level(const json::value& pre) {
  if (!pre.is_object()) return false;
  const json::object& o = pre.as_object();
  if (str(o.if_contains("type")) == "ByteLevel") return true;
  if (const json::value* list = o.if_contains("pretokenizers"); list != nullptr && list->is_array()) {
    for (const json::value& item : list->as_array()) {
      if (has_byte_level(item)) return true;
    }
  }
  return false;
}

bool is_byte_token(std::string_view t) {
  return t.size() == 6 && t.starts_with("<0x") && t.back() == '>';
}

}  // namespace

Status add_tokenizer_metadata(const fs::path& hf_dir, int64_t vocab_size, std::optional<int64_t> config_bos,
                              std::optional<int64_t> config_eos, gguf::Writer& out) {
  LLAISYS_ASSIGN_OR_RETURN(json::object tokenizer, read_json_object(hf_dir / "tokenizer.json"));
  json::object config;
  if (fs::exists(hf_dir / "tokenizer_config.json")) {
    LLAISYS_ASSIGN_OR_RETURN(config, read_json_object(hf_dir / "tokenizer_config.json"));
  }
  const json::value* model_value = tokenizer.if_contains("model");
  if (model_value == nullptr || !model_value->is_object() || str(model_value->as_object().if_contains("type")) != "BPE") {
    return Status(ErrorCode::unsupported, "tokenizer.json: only BPE tokenizers can be written as GGUF");
  }
  const json::object& model = model_value->as_object();
  const json::value* vocab_value = model.if_contains("vocab");
  if (vocab_value == nullptr || !vocab_value->is_object()) return Status(ErrorCode::parse_error, "tokenizer.json: no vocab");

  // Tokens by id: the vocabulary, the added tokens, then padding up to the model's rows.
  std::map<int64_t, std::pair<std::string, int32_t>> by_id;  // id -> (text, type)
  for (const auto& [text, id] : vocab_value->as_object()) {
    if (!id.is_int64()) return Status(ErrorCode::parse_error, "tokenizer.json: a vocab id is not an integer");
    by_id[id.as_int64()] = {std::string(text), 1};
  }
  if (const json::value* added = tokenizer.if_contains("added_tokens"); added != nullptr && added->is_array()) {
    for (const json::value& item : added->as_array()) {
      if (!item.is_object()) continue;
      const json::object& t = item.as_object();
      const json::value* id = t.if_contains("id");
      if (id == nullptr || !id->is_int64()) return Status(ErrorCode::parse_error, "tokenizer.json: added token without id");
      const std::string content = str(t.if_contains("content"));
      const bool special = t.if_contains("special") != nullptr && t.at("special").is_bool() && t.at("special").as_bool();
      // llama.cpp's converter: special, or shaped like <|...|>, is control; others user-defined.
      const bool control = special || (content.starts_with("<|") && content.ends_with("|>"));
      by_id[id->as_int64()] = {content, control ? 3 : 4};
    }
  }
  const int64_t count = std::max<int64_t>(vocab_size, by_id.empty() ? 0 : by_id.rbegin()->first + 1);
  std::vector<std::string> tokens(static_cast<std::size_t>(count));
  std::vector<int32_t> types(static_cast<std::size_t>(count), 5);
  for (int64_t id = 0; id < count; ++id) {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      tokens[static_cast<std::size_t>(id)] = fmt::format("[PAD{}]", id);
    } else {
      tokens[static_cast<std::size_t>(id)] = it->second.first;
      types[static_cast<std::size_t>(id)] = it->second.second;
    }
  }

  const std::string unk = str(model.if_contains("unk_token"));
  const json::value null_value;
  const json::value& pre = tokenizer.contains("pre_tokenizer") ? tokenizer.at("pre_tokenizer") : null_value;
  const bool byte_fallback = model.if_contains("byte_fallback") != nullptr && model.at("byte_fallback").is_bool() &&
                             model.at("byte_fallback").as_bool();
  if (has_byte_level(pre)) {
    const std::optional<std::string_view> pre_name = text::gguf_pre_tokenizer_name_of(json::serialize(pre));
    if (!pre_name) {
      return make_error(ErrorCode::unsupported,
                        "tokenizer.json: the pre-tokenizer (split regex {}) is not one llama.cpp names, so a GGUF file "
                        "cannot describe it",
                        split_regex(pre));
    }
    out.add_string("tokenizer.ggml.model", "gpt2");
    out.add_string("tokenizer.ggml.pre", std::string(*pre_name));
    out.add_strings("tokenizer.ggml.tokens", tokens);
    out.add_i32s("tokenizer.ggml.token_type", types);
    std::vector<std::string> merges;
    if (const json::value* m = model.if_contains("merges"); m != nullptr && m->is_array()) {
      for (const json::value& merge : m->as_array()) {
        if (merge.is_string()) {
          merges.emplace_back(merge.as_string());
        } else if (merge.is_array() && merge.as_array().size() == 2) {
          merges.push_back(str(&merge.as_array()[0]) + " " + str(&merge.as_array()[1]));
        } else {
          return Status(ErrorCode::parse_error, "tokenizer.json: a merge is neither \"a b\" nor [a, b]");
        }
      }
    }
    out.add_strings("tokenizer.ggml.merges", std::move(merges));
  } else if (byte_fallback) {
    std::vector<float> scores(static_cast<std::size_t>(count), 0.0f);
    float next = 0;
    for (int64_t id = 0; id < count; ++id) {
      auto& type = types[static_cast<std::size_t>(id)];
      const std::string& t = tokens[static_cast<std::size_t>(id)];
      if (t == unk && !unk.empty()) {
        type = 2;
      } else if (is_byte_token(t) && type == 1) {
        type = 6;
      } else if (type == 1) {
        scores[static_cast<std::size_t>(id)] = next;
        next -= 1;
      }
    }
    out.add_string("tokenizer.ggml.model", "llama");
    out.add_string("tokenizer.ggml.pre", "default");
    out.add_strings("tokenizer.ggml.tokens", tokens);
    out.add_f32s("tokenizer.ggml.scores", std::move(scores));
    out.add_i32s("tokenizer.ggml.token_type", types);
  } else {
    return Status(ErrorCode::unsupported,
                  "tokenizer.json: neither byte-level BPE nor SentencePiece-style BPE with byte fallback; GGUF "
                  "cannot describe it");
  }

  // Special ids: BOS from config.json, else the token tokenizer_config.json names; EOS the token
  // tokenizer_config.json names (a chat model's end of turn), else config.json's.
  const auto id_of = [&](const std::string& text) -> std::optional<int64_t> {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (!text.empty() && tokens[i] == text) return static_cast<int64_t>(i);
    }
    return std::nullopt;
  };
  const std::optional<int64_t> bos = config_bos ? config_bos : id_of(token_name(config, "bos_token"));
  const std::optional<int64_t> eos = id_of(token_name(config, "eos_token")).has_value()
                                         ? id_of(token_name(config, "eos_token"))
                                         : config_eos;
  if (bos) out.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*bos));
  if (eos) out.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*eos));
  if (auto u = id_of(unk)) out.add_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(*u));
  if (auto pad = id_of(token_name(config, "pad_token"))) out.add_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*pad));
  // Whether BOS / EOS are added: tokenizer_config.json's flags, else what tokenizer.json's
  // TemplateProcessing puts around a single sequence (Llama 3 says it only there), else unsaid
  // (llama.cpp's defaults for the vocabulary apply).
  const auto template_adds = [&](bool first, const std::optional<int64_t>& id) -> std::optional<bool> {
    const json::value* post = tokenizer.if_contains("post_processor");
    if (post == nullptr || !post->is_object() || str(post->as_object().if_contains("type")) != "TemplateProcessing") {
      return std::nullopt;
    }
    const json::value* single = post->as_object().if_contains("single");
    if (single == nullptr || !single->is_array() || single->as_array().empty()) return std::nullopt;
    const json::value& edge = first ? single->as_array().front() : single->as_array().back();
    const json::value* special = edge.is_object() ? edge.as_object().if_contains("SpecialToken") : nullptr;
    if (special == nullptr || !special->is_object()) return false;
    return id.has_value() && id_of(str(special->as_object().if_contains("id"))) == id;
  };
  for (const auto& [key, flag, first, id] : {std::tuple{"tokenizer.ggml.add_bos_token", "add_bos_token", true, bos},
                                             std::tuple{"tokenizer.ggml.add_eos_token", "add_eos_token", false, eos}}) {
    const json::value* v = config.if_contains(flag);
    if (v != nullptr && v->is_bool()) {
      out.add_bool(key, v->as_bool());
    } else if (const std::optional<bool> adds = template_adds(first, id)) {
      out.add_bool(key, *adds);
    }
  }

  // The chat template: a string, or a list of named ones ("default" becomes the main one).
  if (const json::value* t = config.if_contains("chat_template"); t != nullptr) {
    if (t->is_string()) {
      out.add_string("tokenizer.chat_template", std::string(t->as_string()));
    } else if (t->is_array()) {
      for (const json::value& item : t->as_array()) {
        if (!item.is_object()) continue;
        const std::string name = str(item.as_object().if_contains("name"));
        const std::string text = str(item.as_object().if_contains("template"));
        out.add_string(name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name, text);
      }
    }
  } else if (fs::exists(hf_dir / "chat_template.jinja")) {
    std::ifstream in(hf_dir / "chat_template.jinja", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    out.add_string("tokenizer.chat_template", text.str());
  }
  return Status();
}

}  // namespace llaisys::convert
