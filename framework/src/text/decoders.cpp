// Decoders: ByteLevel (byte alphabet back to bytes), and the SentencePiece-style chain pieces
// (Replace, ByteFallback, Fuse, Strip, Metaspace), combined by Sequence.

#include <charconv>

#include "byte_level.hpp"
#include "json_fields.hpp"
#include "pipeline.hpp"
#include "utf8.hpp"

namespace llaisys::text {
namespace {
namespace json = boost::json;

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      if (auto decoded = byte_level::decode(token)) {
        bytes += *decoded;
      } else {
        bytes += token;  // a character outside the alphabet: Hugging Face keeps the token's bytes
      }
    }
    tokens.assign(1, std::move(bytes));
  }
  bool is_per_token() const override { return true; }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::string pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::string out;
      std::size_t start = 0;
      for (std::size_t hit; (hit = token.find(pattern_, start)) != std::string::npos; start = hit + pattern_.size()) {
        out.append(token, start, hit - start);
        out += content_;
      }
      out.append(token, start);
      token = std::move(out);
    }
  }

 private:
  std::string pattern_;
  std::string content_;
};

// "<0x41>" tokens become raw bytes; a run of them that is valid UTF-8 becomes its text, an invalid
// run one U+FFFD per byte (Hugging Face's rule, unlike the maximal-subpart repair elsewhere).
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    bool have_pending = false;
    auto flush = [&] {
      if (utf8::is_valid(pending)) {
        out.push_back(std::move(pending));
      } else {
        for (std::size_t i = 0; i < pending.size(); ++i) out.emplace_back(utf8::kReplacement);
      }
      pending.clear();
      have_pending = false;
    };
    for (std::string& token : tokens) {
      if (const std::optional<uint8_t> byte = byte_fallback_value(token)) {
        pending.push_back(static_cast<char>(*byte));
        have_pending = true;
        continue;
      }
      if (have_pending) flush();
      out.push_back(std::move(token));
    }
    if (have_pending) flush();
    tokens = std::move(out);
  }
  bool merges_byte_tokens() const override { return true; }
  void decode_piece(std::string& piece) const override {
    if (const std::optional<uint8_t> byte = byte_fallback_value(piece)) piece.assign(1, static_cast<char>(*byte));
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

// Removes up to `left`/`right` occurrences of `content` from each token's ends.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, int64_t left, int64_t right) : content_(std::move(content)), left_(left), right_(right) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      for (int64_t i = 0; i < left_ && token.starts_with(content_); ++i) token.erase(0, content_.size());
      for (int64_t i = 0; i < right_ && token.ends_with(content_); ++i) token.erase(token.size() - content_.size());
    }
  }

 private:
  std::string content_;
  int64_t left_;
  int64_t right_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }
  bool is_per_token() const override { return steps_.size() == 1 && steps_[0]->is_per_token(); }
  // After a Fuse the chain holds the whole text, so a Strip then trims only the text's ends.
  void decode_piece(std::string& piece) const override {
    bool fused = false;
    for (const auto& step : steps_) {
      if (dynamic_cast<const FuseDecoder*>(step.get()) != nullptr) {
        fused = true;
      } else if (!(fused && dynamic_cast<const StripDecoder*>(step.get()) != nullptr)) {
        step->decode_piece(piece);
      }
    }
  }
  bool merges_byte_tokens() const override {
    for (const auto& step : steps_) {
      if (step->merges_byte_tokens()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

Result<std::string> literal_pattern(const json::object& o, std::string_view what) {
  const json::value* pattern = o.if_contains("pattern");
  const json::value* literal =
      pattern != nullptr && pattern->is_object() ? pattern->get_object().if_contains("String") : nullptr;
  if (literal == nullptr || !literal->is_string()) {
    return make_error(ErrorCode::unsupported, "{}: only {{\"String\": ...}} patterns are supported", what);
  }
  return std::string(literal->get_string());
}

}  // namespace

std::optional<uint8_t> byte_fallback_value(std::string_view token) {
  unsigned value = 0;
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>' ||
      std::from_chars(token.data() + 3, token.data() + 5, value, 16).ptr != token.data() + 5) {
    return std::nullopt;
  }
  return static_cast<uint8_t>(value);
}

Result<std::unique_ptr<Decoder>> make_decoder(const json::value& config) {
  if (config.is_null()) return std::unique_ptr<Decoder>();
  LLAISYS_ASSIGN_OR_RETURN(const json::object* o, json_fields::object_of(config, "decoder"));
  const std::string_view type = json_fields::type_of(*o);
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(std::make_unique<ByteLevelDecoder>());
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(std::make_unique<ByteFallbackDecoder>());
  if (type == "Fuse") return std::unique_ptr<Decoder>(std::make_unique<FuseDecoder>());
  if (type == "Replace") {
    LLAISYS_ASSIGN_OR_RETURN(std::string pattern, literal_pattern(*o, "decoder Replace"));
    LLAISYS_ASSIGN_OR_RETURN(std::string content, json_fields::required_string(*o, "content"));
    return std::unique_ptr<Decoder>(std::make_unique<ReplaceDecoder>(std::move(pattern), std::move(content)));
  }
  if (type == "Strip") {
    LLAISYS_ASSIGN_OR_RETURN(std::string content, json_fields::required_string(*o, "content"));
    const json::value* start = o->if_contains("start");
    const json::value* stop = o->if_contains("stop");
    if (start == nullptr || !start->is_int64() || stop == nullptr || !stop->is_int64()) {
      return Status(ErrorCode::parse_error, "decoder Strip: 'start' and 'stop' must be integers");
    }
    return std::unique_ptr<Decoder>(std::make_unique<StripDecoder>(std::move(content), start->get_int64(), stop->get_int64()));
  }
  if (type == "Sequence") {
    const json::value* list = o->if_contains("decoders");
    if (list == nullptr || !list->is_array()) {
      return Status(ErrorCode::parse_error, "decoder Sequence: 'decoders' must be an array");
    }
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const json::value& item : list->get_array()) {
      LLAISYS_ASSIGN_OR_RETURN(auto step, make_decoder(item));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<Decoder>(std::make_unique<SequenceDecoder>(std::move(steps)));
  }
  if (type.empty()) return Status(ErrorCode::parse_error, "decoder: missing 'type'");
  return make_error(ErrorCode::unsupported, "decoder type '{}' is not supported", type);
}

}  // namespace llaisys::text
