#include "structured_output.hpp"

#include <fmt/format.h>

#include "request_fields.hpp"

namespace llaisys::app {
namespace json = boost::json;
namespace {

using grammar::GrammarSpec;

constexpr std::size_t kMaxJsonDepth = 64;

bool present(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && !v->is_null();
}

// A schema given as an object, or as JSON text holding one (vLLM accepts both).
Result<json::value> schema_value(const json::value& v, std::string_view field) {
  if (v.is_object() || v.is_bool()) return v;
  if (v.is_string()) {
    json::parse_options options;
    options.max_depth = kMaxJsonDepth;
    boost::system::error_code ec;
    json::value parsed = json::parse(v.as_string(), ec, {}, options);
    if (ec || !(parsed.is_object() || parsed.is_bool())) {
      return make_error(ErrorCode::invalid_argument, "'{}' must be a JSON Schema (an object, or JSON text of one)", field);
    }
    return parsed;
  }
  return make_error(ErrorCode::invalid_argument, "'{}' must be a JSON Schema (an object, or JSON text of one)", field);
}

Result<GrammarSpec> choice_spec(const json::value& v, std::string_view field) {
  GrammarSpec spec{.kind = GrammarSpec::Kind::choice};
  if (!v.is_array() || v.as_array().empty()) return bad_field(field, "a non-empty list of strings");
  if (v.as_array().size() > grammar::kMaxChoices) {
    return make_error(ErrorCode::invalid_argument, "'{}' may hold at most {} choices", field, grammar::kMaxChoices);
  }
  for (const json::value& c : v.as_array()) {
    if (!c.is_string() || c.as_string().empty()) return bad_field(field, "a non-empty list of non-empty strings");
    spec.choices.emplace_back(c.as_string());
  }
  return spec;
}

Result<GrammarSpec> text_spec(const json::value& v, std::string_view field, GrammarSpec::Kind kind) {
  if (!v.is_string() || v.as_string().empty()) return bad_field(field, "a non-empty string");
  return GrammarSpec{.kind = kind, .text = std::string(v.as_string())};
}

Result<std::optional<GrammarSpec>> response_format(const json::value& v) {
  const json::object* o = v.if_object();
  const json::value* type = o != nullptr ? o->if_contains("type") : nullptr;
  if (type == nullptr || !type->is_string()) {
    return bad_field("response_format", "an object with a 'type' of \"text\", \"json_object\" or \"json_schema\"");
  }
  const std::string_view t = type->as_string();
  if (t == "text") return std::optional<GrammarSpec>();
  if (t == "json_object") return std::optional<GrammarSpec>(GrammarSpec{.kind = GrammarSpec::Kind::json_object});
  if (t != "json_schema") {
    return make_error(ErrorCode::invalid_argument,
                      "'response_format' type '{}' is not supported (\"text\", \"json_object\" or \"json_schema\")",
                      t.substr(0, 40));
  }
  const json::value* js = o->if_contains("json_schema");
  if (js == nullptr || !js->is_object()) {
    return bad_field("response_format", "a 'json_schema' object with a 'schema' when its type is \"json_schema\"");
  }
  const json::object& spec_object = js->as_object();
  const json::value* schema = spec_object.if_contains("schema");
  if (schema == nullptr || schema->is_null()) {
    return Status(ErrorCode::invalid_argument, "'response_format.json_schema' needs a 'schema'");
  }
  GrammarSpec spec{.kind = GrammarSpec::Kind::json_schema};
  LLAISYS_ASSIGN_OR_RETURN(spec.schema, schema_value(*schema, "response_format.json_schema.schema"));
  if (const json::value* strict = spec_object.if_contains("strict"); strict != nullptr && !strict->is_null()) {
    if (!strict->is_bool()) return bad_field("response_format.json_schema.strict", "true or false");
    spec.strict = strict->as_bool();
  }
  if (const json::value* name = spec_object.if_contains("name"); name != nullptr && !name->is_null() && !name->is_string()) {
    return bad_field("response_format.json_schema.name", "a string");
  }
  return std::optional<GrammarSpec>(std::move(spec));
}

}  // namespace

Result<std::optional<GrammarSpec>> structured_output_spec(const json::object& body) {
  for (const std::string_view refused : {"guided_whitespace_pattern", "structural_tag", "guided_decoding_backend"}) {
    if (!present(body, refused)) continue;
    if (refused == "guided_decoding_backend") {
      const json::value& b = body.at(refused);
      if (b.is_string() && (b.as_string() == "auto" || b.as_string() == "llaisys")) continue;
      return Status(ErrorCode::invalid_argument,
                    "'guided_decoding_backend' is not supported: llaisys has one grammar engine (use \"auto\" or leave it out)");
    }
    return make_error(ErrorCode::invalid_argument, "'{}' is not supported", refused);
  }
  std::optional<GrammarSpec> spec;
  std::string_view source;
  auto take = [&](std::string_view field, Result<std::optional<GrammarSpec>> r) -> Status {
    if (!r.ok()) return r.status();
    if (!r->has_value()) return Status();
    if (spec) {
      return make_error(ErrorCode::invalid_argument, "'{}' and '{}' both ask for structured output; give one", source,
                        field);
    }
    spec = std::move(*r);
    source = field;
    return Status();
  };
  auto wrap = [](Result<GrammarSpec> r) -> Result<std::optional<GrammarSpec>> {
    if (!r.ok()) return r.status();
    return std::optional<GrammarSpec>(std::move(r).value());
  };
  if (present(body, "response_format")) {
    LLAISYS_RETURN_IF_ERROR(take("response_format", response_format(body.at("response_format"))));
  }
  if (present(body, "guided_json")) {
    auto schema = schema_value(body.at("guided_json"), "guided_json");
    if (!schema.ok()) return schema.status();
    LLAISYS_RETURN_IF_ERROR(take("guided_json", std::optional<GrammarSpec>(GrammarSpec{
                                                    .kind = GrammarSpec::Kind::json_schema, .schema = std::move(schema).value()})));
  }
  if (present(body, "guided_regex")) {
    LLAISYS_RETURN_IF_ERROR(take("guided_regex", wrap(text_spec(body.at("guided_regex"), "guided_regex", GrammarSpec::Kind::regex))));
  }
  if (present(body, "guided_choice")) {
    LLAISYS_RETURN_IF_ERROR(take("guided_choice", wrap(choice_spec(body.at("guided_choice"), "guided_choice"))));
  }
  if (present(body, "guided_grammar")) {
    LLAISYS_RETURN_IF_ERROR(take("guided_grammar", wrap(text_spec(body.at("guided_grammar"), "guided_grammar", GrammarSpec::Kind::gbnf))));
  }
  if (present(body, "structured_outputs")) {
    const json::object* so = body.at("structured_outputs").if_object();
    if (so == nullptr) return bad_field("structured_outputs", "an object with one of 'json', 'regex', 'choice', 'grammar'");
    for (const auto& [key, value] : *so) {
      if (value.is_null()) continue;
      if (key == "json") {
        auto schema = schema_value(value, "structured_outputs.json");
        if (!schema.ok()) return schema.status();
        LLAISYS_RETURN_IF_ERROR(take("structured_outputs.json", std::optional<GrammarSpec>(GrammarSpec{
                                                                     .kind = GrammarSpec::Kind::json_schema,
                                                                     .schema = std::move(schema).value()})));
      } else if (key == "json_object") {
        if (!value.is_bool()) return bad_field("structured_outputs.json_object", "true or false");
        if (value.as_bool()) {
          LLAISYS_RETURN_IF_ERROR(take("structured_outputs.json_object",
                                       std::optional<GrammarSpec>(GrammarSpec{.kind = GrammarSpec::Kind::json_object})));
        }
      } else if (key == "regex") {
        LLAISYS_RETURN_IF_ERROR(take("structured_outputs.regex",
                                     wrap(text_spec(value, "structured_outputs.regex", GrammarSpec::Kind::regex))));
      } else if (key == "choice") {
        LLAISYS_RETURN_IF_ERROR(take("structured_outputs.choice", wrap(choice_spec(value, "structured_outputs.choice"))));
      } else if (key == "grammar") {
        LLAISYS_RETURN_IF_ERROR(take("structured_outputs.grammar",
                                     wrap(text_spec(value, "structured_outputs.grammar", GrammarSpec::Kind::gbnf))));
      } else {
        return make_error(ErrorCode::invalid_argument, "'structured_outputs.{}' is not supported",
                          std::string_view(key).substr(0, 40));
      }
    }
  }
  return spec;
}

}  // namespace llaisys::app
