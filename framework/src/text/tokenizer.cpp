#include "llaisys/text/tokenizer.hpp"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "added_vocabulary.hpp"
#include "bpe_model.hpp"
#include "pipeline.hpp"
#include "post_processor.hpp"
#include "utf8.hpp"

namespace llaisys::text {
namespace json = boost::json;

struct Tokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  AddedVocabulary added;
  int32_t vocab_size = 0;
  std::optional<TokenId> bos_id;
  std::optional<TokenId> eos_id;
  std::vector<std::string> token_bytes;  // per id, when the decoder is per-token
  std::vector<bool> byte_fallback;       // per id, when the decoder merges runs of byte tokens

  std::optional<TokenId> lookup(std::string_view token) const {
    if (const int32_t id = added.find(token); id >= 0) return id;
    if (const int32_t id = model->find(token); id >= 0) return id;
    return std::nullopt;
  }

  // Normalizes, pre-tokenizes and encodes one plain segment (no added tokens inside).
  Status encode_plain(std::string text, std::vector<TokenId>& out) const {
    if (normalizer) LLAISYS_RETURN_IF_ERROR(normalizer->normalize(text));
    if (added.has_normalized_tokens()) {
      std::vector<TextSegment> segments;
      added.split_normalized(text, segments);
      for (const TextSegment& segment : segments) {
        if (segment.added_id >= 0) {
          out.push_back(segment.added_id);
        } else {
          LLAISYS_RETURN_IF_ERROR(encode_normalized(text.substr(segment.begin, segment.end - segment.begin), out));
        }
      }
      return Status::success();
    }
    return encode_normalized(std::move(text), out);
  }

  Status encode_normalized(std::string text, std::vector<TokenId>& out) const {
    if (text.empty()) return Status::success();
    PreTokenizedText pre;
    pre.pieces.emplace_back(0, static_cast<uint32_t>(text.size()));
    pre.text = std::move(text);
    if (pre_tokenizer) LLAISYS_RETURN_IF_ERROR(pre_tokenizer->pre_tokenize(pre));
    for (std::size_t i = 0; i < pre.pieces.size(); ++i) model->encode_piece(pre.piece(i), pre.byte_level, out);
    return Status::success();
  }

  // tokenizer_config.json's add_bos_token / add_eos_token, as transformers applies them: when either
  // key is present, the post-processor becomes [bos if add_bos_token] $A [eos if add_eos_token] (an
  // absent key counts as false), replacing tokenizer.json's. Asking for a token the config does not
  // name (or the vocabulary lacks) is an error rather than a silently missing BOS.
  Status apply_add_bos_eos(const json::object& config) {
    const json::value* add_bos = config.if_contains("add_bos_token");
    const json::value* add_eos = config.if_contains("add_eos_token");
    if ((add_bos == nullptr || add_bos->is_null()) && (add_eos == nullptr || add_eos->is_null())) return Status::success();
    auto wanted = [](const json::value* flag, std::string_view key) -> Result<bool> {
      if (flag == nullptr || flag->is_null()) return false;
      if (!flag->is_bool()) return make_error(ErrorCode::parse_error, "tokenizer_config.json: '{}' must be true or false", key);
      return flag->get_bool();
    };
    LLAISYS_ASSIGN_OR_RETURN(const bool bos, wanted(add_bos, "add_bos_token"));
    LLAISYS_ASSIGN_OR_RETURN(const bool eos, wanted(add_eos, "add_eos_token"));
    if (bos && !bos_id) {
      return Status(ErrorCode::parse_error, "tokenizer_config.json: add_bos_token is true but bos_token names no token");
    }
    if (eos && !eos_id) {
      return Status(ErrorCode::parse_error, "tokenizer_config.json: add_eos_token is true but eos_token names no token");
    }
    post_processor = make_bos_eos_processor(bos ? bos_id : std::nullopt, eos ? eos_id : std::nullopt);
    return Status::success();
  }

