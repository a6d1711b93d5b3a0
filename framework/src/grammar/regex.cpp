// compile_regex: a recursive-descent parser of ECMAScript regular expressions (the u flag's syntax and
// meaning) straight into grammar expressions (expr.hpp). See regex.hpp for what is accepted.
//
// Shape of the parser, following ECMA-262's grammar:
//   Disjunction := Alternative ('|' Alternative)*
//   Alternative := Term*            ('^' first and '$' last only in a top-level alternative)
//   Term        := Atom Quantifier?
//   Atom        := char | '.' | '\' escape | '[' class ']' | '(' group ')'
// Recursion happens only through groups, so its depth is bounded by RegexLimits::max_nesting. A
// quantified atom is one repeat node that refers to the atom's expression (never copied), so the
// expression stays linear in the pattern's size however the counts nest; the automaton's size is
// bounded later, by GrammarBuilder::build. Character classes are the one construct whose expression
// can be large for few bytes (\p{L} is thousands of nodes): identical classes share one expression and
// the distinct ones together are bounded by RegexLimits::max_class_nodes.

#include "llaisys/grammar/regex.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "regex_classes.hpp"

namespace llaisys::grammar {
namespace {

using regex_detail::digit_set;
using regex_detail::dot_set;
using regex_detail::space_set;
using regex_detail::word_set;

// Each group level is a few frames of recursion here and in GrammarBuilder::build: whatever the
// caller's limit, the depth stays well within a thread's stack.
constexpr int32_t kMaxNesting = 1000;

// The length of the well-formed UTF-8 encoding at s[pos] (its code point in `cp`), or 0 when the bytes
// there are not one (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut).
int decode_utf8(std::string_view s, std::size_t pos, uint32_t& cp) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  int n = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2;
    cp = b0 & 0x1Fu;
    min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    cp = b0 & 0x0Fu;
    min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4;
    cp = b0 & 0x07u;
    min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - pos < static_cast<std::size_t>(n)) return 0;
  for (int i = 1; i < n; ++i) {
    const auto b = static_cast<uint8_t>(s[pos + static_cast<std::size_t>(i)]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (cp < min || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// One code point as an expression: its UTF-8 bytes. A surrogate (only reachable through \uD800-style
// escapes) has no UTF-8 form and matches nothing, as in a u-flag regex run over well-formed text.
ExprPtr code_point_expr(uint32_t cp) {
  if (cp >= 0xD800 && cp <= 0xDFFF) return nothing();
  CodePointSet one;
  one.add(cp, cp);
  return utf8_class(one);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_alnum(char c) { return is_digit(c) || is_ascii_letter(c); }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The expression of a class escape's set, built once: these are shared by every pattern.
ExprPtr class_escape_expr(char letter) {
  static const ExprPtr d = utf8_class(digit_set());
  static const ExprPtr nd = utf8_class(digit_set().complement());
  static const ExprPtr w = utf8_class(word_set());
  static const ExprPtr nw = utf8_class(word_set().complement());
  static const ExprPtr s = utf8_class(space_set());
  static const ExprPtr ns = utf8_class(space_set().complement());
  switch (letter) {
    case 'd': return d;
    case 'D': return nd;
    case 'w': return w;
    case 'W': return nw;
    case 's': return s;
    default: return ns;  // 'S'
  }
}

ExprPtr dot_expr() {
  static const ExprPtr e = utf8_class(dot_set());
  return e;
}

// A class atom: one code point (a possible range end) or a set from a class escape (\d, \p{L}, ...).
struct ClassAtom {
  bool is_set = false;
  uint32_t cp = 0;
  CodePointSet set;
};

class RegexParser {
 public:
  RegexParser(std::string_view pattern, const RegexLimits& limits) : src_(pattern), limits_(limits) {}

  Result<ExprPtr> parse() {
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr e, disjunction(/*top=*/true));
    if (pos_ < src_.size()) {  // only ')' stops a top-level disjunction early, and alternative() refuses it
      return fail(pos_, "unexpected character");
    }
    return e;
  }

 private:
  Status fail(std::size_t at, std::string_view what) const {
    return make_error(ErrorCode::invalid_argument, "regex: {} at byte {}", what, at);
  }
  bool at_end() const { return pos_ >= src_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  bool has(std::size_t ahead) const { return pos_ + ahead < src_.size(); }

  Result<ExprPtr> disjunction(bool top) {
    std::vector<ExprPtr> alternatives;
    for (;;) {
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr a, alternative(top));
      alternatives.push_back(std::move(a));
      if (at_end() || peek() != '|') break;
      ++pos_;
    }
    return alt(std::move(alternatives));
  }

  // Terms up to '|', ')' or the end. In a top-level alternative a leading '^' and a trailing '$' are
  // dropped: under full-match semantics they assert nothing.
  Result<ExprPtr> alternative(bool top) {
    std::vector<ExprPtr> terms;
    if (top && !at_end() && peek() == '^') ++pos_;
    while (!at_end()) {
      const char c = peek();
      if (c == '|') break;
      if (c == ')') {
        if (top) return fail(pos_, "unbalanced parenthesis: ')' without a matching '('");
        break;
      }
      if (c == '$') {
        if (top && (!has(1) || peek(1) == '|')) {
          ++pos_;
          break;
        }
        return fail(pos_,
                    "the anchor '$' is only supported at the end of the pattern or of a top-level alternative");
      }
      if (c == '^') {
        return fail(pos_,
                    "the anchor '^' is only supported at the start of the pattern or of a top-level alternative");
      }
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr a, atom());
      LLAISYS_RETURN_IF_ERROR(quantify(a));
      terms.push_back(std::move(a));
    }
    return seq(std::move(terms));
  }

  // {n}, {n,} or {n,m} at pos_: true (and the counts, pos_ past '}') when the text there is one.
  // Counts above max_repeat or out of order are errors; text that is not a quantifier is not.
  Result<bool> braces(int32_t& min, int32_t& max) {
    const std::size_t start = pos_;
    std::size_t p = pos_ + 1;
    auto number = [&](int64_t& value) {
      const std::size_t first = p;
      value = 0;
      while (p < src_.size() && is_digit(src_[p])) {
        value = std::min<int64_t>(value * 10 + (src_[p] - '0'), int64_t{1} << 40);  // saturates
        ++p;
      }
      return p > first;
    };
    int64_t lo = 0;
    int64_t hi = 0;
    if (!number(lo)) return false;
    if (p < src_.size() && src_[p] == '}') {
      hi = lo;
    } else if (p < src_.size() && src_[p] == ',') {
      ++p;
      if (p < src_.size() && src_[p] == '}') {
        hi = -1;
      } else if (!number(hi) || p >= src_.size() || src_[p] != '}') {
        return false;
      }
    } else {
      return false;
    }
    const int64_t limit = limits_.max_repeat;
    if (lo > limit || hi > limit) {
      return fail(start, fmt::format("repeat count {} is above the limit of {}", std::max(lo, hi), limit));
    }
    if (hi >= 0 && lo > hi) return fail(start, "numbers out of order in a {n,m} quantifier");
    min = static_cast<int32_t>(lo);
    max = hi < 0 ? kUnbounded : static_cast<int32_t>(hi);
    pos_ = p + 1;
    return true;
  }

  // An optional quantifier (greedy or lazy: the same language) applied to `a`.
  Status quantify(ExprPtr& a) {
    if (at_end()) return Status();
    int32_t min = 0;
    int32_t max = 0;
    switch (peek()) {
      case '*': min = 0, max = kUnbounded, ++pos_; break;
      case '+': min = 1, max = kUnbounded, ++pos_; break;
      case '?': min = 0, max = 1, ++pos_; break;
      case '{': {
        LLAISYS_ASSIGN_OR_RETURN(const bool is_quantifier, braces(min, max));
        if (!is_quantifier) return lone_brace();
        break;
      }
      default: return Status();
    }
    if (!at_end() && peek() == '?') ++pos_;  // lazy
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
      return fail(pos_, "nothing to repeat: a quantifier follows a quantifier (possessive or doubled quantifiers "
                        "are not ECMAScript)");
    }
    a = repeat(std::move(a), min, max);  // shares the atom: nested counts cost no copies
    return Status();
  }

  Status lone_brace() const {
    return fail(pos_, "'{' does not start a quantifier {n}, {n,} or {n,m} (write \\{ for the character)");
  }

  Result<ExprPtr> atom() {
    const std::size_t start = pos_;
    switch (peek()) {
      case '(': return group();
      case '[': return char_class();
      case '.': ++pos_; return dot_expr();
      case '\\': return atom_escape();
      case '*':
      case '+':
      case '?': return fail(start, "nothing to repeat: a quantifier with no atom before it");
      case '{': {
        int32_t min = 0;
        int32_t max = 0;
        LLAISYS_ASSIGN_OR_RETURN(const bool is_quantifier, braces(min, max));
        if (is_quantifier) return fail(start, "nothing to repeat: a quantifier with no atom before it");
        return lone_brace();
      }
      case '}': return fail(start, "lone '}' (write \\} for the character)");
      case ']': return fail(start, "unbalanced bracket: ']' without a matching '[' (write \\] for the character)");
      default: break;
    }
    uint32_t cp = 0;
    const int n = decode_utf8(src_, pos_, cp);  // the pattern was validated: n > 0
    pos_ += static_cast<std::size_t>(n);
    return code_point_expr(cp);
  }

  Result<ExprPtr> group() {
    const std::size_t start = pos_;
    const int32_t max_nesting = std::min(limits_.max_nesting, kMaxNesting);
    if (depth_ + 1 > max_nesting) {
      return fail(start, fmt::format("groups nested deeper than the limit of {}", max_nesting));
    }
    ++pos_;
    if (peek() == '?') {
      const char kind = peek(1);
      if (kind == ':') {
        pos_ += 2;
      } else if (kind == '=' || kind == '!') {
        return fail(start, "lookahead (?= or (?! is not supported");
      } else if (kind == '<' && (peek(2) == '=' || peek(2) == '!')) {
        return fail(start, "lookbehind (?<= or (?<! is not supported");
      } else if (kind == '<') {
        pos_ += 2;
        LLAISYS_RETURN_IF_ERROR(group_name(start));
      } else if (kind == 'P' && peek(2) == '<') {
        return fail(start, "(?P<name> is Python's named group syntax; ECMAScript writes (?<name>");
      } else if (is_ascii_letter(kind) || kind == '-') {
        return fail(start, "inline flags or modifiers such as (?i) are not supported");
      } else {
        return fail(start, "invalid group: '(?' must be followed by ':', '<name>', '=', '!', '<=' or '<!'");
      }
    }
    ++depth_;
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr body, disjunction(/*top=*/false));
    --depth_;
    if (at_end() || peek() != ')') return fail(start, "unbalanced parenthesis: '(' is never closed");
    ++pos_;
    return body;
  }

  // A capture group's name up to '>' (pos_ after "(?<"): an identifier of ASCII letters, digits, '_'
  // and '$' (not starting with a digit) or non-ASCII code points. The name changes nothing we match.
  Status group_name(std::size_t group_start) {
    const std::size_t first = pos_;
    while (!at_end() && peek() != '>') {
      const char c = peek();
      const bool ok = is_ascii_letter(c) || c == '_' || c == '$' || (is_digit(c) && pos_ > first) ||
                      static_cast<uint8_t>(c) >= 0x80;
      if (!ok) return fail(pos_, "invalid character in a group name (?<name>");
      ++pos_;
    }
    if (at_end()) return fail(group_start, "unterminated group name (?<name>");
    if (pos_ == first) return fail(group_start, "empty group name (?<>");
    ++pos_;  // '>'
    return Status();
  }

  Result<ExprPtr> atom_escape() {
    const std::size_t start = pos_;
    if (!has(1)) return fail(start, "'\\' at the end of the pattern");
    const char e = peek(1);
    if (e == 'b' || e == 'B') return fail(start, fmt::format("word boundary \\{} is not supported", e));
    if (e >= '1' && e <= '9') return fail(start, fmt::format("backreference \\{} is not supported", e));
    if (e == 'k') return fail(start, "named backreference \\k<name> is not supported");
    if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S') {
      pos_ += 2;
      return class_escape_expr(e);
    }
    if (e == 'p' || e == 'P') {
      LLAISYS_ASSIGN_OR_RETURN(const CodePointSet* set, property_escape());
      return class_expr(start, *set);
    }
    LLAISYS_ASSIGN_OR_RETURN(const uint32_t cp, character_escape());
    return code_point_expr(cp);
  }

