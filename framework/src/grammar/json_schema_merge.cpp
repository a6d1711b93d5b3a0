// allOf, "$ref" beside other keywords, anyOf/oneOf beside other keywords: all are intersections of
// schemas, computed here on the schemas themselves (flatten + merge) before compiling, since the
// grammar has no intersection. Merging is exact for the keywords it takes; any pair of constraints it
// cannot combine (two different patterns, two prefixItems, ...) is refused, naming the keyword.
//
// oneOf is compiled as anyOf once check_one_of() shows no generated value can match two branches.

#include <algorithm>

#include "json_schema_compiler.hpp"

namespace llaisys::grammar::json_schema_detail {
namespace {

bool is_true_schema(const json::value& v) { return (v.is_bool() && v.get_bool()) || (v.is_object() && v.get_object().empty()); }
bool is_false_schema(const json::value& v) { return v.is_bool() && !v.get_bool(); }

// Both schemas, lazily (compiled later through flatten).
json::value both(const json::value& a, const json::value& b) {
  if (is_false_schema(a) || is_false_schema(b)) return json::value(false);
  if (is_true_schema(a)) return b;
  if (is_true_schema(b)) return a;
  if (a == b) return a;
  json::object o;
  o["allOf"] = json::array{a, b};
  return o;
}

json::array type_array(const json::value& t) {
  if (t.is_array()) return t.get_array();
  return json::array{t};
}

// One spelling per constraint: const -> enum, nullable -> "null" in type, draft-4 boolean exclusive
// bounds -> numeric ones, draft-07 items array -> prefixItems; annotations dropped.
json::object normalize(const json::object& s) {
  json::object o;
  for (const auto& kv : s) {
    const std::string_view k(kv.key().data(), kv.key().size());
    if (keyword_class(k) == KeywordClass::annotation) continue;
    o[kv.key()] = kv.value();
  }
  if (const json::value* c = o.if_contains("const")) {
    json::array values{*c};
    if (const json::value* e = o.if_contains("enum"); e != nullptr && e->is_array()) {
      const json::array& ea = e->get_array();
      if (std::none_of(ea.begin(), ea.end(), [&](const json::value& v) { return json_equal(v, *c); })) values.clear();
    }
    o["enum"] = std::move(values);
    o.erase("const");
  }
  if (const json::value* n = o.if_contains("nullable")) {
    if (n->is_bool() && n->get_bool() && o.contains("type")) {
      json::array t = type_array(o["type"]);
      t.push_back("null");
      o["type"] = std::move(t);
    }
    o.erase("nullable");
  }
  if (o.contains("type")) o["type"] = type_array(o["type"]);
  for (const auto& [flag, bound] : {std::pair{"exclusiveMinimum", "minimum"}, std::pair{"exclusiveMaximum", "maximum"}}) {
    const json::value* x = o.if_contains(flag);
    if (x == nullptr || !x->is_bool()) continue;
    const bool on = x->get_bool();
    o.erase(flag);
    if (on && o.contains(bound)) {
      o[flag] = o[bound];
      o.erase(bound);
    }
  }
  if (const json::value* it = o.if_contains("items"); it != nullptr && it->is_array()) {
    json::value prefix = *it;
    o.erase("items");
    if (const json::value* more = o.if_contains("additionalItems")) o["items"] = *more;
    o["prefixItems"] = std::move(prefix);
  }
  o.erase("additionalItems");
  return o;
}

// A member of allOf is evaluated on its own: its unevaluated*: false sees only its own keywords.
Result<json::object> as_member(json::object o, const std::string& path) {
  if (const json::value* u = o.if_contains("unevaluatedProperties"); u != nullptr && u->is_bool() && !u->get_bool()) {
    if (o.contains("anyOf") || o.contains("oneOf")) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: 'unevaluatedProperties' beside 'anyOf'/'oneOf' inside 'allOf' is not supported", path);
    }
    if (!o.contains("additionalProperties")) o["additionalProperties"] = false;
    o.erase("unevaluatedProperties");
  }
  if (const json::value* u = o.if_contains("unevaluatedItems"); u != nullptr && u->is_bool() && !u->get_bool()) {
    if (o.contains("anyOf") || o.contains("oneOf")) {
      return make_error(ErrorCode::invalid_argument, "{}: 'unevaluatedItems' beside 'anyOf'/'oneOf' inside 'allOf' is not supported", path);
    }
    if (!o.contains("items")) o["items"] = false;
    o.erase("unevaluatedItems");
  }
  return o;
}

TypeSet types_of_array(const json::array& a) {
  TypeSet t = 0;
  for (const json::value& v : a) {
    if (!v.is_string()) continue;
    const std::string_view n(v.get_string().data(), v.get_string().size());
    t |= n == "null" ? kNull : n == "boolean" ? kBoolean : n == "object" ? kObject : n == "array" ? kArray
       : n == "string" ? kString : n == "number" ? kNumber : n == "integer" ? kInteger : 0;
  }
  return t;
}

json::array type_set_array(TypeSet t) {
  json::array out;
  if (t & kNull) out.push_back("null");
  if (t & kBoolean) out.push_back("boolean");
  if (t & kObject) out.push_back("object");
  if (t & kArray) out.push_back("array");
  if (t & kString) out.push_back("string");
  if (t & kNumber) {
    out.push_back("number");
  } else if (t & kInteger) {
    out.push_back("integer");
  }
  return out;
}

// The tighter of two numeric keywords (larger for lower bounds).
Result<json::value> tighter(const json::value& a, const json::value& b, bool larger, std::string_view key, const std::string& path) {
  const auto da = decimal_of(a);
  const auto db = decimal_of(b);
  if (!da || !db) return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a number", path, key);
  const int c = compare(*da, *db);
  return (larger ? c >= 0 : c <= 0) ? a : b;
}

}  // namespace