  // The token's string before decoding (added content or vocabulary entry); nullptr when unknown.
  const std::string* raw_token(TokenId id) const {
    if (const AddedToken* token = added.find(id)) return &token->content;
    return model->token_text(id);
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

namespace {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot open '{}'", path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::io_error, "cannot read '{}'", path.string());
  return std::move(buffer).str();
}

Result<json::value> parse_json(std::string_view text, std::string_view what) {
  boost::system::error_code ec;
  json::value value = json::parse(text, ec);
  if (ec) return make_error(ErrorCode::parse_error, "{} is not valid JSON: {}", what, ec.message());
  return value;
}

// tokenizer_config.json names special tokens as a string or as {"content": ...}.
std::optional<std::string> config_token(const json::object& config, std::string_view key) {
  const json::value* v = config.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_object()) {
    if (const json::value* content = v->get_object().if_contains("content"); content && content->is_string()) {
      return std::string(content->get_string());
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_json_text(std::string_view tokenizer_json,
                                                                   std::string_view tokenizer_config_json) {
  LLAISYS_ASSIGN_OR_RETURN(json::value root, parse_json(tokenizer_json, "tokenizer.json"));
  const json::object* top = root.if_object();
  if (top == nullptr) return Status(ErrorCode::parse_error, "tokenizer.json must hold an object");
  auto impl = std::make_unique<Impl>();
  auto field = [&](std::string_view key) -> const json::value& {
    static const json::value null_value;
    const json::value* v = top->if_contains(key);
    return v != nullptr ? *v : null_value;
  };

  const json::value& model = field("model");
  if (!model.is_object()) return Status(ErrorCode::parse_error, "tokenizer.json: 'model' must be an object");
  const json::value* type = model.get_object().if_contains("type");
  if (type != nullptr && !(type->is_string() && type->get_string() == "BPE")) {
    return make_error(ErrorCode::unsupported, "tokenizer.json: model type {} is not supported (only BPE)",
                      json::serialize(*type));
  }
  LLAISYS_ASSIGN_OR_RETURN(impl->model, BpeModel::from_json(model.get_object()));
  LLAISYS_ASSIGN_OR_RETURN(impl->added, AddedVocabulary::from_json(field("added_tokens"), impl->model->id_limit()));
  LLAISYS_ASSIGN_OR_RETURN(impl->normalizer, make_normalizer(field("normalizer")));
  LLAISYS_ASSIGN_OR_RETURN(impl->pre_tokenizer, make_pre_tokenizer(field("pre_tokenizer")));
  LLAISYS_ASSIGN_OR_RETURN(impl->post_processor, make_post_processor(field("post_processor")));
  LLAISYS_ASSIGN_OR_RETURN(impl->decoder, make_decoder(field("decoder")));

  impl->vocab_size = impl->model->id_limit();
  for (const AddedToken& token : impl->added.tokens()) impl->vocab_size = std::max(impl->vocab_size, token.id + 1);

  if (!tokenizer_config_json.empty()) {
    LLAISYS_ASSIGN_OR_RETURN(json::value config, parse_json(tokenizer_config_json, "tokenizer_config.json"));
    if (!config.is_object()) return Status(ErrorCode::parse_error, "tokenizer_config.json must hold an object");
    if (auto bos = config_token(config.get_object(), "bos_token")) impl->bos_id = impl->lookup(*bos);
    if (auto eos = config_token(config.get_object(), "eos_token")) impl->eos_id = impl->lookup(*eos);
    LLAISYS_RETURN_IF_ERROR(impl->apply_add_bos_eos(config.get_object()));
  }

  if (impl->decoder && impl->decoder->is_per_token()) {
    impl->token_bytes.resize(static_cast<std::size_t>(impl->vocab_size));
    for (TokenId id = 0; id < impl->vocab_size; ++id) {
      const std::string* raw = impl->raw_token(id);
      if (raw == nullptr) continue;
      std::vector<std::string> chain{*raw};
      impl->decoder->decode_chain(chain);
      for (const std::string& part : chain) impl->token_bytes[static_cast<std::size_t>(id)] += part;
    }
  }
  if (impl->decoder && impl->decoder->merges_byte_tokens()) {
    impl->byte_fallback.resize(static_cast<std::size_t>(impl->vocab_size));
    for (TokenId id = 0; id < impl->vocab_size; ++id) {
      const std::string* raw = impl->raw_token(id);
      impl->byte_fallback[static_cast<std::size_t>(id)] = raw != nullptr && byte_fallback_value(*raw).has_value();
    }
  }
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_files(const std::filesystem::path& tokenizer_json,
                                                               const std::filesystem::path& tokenizer_config) {
  LLAISYS_ASSIGN_OR_RETURN(std::string text, read_file(tokenizer_json));
  std::string config_text;
  if (!tokenizer_config.empty()) {
    LLAISYS_ASSIGN_OR_RETURN(config_text, read_file(tokenizer_config));
  }
  auto tokenizer = from_json_text(text, config_text);
  if (!tokenizer.ok()) return std::move(tokenizer).take_status().with_context(tokenizer_json.string());
  return tokenizer;
}

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_model_dir(const std::filesystem::path& dir) {
  const std::filesystem::path json_path = dir / "tokenizer.json";
  std::error_code ec;
  if (!std::filesystem::exists(json_path, ec)) {
    return make_error(ErrorCode::not_found, "'{}' has no tokenizer.json", dir.string());
  }
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  return from_files(json_path, std::filesystem::exists(config_path, ec) ? config_path : std::filesystem::path());
}

Result<std::vector<TokenId>> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::repair(text);
    text = repaired;
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<TextSegment> segments;
  impl_->added.split_raw(text, segments);
  for (const TextSegment& segment : segments) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
    } else {
      LLAISYS_RETURN_IF_ERROR(impl_->encode_plain(std::string(text.substr(segment.begin, segment.end - segment.begin)), ids));
    }
  }
  if (add_special_tokens) impl_->post_processor->process(ids);
  return ids;
}

Result<std::string> Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const TokenId id : ids) {
    const std::string* raw = impl_->raw_token(id);
    if (raw == nullptr) {
      return make_error(ErrorCode::invalid_argument, "{} is not a token id of this tokenizer (vocabulary size {})", id,
                        impl_->vocab_size);
    }
    if (skip_special_tokens && is_special(id)) continue;
    tokens.push_back(*raw);
  }
  std::string joined;
  if (impl_->decoder) {
    impl_->decoder->decode_chain(tokens);
    for (const std::string& part : tokens) joined += part;
  } else {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) joined += ' ';
      joined += tokens[i];
    }
  }
  if (utf8::is_valid(joined)) return joined;
  return utf8::repair(joined);
}

