#pragma once
// Test support for the JSON Schema front end:
//  - accepts(): the built automaton run on a text (a set of call stacks, no token machinery);
//  - RandomWalker: random complete strings of a grammar, walking its automaton and checking on the way
//    that no reachable state is a dead end;
//  - SchemaChecker: a small JSON Schema validator written independently of the compiler, for the
//    keywords the tests use (type, enum, const, properties, required, additionalProperties, items,
//    prefixItems, min/maxItems, min/maxLength, minimum/maximum/exclusive*, anyOf/oneOf/allOf, $ref,
//    pattern (std::regex), format (the ajv-formats regexes and date checks)).

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "automaton_match.hpp"
#include "llaisys/grammar/grammar.hpp"

namespace json_schema_test {
namespace json = boost::json;
using llaisys::grammar::Grammar;
using llaisys::grammar::RuleState;

using llaisys::grammar::test::Frame;
using llaisys::grammar::test::Stack;
using llaisys::grammar::test::state_of;
// The built automaton run on a text (automaton_match.hpp).
inline bool accepts(const Grammar& g, std::string_view text) { return llaisys::grammar::test::automaton_match(g, text); }

class RandomWalker {
 public:
  explicit RandomWalker(const Grammar& g) : g_(g) {
    constexpr int64_t inf = std::numeric_limits<int64_t>::max() / 4;
    dist_.resize(g.rules().size());
    for (std::size_t r = 0; r < dist_.size(); ++r) dist_[r].assign(g.rules()[r].states.size(), inf);
    // Fewest bytes to finish each rule from each state (calls cost their rule's fewest bytes).
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t r = 0; r < dist_.size(); ++r) {
        const auto& states = g.rules()[r].states;
        for (std::size_t s = 0; s < states.size(); ++s) {
          int64_t best = states[s].final ? 0 : inf;
          for (const auto& e : states[s].bytes) best = std::min(best, 1 + dist_[r][static_cast<std::size_t>(e.next)]);
          for (const auto& c : states[s].calls) {
            best = std::min(best, dist_[static_cast<std::size_t>(c.rule)][0] + dist_[r][static_cast<std::size_t>(c.next)]);
          }
          if (best < dist_[r][s]) {
            dist_[r][s] = best;
            changed = true;
          }
        }
      }
    }
  }

  // A random complete string; `dead_end` is set when a reachable state offers no way on.
  std::string walk(std::mt19937& rng, std::size_t soft_limit, bool& dead_end) {
    std::string out;
    Stack stack{Frame{g_.root(), 0}};
    dead_end = false;
    while (true) {
      const RuleState& st = state_of(g_, stack.back());
      const bool greedy = out.size() >= soft_limit || stack.size() > 48;
      struct Option {
        int kind;  // 0 return, 1 byte, 2 call
        std::size_t index;
        int64_t cost;
      };
      std::vector<Option> options;
      if (st.final) options.push_back({0, 0, 0});
      for (std::size_t i = 0; i < st.bytes.size(); ++i) options.push_back({1, i, 1 + at(stack.back().rule, st.bytes[i].next)});
      for (std::size_t i = 0; i < st.calls.size(); ++i) {
        options.push_back({2, i, at(st.calls[i].rule, 0) + at(stack.back().rule, st.calls[i].next)});
      }
      if (options.empty()) {
        dead_end = true;
        return out;
      }
      Option pick = options[rng() % options.size()];
      if (greedy) {
        pick = *std::min_element(options.begin(), options.end(), [](const Option& a, const Option& b) { return a.cost < b.cost; });
      } else if (st.final && rng() % 4 == 0) {
        pick = options[0];
      }
      if (pick.kind == 0) {
        stack.pop_back();
        if (stack.empty()) return out;
      } else if (pick.kind == 1) {
        const auto& e = st.bytes[pick.index];
        out += static_cast<char>(e.lo + static_cast<int>(rng() % (e.hi - e.lo + 1u)));
        stack.back().state = e.next;
      } else {
        const auto& c = st.calls[pick.index];
        stack.back().state = c.next;
        stack.push_back(Frame{c.rule, 0});
      }
    }
  }

 private:
  int64_t at(int32_t rule, int32_t state) const { return dist_[static_cast<std::size_t>(rule)][static_cast<std::size_t>(state)]; }
  const Grammar& g_;
  std::vector<std::vector<int64_t>> dist_;
};

// ---- an independent validator ----

inline std::size_t code_points(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; }));
}