  // \p{..} or \P{..} at pos_: a General_Category value, by itself or as gc=V / General_Category=V.
  // The set is looked up once per spelling (the pointer stays valid: the map's nodes do not move).
  Result<const CodePointSet*> property_escape() {
    const std::size_t start = pos_;
    const bool negated = peek(1) == 'P';
    pos_ += 2;
    if (at_end() || peek() != '{') return fail(start, "\\p and \\P must be followed by {name}");
    const std::size_t close = src_.find('}', pos_);
    if (close == std::string_view::npos) return fail(start, "unterminated \\p{name}");
    const std::string_view body = src_.substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
    const std::string key(src_.substr(start + 1, close - start));  // "p{..}" or "P{..}"
    if (auto it = property_cache_.find(key); it != property_cache_.end()) return &it->second;
    for (const char c : body) {
      if (!is_ascii_alnum(c) && c != '_' && c != '=') return fail(start, "invalid Unicode property name in \\p{..}");
    }
    std::string_view value = body;
    if (const std::size_t eq = body.find('='); eq != std::string_view::npos) {
      const std::string_view property = body.substr(0, eq);
      if (property != "General_Category" && property != "gc") {
        return fail(start, fmt::format("Unicode property \\p{{{}}} is not supported (only General_Category values)",
                                       body));
      }
      value = body.substr(eq + 1);
    }
    std::optional<CodePointSet> set = regex_detail::general_category(value);
    if (!set) {
      return fail(start, fmt::format("Unicode property \\p{{{}}} is not supported (only General_Category values "
                                     "such as L, Lu, Ll, N, Nd, P, S, Z)",
                                     body));
    }
    auto [it, inserted] = property_cache_.emplace(key, negated ? set->complement() : std::move(*set));
    return &it->second;
  }

