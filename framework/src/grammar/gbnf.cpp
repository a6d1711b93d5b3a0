// GBNF text -> grammar (gbnf.hpp). A recursive-descent parser following llama.cpp's grammar rules:
// a rule ends at a newline unless inside parentheses; `|` may be followed by a newline.

#include "llaisys/grammar/gbnf.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

namespace llaisys::grammar {
namespace {

constexpr int32_t kMaxRepeat = 10000;
constexpr int32_t kMaxNesting = 128;
constexpr std::size_t kMaxText = 1 << 20;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Status parse() {
    skip_space(true);
    while (pos_ < text_.size()) {
      LLAISYS_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    return Status();
  }

  GrammarBuilder& builder() { return builder_; }
  Result<int32_t> root() {
    for (const auto& [name, id] : rules_) {
      if (!defined_.contains(name)) {
        return make_error(ErrorCode::invalid_argument, "GBNF: rule '{}' is used but never defined", name);
      }
      (void)id;
    }
    auto it = rules_.find("root");
    if (it == rules_.end()) return Status(ErrorCode::invalid_argument, "GBNF: the grammar has no 'root' rule");
    return it->second;
  }

 private:
  Status error(std::string_view what) const {
    std::size_t line = 1;
    std::size_t col = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return make_error(ErrorCode::invalid_argument, "GBNF line {}, column {}: {}", line, col, what);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  // Spaces, tabs and comments; newlines too when `newlines` (inside parentheses, after `|`).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }

  std::string_view parse_name() {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  int32_t rule_id(std::string_view name) {
    auto it = rules_.find(std::string(name));
    if (it != rules_.end()) return it->second;
    const int32_t id = builder_.add_rule(std::string(name));
    rules_.emplace(std::string(name), id);
    return id;
  }

  Status parse_rule() {
    const std::string_view name = parse_name();
    if (name.empty()) return error("expected a rule name");
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") return error(fmt::format("expected '::=' after rule name '{}'", name));
    pos_ += 3;
    skip_space(true);
    if (defined_.contains(std::string(name))) return error(fmt::format("rule '{}' is defined twice", name));
    defined_.insert(std::string(name));
    const int32_t id = rule_id(name);
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr body, parse_alternates(0));
    builder_.set_rule(id, std::move(body));
    skip_space(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') return error("expected the end of the line after the rule");
    return Status();
  }

  Result<ExprPtr> parse_alternates(int32_t depth) {
    if (depth > kMaxNesting) return error("parentheses nested too deeply");
    std::vector<ExprPtr> alternatives;
    LLAISYS_ASSIGN_OR_RETURN(ExprPtr first, parse_sequence(depth));
    alternatives.push_back(std::move(first));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr next, parse_sequence(depth));
      alternatives.push_back(std::move(next));
    }
    return alt(std::move(alternatives));
  }

  Result<ExprPtr> parse_sequence(int32_t depth) {
    const bool nested = depth > 0;
    std::vector<ExprPtr> items;
    while (!at_end()) {
      const char c = peek();
      ExprPtr item;
      if (c == '"') {
        ++pos_;
        std::string bytes;
        while (!at_end() && peek() != '"') {
          LLAISYS_ASSIGN_OR_RETURN(uint32_t cp, parse_char());
          append_utf8(bytes, cp);
        }
        if (at_end()) return error("unterminated string literal");
        ++pos_;
        item = literal(bytes);
      } else if (c == '[') {
        LLAISYS_ASSIGN_OR_RETURN(item, parse_class());
      } else if (c == '.') {
        ++pos_;
        item = any_code_point();
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        LLAISYS_ASSIGN_OR_RETURN(item, parse_alternates(depth + 1));
        skip_space(true);
        if (peek() != ')') return error("expected ')'");
        ++pos_;
      } else if (is_name_char(c)) {
        const std::size_t save = pos_;
        const std::string_view name = parse_name();
        // `name ::=` starts the next rule: this sequence ended at the previous line.
        std::size_t look = pos_;
        while (look < text_.size() && (text_[look] == ' ' || text_[look] == '\t')) ++look;
        if (text_.substr(look, 3) == "::=") {
          pos_ = save;
          return error(fmt::format("rule '{}' starts inside another rule (a missing newline?)", name));
        }
        item = ref(rule_id(name));
      } else if (c == '<') {
        return error("token references (<...>) are not supported");
      } else {
        break;
      }
      skip_space(nested);
      // Quantifiers.
      for (;;) {
        const char q = peek();
        if (q == '*') {
          item = star(item);
        } else if (q == '+') {
          item = plus(item);
        } else if (q == '?') {
          item = optional(item);
        } else if (q == '{') {
          ++pos_;
          skip_space(nested);
          int32_t min = 0;  // {,n}: at most n
          if (peek() != ',') {
            LLAISYS_ASSIGN_OR_RETURN(min, parse_int());
          }
          int32_t max = min;
          skip_space(nested);
          if (peek() == ',') {
            ++pos_;
            skip_space(nested);
            if (peek() == '}') {
              max = kUnbounded;
            } else {
              LLAISYS_ASSIGN_OR_RETURN(max, parse_int());
              if (max < min) return error("repetition {m,n} with n < m");
            }
            skip_space(nested);
          }
          if (peek() != '}') return error("expected '}' to close the repetition");
          item = repeat(item, min, max);
        } else {
          break;
        }
        ++pos_;
        skip_space(nested);
      }
      items.push_back(std::move(item));
    }
    return seq(std::move(items));
  }

  Result<int32_t> parse_int() {
    int64_t value = 0;
    const std::size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      if (value > kMaxRepeat) return error(fmt::format("repetition counts above {} are not supported", kMaxRepeat));
      ++pos_;
    }
    if (pos_ == start) return error("expected a number");
    return static_cast<int32_t>(value);
  }

