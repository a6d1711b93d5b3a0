// JSON Schema -> grammar: the entry points and the walk over one schema (dispatch, $ref, enum/const,
// types). Strings and numbers: json_schema_scalars.cpp; objects and arrays: json_schema_containers.cpp;
// allOf / $ref with siblings / anyOf distribution / oneOf: json_schema_merge.cpp.
//
// Keywords (draft 2020-12 names; older spellings noted):
//  supported   type (all seven, arrays of them), nullable (OpenAPI), enum, const, properties, required,
//              additionalProperties, items (also draft-07's array form), prefixItems, additionalItems
//              (with the array form), minItems, maxItems, minLength, maxLength, pattern, format (see
//              json_schema_formats.cpp; int32/int64/float/double for numbers), minimum, maximum,
//              exclusiveMinimum, exclusiveMaximum (numbers, or draft-4 booleans), multipleOf (1 only),
//              anyOf, oneOf (when its branches are provably disjoint: check_one_of), allOf (merged),
//              $ref ("#", "#/json/pointer", "#anchor"; recursion through rules), unevaluatedProperties
//              and unevaluatedItems (false / true), trivial values of uniqueItems (false), minProperties (0),
//              patternProperties / dependentRequired / dependentSchemas / dependencies ({}), propertyNames
//              (true / {}).
//  ignored     title, description, examples, example, default, $comment, $schema, $id (at the root; "#name"
//              elsewhere), $anchor, $dynamicAnchor, $vocabulary, deprecated, readOnly, writeOnly,
//              contentMediaType, contentEncoding, contentSchema, discriminator, externalDocs, xml, $defs,
//              definitions, id (draft-04's $id), editor annotations (markdownDescription, enumDescriptions,
//              errorMessage, ...: keyword_class), every key starting with "x-", and every other key that
//              is not a JSON Schema keyword (2020-12 treats unknown keywords as annotations).
//  refused     naming the keyword: uniqueItems, contains, minContains, maxContains,
//              minProperties, maxProperties, patternProperties, propertyNames, dependentRequired,
//              dependentSchemas, dependencies, if/then/else, not, multipleOf other than 1,
//              $dynamicRef, $recursiveRef, $recursiveAnchor, unknown formats, external $refs.
// An untyped schema generates only the kinds of value its keywords describe ({"properties": ...} only
// objects); one without such keywords, any JSON value.

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_set>

#include "json_schema_compiler.hpp"
#include "llaisys/grammar/json_schema.hpp"
#include "llaisys/grammar/reference_match.hpp"

