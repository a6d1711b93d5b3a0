#pragma once
// Private to the JSON Schema front end (json_schema*.cpp) and its tests: the pieces the schema walk
// (json_schema.cpp, json_schema_containers.cpp, json_schema_merge.cpp) is made of.
//  - json_schema_text.cpp: JSON text (string bodies, escapes, compact serialization, UTF-8) and the
//    code-point length of raw-text expressions;
//  - json_schema_numbers.cpp: exact decimals and digit-range expressions for bounded numbers;
//  - json_schema_formats.cpp: "format" values as raw-text expressions.
// "Raw text" expressions spell a string's decoded value (what "pattern" and "format" describe);
// escape_raw_text() turns one into the JSON string body that decodes to it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/expr.hpp"
#include "llaisys/grammar/grammar.hpp"
#include "llaisys/grammar/json_schema.hpp"

namespace llaisys::grammar::json_schema_detail {

// ---- the whole front end, before build(): what the tests run reference_match() on ----
struct CompiledSchema {
  GrammarBuilder builder;
  int32_t root = -1;
  std::string unsatisfiable;  // the first part found to admit no value, for messages
};
Result<CompiledSchema> compile_schema(const boost::json::value& schema, const JsonSchemaOptions& options);
Result<CompiledSchema> compile_any_object(const JsonSchemaOptions& options);

// ---- JSON text (json_schema_text.cpp) ----
bool valid_utf8(std::string_view s);
// `s` (valid UTF-8) as a JSON string literal: quotes, \" \\ \b \f \n \r \t, \u00XX for the other
// control characters, everything else as is.
std::string json_quote(std::string_view s);
// Compact JSON (no whitespace, strings as json_quote, numbers in their shortest round-trip form).
// Fails on invalid UTF-8 or nesting deeper than max_depth.
Result<std::string> compact_json(const boost::json::value& v, int32_t max_depth);
// JSON Schema equality: numbers by value (1 == 1.0), objects regardless of key order.
bool json_equal(const boost::json::value& a, const boost::json::value& b);

// One character of a JSON string body: a code point other than '"', '\\' and U+0000-U+001F, or an
// escape (\" \\ \/ \b \f \n \r \t, \uXXXX other than a surrogate, or a \uD8xx\uDCxx surrogate pair).
ExprPtr json_string_char();
// Raw-text expression -> the JSON string bodies that decode to its strings (each '"', '\\' and control
// character as its escape). The expression must be over whole UTF-8 code points (no refs).
ExprPtr escape_raw_text(const ExprPtr& raw);

// Length in code points of the strings of a raw-text expression, when computable.
struct CodePointLength {
  int64_t min = 0;
  int64_t max = 0;  // -1: unbounded
};
std::optional<CodePointLength> code_point_length(const ExprPtr& raw);
// raw ∩ (strings of lo..hi code points; hi -1 unbounded). Refused (invalid_argument) when the
// expression's shape does not allow pushing the bounds down (e.g. a variable-length group repeated).
Result<ExprPtr> restrict_length(const ExprPtr& raw, int64_t lo, int64_t hi);

// ---- numbers (json_schema_numbers.cpp) ----
// A finite decimal, exactly: sign, integer digits (no leading zeros, "" for 0), fraction digits (no
// trailing zeros).
struct Decimal {
  bool negative = false;
  std::string int_digits;
  std::string frac_digits;
  bool is_zero() const { return int_digits.empty() && frac_digits.empty(); }
  bool is_integer() const { return frac_digits.empty(); }
  std::string to_string() const;
};
// The decimal a JSON number stands for (a double by its shortest round-trip spelling, which is the
// spelling JavaScript gives it, so comparisons match ajv's).
std::optional<Decimal> decimal_of(const boost::json::value& v);
int compare(const Decimal& a, const Decimal& b);

struct NumberBound {
  Decimal value;
  bool exclusive = false;
};
struct NumberSpec {
  bool integer_only = false;
  std::optional<NumberBound> lo;
  std::optional<NumberBound> hi;
};
// The JSON numbers within the bounds that we generate (see number_expr's comment); nothing() when no
// such number exists.
ExprPtr number_expr(const NumberSpec& spec);
// Digits generated: integers up to kMaxIntegerDigits; bounded non-integers up to
// kMaxBoundedIntDigits + kMaxBoundedFracDigits (<= 15 significant digits, so the parsed double keeps
// its order against the bound's double); unbounded non-integers up to kMaxFracDigits, exponent 2 digits.
inline constexpr int32_t kMaxIntegerDigits = 15;
inline constexpr int32_t kMaxBoundedIntDigits = 9;
inline constexpr int32_t kMaxBoundedFracDigits = 6;
inline constexpr int32_t kMaxFracDigits = 15;
// Non-negative integers lo..hi (decimal, no leading zeros); lo <= hi.
ExprPtr nonneg_range(int64_t lo, int64_t hi);

// ---- formats (json_schema_formats.cpp) ----
enum class FormatKind { string, number, unknown };
FormatKind format_kind(std::string_view name);
// The raw text of a string format (date, time, date-time, uuid, email, ipv4, ipv6, hostname, uri, byte,
// duration, json-pointer, ...), each a subset of what ajv-formats accepts in full and fast mode; a null
// expression for formats that accept any string (password, binary).
Result<ExprPtr> string_format(std::string_view name);

}  // namespace llaisys::grammar::json_schema_detail
