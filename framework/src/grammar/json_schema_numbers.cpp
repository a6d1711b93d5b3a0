// Numbers for the JSON Schema front end: exact decimals for the bounds, and digit-range expressions
// for the JSON numbers between them.
//
// Why the digit caps make bounds exact against ajv: ajv compares doubles. A bound B (a double) is
// taken as D, its shortest round-trip decimal. A generated decimal d >= D parses to a double >= B, as
// rounding is monotonic and D rounds to B. For exclusive bounds, d > D must also parse to a double other
// than B: d has at most 15 significant digits, and two distinct decimals of at most 15 significant
// digits never round to the same double (DBL_DIG); when D itself needs more than 15 digits, no decimal
// of 15 digits rounds to B at all (else that decimal would be B's shortest spelling).

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "json_schema_internal.hpp"

namespace llaisys::grammar::json_schema_detail {
namespace json = boost::json;
namespace {

constexpr int64_t kIntCap = 999'999'999'999'999;  // kMaxIntegerDigits nines
constexpr int64_t kFracScale = 1'000'000;         // 10^kMaxBoundedFracDigits
constexpr int64_t kDecimalIntCap = 999'999'999;   // kMaxBoundedIntDigits nines

// Parses "[-]digits[.digits][e[+-]digits]" (what to_chars writes) into a normalized Decimal.
std::optional<Decimal> parse_decimal(std::string_view s) {
  Decimal d;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string mantissa;
  int64_t point = -1;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      point = static_cast<int64_t>(mantissa.size());
    } else {
      mantissa += s[i];
    }
  }
  if (mantissa.empty()) return std::nullopt;
  int64_t exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && s[i] == '+') ++i;
    const auto r = std::from_chars(s.data() + i, s.data() + s.size(), exponent);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  } else if (i != s.size()) {
    return std::nullopt;
  }
  if (exponent > 400 || exponent < -400) return std::nullopt;
  // The value is mantissa * 10^(exponent - fraction digits).
  int64_t int_len = (point < 0 ? static_cast<int64_t>(mantissa.size()) : point) + exponent;
  if (int_len < 0) {
    mantissa.insert(0, static_cast<std::size_t>(-int_len), '0');
    int_len = 0;
  }
  if (int_len > static_cast<int64_t>(mantissa.size())) mantissa.append(static_cast<std::size_t>(int_len) - mantissa.size(), '0');
  d.int_digits = mantissa.substr(0, static_cast<std::size_t>(int_len));
  d.frac_digits = mantissa.substr(static_cast<std::size_t>(int_len));
  d.int_digits.erase(0, std::min(d.int_digits.find_first_not_of('0'), d.int_digits.size()));
  while (!d.frac_digits.empty() && d.frac_digits.back() == '0') d.frac_digits.pop_back();
  if (d.is_zero()) d.negative = false;
  return d;
}

