#include "post_processor.hpp"

#include "json_fields.hpp"

namespace llaisys::text {
namespace {
namespace json = boost::json;

class IdentityProcessor final : public PostProcessor {
 public:
  void process(std::vector<TokenId>&) const override {}
};

// One template item: a run of special ids, or the sequence itself (empty `ids`).
struct TemplatePart {
  bool is_sequence = false;
  std::vector<TokenId> ids;
};

class TemplateProcessor final : public PostProcessor {
 public:
  explicit TemplateProcessor(std::vector<TemplatePart> parts) : parts_(std::move(parts)) {}
  void process(std::vector<TokenId>& ids) const override {
    std::vector<TokenId> out;
    out.reserve(ids.size() + 4);
    for (const TemplatePart& part : parts_) {
      if (part.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), part.ids.begin(), part.ids.end());
      }
    }
    ids = std::move(out);
  }

 private:
  std::vector<TemplatePart> parts_;
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void process(std::vector<TokenId>& ids) const override {
    for (const auto& step : steps_) step->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

Result<std::unique_ptr<PostProcessor>> make_template(const json::object& o) {
  const json::value* single = o.if_contains("single");
  const json::value* special = o.if_contains("special_tokens");
  if (single == nullptr || !single->is_array()) {
    return Status(ErrorCode::parse_error, "post_processor TemplateProcessing: 'single' must be an array");
  }
  std::vector<TemplatePart> parts;
  for (const json::value& item : single->get_array()) {
    const json::object* entry = item.if_object();
    if (entry == nullptr) return Status(ErrorCode::parse_error, "post_processor TemplateProcessing: bad 'single' item");
    if (entry->contains("Sequence")) {
      parts.push_back({.is_sequence = true});
      continue;
    }
    const json::value* token = entry->if_contains("SpecialToken");
    const json::value* name = token != nullptr && token->is_object() ? token->get_object().if_contains("id") : nullptr;
    if (name == nullptr || !name->is_string()) {
      return Status(ErrorCode::parse_error, "post_processor TemplateProcessing: items must be Sequence or SpecialToken");
    }
    const json::value* definition =
        special != nullptr && special->is_object() ? special->get_object().if_contains(name->get_string()) : nullptr;
    const json::value* ids = definition != nullptr && definition->is_object() ? definition->get_object().if_contains("ids")
                                                                             : nullptr;
    if (ids == nullptr || !ids->is_array()) {
      return make_error(ErrorCode::parse_error, "post_processor TemplateProcessing: special token '{}' has no 'ids'",
                        std::string_view(name->get_string()));
    }
    TemplatePart part;
    for (const json::value& id : ids->get_array()) {
      if (!id.is_int64() || id.get_int64() < 0 || id.get_int64() > INT32_MAX) {
        return Status(ErrorCode::parse_error, "post_processor TemplateProcessing: ids must be token ids");
      }
      part.ids.push_back(static_cast<TokenId>(id.get_int64()));
    }
    parts.push_back(std::move(part));
  }
  return std::unique_ptr<PostProcessor>(std::make_unique<TemplateProcessor>(std::move(parts)));
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> make_post_processor(const json::value& config) {
  if (config.is_null()) return std::unique_ptr<PostProcessor>(std::make_unique<IdentityProcessor>());
  LLAISYS_ASSIGN_OR_RETURN(const json::object* o, json_fields::object_of(config, "post_processor"));
  const std::string_view type = json_fields::type_of(*o);
  if (type == "ByteLevel") return std::unique_ptr<PostProcessor>(std::make_unique<IdentityProcessor>());
  if (type == "TemplateProcessing") return make_template(*o);
  if (type == "Sequence") {
    const json::value* list = o->if_contains("processors");
    if (list == nullptr || !list->is_array()) {
      return Status(ErrorCode::parse_error, "post_processor Sequence: 'processors' must be an array");
    }
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (const json::value& item : list->get_array()) {
      LLAISYS_ASSIGN_OR_RETURN(auto step, make_post_processor(item));
      steps.push_back(std::move(step));
    }
    return std::unique_ptr<PostProcessor>(std::make_unique<SequenceProcessor>(std::move(steps)));
  }
  if (type.empty()) return Status(ErrorCode::parse_error, "post_processor: missing 'type'");
  return make_error(ErrorCode::unsupported, "post_processor type '{}' is not supported", type);
}

std::unique_ptr<PostProcessor> make_bos_eos_processor(std::optional<TokenId> bos, std::optional<TokenId> eos) {
  std::vector<TemplatePart> parts;
  if (bos) parts.push_back({.ids = {*bos}});
  parts.push_back({.is_sequence = true});
  if (eos) parts.push_back({.ids = {*eos}});
  return std::make_unique<TemplateProcessor>(std::move(parts));
}

}  // namespace llaisys::text