Result<const json::value*> SchemaCompiler::flatten(const json::value& schema, const std::string& path, int32_t depth) {
  static const json::value kTrue = json::object();
  static const json::value kFalse(false);
  if (depth > options_.max_schema_depth) {
    return make_error(ErrorCode::invalid_argument, "{}: the schema is nested more than {} levels deep", path,
                      options_.max_schema_depth);
  }
  if (schema.is_bool()) return schema.get_bool() ? &kTrue : &kFalse;
  if (!schema.is_object()) return make_error(ErrorCode::invalid_argument, "{}: a schema must be an object or a boolean", path);
  const json::object& s = schema.get_object();
  if (!s.contains("$ref") && !s.contains("allOf")) return &schema;
  LLAISYS_RETURN_IF_ERROR(check_keywords(s, path));
  json::object rest = s;
  rest.erase("$ref");
  rest.erase("allOf");
  // Properties come in this order: the $ref target's, the allOf members', then the schema's own.
  json::value acc = json::object();
  if (const json::value* r = s.if_contains("$ref")) {
    if (!r->is_string()) return make_error(ErrorCode::invalid_argument, "{}: '$ref' must be a string", path);
    const std::string_view ref(r->get_string().data(), r->get_string().size());
    LLAISYS_ASSIGN_OR_RETURN(const json::value* target, resolve(ref, path));
    if (flattening_.contains(target)) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: '$ref' to '{}' reaches itself through 'allOf' or keywords beside '$ref' (recursion must go "
                        "through a property or an item)",
                        path, ref);
    }
    flattening_.insert(target);
    auto flat = flatten(*target, std::string(ref), depth + 1);
    flattening_.erase(target);
    if (!flat.ok()) return std::move(flat).take_status();
    if ((*flat)->is_object()) {
      LLAISYS_ASSIGN_OR_RETURN(json::object m, as_member(normalize((*flat)->get_object()), path));
      LLAISYS_ASSIGN_OR_RETURN(acc, merge(acc, m, path));
    } else {
      acc = false;
    }
  }
  if (const json::value* all = s.if_contains("allOf")) {
    if (!all->is_array() || all->get_array().empty()) {
      return make_error(ErrorCode::invalid_argument, "{}: 'allOf' must be a non-empty array", path);
    }
    std::size_t i = 0;
    for (const json::value& member : all->get_array()) {
      LLAISYS_ASSIGN_OR_RETURN(const json::value* flat, flatten(member, fmt::format("{}/allOf/{}", path, i++), depth + 1));
      if (!flat->is_object()) {
        acc = false;
        continue;
      }
      LLAISYS_ASSIGN_OR_RETURN(json::object m, as_member(normalize(flat->get_object()), path));
      LLAISYS_ASSIGN_OR_RETURN(acc, merge(acc, m, path));
    }
  }
  LLAISYS_ASSIGN_OR_RETURN(acc, merge(acc, normalize(rest), path));
  return &keep(std::move(acc));
}

