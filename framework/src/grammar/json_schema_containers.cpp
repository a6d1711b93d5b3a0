// Objects, arrays and "any JSON value" for the JSON Schema front end.
//
// Objects: properties in the schema's order, required ones always, optional ones skippable, with the
// commas right whichever are present; then, when allowed, unlisted properties whose keys are none of
// the listed names (written without escapes, so that "none of the names" is a plain trie
// complement). Which unlisted properties are generated: allows_extras().
// Arrays: prefixItems (or draft-07's items array) one by one, then items, minItems..maxItems in all.

#include <algorithm>
#include <cmath>
#include <map>

#include "json_schema_compiler.hpp"

namespace llaisys::grammar::json_schema_detail {
namespace {

constexpr int64_t kInlineRepeat = 256;     // larger bounded repeats go through chunk rules
constexpr int64_t kSharedCost = 24;        // larger subexpressions used more than once become rules
constexpr std::size_t kMaxPrefixItems = 1024;
constexpr std::size_t kMaxExcludedKeyLength = 256;  // code points

// Roughly the NFA states `e` expands to, counted up to `cap`.
int64_t cost(const ExprPtr& e, int64_t cap) {
  switch (e->kind) {
    case Expr::Kind::empty:
    case Expr::Kind::nothing:
    case Expr::Kind::bytes:
    case Expr::Kind::ref: return 1;
    case Expr::Kind::seq:
    case Expr::Kind::alt: {
      int64_t n = 1;
      for (const ExprPtr& c : e->children) {
        n += cost(c, cap - n);
        if (n > cap) return n;
      }
      return n;
    }
    case Expr::Kind::repeat: {
      const int64_t copies = std::max<int64_t>(1, e->max == kUnbounded ? e->min + 1 : e->max);
      return 1 + cost(e->children[0], cap) * copies;
    }
  }
  return 1;
}

std::string child_path(const std::string& path, std::string_view a, std::string_view b = {}) {
  std::string out = path;
  for (const std::string_view part : {a, b}) {
    if (part.empty()) continue;
    out += '/';
    for (const char c : part) {
      if (c == '~') {
        out += "~0";
      } else if (c == '/') {
        out += "~1";
      } else {
        out += c;
      }
    }
  }
  return out;
}

std::vector<uint32_t> code_points(std::string_view s) {  // s is valid UTF-8
  std::vector<uint32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1Fu) : n == 3 ? (b & 0x0Fu) : (b & 0x07u);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + static_cast<std::size_t>(k)]) & 0x3Fu);
    out.push_back(cp);
    i += static_cast<std::size_t>(n);
  }
  return out;
}

// Code points an unlisted key is written with: no escapes, so its text is its value.
CodePointSet key_alphabet() {
  CodePointSet excluded;
  excluded.add(0, 0x1F);
  excluded.add('"', '"');
  excluded.add('\\', '\\');
  return excluded.complement();
}

struct TrieNode {
  bool terminal = false;
  std::map<uint32_t, std::size_t> children;
};

ExprPtr trie_complement(const std::vector<TrieNode>& nodes, std::size_t at, const CodePointSet& alphabet,
                        const ExprPtr& any_rest) {
  const TrieNode& n = nodes[at];
  std::vector<ExprPtr> parts;
  if (!n.terminal) parts.push_back(empty());
  CodePointSet others;
  uint32_t next = 0;
  for (const auto& [cp, child] : n.children) {
    if (cp > next) others.add(next, cp - 1);
    next = cp + 1;
  }
  others.add(next, kMaxCodePoint);
  CodePointSet allowed;  // alphabet minus the children
  for (const auto& [a, b] : others.ranges()) {
    for (const auto& [x, y] : alphabet.ranges()) {
      const uint32_t lo = std::max(a, x);
      const uint32_t hi = std::min(b, y);
      if (lo <= hi) allowed.add(lo, hi);
    }
  }
  parts.push_back(seq({utf8_class(allowed), any_rest}));
  for (const auto& [cp, child] : n.children) {
    CodePointSet one;
    one.add(cp, cp);
    parts.push_back(seq({utf8_class(one), trie_complement(nodes, child, alphabet, any_rest)}));
  }
  return alt(std::move(parts));
}

}  // namespace