  // The expression of a class (a [..] or a \p{..} atom) spelled by src_[start, pos_): one per distinct
  // spelling, their sizes together within max_class_nodes.
  Result<ExprPtr> class_expr(std::size_t start, const CodePointSet& set) {
    std::string key(src_.substr(start, pos_ - start));
    if (auto it = class_cache_.find(key); it != class_cache_.end()) return it->second;
    ExprPtr e = utf8_class(set);
    class_nodes_ += tree_size(e);
    if (class_nodes_ > limits_.max_class_nodes) {
      return fail(start, fmt::format("character classes too large: the pattern's distinct classes spell more than "
                                     "{} expression nodes",
                                     limits_.max_class_nodes));
    }
    class_cache_.emplace(std::move(key), e);
    return e;
  }

  // Nodes of a utf8_class expression (a shallow tree: alternatives of byte-range sequences).
  static int64_t tree_size(const ExprPtr& e) {
    int64_t n = 1;
    for (const ExprPtr& c : e->children) n += tree_size(c);
    return n;
  }

  // A CharacterEscape (ECMA-262) at pos_ ('\'): control letters, \0, \xHH, \uHHHH (a surrogate pair of
  // two joins into one code point), \u{H..}, \cX, and identity escapes. ECMAScript's u flag allows the
  // identity escape only for syntax characters and '/'; any ASCII punctuation is accepted here, as no
  // dialect gives those another meaning, while unknown letters and digits are refused.
  Result<uint32_t> character_escape() {
    const std::size_t start = pos_;
    if (!has(1)) return fail(start, "'\\' at the end of the pattern");
    const char e = peek(1);
    pos_ += 2;
    switch (e) {
      case 't': return uint32_t{0x09};
      case 'n': return uint32_t{0x0A};
      case 'v': return uint32_t{0x0B};
      case 'f': return uint32_t{0x0C};
      case 'r': return uint32_t{0x0D};
      case '0':
        if (!at_end() && is_digit(peek())) {
          return fail(start, "\\0 followed by a digit (octal escapes are not ECMAScript with the u flag)");
        }
        return uint32_t{0};
      case 'x': {
        const int h = hex_value(peek());
        const int l = has(1) ? hex_value(peek(1)) : -1;
        if (at_end() || h < 0 || l < 0) return fail(start, "\\x must be followed by two hex digits");
        pos_ += 2;
        return static_cast<uint32_t>(h * 16 + l);
      }
      case 'u': return unicode_escape(start);
      case 'c': {
        if (at_end() || !is_ascii_letter(peek())) return fail(start, "\\c must be followed by an ASCII letter");
        const char letter = peek();
        ++pos_;
        return static_cast<uint32_t>(letter % 32);
      }
      default: break;
    }
    if (is_ascii_alnum(e)) return fail(start, fmt::format("unknown escape \\{}", e));
    const auto byte = static_cast<uint8_t>(e);
    if (byte < 0x20 || byte >= 0x7F) return fail(start, "'\\' before a control or non-ASCII character");
    return uint32_t{byte};
  }

