#pragma once
// Grammar expressions: the one language every front end (JSON Schema, regex, GBNF, choices) compiles
// to, over bytes. A grammar is a list of rules, each one expression; an expression may name another
// rule (ref), which is how recursion and sharing are written. Text is UTF-8: code-point classes are
// spelled as byte sequences by utf8_class() so the automaton (grammar.hpp) sees bytes only, as the
// tokens it is matched against are bytes.
//
// Expressions are immutable and shared (a subexpression may appear many times, e.g. a string body
// used by every property). Sizes are bounded where the grammar is built (grammar.hpp), not here.

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llaisys::grammar {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

inline constexpr int32_t kUnbounded = -1;  // repeat's max

struct Expr {
  enum class Kind : uint8_t {
    empty,    // matches the empty string
    nothing,  // matches no string at all (e.g. an unsatisfiable schema branch)
    bytes,    // one byte from `set`
    seq,      // children in order
    alt,      // any one child
    repeat,   // children[0] between min and max times (max kUnbounded: no limit)
    ref,      // the rule numbered `rule`
  };
  Kind kind = Kind::empty;
  std::bitset<256> set;
  std::vector<ExprPtr> children;
  int32_t min = 0;
  int32_t max = 0;
  int32_t rule = -1;
};

// ---- constructors (they simplify: seq of one child is the child, alt drops `nothing`, ...) ----
ExprPtr empty();
ExprPtr nothing();
ExprPtr byte_set(const std::bitset<256>& set);       // an empty set is nothing()
ExprPtr byte_range(uint8_t lo, uint8_t hi);
ExprPtr literal(std::string_view bytes);             // the exact bytes
ExprPtr seq(std::vector<ExprPtr> children);
ExprPtr alt(std::vector<ExprPtr> children);
ExprPtr repeat(ExprPtr child, int32_t min, int32_t max);  // max kUnbounded or >= min >= 0
ExprPtr optional(ExprPtr child);
ExprPtr star(ExprPtr child);
ExprPtr plus(ExprPtr child);
ExprPtr ref(int32_t rule);

// ---- Unicode ----
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
// A set of code points as sorted, disjoint, non-adjacent inclusive ranges.
class CodePointSet {
 public:
  CodePointSet() = default;
  static CodePointSet all();                      // every scalar value (no surrogates)
  void add(uint32_t lo, uint32_t hi);             // inclusive; clipped to [0, kMaxCodePoint]
  void add(const CodePointSet& other);
  CodePointSet complement() const;                // within every scalar value
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// The UTF-8 encodings of the set's code points (surrogates D800-DFFF excluded: never valid UTF-8).
ExprPtr utf8_class(const CodePointSet& set);
// Any one UTF-8 encoded code point.
ExprPtr any_code_point();
// Appends the UTF-8 encoding of `cp` (<= kMaxCodePoint; surrogates are encoded as they come).
void append_utf8(std::string& out, uint32_t cp);

// A human-readable rendering, for error messages and tests (not a parseable syntax).
std::string to_debug_string(const ExprPtr& expr, int32_t max_chars = 2000);

}  // namespace llaisys::grammar