ExprPtr SchemaCompiler::ws() const {
  if (!options_.any_whitespace) return empty();
  std::bitset<256> s;
  for (const char c : std::string_view(" \t\n\r")) s.set(static_cast<uint8_t>(c));
  return repeat(byte_set(s), 0, std::max(0, options_.max_whitespace));
}

ExprPtr SchemaCompiler::sep() const { return seq({ws(), literal(","), ws()}); }

ExprPtr SchemaCompiler::any_string() const {
  static const ExprPtr e = seq({literal("\""), star(json_string_char()), literal("\"")});
  return e;
}

ExprPtr SchemaCompiler::any_value() {
  if (value_rule_ < 0) {
    value_rule_ = builder_.add_rule("json value");
    object_rule_ = builder_.add_rule("json object");
    array_rule_ = builder_.add_rule("json array");
    const ExprPtr v = ref(value_rule_);
    const ExprPtr member = seq({any_string(), ws(), literal(":"), ws(), v});
    builder_.set_rule(object_rule_, seq({literal("{"), ws(),
                                         alt({literal("}"), seq({member, star(seq({sep(), member})), ws(), literal("}")})})}));
    builder_.set_rule(array_rule_, seq({literal("["), ws(), alt({literal("]"), seq({v, star(seq({sep(), v})), ws(), literal("]")})})}));
    builder_.set_rule(value_rule_, alt({ref(object_rule_), ref(array_rule_), any_string(), number_expr(NumberSpec{}),
                                       literal("true"), literal("false"), literal("null")}));
  }
  return ref(value_rule_);
}

ExprPtr SchemaCompiler::repeat_bounded(const ExprPtr& x, int64_t min, int64_t max, const std::string& name) {
  if (max >= 0 && max < min) return nothing();
  auto chunk = [&](int64_t k) { return ref(builder_.add_rule(fmt::format("{} x{}", name, k), repeat(x, static_cast<int32_t>(k), static_cast<int32_t>(k)))); };
  auto width = [](int64_t n) { return static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n)))); };
  auto exactly = [&](int64_t n) -> ExprPtr {
    const auto n32 = static_cast<int32_t>(n);
    if (n <= kInlineRepeat) return repeat(x, n32, n32);
    const int64_t k = width(n);
    const auto q = static_cast<int32_t>(n / k);
    const auto r = static_cast<int32_t>(n % k);
    return seq({repeat(chunk(k), q, q), repeat(x, r, r)});
  };
  // 0..n copies: a*k + b with a < q, b < k, or q*k + b with b <= r; every count exactly once.
  auto up_to = [&](int64_t n) -> ExprPtr {
    if (n <= kInlineRepeat) return repeat(x, 0, static_cast<int32_t>(n));
    const int64_t k = width(n);
    const auto q = static_cast<int32_t>(n / k);
    const auto r = static_cast<int32_t>(n % k);
    const ExprPtr c = chunk(k);
    return alt({seq({repeat(c, 0, q - 1), repeat(x, 0, static_cast<int32_t>(k - 1))}), seq({repeat(c, q, q), repeat(x, 0, r)})});
  };
  if (max < 0) return seq({exactly(min), star(x)});
  return seq({exactly(min), up_to(max - min)});
}

ExprPtr SchemaCompiler::shared(const ExprPtr& e, const std::string& name) {
  if (cost(e, kSharedCost + 1) <= kSharedCost) return e;
  if (auto it = shared_rules_.find(e.get()); it != shared_rules_.end()) return ref(it->second);
  const int32_t rule = builder_.add_rule(name, e);
  shared_rules_.emplace(e.get(), rule);  // the builder holds `e`, so the address stays its own
  return ref(rule);
}