  // After "\u" (pos_ past 'u'): {H..} up to U+10FFFF, or exactly four hex digits.
  Result<uint32_t> unicode_escape(std::size_t start) {
    if (!at_end() && peek() == '{') {
      ++pos_;
      uint32_t value = 0;
      const std::size_t first = pos_;
      while (!at_end() && hex_value(peek()) >= 0) {
        value = value * 16 + static_cast<uint32_t>(hex_value(peek()));
        if (value > kMaxCodePoint) return fail(start, "\\u{..} above U+10FFFF");
        ++pos_;
      }
      if (pos_ == first || at_end() || peek() != '}') return fail(start, "\\u{ must be followed by hex digits and '}'");
      ++pos_;
      return value;
    }
    uint32_t value = 0;
    if (!four_hex(value)) return fail(start, "\\u must be followed by four hex digits or {hex}");
    // A lead surrogate followed by an escaped trail surrogate is one code point (u flag).
    if (value >= 0xD800 && value <= 0xDBFF && peek() == '\\' && peek(1) == 'u' && has(1)) {
      const std::size_t save = pos_;
      pos_ += 2;
      uint32_t trail = 0;
      if (four_hex(trail) && trail >= 0xDC00 && trail <= 0xDFFF) {
        return 0x10000 + ((value - 0xD800) << 10) + (trail - 0xDC00);
      }
      pos_ = save;
    }
    return value;
  }