  Result<ExprPtr> parse_class() {
    ++pos_;  // '['
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodePointSet set;
    while (!at_end() && peek() != ']') {
      LLAISYS_ASSIGN_OR_RETURN(uint32_t lo, parse_char());
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        LLAISYS_ASSIGN_OR_RETURN(hi, parse_char());
        if (hi < lo) return error("a character range runs backwards");
      }
      set.add(lo, hi);
    }
    if (at_end()) return error("unterminated character class");
    ++pos_;  // ']'
    return utf8_class(negated ? set.complement() : set);
  }

  Result<uint32_t> parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) return error(fmt::format("expected {} hex digits", digits));
      value = value * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (value > kMaxCodePoint) return error("code point above U+10FFFF");
    if (value >= 0xD800 && value <= 0xDFFF) return error("a surrogate code point is not a character");
    return value;
  }

  // One character of a literal or class (UTF-8 decoded), escapes resolved.
  Result<uint32_t> parse_char() {
    const auto c = static_cast<uint8_t>(peek());
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n': return uint32_t{'\n'};
        case 'r': return uint32_t{'\r'};
        case 't': return uint32_t{'\t'};
        case '\\': case '"': case '[': case ']': case '-': case '/': case '^': return static_cast<uint32_t>(e);
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        default: --pos_; return error(fmt::format("unknown escape '\\{}'", e));
      }
    }
    if (c < 0x80) {
      if (c == '\n' || c == '\r') return error("a newline inside a literal or class (write \\n)");
      ++pos_;
      return uint32_t{c};
    }
    const int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + static_cast<std::size_t>(n) > text_.size()) return error("invalid UTF-8");
    uint32_t cp = c & (0xFFu >> (n + 1));
    for (int i = 1; i < n; ++i) {
      const auto k = static_cast<uint8_t>(text_[pos_ + static_cast<std::size_t>(i)]);
      if ((k & 0xC0) != 0x80) return error("invalid UTF-8");
      cp = (cp << 6) | (k & 0x3F);
    }
    pos_ += static_cast<std::size_t>(n);
    return cp;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  GrammarBuilder builder_;
  std::map<std::string, int32_t> rules_;
  std::set<std::string> defined_;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> gbnf_grammar(std::string_view text, const GrammarLimits& limits) {
  if (text.size() > kMaxText) return make_error(ErrorCode::invalid_argument, "GBNF: the grammar is longer than {} bytes", kMaxText);
  Parser parser(text);
  LLAISYS_RETURN_IF_ERROR(parser.parse());
  LLAISYS_ASSIGN_OR_RETURN(int32_t root, parser.root());
  return parser.builder().build(root, limits);
}

}  // namespace llaisys::grammar