bool SchemaCompiler::allows_extras(const json::object& s) const {
  if (const json::value* ap = s.if_contains("additionalProperties")) return !(ap->is_bool() && !ap->get_bool());
  if (const json::value* u = s.if_contains("unevaluatedProperties"); u != nullptr && u->is_bool() && !u->get_bool()) {
    return false;
  }
  if (options_.strict) return false;
  if (s.contains("properties")) return options_.unlisted_properties;
  return true;
}

Result<ExprPtr> SchemaCompiler::key_not_in(const std::vector<std::string>& names, const std::string& path) const {
  const CodePointSet alphabet = key_alphabet();
  std::vector<TrieNode> nodes(1);
  for (const std::string& name : names) {
    const std::vector<uint32_t> cps = code_points(name);
    // A name with a character unlisted keys never use can never be written by them.
    if (!std::all_of(cps.begin(), cps.end(), [&](uint32_t cp) { return alphabet.contains(cp); })) continue;
    if (cps.size() > kMaxExcludedKeyLength) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: a property name longer than {} characters is not supported together with additional "
                        "properties",
                        path, kMaxExcludedKeyLength);
    }
    std::size_t at = 0;
    for (const uint32_t cp : cps) {
      auto it = nodes[at].children.find(cp);
      if (it == nodes[at].children.end()) {
        nodes.emplace_back();
        it = nodes[at].children.emplace(cp, nodes.size() - 1).first;
      }
      at = it->second;
    }
    nodes[at].terminal = true;
  }
  const ExprPtr any_rest = star(utf8_class(alphabet));
  return seq({literal("\""), trie_complement(nodes, 0, alphabet, any_rest), literal("\"")});
}

// ---- objects ----

