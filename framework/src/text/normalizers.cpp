// Normalizers: Unicode normalization forms (ICU) and the small text rewrites SentencePiece-style
// tokenizers use (Prepend, Replace with a literal, Strip), chained by Sequence.

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "json_fields.hpp"
#include "pipeline.hpp"

namespace llaisys::text {
namespace {
namespace json = boost::json;

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(const icu::Normalizer2* normalizer) : normalizer_(normalizer) {}

  Status normalize(std::string& text) const override {
    // ASCII is invariant under every normalization form.
    bool ascii = true;
    for (char c : text) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return Status::success();
    UErrorCode error = U_ZERO_ERROR;
    const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
    if (normalizer_->isNormalizedUTF8(piece, error) && U_SUCCESS(error)) return Status::success();
    error = U_ZERO_ERROR;
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    icu::StringByteSink<std::string> sink(&out);
    normalizer_->normalizeUTF8(0, piece, sink, nullptr, error);
    if (U_FAILURE(error)) {
      return make_error(ErrorCode::internal, "Unicode normalization failed: {}", u_errorName(error));
    }
    text = std::move(out);
    return Status::success();
  }

 private:
  const icu::Normalizer2* normalizer_;  // ICU singletons, never freed
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  Status normalize(std::string& text) const override {
    for (const auto& step : steps_) LLAISYS_RETURN_IF_ERROR(step->normalize(text));
    return Status::success();
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  Status normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
    return Status::success();
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status normalize(std::string& text) const override {
    if (pattern_.empty() || text.find(pattern_) == std::string::npos) return Status::success();
    std::string out;
    out.reserve(text.size());
    std::size_t start = 0;
    for (std::size_t hit; (hit = text.find(pattern_, start)) != std::string::npos; start = hit + pattern_.size()) {
      out.append(text, start, hit - start);
      out.append(content_);
    }
    out.append(text, start);
    text = std::move(out);
    return Status::success();
  }

 private:
  std::string pattern_;
  std::string content_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  Status normalize(std::string& text) const override {
    constexpr std::string_view kSpace = " \t\n\r\v\f";
    if (right_) text.erase(text.find_last_not_of(kSpace) + 1);
    if (left_) text.erase(0, std::min(text.find_first_not_of(kSpace), text.size()));
    return Status::success();
  }

 private:
  bool left_;
  bool right_;
};

Result<std::unique_ptr<Normalizer>> make_unicode(std::string_view type) {
  UErrorCode error = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = nullptr;
  if (type == "NFC") normalizer = icu::Normalizer2::getNFCInstance(error);
  if (type == "NFD") normalizer = icu::Normalizer2::getNFDInstance(error);
  if (type == "NFKC") normalizer = icu::Normalizer2::getNFKCInstance(error);
  if (type == "NFKD") normalizer = icu::Normalizer2::getNFKDInstance(error);
  if (normalizer == nullptr || U_FAILURE(error)) {
    return make_error(ErrorCode::internal, "ICU has no {} normalizer: {}", type, u_errorName(error));
  }
  return std::unique_ptr<Normalizer>(std::make_unique<UnicodeNormalizer>(normalizer));
}

}  // namespace

Result<std::unique_ptr<Normalizer>> make_normalizer(const json::value& config) {
  if (config.is_null()) return std::unique_ptr<Normalizer>();
  LLAISYS_ASSIGN_OR_RETURN(const json::object* o, json_fields::object_of(config, "normalizer"));
  const std::string_view type = json_fields::type_of(*o);
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") return make_unicode(type);
  if (type == "Sequence") {
    const json::value* list = o->if_contains("normalizers");
    if (list == nullptr || !list->is_array()) {
      return Status(ErrorCode::parse_error, "normalizer Sequence: 'normalizers' must be an array");
    }
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const json::value& item : list->get_array()) {
      LLAISYS_ASSIGN_OR_RETURN(auto step, make_normalizer(item));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<Normalizer>(std::make_unique<SequenceNormalizer>(std::move(steps)));
  }
  if (type == "Prepend") {
    LLAISYS_ASSIGN_OR_RETURN(std::string prefix, json_fields::required_string(*o, "prepend"));
    return std::unique_ptr<Normalizer>(std::make_unique<PrependNormalizer>(std::move(prefix)));
  }
  if (type == "Replace") {
    const json::value* pattern = o->if_contains("pattern");
    const json::value* literal = pattern != nullptr && pattern->is_object() ? pattern->get_object().if_contains("String")
                                                                            : nullptr;
    if (literal == nullptr || !literal->is_string()) {
      return Status(ErrorCode::unsupported, "normalizer Replace: only {\"String\": ...} patterns are supported");
    }
    LLAISYS_ASSIGN_OR_RETURN(std::string content, json_fields::required_string(*o, "content"));
    return std::unique_ptr<Normalizer>(
        std::make_unique<ReplaceNormalizer>(std::string(literal->get_string()), std::move(content)));
  }
  if (type == "Strip") {
    LLAISYS_ASSIGN_OR_RETURN(bool left, json_fields::bool_or(*o, "strip_left", false));
    LLAISYS_ASSIGN_OR_RETURN(bool right, json_fields::bool_or(*o, "strip_right", false));
    return std::unique_ptr<Normalizer>(std::make_unique<StripNormalizer>(left, right));
  }
  if (type.empty()) return Status(ErrorCode::parse_error, "normalizer: missing 'type'");
  return make_error(ErrorCode::unsupported, "normalizer type '{}' is not supported", type);
}

}  // namespace llaisys::text