inline bool is_leap(int y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

inline bool valid_date(const std::string& s) {
  static const std::regex re(R"(^(\d\d\d\d)-(\d\d)-(\d\d)$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  const int y = std::stoi(m[1]);
  const int mo = std::stoi(m[2]);
  const int d = std::stoi(m[3]);
  static constexpr int days[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return mo >= 1 && mo <= 12 && d >= 1 && d <= (mo == 2 && is_leap(y) ? 29 : days[mo]);
}

inline bool valid_time(const std::string& s) {
  static const std::regex re(R"(^(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)$)", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  const int tzh = m[6].matched ? std::stoi(m[6]) : 0;
  const int tzm = m[7].matched ? std::stoi(m[7]) : 0;
  return tzh <= 23 && tzm <= 59 && std::stoi(m[1]) <= 23 && std::stoi(m[2]) <= 59 && std::stod(m[3]) < 60;
}

inline bool valid_format(std::string_view name, const std::string& s) {
  if (name == "date") return valid_date(s);
  if (name == "time") return valid_time(s);
  if (name == "date-time") {
    const auto t = s.find_first_of("tT ");
    return t != std::string::npos && s.find_first_of("tT ", t + 1) == std::string::npos && valid_date(s.substr(0, t)) &&
           valid_time(s.substr(t + 1));
  }
  static const std::regex uuid(R"(^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$)", std::regex::icase);
  static const std::regex email(
      R"(^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$)",
      std::regex::icase);
  static const std::regex ipv4(R"(^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$)");
  static const std::regex hostname(R"(^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$)",
                                   std::regex::icase);
  if (name == "uuid") return std::regex_match(s, uuid);
  if (name == "email") return std::regex_match(s, email);
  if (name == "ipv4") return std::regex_match(s, ipv4);
  if (name == "hostname") return s.size() <= 253 && std::regex_match(s, hostname);
  return true;  // not checked here
}

class SchemaChecker {
 public:
  // lenient (for fuzzed schemas): "pattern" unchecked (std::regex is not the u-flag dialect) and
  // unresolvable $refs pass.
  explicit SchemaChecker(const json::value& root, bool lenient = false) : root_(root), lenient_(lenient) {}

  // Empty when `v` validates; else why not.
  std::string check(const json::value& v) const { return at(root_, v, "#", 0); }

 private:
  static double num(const json::value& v) { return v.to_number<double>(); }
  static bool is_integer(const json::value& v) {
    return v.is_int64() || v.is_uint64() || (v.is_double() && std::floor(v.get_double()) == v.get_double());
  }
  static bool has_type(const json::value& v, std::string_view t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_bool();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return v.is_number() && is_integer(v);
    return false;
  }
  static bool equal(const json::value& a, const json::value& b) {
    if (a.is_number() && b.is_number()) return num(a) == num(b);
    if (a.kind() != b.kind()) return false;
    if (a.is_array()) {
      const auto& x = a.get_array();
      const auto& y = b.get_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!equal(x[i], y[i])) return false;
      }
      return true;
    }
    if (a.is_object()) {
      const auto& x = a.get_object();
      const auto& y = b.get_object();
      if (x.size() != y.size()) return false;
      for (const auto& kv : x) {
        const json::value* o = y.if_contains(kv.key());
        if (o == nullptr || !equal(kv.value(), *o)) return false;
      }
      return true;
    }
    return a == b;
  }

  static const json::value* find_anchor(const json::value& v, std::string_view name, int depth) {
    if (depth > 64) return nullptr;
    if (const json::object* o = v.if_object()) {
      if (const json::value* a = o->if_contains("$anchor"); a != nullptr && a->is_string() && a->get_string() == name) return &v;
      for (const auto& kv : *o) {
        if (const json::value* r = find_anchor(kv.value(), name, depth + 1)) return r;
      }
    } else if (const json::array* a = v.if_array()) {
      for (const json::value& e : *a) {
        if (const json::value* r = find_anchor(e, name, depth + 1)) return r;
      }
    }
    return nullptr;
  }

  const json::value* resolve(std::string_view ref) const {
    if (ref == "#") return &root_;
    if (ref.size() > 1 && ref[1] != '/') return find_anchor(root_, ref.substr(1), 0);
    const json::value* at = &root_;
    std::size_t pos = 2;
    while (at != nullptr && pos <= ref.size()) {
      const std::size_t end = std::min(ref.find('/', pos), ref.size());
      const std::string key(ref.substr(pos, end - pos));
      at = at->is_object() ? at->get_object().if_contains(key) : nullptr;
      pos = end + 1;
    }
    return at;
  }

  std::string at(const json::value& schema, const json::value& v, const std::string& path, int depth) const {
    if (depth > 200) return path + ": too deep";
    if (schema.is_bool()) return schema.get_bool() ? "" : path + ": false schema";
    const json::object& s = schema.get_object();
    auto fail = [&](std::string_view why) { return path + ": " + std::string(why); };
    if (const json::value* r = s.if_contains("$ref")) {
      const json::value* target = resolve(std::string_view(r->get_string().data(), r->get_string().size()));
      if (target == nullptr && !lenient_) return fail("bad $ref");
      if (target == nullptr) return "";
      if (auto e = at(*target, v, path, depth + 1); !e.empty()) return e;
    }
    if (const json::value* t = s.if_contains("type")) {
      bool ok = false;
      const json::array types = t->is_array() ? t->get_array() : json::array{*t};
      for (const auto& name : types) ok = ok || has_type(v, std::string_view(name.get_string().data(), name.get_string().size()));
      if (const json::value* n = s.if_contains("nullable"); n != nullptr && n->is_bool() && n->get_bool()) ok = ok || v.is_null();
      if (!ok) return fail("type");
    }
    if (const json::value* c = s.if_contains("const"); c != nullptr && !equal(*c, v)) return fail("const");
    if (const json::value* e = s.if_contains("enum")) {
      const auto& a = e->get_array();
      if (std::none_of(a.begin(), a.end(), [&](const json::value& x) { return equal(x, v); })) return fail("enum");
    }
    for (const char* key : {"allOf", "anyOf", "oneOf"}) {
      const json::value* list = s.if_contains(key);
      if (list == nullptr) continue;
      int matches = 0;
      std::string first_error;
      for (const json::value& b : list->get_array()) {
        std::string e = at(b, v, path + "/" + key, depth + 1);
        if (e.empty()) {
          ++matches;
        } else if (first_error.empty()) {
          first_error = e;
        }
      }
      const auto n = static_cast<int>(list->get_array().size());
      if (std::string_view(key) == "allOf" && matches != n) return first_error;
      if (std::string_view(key) == "anyOf" && matches == 0) return fail("anyOf: " + first_error);
      if (std::string_view(key) == "oneOf" && matches != 1) return fail("oneOf matched " + std::to_string(matches));
    }
    if (v.is_number()) {
      const double x = num(v);
      auto bound = [&](const char* k) -> std::optional<double> {
        const json::value* b = s.if_contains(k);
        if (b == nullptr || !b->is_number()) return std::nullopt;
        return num(*b);
      };
      auto flag = [&](const char* k) {
        const json::value* b = s.if_contains(k);
        return b != nullptr && b->is_bool() && b->get_bool();
      };
      if (auto b = bound("minimum"); b && (flag("exclusiveMinimum") ? x <= *b : x < *b)) return fail("minimum");
      if (auto b = bound("maximum"); b && (flag("exclusiveMaximum") ? x >= *b : x > *b)) return fail("maximum");
      if (auto b = bound("exclusiveMinimum"); b && x <= *b) return fail("exclusiveMinimum");
      if (auto b = bound("exclusiveMaximum"); b && x >= *b) return fail("exclusiveMaximum");
      if (!std::isfinite(x)) return fail("not finite");
    }
    if (v.is_string()) {
      const std::string str(v.get_string().data(), v.get_string().size());
      const std::size_t n = code_points(str);
      if (const json::value* b = s.if_contains("minLength"); b != nullptr && n < b->to_number<std::size_t>()) return fail("minLength");
      if (const json::value* b = s.if_contains("maxLength"); b != nullptr && n > b->to_number<std::size_t>()) return fail("maxLength");
      if (const json::value* p = s.if_contains("pattern"); p != nullptr && !lenient_) {
        const std::regex re(std::string(p->get_string().data(), p->get_string().size()));
        if (!std::regex_search(str, re)) return fail("pattern");
      }
      if (const json::value* f = s.if_contains("format")) {
        if (!valid_format(std::string_view(f->get_string().data(), f->get_string().size()), str)) return fail("format");
      }
    }
    if (v.is_array()) {
      const json::array& a = v.get_array();
      if (const json::value* b = s.if_contains("minItems"); b != nullptr && a.size() < b->to_number<std::size_t>()) return fail("minItems");
      if (const json::value* b = s.if_contains("maxItems"); b != nullptr && a.size() > b->to_number<std::size_t>()) return fail("maxItems");
      const json::value* items = s.if_contains("items");
      const json::array* prefix = nullptr;
      const json::value* rest = items;
      if (const json::value* p = s.if_contains("prefixItems")) prefix = &p->get_array();
      if (items != nullptr && items->is_array()) {
        prefix = &items->get_array();
        rest = s.if_contains("additionalItems");
      }
      for (std::size_t i = 0; i < a.size(); ++i) {
        const json::value* sub = prefix != nullptr && i < prefix->size() ? &(*prefix)[i] : rest;
        if (sub == nullptr) continue;
        if (auto e = at(*sub, a[i], path + "/" + std::to_string(i), depth + 1); !e.empty()) return e;
      }
    }
    if (v.is_object()) {
      const json::object& o = v.get_object();
      if (const json::value* r = s.if_contains("required")) {
        for (const auto& name : r->get_array()) {
          if (!o.contains(name.get_string())) return fail("required " + std::string(name.get_string()));
        }
      }
      const json::value* props = s.if_contains("properties");
      const json::value* ap = s.if_contains("additionalProperties");
      for (const auto& kv : o) {
        const json::value* sub = props != nullptr ? props->get_object().if_contains(kv.key()) : nullptr;
        if (sub == nullptr) sub = ap;
        if (sub == nullptr) continue;
        if (auto e = at(*sub, kv.value(), path + "/" + std::string(kv.key()), depth + 1); !e.empty()) return e;
      }
    }
    return "";
  }

  const json::value& root_;
  bool lenient_ = false;
};

}  // namespace json_schema_test