Result<ExprPtr> SchemaCompiler::compile_object(const json::object& s, const std::string& path, int32_t depth) {
  const json::object* props = nullptr;
  if (const json::value* p = s.if_contains("properties")) {
    if (!p->is_object()) return make_error(ErrorCode::invalid_argument, "{}: 'properties' must be an object", path);
    props = &p->get_object();
  }
  std::vector<std::string> required;
  if (const json::value* r = s.if_contains("required")) {
    if (!r->is_array()) return make_error(ErrorCode::invalid_argument, "{}: 'required' must be an array of strings", path);
    for (const json::value& name : r->get_array()) {
      if (!name.is_string()) return make_error(ErrorCode::invalid_argument, "{}: 'required' must be an array of strings", path);
      std::string n(name.get_string().data(), name.get_string().size());
      if (std::find(required.begin(), required.end(), n) == required.end()) required.push_back(std::move(n));
    }
  }
  const json::value* ap = s.if_contains("additionalProperties");
  if (ap != nullptr && !ap->is_bool() && !ap->is_object()) {
    return make_error(ErrorCode::invalid_argument, "{}: 'additionalProperties' must be a schema", path);
  }
  auto unsatisfiable = [&](std::string why) {
    if (unsatisfiable_.empty()) unsatisfiable_ = fmt::format("{}: {}", path, why);
    return nothing();
  };
  struct Entry {
    std::string name;
    bool required;
    ExprPtr value;
  };
  std::vector<Entry> entries;
  std::vector<std::string> names;  // every listed name: an unlisted key is none of them
  auto is_required = [&](const std::string& n) { return std::find(required.begin(), required.end(), n) != required.end(); };
  if (props != nullptr) {
    for (const auto& kv : *props) {
      std::string name(kv.key().data(), kv.key().size());
      if (!valid_utf8(name)) return make_error(ErrorCode::invalid_argument, "{}: a property name is not valid UTF-8", path);
      names.push_back(name);
      const bool req = is_required(name);
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr v, compile(kv.value(), child_path(path, "properties", name), depth + 1));
      if (v->kind == Expr::Kind::nothing) {
        if (req) return unsatisfiable(fmt::format("required property '{}' admits no value", name));
        continue;
      }
      entries.push_back(Entry{std::move(name), req, std::move(v)});
    }
  }
  for (const std::string& r : required) {
    if (props != nullptr && props->contains(r)) continue;
    if (!valid_utf8(r)) return make_error(ErrorCode::invalid_argument, "{}: a property name is not valid UTF-8", path);
    // Not listed: its value answers to additionalProperties (unevaluatedProperties false without
    // additionalProperties: nothing evaluates it).
    if (ap != nullptr && ap->is_bool() && !ap->get_bool()) {
      return unsatisfiable(fmt::format("required property '{}' is not allowed by additionalProperties false", r));
    }
    if (const json::value* u = s.if_contains("unevaluatedProperties");
        ap == nullptr && u != nullptr && u->is_bool() && !u->get_bool()) {
      return unsatisfiable(fmt::format("required property '{}' is not allowed by unevaluatedProperties false", r));
    }
    ExprPtr v;
    if (ap != nullptr && ap->is_object()) {
      LLAISYS_ASSIGN_OR_RETURN(v, compile(*ap, child_path(path, "additionalProperties"), depth + 1));
    } else {
      v = any_value();
    }
    if (v->kind == Expr::Kind::nothing) return unsatisfiable(fmt::format("required property '{}' admits no value", r));
    names.push_back(r);
    entries.push_back(Entry{r, true, std::move(v)});
  }
  ExprPtr extra = nothing();  // one unlisted "key":value
  if (allows_extras(s)) {
    ExprPtr value;
    if (ap != nullptr && ap->is_object()) {
      LLAISYS_ASSIGN_OR_RETURN(value, compile(*ap, child_path(path, "additionalProperties"), depth + 1));
    } else {
      value = any_value();
    }
    if (value->kind != Expr::Kind::nothing) {
      ExprPtr key = any_string();
      if (!names.empty()) {
        LLAISYS_ASSIGN_OR_RETURN(key, key_not_in(names, path));
      }
      extra = seq({key, ws(), literal(":"), ws(), shared(value, path + " additional")});
    }
  }
  const bool has_extra = extra->kind != Expr::Kind::nothing;

  const std::size_t n = entries.size();
  std::vector<ExprPtr> kv(n);
  for (std::size_t i = 0; i < n; ++i) {
    kv[i] = seq({literal(json_quote(entries[i].name)), ws(), literal(":"), ws(),
                 shared(entries[i].value, child_path(path, "properties", entries[i].name))});
  }
  // rest[i]: properties i.. after at least one was written (each preceded by a comma);
  // first: properties i.. with none written yet. Optional properties before the first required one
  // repeat rest[] in `first`, so past a few of them rest[] lives in rules.
  std::size_t leading_optional = 0;
  while (leading_optional < n && !entries[leading_optional].required) ++leading_optional;
  const bool rest_rules = leading_optional > 4;
  std::vector<ExprPtr> rest(n + 1);
  rest[n] = has_extra ? star(seq({sep(), extra})) : empty();
  for (std::size_t i = n; i-- > 0;) {
    const ExprPtr item = seq({sep(), kv[i]});
    rest[i] = entries[i].required ? seq({item, rest[i + 1]}) : seq({optional(item), rest[i + 1]});
    if (rest_rules && i > 0 && i <= leading_optional) {
      rest[i] = ref(builder_.add_rule(fmt::format("{} rest{}", path, i), rest[i]));
    }
  }
  ExprPtr first = has_extra ? seq({extra, rest[n]}) : nothing();
  bool any_required = false;
  for (std::size_t i = n; i-- > 0;) {
    const ExprPtr here = seq({kv[i], rest[i + 1]});
    if (entries[i].required) {
      first = here;
      any_required = true;
    } else {
      first = alt({here, first});
    }
  }
  return seq({literal("{"), ws(), alt({any_required ? nothing() : literal("}"), seq({first, ws(), literal("}")})})});
}