int compare_magnitude(const Decimal& a, const Decimal& b) {
  if (a.int_digits.size() != b.int_digits.size()) return a.int_digits.size() < b.int_digits.size() ? -1 : 1;
  if (const int c = a.int_digits.compare(b.int_digits); c != 0) return c < 0 ? -1 : 1;
  const std::size_t n = std::max(a.frac_digits.size(), b.frac_digits.size());
  for (std::size_t i = 0; i < n; ++i) {
    const char x = i < a.frac_digits.size() ? a.frac_digits[i] : '0';
    const char y = i < b.frac_digits.size() ? b.frac_digits[i] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

// ---- integer digit ranges ----

ExprPtr digit() { return byte_range('0', '9'); }

// Digit strings of one length n between lo and hi (same length, lo <= hi).
ExprPtr same_length(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return empty();
  if (lo == hi) return literal(lo);
  const std::string lo_rest = lo.substr(1);
  const std::string hi_rest = hi.substr(1);
  if (lo[0] == hi[0]) return seq({literal(lo.substr(0, 1)), same_length(lo_rest, hi_rest)});
  const std::size_t n = lo_rest.size();
  const bool lo_rest_zero = lo_rest.find_first_not_of('0') == std::string::npos;
  const bool hi_rest_nine = hi_rest.find_first_not_of('9') == std::string::npos;
  std::vector<ExprPtr> parts;
  if (!lo_rest_zero) parts.push_back(seq({literal(lo.substr(0, 1)), same_length(lo_rest, std::string(n, '9'))}));
  const char start = lo_rest_zero ? lo[0] : static_cast<char>(lo[0] + 1);
  const char end = hi_rest_nine ? hi[0] : static_cast<char>(hi[0] - 1);
  if (start <= end) {
    parts.push_back(seq({byte_range(static_cast<uint8_t>(start), static_cast<uint8_t>(end)),
                         repeat(digit(), static_cast<int32_t>(n), static_cast<int32_t>(n))}));
  }
  if (!hi_rest_nine) parts.push_back(seq({literal(hi.substr(0, 1)), same_length(std::string(n, '0'), hi_rest)}));
  return alt(std::move(parts));
}

int64_t pow10(int32_t n) {
  int64_t p = 1;
  for (int32_t i = 0; i < n; ++i) p *= 10;
  return p;
}

// Integers a..b, either sign (|a|, |b| <= kIntCap); "-0" is never written.
ExprPtr signed_range(int64_t a, int64_t b) {
  if (a > b) return nothing();
  std::vector<ExprPtr> parts;
  if (a < 0) parts.push_back(seq({literal("-"), nonneg_range(b < 0 ? -b : 1, -a)}));
  if (b >= 0) parts.push_back(nonneg_range(std::max<int64_t>(a, 0), b));
  return alt(std::move(parts));
}

// The integer part of d clamped to [-(kIntCap + 1), kIntCap + 1], rounded toward -inf (floor) or +inf.
int64_t to_int(const Decimal& d, bool ceiling) {
  if (d.int_digits.size() > static_cast<std::size_t>(kMaxIntegerDigits)) return d.negative ? -(kIntCap + 1) : kIntCap + 1;
  int64_t v = 0;
  for (const char c : d.int_digits) v = v * 10 + (c - '0');
  if (d.negative) v = -v;
  if (!d.frac_digits.empty()) {
    // A fraction moves floor down for negatives and ceiling up for positives.
    if (ceiling && !d.negative) v += 1;
    if (!ceiling && d.negative) v -= 1;
  }
  return v;
}

// ---- fixed-point magnitudes with kMaxBoundedFracDigits fraction digits ----

struct Fixed {
  int64_t ip = 0;  // 0..kDecimalIntCap (+1 for "beyond")
  int64_t fp = 0;  // 0..kFracScale-1
  bool operator==(const Fixed&) const = default;
  auto operator<=>(const Fixed&) const = default;
};
constexpr Fixed kFixedMax{kDecimalIntCap, kFracScale - 1};

Fixed next(Fixed f) { return f.fp + 1 == kFracScale ? Fixed{f.ip + 1, 0} : Fixed{f.ip, f.fp + 1}; }
Fixed prev(Fixed f) { return f.fp == 0 ? Fixed{f.ip - 1, kFracScale - 1} : Fixed{f.ip, f.fp - 1}; }

// |d| on the grid, rounded down or up; beyond the grid's top when |d| is too large.
Fixed to_fixed(const Decimal& d, bool up, bool& exact) {
  exact = true;
  if (d.int_digits.size() > static_cast<std::size_t>(kMaxBoundedIntDigits)) {
    exact = false;
    return Fixed{kDecimalIntCap + 1, 0};
  }
  Fixed f;
  for (const char c : d.int_digits) f.ip = f.ip * 10 + (c - '0');
  for (int32_t i = 0; i < kMaxBoundedFracDigits; ++i) {
    const auto k = static_cast<std::size_t>(i);
    f.fp = f.fp * 10 + (k < d.frac_digits.size() ? d.frac_digits[k] - '0' : 0);
  }
  if (d.frac_digits.size() > static_cast<std::size_t>(kMaxBoundedFracDigits)) {
    exact = false;
    if (up) f = next(f);
  }
  return f;
}

std::string frac_string(int64_t fp) {
  std::string s = std::to_string(fp);
  return std::string(static_cast<std::size_t>(kMaxBoundedFracDigits) - s.size(), '0') + s;
}

// Fraction digit strings (1..kMaxBoundedFracDigits digits) read as if padded with zeros, from position
// i of the padded bound on: at least `x` (ge), at most `y` (le), or both (between). `allow_stop` is
// whether the string may end here (false at position 0: a fraction has at least one digit).
ExprPtr any_digits(std::size_t from) {
  const auto rest = static_cast<int32_t>(static_cast<std::size_t>(kMaxBoundedFracDigits) - from);
  return repeat(digit(), 0, rest);
}
bool zeros_from(const std::string& s, std::size_t i) { return s.find_first_not_of('0', i) == std::string::npos; }

ExprPtr frac_ge(const std::string& x, std::size_t i, bool allow_stop) {
  if (i == x.size()) return empty();
  std::vector<ExprPtr> parts;
  if (allow_stop && zeros_from(x, i)) parts.push_back(empty());
  if (x[i] < '9') parts.push_back(seq({byte_range(static_cast<uint8_t>(x[i] + 1), '9'), any_digits(i + 1)}));
  parts.push_back(seq({literal(x.substr(i, 1)), frac_ge(x, i + 1, true)}));
  return alt(std::move(parts));
}

ExprPtr frac_le(const std::string& y, std::size_t i, bool allow_stop) {
  if (i == y.size()) return empty();
  std::vector<ExprPtr> parts;
  if (allow_stop) parts.push_back(empty());
  if (y[i] > '0') parts.push_back(seq({byte_range('0', static_cast<uint8_t>(y[i] - 1)), any_digits(i + 1)}));
  parts.push_back(seq({literal(y.substr(i, 1)), frac_le(y, i + 1, true)}));
  return alt(std::move(parts));
}

ExprPtr frac_between(const std::string& x, const std::string& y, std::size_t i, bool allow_stop) {
  if (i == x.size()) return empty();
  std::vector<ExprPtr> parts;
  if (allow_stop && zeros_from(x, i)) parts.push_back(empty());
  if (x[i] == y[i]) {
    parts.push_back(seq({literal(x.substr(i, 1)), frac_between(x, y, i + 1, true)}));
    return alt(std::move(parts));
  }
  parts.push_back(seq({literal(x.substr(i, 1)), frac_ge(x, i + 1, true)}));
  if (x[i] + 1 <= y[i] - 1) {
    parts.push_back(seq({byte_range(static_cast<uint8_t>(x[i] + 1), static_cast<uint8_t>(y[i] - 1)), any_digits(i + 1)}));
  }
  parts.push_back(seq({literal(y.substr(i, 1)), frac_le(y, i + 1, true)}));
  return alt(std::move(parts));
}

// Decimals "I.F" (F of 1..kMaxBoundedFracDigits digits) with a <= value <= b.
ExprPtr fixed_range(Fixed a, Fixed b) {
  if (b < a) return nothing();
  const std::string af = frac_string(a.fp);
  const std::string bf = frac_string(b.fp);
  const ExprPtr dot = literal(".");
  if (a.ip == b.ip) return seq({literal(std::to_string(a.ip)), dot, frac_between(af, bf, 0, false)});
  std::vector<ExprPtr> parts;
  parts.push_back(seq({literal(std::to_string(a.ip)), dot, frac_ge(af, 0, false)}));
  if (a.ip + 1 <= b.ip - 1) {
    parts.push_back(seq({nonneg_range(a.ip + 1, b.ip - 1), dot, repeat(digit(), 1, kMaxBoundedFracDigits)}));
  }
  parts.push_back(seq({literal(std::to_string(b.ip)), dot, frac_le(bf, 0, false)}));
  return alt(std::move(parts));
}

// Magnitudes between two optional bounds (>= 0), on the fixed grid.
ExprPtr magnitude_range(const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi) {
  Fixed a{0, 0};
  if (lo) {
    bool exact = false;
    a = to_fixed(lo->value, true, exact);
    if (exact && lo->exclusive) a = next(a);
  }
  Fixed b = kFixedMax;
  if (hi) {
    bool exact = false;
    b = std::min(to_fixed(hi->value, false, exact), kFixedMax);
    if (exact && hi->exclusive) {
      if (b == Fixed{0, 0}) return nothing();
      b = prev(b);
    }
  }
  if (a > kFixedMax) return nothing();
  return fixed_range(a, b);
}

ExprPtr unbounded_number() {
  static const ExprPtr e = seq({
      optional(literal("-")),
      alt({literal("0"), seq({byte_range('1', '9'), repeat(digit(), 0, kMaxIntegerDigits - 1)})}),
      optional(seq({literal("."), repeat(digit(), 1, kMaxFracDigits)})),
      optional(seq({byte_set([] {
                      std::bitset<256> s;
                      s.set('e');
                      s.set('E');
                      return s;
                    }()),
                    optional(alt({literal("+"), literal("-")})), repeat(digit(), 1, 2)})),
  });
  return e;
}

}  // namespace

std::string Decimal::to_string() const {
  std::string s = negative ? "-" : "";
  s += int_digits.empty() ? "0" : int_digits;
  if (!frac_digits.empty()) s += "." + frac_digits;
  return s;
}

std::optional<Decimal> decimal_of(const json::value& v) {
  if (v.is_int64()) {
    const int64_t x = v.get_int64();
    Decimal d;
    d.negative = x < 0;
    const uint64_t mag = x < 0 ? static_cast<uint64_t>(0) - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
    d.int_digits = mag == 0 ? "" : std::to_string(mag);
    return d;
  }
  if (v.is_uint64()) {
    Decimal d;
    const uint64_t x = v.get_uint64();
    d.int_digits = x == 0 ? "" : std::to_string(x);
    return d;
  }
  if (v.is_double()) {
    const double x = v.get_double();
    if (!std::isfinite(x)) return std::nullopt;
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);
    return parse_decimal(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
  }
  return std::nullopt;
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.is_zero() && b.is_zero()) return 0;
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  const int m = compare_magnitude(a, b);
  return a.negative ? -m : m;
}

