#pragma once
// The schema walk, shared by json_schema.cpp (dispatch, $ref, enum, strings, numbers),
// json_schema_containers.cpp (objects, arrays, any JSON value) and json_schema_merge.cpp (allOf,
// $ref with siblings, anyOf distribution, oneOf disjointness).
//
// Each subschema becomes an expression; every $ref target becomes one rule, compiled once (a queue,
// not recursion, so $ref chains cost no stack) and shared; large subexpressions used several times
// (property values, array items) become rules too, so nothing is copied per use. Schemas built by
// merging (allOf, $ref with siblings) live in `arena_` for as long as the walk.

#include <deque>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/json.hpp>

#include "json_schema_internal.hpp"

namespace llaisys::grammar::json_schema_detail {
namespace json = boost::json;

// JSON types as bits. kInteger alone means integers only; with kNumber it adds nothing.
using TypeSet = uint8_t;
inline constexpr TypeSet kNull = 1, kBoolean = 2, kObject = 4, kArray = 8, kString = 16, kNumber = 32, kInteger = 64;
inline constexpr TypeSet kAllTypes = 0x7F;

enum class KeywordClass {
  annotation,  // accepted and ignored (also "$defs"/"definitions", looked into by $ref only)
  value,       // constrains values: handled, or refused where handled
};
// Never nullopt: keywords that are not JSON Schema are annotations (kept optional for callers).
std::optional<KeywordClass> keyword_class(std::string_view key);
// Whether `s` has a keyword other than annotations and those in `except`.
bool has_value_keywords(const json::object& s, std::initializer_list<std::string_view> except);
std::string type_names(TypeSet t);
// The type of a JSON value (integral numbers: kNumber | kInteger).
TypeSet type_of_value(const json::value& v);

class SchemaCompiler {
 public:
  // Rules are added to `builder` (which outlives the compiler).
  SchemaCompiler(const json::value& root, const JsonSchemaOptions& options, GrammarBuilder& builder);
  // The rule of the schema's instances / of any JSON object.
  Result<int32_t> run();
  int32_t run_any_object();
  // The first part of the schema found to admit no value (for messages), or "".
  const std::string& unsatisfiable() const { return unsatisfiable_; }

  // ---- json_schema.cpp ----
  Result<ExprPtr> compile(const json::value& schema, const std::string& path, int32_t depth);

 private:
  Result<ExprPtr> compile_object_schema(const json::object& s, const std::string& path, int32_t depth);
  Status check_keywords(const json::object& s, const std::string& path);
  Result<ExprPtr> compile_ref(std::string_view ref, const std::string& path);
  Status check_alias_chain(const json::value* target, const std::string& first, const std::string& path);
  Result<const json::value*> resolve(std::string_view ref, const std::string& path);
  Result<ExprPtr> compile_enum(const json::object& s, const std::string& path, int32_t depth);
  Status finish_enums();
  Result<ExprPtr> compile_types(const json::object& s, const std::string& path, int32_t depth);
  Result<ExprPtr> compile_string(const json::object& s, const std::string& path);
  Result<ExprPtr> compile_number(const json::object& s, bool integer_only, const std::string& path);
  Result<ExprPtr> compile_combinator(const json::object& s, const std::string& path, int32_t depth);

 public:
  // Helpers the other files share.
  Result<TypeSet> declared_types(const json::object& s, const std::string& path) const;
  // What we generate for `s` (its declared types, or those its keywords describe when "type" is absent).
  Result<TypeSet> generated_types(const json::object& s, const std::string& path) const;
  // A non-negative integer keyword (minLength, maxItems, ...), at most max_repeat_bound; -1 when absent.
  Result<int64_t> read_count(const json::object& s, std::string_view key, const std::string& path) const;
  // Whether an object schema lets unlisted properties be generated (ignoring their schema).
  bool allows_extras(const json::object& s) const;

 private:
  // ---- json_schema_containers.cpp ----
  Result<ExprPtr> compile_object(const json::object& s, const std::string& path, int32_t depth);
  Result<ExprPtr> compile_array(const json::object& s, const std::string& path, int32_t depth);
  ExprPtr ws() const;
  ExprPtr sep() const;  // ws "," ws
  ExprPtr any_value();
  ExprPtr any_string() const;
  // x repeated min..max times (max -1: unbounded); large bounds through chunk rules of ~sqrt(max).
  ExprPtr repeat_bounded(const ExprPtr& x, int64_t min, int64_t max, const std::string& name);
  // `e` itself when small, else a rule holding it (so using it several times copies nothing).
  ExprPtr shared(const ExprPtr& e, const std::string& name);
  Result<ExprPtr> key_not_in(const std::vector<std::string>& names, const std::string& path) const;

  // ---- json_schema_merge.cpp ----
 public:
  // `schema` without "$ref" and "allOf" at its top (merged into it): an object or `false`.
  Result<const json::value*> flatten(const json::value& schema, const std::string& path, int32_t depth);
  // Both constraints at once (the allOf of two flattened schemas), or a refusal naming the keyword.
  Result<json::value> merge(const json::value& a, const json::value& b, const std::string& path);
  // A merged schema compiled once per distinct content (a rule when it may recurse through $ref): a
  // recursion through "$ref" beside other keywords comes back to the same merged schema and ends.
  Result<ExprPtr> compile_merged(const json::value& merged, const std::string& path, int32_t depth);
  // Refuses a oneOf whose branches (flattened) might both match one generated value.
  Status check_one_of(const std::vector<const json::value*>& branches, const std::string& path);

 private:
  const json::value& keep(json::value v);  // into the arena

  const json::value& root_;
  JsonSchemaOptions options_;
  GrammarBuilder& builder_;
  std::deque<json::value> arena_;
  std::unordered_map<std::string, int32_t> ref_rules_;  // normalized "#..." -> rule
  struct Pending {
    int32_t rule;
    const json::value* schema;
    std::string path;
  };
  std::deque<Pending> pending_;
  struct DeferredEnum {
    int32_t rule;        // set to the values that pass
    int32_t check_rule;  // the schema's other keywords
    std::vector<std::string> values;
  };
  std::vector<DeferredEnum> deferred_enums_;
  std::set<const json::value*> flattening_;  // $ref targets being flattened (cycle guard)
  std::unordered_map<std::string, const json::value*> anchors_;
  std::unordered_set<std::string> alias_ok_;
  std::unordered_map<std::string, int32_t> merged_rules_;
  std::unordered_map<const Expr*, int32_t> shared_rules_;  // shared(): one rule per expression  // serialized merged schema -> rule
  int64_t merge_budget_ = 20'000;                         // merges, all together  // refs known to reach a schema that is not only "$ref"
  bool anchors_scanned_ = false;
  int32_t value_rule_ = -1;
  int32_t object_rule_ = -1;
  int32_t array_rule_ = -1;
  int64_t names_ = 0;  // for unique rule names
  std::string unsatisfiable_;  // the first reason a part of the schema admits no value
};

}  // namespace llaisys::grammar::json_schema_detail