// ---- arrays ----

Result<ExprPtr> SchemaCompiler::compile_array(const json::object& s, const std::string& path, int32_t depth) {
  static const json::value kFalse(false);
  const json::array* prefix = nullptr;
  const json::value* items = s.if_contains("items");
  std::string items_key = "items";
  if (const json::value* p = s.if_contains("prefixItems")) {
    if (!p->is_array()) return make_error(ErrorCode::invalid_argument, "{}: 'prefixItems' must be an array", path);
    if (items != nullptr && items->is_array()) {
      return make_error(ErrorCode::invalid_argument, "{}: 'items' as an array together with 'prefixItems'", path);
    }
    prefix = &p->get_array();
  } else if (items != nullptr && items->is_array()) {  // draft-07: items [..] then additionalItems
    prefix = &items->get_array();
    items = s.if_contains("additionalItems");
    items_key = "additionalItems";
  }
  if (const json::value* u = s.if_contains("unevaluatedItems"); items == nullptr && u != nullptr && u->is_bool() && !u->get_bool()) {
    items = &kFalse;
  }
  LLAISYS_ASSIGN_OR_RETURN(const int64_t min_items_raw, read_count(s, "minItems", path));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t max_items, read_count(s, "maxItems", path));
  const int64_t min_items = std::max<int64_t>(min_items_raw, 0);
  if (max_items >= 0 && min_items > max_items) {
    if (unsatisfiable_.empty()) unsatisfiable_ = fmt::format("{}: 'minItems' is above 'maxItems'", path);
    return nothing();
  }
  if (prefix != nullptr && prefix->size() > kMaxPrefixItems) {
    return make_error(ErrorCode::invalid_argument, "{}: at most {} prefix items are supported", path, kMaxPrefixItems);
  }
  std::vector<ExprPtr> first_items;
  if (prefix != nullptr) {
    const std::size_t used = max_items >= 0 ? std::min<std::size_t>(prefix->size(), static_cast<std::size_t>(max_items)) : prefix->size();
    for (std::size_t i = 0; i < used; ++i) {
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, compile((*prefix)[i], child_path(path, "prefixItems", std::to_string(i)), depth + 1));
      first_items.push_back(shared(e, child_path(path, "prefixItems", std::to_string(i))));
    }
  }
  ExprPtr item;
  if (items != nullptr) {
    LLAISYS_ASSIGN_OR_RETURN(item, compile(*items, child_path(path, items_key), depth + 1));
  } else {
    item = any_value();
  }
  item = shared(item, child_path(path, items_key));
  const auto k = static_cast<int64_t>(first_items.size());
  // After i elements (i >= k): the rest, all of `item`.
  auto rest_from = [&](int64_t i) -> ExprPtr {
    if (max_items >= 0 && i > max_items) return nothing();
    return repeat_bounded(seq({sep(), item}), std::max<int64_t>(0, min_items - i), max_items < 0 ? -1 : max_items - i,
                          child_path(path, items_key));
  };
  // tail(i): what follows the first i elements (i >= 1).
  ExprPtr tail = rest_from(std::max<int64_t>(k, 1));
  for (int64_t i = std::max<int64_t>(k, 1) - 1; i >= 1; --i) {
    tail = alt({i >= min_items ? empty() : nothing(), seq({sep(), first_items[static_cast<std::size_t>(i)], tail})});
  }
  const ExprPtr body = max_items == 0 ? nothing() : seq({k > 0 ? first_items[0] : item, tail});
  return seq({literal("["), ws(), alt({min_items == 0 ? literal("]") : nothing(), seq({body, ws(), literal("]")})})});
}

}  // namespace llaisys::grammar::json_schema_detail