namespace llaisys::grammar {
namespace json_schema_detail {
namespace {

std::string_view sv(const json::string& s) { return {s.data(), s.size()}; }

// Keywords with values that constrain nothing are accepted where the keyword is otherwise refused.
bool trivial_value(std::string_view key, const json::value& v) {
  auto empty_object = [&] { return v.is_object() && v.get_object().empty(); };
  if (key == "uniqueItems") return v.is_bool() && !v.get_bool();
  if (key == "minProperties") return v.is_number() && v.to_number<double>() == 0;
  if (key == "patternProperties" || key == "dependentRequired" || key == "dependentSchemas" || key == "dependencies") {
    return empty_object();
  }
  if (key == "propertyNames") return (v.is_bool() && v.get_bool()) || empty_object();
  if (key == "unevaluatedProperties") return v.is_bool();  // false: handled as "no unlisted properties"
  if (key == "unevaluatedItems") return v.is_bool();       // false: handled as "no items past the listed"
  return false;
}

bool handled(std::string_view key) {
  static const std::unordered_set<std::string_view> keys = {
      "type",      "nullable",  "enum",      "const",    "properties", "required", "additionalProperties",
      "items",     "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength",
      "pattern",   "format",    "minimum",   "maximum",  "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
      "anyOf",     "oneOf",     "allOf",     "$ref"};
  return keys.contains(key);
}

std::string json_kind_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "?";
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::optional<KeywordClass> keyword_class(std::string_view key) {
  static const std::unordered_set<std::string_view> annotations = {
      "title",           "description",     "examples",      "example",    "default",   "$comment",
      "$schema",         "$id",             "$anchor",       "$dynamicAnchor", "$vocabulary", "deprecated",
      "readOnly",        "writeOnly",       "contentMediaType", "contentEncoding", "contentSchema",
      "discriminator",   "externalDocs",    "xml",           "$defs",      "definitions",
      // draft-04's spelling of $id, and what editors and tools commonly add (VS Code, ajv-errors, ...)
      "id", "markdownDescription", "enumDescriptions", "markdownEnumDescriptions", "deprecationMessage",
      "errorMessage", "patternErrorMessage", "defaultSnippets", "doNotSuggest", "propertyOrder", "tsType"};
  static const std::unordered_set<std::string_view> refused = {
      "uniqueItems", "contains", "minContains", "maxContains", "minProperties", "maxProperties",
      "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "if", "then",
      "else", "not", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "$recursiveAnchor"};
  if (handled(key) || refused.contains(key)) return KeywordClass::value;
  // Unknown keywords are annotations (2020-12, section 4.3.1: "SHOULD be treated as annotations"; ajv
  // and xgrammar ignore them too): real schemas carry many (Snowplow's "self", "aliases", typos of
  // "description"). Keywords that constrain values are all known: they are handled or refused above.
  (void)annotations;
  return KeywordClass::annotation;
}

bool has_value_keywords(const json::object& s, std::initializer_list<std::string_view> except) {
  for (const auto& kv : s) {
    const std::string_view k(kv.key().data(), kv.key().size());
    if (std::find(except.begin(), except.end(), k) != except.end()) continue;
    if (keyword_class(k) != KeywordClass::annotation) return true;
  }
  return false;
}

std::string type_names(TypeSet t) {
  static constexpr std::pair<TypeSet, std::string_view> kNames[] = {
      {kNull, "null"}, {kBoolean, "boolean"}, {kObject, "object"}, {kArray, "array"},
      {kString, "string"}, {kNumber, "number"}, {kInteger, "integer"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((t & bit) == 0 || (bit == kInteger && (t & kNumber))) continue;
    if (!out.empty()) out += "/";
    out += name;
  }
  return out;
}

TypeSet type_of_value(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return kNull;
    case json::kind::bool_: return kBoolean;
    case json::kind::int64:
    case json::kind::uint64: return kNumber | kInteger;
    case json::kind::double_: {
      const auto d = decimal_of(v);
      return d && d->is_integer() ? (kNumber | kInteger) : kNumber;
    }
    case json::kind::string: return kString;
    case json::kind::array: return kArray;
    case json::kind::object: return kObject;
  }
  return 0;
}

SchemaCompiler::SchemaCompiler(const json::value& root, const JsonSchemaOptions& options, GrammarBuilder& builder)
    : root_(root), options_(options), builder_(builder) {}

const json::value& SchemaCompiler::keep(json::value v) {
  arena_.push_back(std::move(v));
  return arena_.back();
}

Result<int32_t> SchemaCompiler::run() {
  const int32_t root = builder_.add_rule("json schema");
  ref_rules_.emplace("#", root);
  pending_.push_back(Pending{root, &root_, "#"});
  LLAISYS_RETURN_IF_ERROR(check_alias_chain(&root_, "#", "#"));
  while (!pending_.empty()) {
    const Pending p = pending_.front();
    pending_.pop_front();
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, compile(*p.schema, p.path, 0));
    builder_.set_rule(p.rule, std::move(e));
  }
  LLAISYS_RETURN_IF_ERROR(finish_enums());
  if (builder_.exprs()[static_cast<std::size_t>(root)]->kind == Expr::Kind::nothing) {
    return make_error(ErrorCode::invalid_argument, "the schema admits no value that can be generated{}{}{}",
                      unsatisfiable_.empty() ? "" : " (one part that admits none: ", unsatisfiable_,
                      unsatisfiable_.empty() ? "" : ")");
  }
  return root;
}

int32_t SchemaCompiler::run_any_object() {
  any_value();
  return object_rule_;
}

Result<ExprPtr> SchemaCompiler::compile(const json::value& schema, const std::string& path, int32_t depth) {
  if (depth > options_.max_schema_depth) {
    return make_error(ErrorCode::invalid_argument, "{}: the schema is nested more than {} levels deep", path,
                      options_.max_schema_depth);
  }
  if (schema.is_bool()) {
    if (schema.get_bool()) return any_value();
    if (unsatisfiable_.empty()) unsatisfiable_ = fmt::format("{} is the schema false", path);
    return nothing();
  }
  if (!schema.is_object()) {
    return make_error(ErrorCode::invalid_argument, "{}: a schema must be an object or a boolean, not {}", path,
                      json_kind_name(schema));
  }
  return compile_object_schema(schema.get_object(), path, depth);
}

Status SchemaCompiler::check_keywords(const json::object& s, const std::string& path) {
  for (const auto& kv : s) {
    const std::string_view key(kv.key().data(), kv.key().size());
    const auto cls = keyword_class(key);
    if (key == "$id" || key == "id") {
      if (!kv.value().is_string()) return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a string", path, key);
      if (path != "#" && !sv(kv.value().get_string()).starts_with("#")) {
        return make_error(ErrorCode::invalid_argument,
                          "{}: '{}' inside a schema (a new base URI) is not supported in response schemas", path, key);
      }
    }
    if (*cls == KeywordClass::value && !handled(key) && !trivial_value(key, kv.value())) {
      return make_error(ErrorCode::invalid_argument, "{}: '{}' is not supported in response schemas", path, key);
    }
  }
  return Status();
}

Result<ExprPtr> SchemaCompiler::compile_object_schema(const json::object& s, const std::string& path, int32_t depth) {
  LLAISYS_RETURN_IF_ERROR(check_keywords(s, path));
  if (const json::value* r = s.if_contains("$ref"); r != nullptr && !has_value_keywords(s, {"$ref"})) {
    if (!r->is_string()) return make_error(ErrorCode::invalid_argument, "{}: '$ref' must be a string", path);
    return compile_ref(sv(r->get_string()), path);
  }
  if (s.contains("$ref") || s.contains("allOf")) {
    LLAISYS_ASSIGN_OR_RETURN(const json::value* flat, flatten(json::value(s), path, depth));
    return compile_merged(*flat, path, depth);
  }
  if (s.contains("anyOf") || s.contains("oneOf")) return compile_combinator(s, path, depth);
  if (s.contains("enum") || s.contains("const")) return compile_enum(s, path, depth);
  return compile_types(s, path, depth);
}

// ---- $ref ----

Result<const json::value*> SchemaCompiler::resolve(std::string_view ref, const std::string& path) {
  std::string r(ref);
  if (const json::object* root = root_.if_object()) {
    if (const json::value* id = root->if_contains("$id"); id != nullptr && id->is_string()) {
      const std::string_view base = sv(id->get_string());
      if (!base.empty() && r.starts_with(base)) r = r.substr(base.size());
      if (r.empty()) r.push_back('#');
    }
  }
  if (r.empty() || r[0] != '#') {
    return make_error(ErrorCode::invalid_argument,
                      "{}: '$ref' to '{}' points outside the schema; only local references ('#', '#/$defs/name') "
                      "are supported",
                      path, ref);
  }
  const std::string fragment = percent_decode(std::string_view(r).substr(1));
  if (fragment.empty()) return &root_;
  if (fragment[0] != '/') {  // a plain-name fragment: an $anchor (or a draft-07 "$id": "#name")
    if (!anchors_scanned_) {
      anchors_scanned_ = true;
      std::vector<std::pair<const json::value*, int32_t>> stack{{&root_, 0}};
      while (!stack.empty()) {
        auto [v, d] = stack.back();
        stack.pop_back();
        if (d > 2 * options_.max_schema_depth + 8) continue;
        if (const json::object* o = v->if_object()) {
          for (const char* key : {"$anchor", "$id"}) {
            const json::value* a = o->if_contains(key);
            if (a == nullptr || !a->is_string()) continue;
            std::string name(sv(a->get_string()));
            if (std::string_view(key) == "$id") {
              if (!name.starts_with("#")) continue;
              name = name.substr(1);
            }
            anchors_.emplace(name, v);
          }
          for (const auto& kv : *o) stack.emplace_back(&kv.value(), d + 1);
        } else if (const json::array* a = v->if_array()) {
          for (const json::value& e : *a) stack.emplace_back(&e, d + 1);
        }
      }
    }
    if (auto it = anchors_.find(fragment); it != anchors_.end()) return it->second;
    return make_error(ErrorCode::invalid_argument, "{}: '$ref' target '{}' does not exist", path, ref);
  }
  const json::value* at = &root_;
  std::size_t pos = 1;
  while (true) {
    const std::size_t end = std::min(fragment.find('/', pos), fragment.size());
    std::string token = fragment.substr(pos, end - pos);
    std::string unescaped;
    for (std::size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
        unescaped += token[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        unescaped += token[i];
      }
    }
    if (const json::object* o = at->if_object()) {
      at = o->if_contains(unescaped);
    } else if (const json::array* a = at->if_array()) {
      std::size_t index = 0;
      const bool digits = !unescaped.empty() && unescaped.size() < 10 &&
                          std::all_of(unescaped.begin(), unescaped.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                          (unescaped.size() == 1 || unescaped[0] != '0');
      if (digits) index = std::stoul(unescaped);
      at = digits && index < a->size() ? &(*a)[index] : nullptr;
    } else {
      at = nullptr;
    }
    if (at == nullptr) return make_error(ErrorCode::invalid_argument, "{}: '$ref' target '{}' does not exist", path, ref);
    if (end == fragment.size()) break;
    pos = end + 1;
  }
  return at;
}

Status SchemaCompiler::check_alias_chain(const json::value* target, const std::string& first, const std::string& path) {
  // A chain of schemas that are only "$ref" must reach a real schema, else it never ends.
  std::unordered_set<std::string> chain{first};
  while (const json::object* o = target->if_object()) {
    const json::value* next = o->if_contains("$ref");
    if (next == nullptr || !next->is_string() || has_value_keywords(*o, {"$ref"})) break;
    const std::string n(sv(next->get_string()));
    if (chain.contains(n)) {
      return make_error(ErrorCode::invalid_argument, "{}: '$ref' cycle through '{}' never reaches a schema", path, n);
    }
    if (alias_ok_.contains(n)) break;
    chain.insert(n);
    LLAISYS_ASSIGN_OR_RETURN(target, resolve(n, path));
  }
  alias_ok_.insert(chain.begin(), chain.end());
  return Status();
}

Result<ExprPtr> SchemaCompiler::compile_ref(std::string_view ref, const std::string& path) {
  const std::string key(ref);
  if (auto it = ref_rules_.find(key); it != ref_rules_.end()) return grammar::ref(it->second);
  LLAISYS_ASSIGN_OR_RETURN(const json::value* target, resolve(ref, path));
  LLAISYS_RETURN_IF_ERROR(check_alias_chain(target, key, path));
  const int32_t rule = builder_.add_rule(key);
  ref_rules_.emplace(key, rule);
  pending_.push_back(Pending{rule, target, key});
  return grammar::ref(rule);
}

// ---- enum / const ----

Result<ExprPtr> SchemaCompiler::compile_enum(const json::object& s, const std::string& path, int32_t depth) {
  std::vector<const json::value*> values;
  const json::value* c = s.if_contains("const");
  if (const json::value* e = s.if_contains("enum")) {
    if (!e->is_array()) return make_error(ErrorCode::invalid_argument, "{}: 'enum' must be an array", path);
    const json::array& a = e->get_array();
    if (a.size() > static_cast<std::size_t>(options_.max_enum_values)) {
      return make_error(ErrorCode::invalid_argument, "{}: 'enum' has {} values; at most {} are supported", path, a.size(),
                        options_.max_enum_values);
    }
    for (const json::value& v : a) {
      if (c == nullptr || json_equal(v, *c)) values.push_back(&v);
    }
  } else {
    values.push_back(c);
  }
  TypeSet types = kAllTypes;
  if (s.contains("type") || s.contains("nullable")) {
    LLAISYS_ASSIGN_OR_RETURN(types, declared_types(s, path));
  }
  std::vector<std::string> literals;
  std::unordered_set<std::string> seen;
  for (const json::value* v : values) {
    const TypeSet t = type_of_value(*v);
    const bool type_ok = (t & types) != 0 && (t != kNumber || (types & kNumber) != 0);
    if (!type_ok) continue;
    auto text = compact_json(*v, options_.max_schema_depth);
    if (!text.ok()) return make_error(ErrorCode::invalid_argument, "{}: an 'enum' value: {}", path, text.status().message());
    if (seen.insert(*text).second) literals.push_back(std::move(*text));
  }
  if (literals.empty() && unsatisfiable_.empty()) unsatisfiable_ = fmt::format("{}: no 'enum' value fits the schema", path);
  if (!has_value_keywords(s, {"enum", "const", "type", "nullable"})) {
    std::vector<ExprPtr> alts;
    for (const std::string& l : literals) alts.push_back(literal(l));
    return alt(std::move(alts));
  }
  // Other keywords too: keep the values they accept, checked once every rule exists (finish_enums).
  json::object rest = s;
  rest.erase("enum");
  rest.erase("const");
  const json::value& sibling = keep(json::value(std::move(rest)));
  LLAISYS_ASSIGN_OR_RETURN(ExprPtr check, compile(sibling, path, depth + 1));
  const int32_t rule = builder_.add_rule(fmt::format("{} enum", path));
  const int32_t check_rule = builder_.add_rule(fmt::format("{} enum check", path), std::move(check));
  deferred_enums_.push_back(DeferredEnum{rule, check_rule, std::move(literals)});
  return grammar::ref(rule);
}

Status SchemaCompiler::finish_enums() {
  // In creation order: an enum nested in another's other keywords was created first.
  for (const DeferredEnum& d : deferred_enums_) {
    std::vector<ExprPtr> alts;
    for (const std::string& v : d.values) {
      if (reference_match(builder_.exprs(), d.check_rule, v)) alts.push_back(literal(v));
    }
    builder_.set_rule(d.rule, alt(std::move(alts)));
  }
  return Status();
}

// ---- types ----

Result<TypeSet> SchemaCompiler::declared_types(const json::object& s, const std::string& path) const {
  const json::value* t = s.if_contains("type");
  if (t == nullptr) return kAllTypes;
  auto bit = [&](const json::value& name) -> Result<TypeSet> {
    static constexpr std::pair<std::string_view, TypeSet> kTypes[] = {
        {"null", kNull}, {"boolean", kBoolean}, {"object", kObject}, {"array", kArray},
        {"string", kString}, {"number", kNumber}, {"integer", kInteger}};
    if (name.is_string()) {
      for (const auto& [n, b] : kTypes) {
        if (n == sv(name.get_string())) return b;
      }
    }
    return make_error(ErrorCode::invalid_argument, "{}: 'type' {} is not a JSON Schema type", path, json::serialize(name));
  };
  TypeSet out = 0;
  if (t->is_array()) {
    for (const json::value& e : t->get_array()) {
      LLAISYS_ASSIGN_OR_RETURN(TypeSet b, bit(e));
      out |= b;
    }
  } else {
    LLAISYS_ASSIGN_OR_RETURN(out, bit(*t));
  }
  if (const json::value* n = s.if_contains("nullable"); n != nullptr && n->is_bool() && n->get_bool()) out |= kNull;
  return out;
}

Result<TypeSet> SchemaCompiler::generated_types(const json::object& s, const std::string& path) const {
  if (s.contains("type")) return declared_types(s, path);
  TypeSet t = 0;
  for (const auto& kv : s) {
    const std::string_view k(kv.key().data(), kv.key().size());
    if (k == "properties" || k == "required" || k == "additionalProperties" || k == "unevaluatedProperties" ||
        k == "minProperties" || k == "patternProperties" || k == "propertyNames" || k == "dependentRequired" ||
        k == "dependentSchemas" || k == "dependencies") {
      t |= kObject;
    } else if (k == "items" || k == "prefixItems" || k == "additionalItems" || k == "unevaluatedItems" ||
               k == "minItems" || k == "maxItems" || k == "uniqueItems") {
      t |= kArray;
    } else if (k == "minLength" || k == "maxLength" || k == "pattern") {
      t |= kString;
    } else if (k == "format") {
      t |= kv.value().is_string() && format_kind(sv(kv.value().get_string())) == FormatKind::number ? kNumber : kString;
    } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum" || k == "multipleOf") {
      t |= kNumber;
    }
  }
  return t == 0 ? kAllTypes : t;
}

Result<ExprPtr> SchemaCompiler::compile_types(const json::object& s, const std::string& path, int32_t depth) {
  LLAISYS_ASSIGN_OR_RETURN(const TypeSet types, generated_types(s, path));
  if (types == kAllTypes && !has_value_keywords(s, {"type", "nullable"})) return any_value();
  std::vector<ExprPtr> parts;
  if (types & kNull) parts.push_back(literal("null"));
  if (types & kBoolean) parts.push_back(alt({literal("true"), literal("false")}));
  if (types & kObject) {
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, compile_object(s, path, depth));
    parts.push_back(std::move(e));
  }
  if (types & kArray) {
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, compile_array(s, path, depth));
    parts.push_back(std::move(e));
  }
  if (types & kString) {
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, compile_string(s, path));
    parts.push_back(std::move(e));
  }
  if (types & (kNumber | kInteger)) {
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, compile_number(s, (types & kNumber) == 0, path));
    parts.push_back(std::move(e));
  }
  if (types == 0 && unsatisfiable_.empty()) unsatisfiable_ = fmt::format("{}: 'type' allows no type", path);
  return alt(std::move(parts));
}

}  // namespace json_schema_detail