Result<json::value> SchemaCompiler::merge(const json::value& av, const json::value& bv, const std::string& path) {
  if (--merge_budget_ < 0) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: the schema needs too many merges of 'allOf'/'anyOf'/'$ref' beside other keywords", path);
  }
  if (is_false_schema(av) || is_false_schema(bv)) return json::value(false);
  if (!av.is_object() || !bv.is_object()) return make_error(ErrorCode::invalid_argument, "{}: a schema must be an object", path);
  const json::object a = normalize(av.get_object());
  const json::object b = normalize(bv.get_object());
  json::object out = a;
  auto refuse = [&](std::string_view key) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: 'allOf' (or '$ref' beside other keywords) combining two different '{}' is not supported", path, key);
  };
  for (const auto& kv : b) {
    const std::string_view key(kv.key().data(), kv.key().size());
    const json::value& y = kv.value();
    const json::value* xp = a.if_contains(key);
    if (xp == nullptr) {
      out[kv.key()] = y;
      continue;
    }
    const json::value& x = *xp;
    if (key == "type") {
      const TypeSet tx = types_of_array(x.get_array());
      const TypeSet ty = types_of_array(y.get_array());
      TypeSet t = tx & ty;
      if ((tx & kInteger) && (ty & kNumber)) t |= kInteger;
      if ((ty & kInteger) && (tx & kNumber)) t |= kInteger;
      out["type"] = type_set_array(t);
    } else if (key == "enum") {
      if (!x.is_array() || !y.is_array()) return make_error(ErrorCode::invalid_argument, "{}: 'enum' must be an array", path);
      json::array kept;
      for (const json::value& v : x.get_array()) {
        const json::array& ya = y.get_array();
        if (std::any_of(ya.begin(), ya.end(), [&](const json::value& w) { return json_equal(v, w); })) kept.push_back(v);
      }
      out["enum"] = std::move(kept);
    } else if (key == "properties") {
      if (!x.is_object() || !y.is_object()) return make_error(ErrorCode::invalid_argument, "{}: 'properties' must be an object", path);
      json::object p = x.get_object();
      for (const auto& q : y.get_object()) {
        if (const json::value* old = p.if_contains(q.key())) {
          p[q.key()] = both(*old, q.value());
        } else {
          p[q.key()] = q.value();
        }
      }
      out["properties"] = std::move(p);
    } else if (key == "required") {
      if (!x.is_array() || !y.is_array()) return make_error(ErrorCode::invalid_argument, "{}: 'required' must be an array", path);
      json::array r = x.get_array();
      for (const json::value& n : y.get_array()) {
        if (std::find(r.begin(), r.end(), n) == r.end()) r.push_back(n);
      }
      out["required"] = std::move(r);
    } else if (key == "additionalProperties" || key == "items" || key == "unevaluatedProperties" || key == "unevaluatedItems") {
      out[kv.key()] = both(x, y);
    } else if (key == "minimum" || key == "exclusiveMinimum" || key == "minLength" || key == "minItems") {
      LLAISYS_ASSIGN_OR_RETURN(out[kv.key()], tighter(x, y, true, key, path));
    } else if (key == "maximum" || key == "exclusiveMaximum" || key == "maxLength" || key == "maxItems") {
      LLAISYS_ASSIGN_OR_RETURN(out[kv.key()], tighter(x, y, false, key, path));
    } else if (key == "anyOf") {
      if (!x.is_array() || !y.is_array()) return make_error(ErrorCode::invalid_argument, "{}: 'anyOf' must be an array", path);
      if (x.get_array().size() * y.get_array().size() > 64) return refuse("anyOf");
      json::array product;  // (x1|x2) & (y1|y2) = x1&y1 | x1&y2 | ...
      for (const json::value& p : x.get_array()) {
        for (const json::value& q : y.get_array()) product.push_back(both(p, q));
      }
      out["anyOf"] = std::move(product);
    } else if (!json_equal(x, y)) {
      return refuse(key);  // pattern, format, multipleOf, prefixItems, oneOf, refused keywords, ...
    }
  }
  // A member's additionalProperties also judges the other member's properties it does not list.
  for (const auto& [from, other] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    const json::value* ap = from->if_contains("additionalProperties");
    const json::value* theirs = other->if_contains("properties");
    if (ap == nullptr || is_true_schema(*ap) || theirs == nullptr || !theirs->is_object()) continue;
    const json::value* mine = from->if_contains("properties");
    json::object& merged = out["properties"].as_object();
    for (const auto& q : theirs->get_object()) {
      if (mine != nullptr && mine->is_object() && mine->get_object().contains(q.key())) continue;
      merged[q.key()] = both(merged[q.key()], *ap);
    }
  }
  // Likewise a member's items judges the other member's prefixItems.
  for (const auto& [from, other] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    const json::value* it = from->if_contains("items");
    const json::value* theirs = other->if_contains("prefixItems");
    if (it == nullptr || from->contains("prefixItems") || theirs == nullptr || !theirs->is_array()) continue;
    json::array p;
    for (const json::value& e : theirs->get_array()) p.push_back(both(e, *it));
    out["prefixItems"] = std::move(p);
  }
  return json::value(std::move(out));
}

