#include "llaisys/grammar/expr.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

namespace llaisys::grammar {
namespace {

ExprPtr make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }

const ExprPtr& empty_singleton() {
  static const ExprPtr e = make(Expr{.kind = Expr::Kind::empty});
  return e;
}
const ExprPtr& nothing_singleton() {
  static const ExprPtr e = make(Expr{.kind = Expr::Kind::nothing});
  return e;
}

}  // namespace

ExprPtr empty() { return empty_singleton(); }
ExprPtr nothing() { return nothing_singleton(); }

ExprPtr byte_set(const std::bitset<256>& set) {
  if (set.none()) return nothing();
  return make(Expr{.kind = Expr::Kind::bytes, .set = set});
}

ExprPtr byte_range(uint8_t lo, uint8_t hi) {
  std::bitset<256> set;
  for (unsigned b = lo; b <= hi; ++b) set.set(b);
  return byte_set(set);
}

ExprPtr literal(std::string_view bytes) {
  std::vector<ExprPtr> parts;
  parts.reserve(bytes.size());
  for (const char c : bytes) {
    std::bitset<256> set;
    set.set(static_cast<uint8_t>(c));
    parts.push_back(byte_set(set));
  }
  return seq(std::move(parts));
}

ExprPtr seq(std::vector<ExprPtr> children) {
  std::vector<ExprPtr> kept;
  kept.reserve(children.size());
  for (ExprPtr& c : children) {
    if (c->kind == Expr::Kind::nothing) return nothing();
    if (c->kind == Expr::Kind::empty) continue;
    if (c->kind == Expr::Kind::seq) {
      kept.insert(kept.end(), c->children.begin(), c->children.end());
    } else {
      kept.push_back(std::move(c));
    }
  }
  if (kept.empty()) return empty();
  if (kept.size() == 1) return kept.front();
  return make(Expr{.kind = Expr::Kind::seq, .children = std::move(kept)});
}

ExprPtr alt(std::vector<ExprPtr> children) {
  std::vector<ExprPtr> kept;
  kept.reserve(children.size());
  std::bitset<256> single_bytes;  // alternatives of one byte each merge into one set
  bool has_bytes = false;
  for (ExprPtr& c : children) {
    if (c->kind == Expr::Kind::nothing) continue;
    if (c->kind == Expr::Kind::bytes) {
      single_bytes |= c->set;
      has_bytes = true;
      continue;
    }
    if (c->kind == Expr::Kind::alt) {
      for (const ExprPtr& g : c->children) {
        if (g->kind == Expr::Kind::bytes) {
          single_bytes |= g->set;
          has_bytes = true;
        } else {
          kept.push_back(g);
        }
      }
      continue;
    }
    kept.push_back(std::move(c));
  }
  if (has_bytes) kept.insert(kept.begin(), byte_set(single_bytes));
  if (kept.empty()) return nothing();
  if (kept.size() == 1) return kept.front();
  return make(Expr{.kind = Expr::Kind::alt, .children = std::move(kept)});
}

ExprPtr repeat(ExprPtr child, int32_t min, int32_t max) {
  min = std::max(min, 0);
  if (max != kUnbounded && max < min) return nothing();
  if (max == 0) return empty();
  if (child->kind == Expr::Kind::empty) return empty();
  if (child->kind == Expr::Kind::nothing) return min == 0 ? empty() : nothing();
  if (min == 1 && max == 1) return child;
  return make(Expr{.kind = Expr::Kind::repeat, .children = {std::move(child)}, .min = min, .max = max});
}

ExprPtr optional(ExprPtr child) { return repeat(std::move(child), 0, 1); }
ExprPtr star(ExprPtr child) { return repeat(std::move(child), 0, kUnbounded); }
ExprPtr plus(ExprPtr child) { return repeat(std::move(child), 1, kUnbounded); }
ExprPtr ref(int32_t rule) { return make(Expr{.kind = Expr::Kind::ref, .rule = rule}); }

// ---- CodePointSet ----

CodePointSet CodePointSet::all() {
  CodePointSet s;
  s.add(0, 0xD7FF);
  s.add(0xE000, kMaxCodePoint);
  return s;
}

void CodePointSet::add(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return;
  // Appending past (or onto the end of) the last range is O(1): sets built in increasing order, as
  // complement() and add(other) build them, stay linear in their size.
  if (ranges_.empty() || lo > ranges_.back().second + 1) {
    ranges_.emplace_back(lo, hi);
    return;
  }
  if (lo >= ranges_.back().first) {
    ranges_.back().second = std::max(ranges_.back().second, hi);
    return;
  }
  std::vector<std::pair<uint32_t, uint32_t>> out;
  out.reserve(ranges_.size() + 1);
  bool placed = false;
  for (const auto& [a, b] : ranges_) {
    if (b + 1 < lo) {
      out.emplace_back(a, b);
    } else if (hi + 1 < a) {
      if (!placed) {
        out.emplace_back(lo, hi);
        placed = true;
      }
      out.emplace_back(a, b);
    } else {  // overlapping or adjacent: merge into the pending range
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  }
  if (!placed) out.emplace_back(lo, hi);
  std::sort(out.begin(), out.end());
  ranges_ = std::move(out);
}

void CodePointSet::add(const CodePointSet& other) {
  // Both lists are sorted: merge them by start and re-add in order (each add is then an append).
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  merged.reserve(ranges_.size() + other.ranges_.size());
  std::merge(ranges_.begin(), ranges_.end(), other.ranges_.begin(), other.ranges_.end(), std::back_inserter(merged));
  ranges_.clear();
  for (const auto& [a, b] : merged) add(a, b);
}

CodePointSet CodePointSet::complement() const {
  CodePointSet out;
  uint32_t next = 0;
  for (const auto& [a, b] : ranges_) {
    if (a > next) out.add(next, a - 1);
    next = b + 1;
  }
  if (next <= kMaxCodePoint) out.add(next, kMaxCodePoint);
  CodePointSet result;  // without surrogates
  for (const auto& [a, b] : out.ranges_) {
    if (b < 0xD800 || a > 0xDFFF) {
      result.add(a, b);
    } else {
      if (a < 0xD800) result.add(a, 0xD7FF);
      if (b > 0xDFFF) result.add(0xE000, b);
    }
  }
  return result;
}

bool CodePointSet::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(cp, UINT32_MAX));
  if (it == ranges_.begin()) return false;
  --it;
  return cp >= it->first && cp <= it->second;
}