  bool four_hex(uint32_t& value) {
    if (src_.size() - pos_ < 4) return false;
    value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const int h = hex_value(src_[pos_ + i]);
      if (h < 0) return false;
      value = value * 16 + static_cast<uint32_t>(h);
    }
    pos_ += 4;
    return true;
  }

  // '[' ... ']' or '[^' ... ']'. A negated class is the complement within all scalar values.
  Result<ExprPtr> char_class() {
    const std::size_t start = pos_;
    ++pos_;
    const bool negated = !at_end() && peek() == '^';
    if (negated) ++pos_;
    CodePointSet set;
    for (;;) {
      if (at_end()) return fail(start, "unbalanced bracket: '[' is never closed");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      const std::size_t first_at = pos_;
      LLAISYS_ASSIGN_OR_RETURN(ClassAtom first, class_atom());
      if (has(1) && peek() == '-' && peek(1) != ']') {
        const std::size_t dash = pos_;
        ++pos_;
        LLAISYS_ASSIGN_OR_RETURN(ClassAtom last, class_atom());
        if (first.is_set || last.is_set) {
          return fail(dash, "a character class range with a class escape (\\d, \\w, \\s, \\p) as an end");
        }
        if (first.cp > last.cp) return fail(first_at, "range out of order in a character class");
        set.add(first.cp, last.cp);
      } else if (first.is_set) {
        set.add(first.set);
      } else {
        set.add(first.cp, first.cp);
      }
    }
    return class_expr(start, negated ? set.complement() : set);
  }

  Result<ClassAtom> class_atom() {
    const std::size_t start = pos_;
    ClassAtom atom;
    if (peek() == '\\') {
      if (!has(1)) return fail(start, "'\\' at the end of the pattern");
      const char e = peek(1);
      switch (e) {
        case 'b': pos_ += 2, atom.cp = 0x08; return atom;  // backspace inside a class
        case '-': pos_ += 2, atom.cp = '-'; return atom;
        case 'B': return fail(start, "\\B inside a character class");
        case 'd':
        case 'D':
        case 'w':
        case 'W':
        case 's':
        case 'S':
          pos_ += 2;
          atom.is_set = true;
          atom.set = e == 'd' ? digit_set() : e == 'D' ? digit_set().complement() : e == 'w' ? word_set()
                   : e == 'W' ? word_set().complement() : e == 's' ? space_set() : space_set().complement();
          return atom;
        case 'p':
        case 'P': {
          LLAISYS_ASSIGN_OR_RETURN(const CodePointSet* set, property_escape());
          atom.set = *set;
          atom.is_set = true;
          return atom;
        }
        default: break;
      }
      if (e >= '1' && e <= '9') {
        return fail(start, fmt::format("\\{} inside a character class (a backreference or octal escape)", e));
      }
      if (e == 'k') return fail(start, "named backreference \\k<name> is not supported");
      LLAISYS_ASSIGN_OR_RETURN(atom.cp, character_escape());
      return atom;
    }
    // "[:alpha:]" inside a class is a POSIX class elsewhere; ECMAScript reads it as characters, which
    // is never what was meant.
    if (peek() == '[' && peek(1) == ':' && has(1)) {
      std::size_t p = pos_ + 2;
      while (p < src_.size() && is_ascii_letter(src_[p])) ++p;
      if (p > pos_ + 2 && p + 1 < src_.size() && src_[p] == ':' && src_[p + 1] == ']') {
        return fail(start, "POSIX class [:name:] is not ECMAScript (use e.g. [a-zA-Z] or \\p{L})");
      }
    }
    const int n = decode_utf8(src_, pos_, atom.cp);
    pos_ += static_cast<std::size_t>(n);
    return atom;
  }

  std::string_view src_;
  const RegexLimits& limits_;
  std::size_t pos_ = 0;
  int32_t depth_ = 0;
  std::unordered_map<std::string, CodePointSet> property_cache_;  // by "p{..}" / "P{..}"
  std::unordered_map<std::string, ExprPtr> class_cache_;          // by the class's spelling
  int64_t class_nodes_ = 0;
};

}  // namespace

Result<ExprPtr> compile_regex(std::string_view pattern, const RegexLimits& limits) {
  if (pattern.size() > static_cast<std::size_t>(std::max(limits.max_pattern_bytes, 0))) {
    return make_error(ErrorCode::invalid_argument, "regex: the pattern is {} bytes long, above the limit of {}",
                      pattern.size(), limits.max_pattern_bytes);
  }
  for (std::size_t i = 0; i < pattern.size();) {
    uint32_t cp = 0;
    const int n = decode_utf8(pattern, i, cp);
    if (n == 0) return make_error(ErrorCode::invalid_argument, "regex: invalid UTF-8 at byte {}", i);
    i += static_cast<std::size_t>(n);
  }
  RegexParser parser(pattern, limits);
  return parser.parse();
}

}  // namespace llaisys::grammar
