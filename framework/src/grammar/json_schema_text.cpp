// JSON text for the JSON Schema front end: string bodies and escapes, compact serialization of enum
// and const values, and the code-point length of raw-text expressions ("pattern", "format") with
// minLength/maxLength pushed into them.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "json_schema_internal.hpp"

namespace llaisys::grammar::json_schema_detail {
namespace json = boost::json;

// ---- UTF-8 and quoting ----

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    int n = 0;
    uint32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 1;
      cp = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 2;
      cp = b0 & 0x0Fu;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 3;
      cp = b0 & 0x07u;
    } else {
      return false;
    }
    if (s.size() - i <= static_cast<std::size_t>(n)) return false;  // truncated
    for (int k = 1; k <= n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + static_cast<std::size_t>(k)]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += static_cast<std::size_t>(n) + 1;
  }
  return true;
}

namespace {

// The escape JSON gives an ASCII byte inside a string, or "" when it stands for itself.
std::string escape_of(uint8_t b) {
  switch (b) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (b < 0x20) return fmt::format("\\u{:04x}", b);
  return {};
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (const char c : s) {
    const std::string e = escape_of(static_cast<uint8_t>(c));
    if (e.empty()) {
      out += c;
    } else {
      out += e;
    }
  }
  out += '"';
  return out;
}

namespace {

Status serialize(const json::value& v, int32_t depth, int32_t max_depth, std::string& out) {
  if (depth > max_depth) {
    return make_error(ErrorCode::invalid_argument, "a value is nested more than {} levels deep", max_depth);
  }
  switch (v.kind()) {
    case json::kind::null: out += "null"; return Status();
    case json::kind::bool_: out += v.get_bool() ? "true" : "false"; return Status();
    case json::kind::int64: out += std::to_string(v.get_int64()); return Status();
    case json::kind::uint64: out += std::to_string(v.get_uint64()); return Status();
    case json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) return Status(ErrorCode::invalid_argument, "a number is not finite");
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof buf, d);
      out.append(buf, r.ptr);
      return Status();
    }
    case json::kind::string: {
      const json::string& s = v.get_string();
      const std::string_view sv(s.data(), s.size());
      if (!valid_utf8(sv)) return Status(ErrorCode::invalid_argument, "a string is not valid UTF-8");
      out += json_quote(sv);
      return Status();
    }
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const json::value& e : v.get_array()) {
        if (!first) out += ',';
        first = false;
        LLAISYS_RETURN_IF_ERROR(serialize(e, depth + 1, max_depth, out));
      }
      out += ']';
      return Status();
    }
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) out += ',';
        first = false;
        const std::string_view key(kv.key().data(), kv.key().size());
        if (!valid_utf8(key)) return Status(ErrorCode::invalid_argument, "a key is not valid UTF-8");
        out += json_quote(key);
        out += ':';
        LLAISYS_RETURN_IF_ERROR(serialize(kv.value(), depth + 1, max_depth, out));
      }
      out += '}';
      return Status();
    }
  }
  return Status();
}

bool is_number(const json::value& v) { return v.is_int64() || v.is_uint64() || v.is_double(); }