Result<json_schema_detail::CompiledSchema> json_schema_detail::compile_schema(const boost::json::value& schema,
                                                                            const JsonSchemaOptions& options) {
  CompiledSchema out;
  SchemaCompiler c(schema, options, out.builder);
  LLAISYS_ASSIGN_OR_RETURN(out.root, c.run());
  out.unsatisfiable = c.unsatisfiable();
  return out;
}

Result<json_schema_detail::CompiledSchema> json_schema_detail::compile_any_object(const JsonSchemaOptions& options) {
  static const boost::json::value kEmpty = boost::json::object();
  CompiledSchema out;
  SchemaCompiler c(kEmpty, options, out.builder);
  out.root = c.run_any_object();
  return out;
}

namespace {
Result<std::shared_ptr<const Grammar>> build(Result<json_schema_detail::CompiledSchema> compiled, const GrammarLimits& limits) {
  if (!compiled.ok()) return Status(compiled.status().code(), "json schema: " + compiled.status().message());
  auto g = compiled->builder.build(compiled->root, limits);
  if (!g.ok()) {
    std::string message = "json schema: " + g.status().message();
    if (!compiled->unsatisfiable.empty()) message += fmt::format(" (one part that admits no value: {})", compiled->unsatisfiable);
    return Status(g.status().code(), std::move(message));
  }
  return g;
}
}  // namespace

Result<std::shared_ptr<const Grammar>> json_schema_grammar(const boost::json::value& schema, const JsonSchemaOptions& options) {
  return build(json_schema_detail::compile_schema(schema, options), options.limits);
}

Result<int32_t> add_json_schema(GrammarBuilder& builder, const boost::json::value& schema, const JsonSchemaOptions& options) {
  json_schema_detail::SchemaCompiler c(schema, options, builder);
  auto root = c.run();
  if (!root.ok()) return Status(root.status().code(), "json schema: " + root.status().message());
  return root;
}

Result<std::shared_ptr<const Grammar>> json_object_grammar(const JsonSchemaOptions& options) {
  return build(json_schema_detail::compile_any_object(options), options.limits);
}

}  // namespace llaisys::grammar