int32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

bool Tokenizer::is_special(TokenId id) const {
  const AddedToken* token = impl_->added.find(id);
  return token != nullptr && token->special;
}

bool Tokenizer::is_valid_id(TokenId id) const { return impl_->raw_token(id) != nullptr; }

std::optional<TokenId> Tokenizer::token_id(std::string_view token) const { return impl_->lookup(token); }

std::optional<std::string> Tokenizer::token_text(TokenId id) const {
  const std::string* raw = impl_->raw_token(id);
  return raw != nullptr ? std::optional<std::string>(*raw) : std::nullopt;
}

std::optional<TokenId> Tokenizer::bos_token_id() const { return impl_->bos_id; }
std::optional<TokenId> Tokenizer::eos_token_id() const { return impl_->eos_id; }

bool Tokenizer::decodes_per_token() const { return !impl_->token_bytes.empty(); }

std::string Tokenizer::decode_bytes(TokenId id, bool skip_special_tokens) const {
  if (id < 0 || id >= impl_->vocab_size || impl_->token_bytes.empty()) return {};
  if (skip_special_tokens && is_special(id)) return {};
  return impl_->token_bytes[static_cast<std::size_t>(id)];
}

std::string Tokenizer::piece_bytes(TokenId id) const {
  if (id < 0 || id >= impl_->vocab_size || is_special(id)) return {};
  if (!impl_->token_bytes.empty()) return impl_->token_bytes[static_cast<std::size_t>(id)];
  const std::string* raw = impl_->raw_token(id);
  if (raw == nullptr) return {};
  std::string piece = *raw;
  if (impl_->decoder) impl_->decoder->decode_piece(piece);
  return piece;
}

bool Tokenizer::is_byte_fallback_token(TokenId id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->byte_fallback.size() &&
         impl_->byte_fallback[static_cast<std::size_t>(id)];
}

}  // namespace llaisys::text