bool equal_at(const json::value& a, const json::value& b, int32_t depth) {
  if (depth > 256) return false;  // deeper values are never equal here (callers bound depth first)
  if (is_number(a) && is_number(b)) {
    const auto da = decimal_of(a);
    const auto db = decimal_of(b);
    return da && db && compare(*da, *db) == 0;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::array: {
      const json::array& x = a.get_array();
      const json::array& y = b.get_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!equal_at(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case json::kind::object: {
      const json::object& x = a.get_object();
      const json::object& y = b.get_object();
      if (x.size() != y.size()) return false;
      for (const auto& kv : x) {
        const json::value* other = y.if_contains(kv.key());
        if (other == nullptr || !equal_at(kv.value(), *other, depth + 1)) return false;
      }
      return true;
    }
    default: return a == b;
  }
}

}  // namespace

Result<std::string> compact_json(const json::value& v, int32_t max_depth) {
  std::string out;
  LLAISYS_RETURN_IF_ERROR(serialize(v, 0, max_depth, out));
  return out;
}

bool json_equal(const json::value& a, const json::value& b) { return equal_at(a, b, 0); }

// ---- string bodies ----

ExprPtr json_string_char() {
  static const ExprPtr e = [] {
    CodePointSet excluded;
    excluded.add(0, 0x1F);
    excluded.add('"', '"');
    excluded.add('\\', '\\');
    const CodePointSet raw = excluded.complement();
    std::bitset<256> hex;
    for (const char c : std::string_view("0123456789abcdefABCDEF")) hex.set(static_cast<uint8_t>(c));
    std::bitset<256> first_plain;  // a first hex digit that is not d/D: never a surrogate
    for (const char c : std::string_view("0123456789abcefABCEF")) first_plain.set(static_cast<uint8_t>(c));
    const ExprPtr h = byte_set(hex);
    const ExprPtr dD = alt({literal("d"), literal("D")});
    const ExprPtr high = alt({byte_range('8', '9'), byte_range('a', 'b'), byte_range('A', 'B')});
    const ExprPtr low = alt({byte_range('c', 'f'), byte_range('C', 'F')});
    const ExprPtr u = alt({
        seq({byte_set(first_plain), h, h, h}),
        seq({dD, byte_range('0', '7'), h, h}),
        seq({dD, high, h, h, literal("\\u"), dD, low, h, h}),  // a surrogate pair, never a lone half
    });
    std::bitset<256> simple;
    for (const char c : std::string_view("\"\\/bfnrt")) simple.set(static_cast<uint8_t>(c));
    const ExprPtr escape = seq({literal("\\"), alt({byte_set(simple), seq({literal("u"), u})})});
    return alt({utf8_class(raw), escape});
  }();
  return e;
}

namespace {

ExprPtr escape_node(const ExprPtr& e, std::unordered_map<const Expr*, ExprPtr>& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  ExprPtr out;
  switch (e->kind) {
    case Expr::Kind::empty:
    case Expr::Kind::nothing:
    case Expr::Kind::ref: out = e; break;
    case Expr::Kind::bytes: {
      std::bitset<256> plain = e->set;
      std::vector<ExprPtr> parts;
      for (unsigned b = 0; b < 0x80; ++b) {
        if (!e->set.test(b)) continue;
        const std::string esc = escape_of(static_cast<uint8_t>(b));
        if (esc.empty()) continue;
        plain.reset(b);
        parts.push_back(literal(esc));
      }
      if (parts.empty()) {
        out = e;
      } else {
        parts.push_back(byte_set(plain));
        out = alt(std::move(parts));
      }
      break;
    }
    case Expr::Kind::seq:
    case Expr::Kind::alt: {
      std::vector<ExprPtr> children;
      children.reserve(e->children.size());
      for (const ExprPtr& c : e->children) children.push_back(escape_node(c, memo));
      out = e->kind == Expr::Kind::seq ? seq(std::move(children)) : alt(std::move(children));
      break;
    }
    case Expr::Kind::repeat: out = repeat(escape_node(e->children[0], memo), e->min, e->max); break;
  }
  memo.emplace(e.get(), out);
  return out;
}

}  // namespace

ExprPtr escape_raw_text(const ExprPtr& raw) {
  std::unordered_map<const Expr*, ExprPtr> memo;
  return escape_node(raw, memo);
}

// ---- code-point lengths ----
namespace {

constexpr int64_t kHuge = int64_t{1} << 40;  // lengths are clamped here (no overflow)

int64_t add_len(int64_t a, int64_t b) { return (a < 0 || b < 0) ? -1 : std::min(a + b, kHuge); }
int64_t mul_len(int64_t a, int64_t n) {  // n == -1: unbounded count
  if (a == 0) return 0;
  if (a < 0 || n < 0) return -1;
  return std::min(a * n, kHuge);
}

struct LengthMemo {
  std::unordered_map<const Expr*, std::optional<CodePointLength>> memo;

  std::optional<CodePointLength> of(const ExprPtr& e) {
    if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
    std::optional<CodePointLength> out = compute(e);
    memo.emplace(e.get(), out);
    return out;
  }

  std::optional<CodePointLength> compute(const ExprPtr& e) {
    static const std::bitset<256> continuation = [] {
      std::bitset<256> s;
      for (unsigned b = 0x80; b <= 0xBF; ++b) s.set(b);
      return s;
    }();
    switch (e->kind) {
      case Expr::Kind::empty: return CodePointLength{0, 0};
      case Expr::Kind::nothing:
      case Expr::Kind::ref: return std::nullopt;
      case Expr::Kind::bytes: {
        if ((e->set & ~continuation).none()) return CodePointLength{0, 0};
        if ((e->set & continuation).none()) return CodePointLength{1, 1};
        return std::nullopt;
      }
      case Expr::Kind::seq: {
        CodePointLength sum{0, 0};
        for (const ExprPtr& c : e->children) {
          const auto l = of(c);
          if (!l) return std::nullopt;
          sum.min = add_len(sum.min, l->min);
          sum.max = add_len(sum.max, l->max);
        }
        return sum;
      }
      case Expr::Kind::alt: {
        std::optional<CodePointLength> out;
        for (const ExprPtr& c : e->children) {
          const auto l = of(c);
          if (!l) return std::nullopt;
          if (!out) {
            out = l;
          } else {
            out->min = std::min(out->min, l->min);
            out->max = (out->max < 0 || l->max < 0) ? -1 : std::max(out->max, l->max);
          }
        }
        return out;
      }
      case Expr::Kind::repeat: {
        const auto l = of(e->children[0]);
        if (!l) return std::nullopt;
        return CodePointLength{mul_len(l->min, e->min), mul_len(l->max, e->max == kUnbounded ? -1 : e->max)};
      }
    }
    return std::nullopt;
  }
};

bool within(const CodePointLength& l, int64_t lo, int64_t hi) { return l.min >= lo && (hi < 0 || (l.max >= 0 && l.max <= hi)); }
bool disjoint(const CodePointLength& l, int64_t lo, int64_t hi) { return (hi >= 0 && l.min > hi) || (l.max >= 0 && l.max < lo); }

Status too_complex() {
  return Status(ErrorCode::invalid_argument,
                "'minLength'/'maxLength' together with this 'pattern' or 'format' is not supported (the length "
                "bounds cannot be pushed into the pattern's repetitions)");
}

struct Restrictor {
  LengthMemo lengths;
  int64_t budget = 4096;  // branches created, all together

  Result<ExprPtr> run(const ExprPtr& e, int64_t lo, int64_t hi) {
    lo = std::max<int64_t>(lo, 0);
    if (hi >= 0 && hi < lo) return nothing();
    if (--budget < 0) return too_complex();
    const auto len = lengths.of(e);
    if (!len) {
      if (e->kind == Expr::Kind::nothing) return nothing();
      return too_complex();
    }
    if (within(*len, lo, hi)) return e;
    if (disjoint(*len, lo, hi)) return nothing();
    switch (e->kind) {
      case Expr::Kind::alt: {
        std::vector<ExprPtr> out;
        for (const ExprPtr& c : e->children) {
          LLAISYS_ASSIGN_OR_RETURN(ExprPtr r, run(c, lo, hi));
          out.push_back(std::move(r));
        }
        return alt(std::move(out));
      }
      case Expr::Kind::seq: return run_seq(e->children, lo, hi);
      case Expr::Kind::repeat: {
        const auto cl = lengths.of(e->children[0]);
        if (!cl) return too_complex();
        if (cl->min == cl->max && cl->min > 0) {
          const int64_t unit = cl->min;
          const int64_t min_count = std::max<int64_t>(e->min, (lo + unit - 1) / unit);
          int64_t max_count = e->max == kUnbounded ? -1 : e->max;
          if (hi >= 0) max_count = max_count < 0 ? hi / unit : std::min<int64_t>(max_count, hi / unit);
          if (max_count >= 0 && max_count < min_count) return nothing();
          if (min_count > INT32_MAX || max_count > INT32_MAX) return too_complex();
          return repeat(e->children[0], static_cast<int32_t>(min_count),
                        max_count < 0 ? kUnbounded : static_cast<int32_t>(max_count));
        }
        // A variable-length child repeated a few times: unroll into a sequence.
        if (e->max != kUnbounded && e->max <= 8) {
          std::vector<ExprPtr> alts;
          for (int32_t n = e->min; n <= e->max; ++n) {
            std::vector<ExprPtr> parts(static_cast<std::size_t>(n), e->children[0]);
            LLAISYS_ASSIGN_OR_RETURN(ExprPtr r, run_seq(parts, lo, hi));
            alts.push_back(std::move(r));
          }
          return alt(std::move(alts));
        }
        return too_complex();
      }
      default: return too_complex();
    }
  }

  Result<ExprPtr> run_seq(const std::vector<ExprPtr>& children, int64_t lo, int64_t hi) {
    if (children.empty()) return lo == 0 ? empty() : nothing();
    std::vector<CodePointLength> lens;
    for (const ExprPtr& c : children) {
      const auto l = lengths.of(c);
      if (!l) return too_complex();
      lens.push_back(*l);
    }
    // The first variable child v; the children before it are fixed (total `prefix`).
    std::size_t v = 0;
    int64_t prefix = 0;
    while (v < children.size() && lens[v].min == lens[v].max) prefix += lens[v++].min;
    if (v == children.size()) return (prefix >= lo && (hi < 0 || prefix <= hi)) ? seq(children) : nothing();
    std::vector<ExprPtr> head(children.begin(), children.begin() + static_cast<std::ptrdiff_t>(v));
    const std::vector<ExprPtr> tail_children(children.begin() + static_cast<std::ptrdiff_t>(v) + 1, children.end());
    const ExprPtr tail = seq(tail_children);
    CodePointLength tl{0, 0};
    for (std::size_t i = v + 1; i < children.size(); ++i) {
      tl.min = add_len(tl.min, lens[i].min);
      tl.max = add_len(tl.max, lens[i].max);
    }
    auto with = [&](ExprPtr middle, ExprPtr rest) {
      std::vector<ExprPtr> parts = head;
      parts.push_back(std::move(middle));
      parts.push_back(std::move(rest));
      return seq(std::move(parts));
    };
    if (tl.min == tl.max) {  // only v varies: push the bounds into it
      const int64_t fixed = prefix + tl.min;
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr mid, run(children[v], lo - fixed, hi < 0 ? -1 : hi - fixed));
      return with(std::move(mid), tail);
    }
    // Several variable children: one branch per length of v (while few), the rest bounded after it.
    const CodePointLength vl = lens[v];
    std::vector<ExprPtr> alts;
    int64_t last = 0;  // the last length of v given its own branch
    if (hi >= 0) {
      last = hi - prefix - tl.min;
      if (vl.max >= 0) last = std::min(last, vl.max);
    } else {
      // Past k0, the tail's own minimum already reaches lo: one open branch covers every longer v.
      const int64_t k0 = std::max(vl.min, lo - prefix - tl.min);
      last = k0 - 1;
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr mid, run(children[v], k0, vl.max));
      alts.push_back(with(std::move(mid), tail));
    }
    if (last - vl.min > 64) return too_complex();
    for (int64_t k = vl.min; k <= last; ++k) {
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr mid, run(children[v], k, k));
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr rest, run(tail, lo - prefix - k, hi < 0 ? -1 : hi - prefix - k));
      alts.push_back(with(std::move(mid), std::move(rest)));
    }
    return alt(std::move(alts));
  }
};

}  // namespace

std::optional<CodePointLength> code_point_length(const ExprPtr& raw) {
  LengthMemo m;
  return m.of(raw);
}

Result<ExprPtr> restrict_length(const ExprPtr& raw, int64_t lo, int64_t hi) {
  Restrictor r;
  return r.run(raw, lo, hi);
}

}  // namespace llaisys::grammar::json_schema_detail