// ---- UTF-8 ----
namespace {

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void encode(uint32_t cp, uint8_t* out, int n) {
  if (n == 1) {
    out[0] = static_cast<uint8_t>(cp);
    return;
  }
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  out[0] = static_cast<uint8_t>(kLead[n] | cp);
}

// The byte sequences of [lo, hi], both of encoded length n: split until each piece is a product of
// byte ranges (the classic construction: a range whose tails span full continuation ranges is one
// sequence of byte ranges).
void ranges_same_length(uint32_t lo, uint32_t hi, int n, std::vector<ExprPtr>& out) {
  if (n == 1) {
    out.push_back(byte_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)));
    return;
  }
  for (int i = 1; i < n; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        ranges_same_length(lo, lo | mask, n, out);
        ranges_same_length((lo | mask) + 1, hi, n, out);
        return;
      }
      if ((hi & mask) != mask) {
        ranges_same_length(lo, (hi & ~mask) - 1, n, out);
        ranges_same_length(hi & ~mask, hi, n, out);
        return;
      }
    }
  }
  uint8_t a[4];
  uint8_t b[4];
  encode(lo, a, n);
  encode(hi, b, n);
  std::vector<ExprPtr> parts;
  for (int i = 0; i < n; ++i) parts.push_back(byte_range(a[i], b[i]));
  out.push_back(seq(std::move(parts)));
}

}  // namespace

ExprPtr utf8_class(const CodePointSet& set) {
  std::vector<ExprPtr> alts;
  static constexpr uint32_t kLengthEnds[4] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  for (auto [lo, hi] : set.ranges()) {
    // Surrogates are not scalar values: cut them out.
    std::vector<std::pair<uint32_t, uint32_t>> pieces;
    if (hi < 0xD800 || lo > 0xDFFF) {
      pieces.emplace_back(lo, hi);
    } else {
      if (lo < 0xD800) pieces.emplace_back(lo, 0xD7FF);
      if (hi > 0xDFFF) pieces.emplace_back(0xE000, hi);
    }
    for (auto [a, b] : pieces) {
      while (a <= b) {
        const int n = utf8_length(a);
        const uint32_t end = std::min(b, kLengthEnds[n - 1]);
        ranges_same_length(a, end, n, alts);
        if (end == kMaxCodePoint) break;
        a = end + 1;
      }
    }
  }
  return alt(std::move(alts));
}

void append_utf8(std::string& out, uint32_t cp) {
  uint8_t bytes[4];
  const int n = utf8_length(cp);
  encode(cp, bytes, n);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(n));
}

ExprPtr any_code_point() {
  static const ExprPtr e = utf8_class(CodePointSet::all());
  return e;
}

// ---- debug rendering ----
namespace {

void render(const ExprPtr& e, std::string& out, std::size_t limit) {
  if (out.size() > limit) return;
  switch (e->kind) {
    case Expr::Kind::empty: out += "()"; return;
    case Expr::Kind::nothing: out += "<nothing>"; return;
    case Expr::Kind::bytes: {
      if (e->set.count() == 1) {
        for (unsigned b = 0; b < 256; ++b) {
          if (!e->set.test(b)) continue;
          if (b >= 0x21 && b < 0x7F) {
            out += static_cast<char>(b);
          } else {
            out += fmt::format("\\x{:02X}", b);
          }
        }
        return;
      }
      out += '[';
      for (unsigned b = 0; b < 256; ++b) {
        if (!e->set.test(b)) continue;
        unsigned end = b;
        while (end + 1 < 256 && e->set.test(end + 1)) ++end;
        out += fmt::format("\\x{:02X}", b);
        if (end > b) out += fmt::format("-\\x{:02X}", end);
        b = end;
      }
      out += ']';
      return;
    }
    case Expr::Kind::seq:
      out += '(';
      for (const ExprPtr& c : e->children) render(c, out, limit);
      out += ')';
      return;
    case Expr::Kind::alt:
      out += '(';
      for (std::size_t i = 0; i < e->children.size(); ++i) {
        if (i > 0) out += '|';
        render(e->children[i], out, limit);
      }
      out += ')';
      return;
    case Expr::Kind::repeat:
      render(e->children[0], out, limit);
      if (e->max == kUnbounded) {
        out += fmt::format("{{{},}}", e->min);
      } else {
        out += fmt::format("{{{},{}}}", e->min, e->max);
      }
      return;
    case Expr::Kind::ref: out += fmt::format("<rule {}>", e->rule); return;
  }
}

}  // namespace

std::string to_debug_string(const ExprPtr& expr, int32_t max_chars) {
  std::string out;
  render(expr, out, static_cast<std::size_t>(std::max(max_chars, 0)));
  if (out.size() > static_cast<std::size_t>(max_chars)) {
    out.resize(static_cast<std::size_t>(max_chars));
    out += "...";
  }
  return out;
}

}  // namespace llaisys::grammar