// ---- oneOf ----
namespace {

// The const/enum values a flattened schema allows, if it lists them.
const json::array* listed_values(const json::object& s, json::array& scratch) {
  if (const json::value* c = s.if_contains("const")) {
    scratch = json::array{*c};
    return &scratch;
  }
  if (const json::value* e = s.if_contains("enum"); e != nullptr && e->is_array()) return &e->get_array();
  return nullptr;
}

bool disjoint_values(const json::array& x, const json::array& y) {
  for (const json::value& v : x) {
    for (const json::value& w : y) {
      if (json_equal(v, w)) return false;
    }
  }
  return true;
}

bool contains_name(const json::object& s, std::string_view list, std::string_view name) {
  const json::value* l = s.if_contains(list);
  if (l == nullptr) return false;
  if (l->is_object()) return l->get_object().contains(name);
  if (l->is_array()) {
    for (const json::value& n : l->get_array()) {
      if (n.is_string() && std::string_view(n.get_string().data(), n.get_string().size()) == name) return true;
    }
  }
  return false;
}

}  // namespace

Status SchemaCompiler::check_one_of(const std::vector<const json::value*>& branches, const std::string& path) {
  auto bucket = [](TypeSet t) -> TypeSet { return (t & kInteger) ? static_cast<TypeSet>((t & ~kInteger) | kNumber) : t; };
  for (std::size_t i = 0; i < branches.size(); ++i) {
    if (!branches[i]->is_object()) continue;  // false: generates nothing
    const json::object& gi = branches[i]->get_object();
    TypeSet gen = kAllTypes;
    if (!gi.contains("anyOf") && !gi.contains("oneOf")) {
      LLAISYS_ASSIGN_OR_RETURN(gen, generated_types(gi, path));
    }
    for (std::size_t j = 0; j < branches.size(); ++j) {
      if (j == i || !branches[j]->is_object()) continue;
      const json::object& sj = branches[j]->get_object();
      LLAISYS_ASSIGN_OR_RETURN(TypeSet sem, declared_types(sj, path));
      json::array si_scratch;
      json::array sj_scratch;
      const json::array* vi = listed_values(gi, si_scratch);
      const json::array* vj = listed_values(sj, sj_scratch);
      if (vi != nullptr && vj != nullptr && disjoint_values(*vi, *vj)) continue;
      auto value_types = [](const json::array& values) {
        TypeSet t = 0;
        for (const json::value& v : values) t |= type_of_value(v);
        return t;
      };
      TypeSet overlap = bucket(vi != nullptr ? static_cast<TypeSet>(gen & value_types(*vi)) : gen) &
                        bucket(vj != nullptr ? static_cast<TypeSet>(sem & value_types(*vj)) : sem);
      if (overlap & kObject) {
        // A property branch i always writes that branch j rejects, or one j requires that i never writes.
        bool apart = false;
        if (const json::value* req = gi.if_contains("required"); req != nullptr && req->is_array()) {
          for (const json::value& n : req->get_array()) {
            if (!n.is_string() || apart) continue;
            const std::string_view name(n.get_string().data(), n.get_string().size());
            const json::value* pj = sj.contains("properties") && sj.at("properties").is_object()
                                        ? sj.at("properties").get_object().if_contains(name)
                                        : nullptr;
            const json::value* pi = gi.contains("properties") && gi.at("properties").is_object()
                                        ? gi.at("properties").get_object().if_contains(name)
                                        : nullptr;
            if (pj == nullptr) {
              const json::value* apj = sj.if_contains("additionalProperties");
              apart = apj != nullptr && is_false_schema(*apj);
              continue;
            }
            if (is_false_schema(*pj)) {
              apart = true;
              continue;
            }
            if (pi != nullptr) {
              LLAISYS_ASSIGN_OR_RETURN(pi, flatten(*pi, path, 0));
            }
            LLAISYS_ASSIGN_OR_RETURN(pj, flatten(*pj, path, 0));
            if (pi != nullptr && pi->is_object() && pj->is_object()) {
              json::array a_scratch;
              json::array b_scratch;
              const json::array* x = listed_values(pi->get_object(), a_scratch);
              const json::array* y = listed_values(pj->get_object(), b_scratch);
              apart = x != nullptr && y != nullptr && disjoint_values(*x, *y);
            }
          }
        }
        if (const json::value* req = sj.if_contains("required"); !apart && req != nullptr && req->is_array()) {
          for (const json::value& n : req->get_array()) {
            if (!n.is_string()) continue;
            const std::string_view name(n.get_string().data(), n.get_string().size());
            if (!contains_name(gi, "properties", name) && !contains_name(gi, "required", name) && !allows_extras(gi)) {
              apart = true;
              break;
            }
          }
        }
        if (apart) overlap = static_cast<TypeSet>(overlap & ~kObject);
      }
      if (overlap != 0) {
        return make_error(ErrorCode::invalid_argument,
                          "{}: 'oneOf' branches {} and {} can both match the same {} value (oneOf needs exactly one "
                          "match): give the branches distinct types, or a required property with distinct 'const' "
                          "values, or use 'anyOf'",
                          path, std::min(i, j), std::max(i, j), type_names(overlap));
      }
    }
  }
  return Status();
}