ExprPtr nonneg_range(int64_t lo, int64_t hi) {
  if (lo > hi || hi < 0) return nothing();
  lo = std::max<int64_t>(lo, 0);
  std::vector<ExprPtr> parts;
  for (int32_t len = 1; len <= 19; ++len) {
    const int64_t first = len == 1 ? 0 : pow10(len - 1);
    const int64_t last = len >= 19 ? INT64_MAX : pow10(len) - 1;
    if (first > hi) break;
    const int64_t a = std::max(lo, first);
    const int64_t b = std::min(hi, last);
    if (a <= b) parts.push_back(same_length(std::to_string(a), std::to_string(b)));
  }
  return alt(std::move(parts));
}

// Integers: every integer of at most kMaxIntegerDigits digits within the bounds. Other numbers without
// bounds: -?(0|[1-9]d{0,14})(.d{1,15})?([eE][+-]?d{1,2})?. Bounded: the integers as above, and
// decimals with 1..kMaxBoundedFracDigits fraction digits and at most kMaxBoundedIntDigits integer
// digits within the bounds (no exponent).
ExprPtr number_expr(const NumberSpec& spec) {
  if (!spec.integer_only && !spec.lo && !spec.hi) return unbounded_number();
  if (!spec.lo && !spec.hi) {  // one expression for every unbounded integer
    static const ExprPtr any_integer = signed_range(-kIntCap, kIntCap);
    return any_integer;
  }
  int64_t a = -kIntCap;
  int64_t b = kIntCap;
  if (spec.lo) {
    a = std::max(a, to_int(spec.lo->value, true));
    if (spec.lo->exclusive && spec.lo->value.is_integer()) a = std::max(a, to_int(spec.lo->value, true) + 1);
  }
  if (spec.hi) {
    b = std::min(b, to_int(spec.hi->value, false));
    if (spec.hi->exclusive && spec.hi->value.is_integer()) b = std::min(b, to_int(spec.hi->value, false) - 1);
  }
  const ExprPtr integers = a <= b ? signed_range(a, b) : nothing();
  if (spec.integer_only) return integers;

  // Non-negative decimals: [max(lo, 0), hi]; negative ones: magnitudes (0, -lo] within [-hi, ...).
  std::vector<ExprPtr> parts{integers};
  const bool hi_negative = spec.hi && spec.hi->value.negative;
  const bool lo_negative = !spec.lo || spec.lo->value.negative;
  if (!hi_negative) {
    std::optional<NumberBound> lo;
    if (spec.lo && !spec.lo->value.negative) lo = spec.lo;
    parts.push_back(magnitude_range(lo, spec.hi));
  }
  if (lo_negative) {
    // -x with x in [max(-hi, 0+), -lo]: the bounds swap sides.
    std::optional<NumberBound> mag_lo = NumberBound{Decimal{}, true};  // never -0.0
    if (spec.hi && spec.hi->value.negative) {
      mag_lo = NumberBound{spec.hi->value, spec.hi->exclusive};
      mag_lo->value.negative = false;
    }
    std::optional<NumberBound> mag_hi;
    if (spec.lo) {
      mag_hi = NumberBound{spec.lo->value, spec.lo->exclusive};
      mag_hi->value.negative = false;
    }
    parts.push_back(seq({literal("-"), magnitude_range(mag_lo, mag_hi)}));
  }
  return alt(std::move(parts));
}

}  // namespace llaisys::grammar::json_schema_detail