// anyOf / oneOf, with the schema's other keywords merged into every branch.
Result<ExprPtr> SchemaCompiler::compile_combinator(const json::object& s, const std::string& path, int32_t depth) {
  if (s.contains("anyOf") && s.contains("oneOf")) {
    return make_error(ErrorCode::invalid_argument, "{}: 'anyOf' together with 'oneOf' in one schema is not supported", path);
  }
  const std::string_view key = s.contains("anyOf") ? "anyOf" : "oneOf";
  const json::value& list = s.at(key);
  if (!list.is_array() || list.get_array().empty()) {
    return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a non-empty array", path, key);
  }
  std::vector<const json::value*> branches;
  if (has_value_keywords(s, {key})) {
    json::object siblings = s;
    siblings.erase(key);
    const json::value& sib = keep(json::value(std::move(siblings)));
    LLAISYS_ASSIGN_OR_RETURN(const json::value* flat_sib, flatten(sib, path, depth + 1));
    std::size_t i = 0;
    for (const json::value& b : list.get_array()) {
      LLAISYS_ASSIGN_OR_RETURN(const json::value* fb, flatten(b, fmt::format("{}/{}/{}", path, key, i++), depth + 1));
      json::value branch = *fb;  // its unevaluated*: false does not see the siblings' properties
      if (fb->is_object()) {
        LLAISYS_ASSIGN_OR_RETURN(branch, as_member(normalize(fb->get_object()), path));
      }
      LLAISYS_ASSIGN_OR_RETURN(json::value m, merge(*flat_sib, branch, path));
      branches.push_back(&keep(std::move(m)));
    }
  } else {
    for (const json::value& b : list.get_array()) branches.push_back(&b);
  }
  if (key == "oneOf") {
    std::vector<const json::value*> flat;
    std::size_t i = 0;
    for (const json::value* b : branches) {
      LLAISYS_ASSIGN_OR_RETURN(const json::value* f, flatten(*b, fmt::format("{}/oneOf/{}", path, i++), depth + 1));
      if (f->is_object()) {
        f = &keep(json::value(normalize(f->get_object())));
      }
      flat.push_back(f);
    }
    LLAISYS_RETURN_IF_ERROR(check_one_of(flat, path));
  }
  const bool merged = has_value_keywords(s, {key});
  std::vector<ExprPtr> alts;
  std::size_t i = 0;
  for (const json::value* b : branches) {
    const std::string branch_path = fmt::format("{}/{}/{}", path, key, i++);
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, merged ? compile_merged(*b, branch_path, depth) : compile(*b, branch_path, depth + 1));
    alts.push_back(std::move(e));
  }
  return alt(std::move(alts));
}

Result<ExprPtr> SchemaCompiler::compile_merged(const json::value& merged, const std::string& path, int32_t depth) {
  std::string key = json::serialize(merged);
  if (key.find("\"$ref\"") == std::string::npos) return compile(merged, path, depth + 1);  // cannot recurse
  if (auto it = merged_rules_.find(key); it != merged_rules_.end()) return grammar::ref(it->second);
  const int32_t rule = builder_.add_rule(path + " merged");
  merged_rules_.emplace(std::move(key), rule);
  LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, compile(merged, path, depth + 1));
  builder_.set_rule(rule, std::move(e));
  return grammar::ref(rule);
}

}  // namespace llaisys::grammar::json_schema_detail
